"""Full text in the SQLite index: FTS5's Okapi BM25 with IDF and per-column weights (BM25F-style:
name, description, recall keywords, body), over text already rewritten for CJK (``text.py``)."""

from __future__ import annotations

from .schema import FTS_COLUMNS
from .text import fts_match_expression


class FullText:
    """Keyword search over ``units_fts`` (a mixin of ``SQLiteIndex``)."""

    def keyword_search(self, terms: list[str], limit: int = 200) -> list[tuple[int, float]]:
        """(unit id, BM25 score, higher = better) for units matching any term."""
        if not terms:
            return []
        weights = ", ".join(str(float(self.fts_weights[c])) for c in FTS_COLUMNS)
        sql = (f"SELECT rowid, -bm25(units_fts, {weights}) AS score FROM units_fts"
               " WHERE units_fts MATCH ? ORDER BY score DESC LIMIT ?")
        return [(r[0], r[1]) for r in self.conn.execute(sql, (fts_match_expression(terms), limit))]

    def matched_fields(self, terms: list[str], unit_ids: list[int]) -> dict[int, dict[str, list[str]]]:
        """For each unit, which of ``terms`` FTS5 finds in which field (for ``--explain``)."""
        out: dict[int, dict[str, list[str]]] = {uid: {} for uid in unit_ids}
        if not terms or not unit_ids:
            return out
        marks = ",".join("?" * len(unit_ids))
        for column in FTS_COLUMNS:
            for term in terms:
                rows = self.conn.execute(
                    f"SELECT rowid FROM units_fts WHERE units_fts MATCH ? AND rowid IN ({marks})",
                    [f"{column} : {fts_match_expression([term])}", *unit_ids]).fetchall()
                for (rowid,) in rows:
                    out[rowid].setdefault(column, []).append(term)
        return out
