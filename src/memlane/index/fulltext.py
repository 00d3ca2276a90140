"""Full text in the SQLite index: FTS5's Okapi BM25 with IDF and per-column weights (BM25F-style:
name, description, recall keywords, body), over text already rewritten for CJK (``text.py``)."""

from __future__ import annotations

import sys

from .postings import Tokenizer, bm25_search, can_keep_postings, read_sizes, rebuild_postings, row_norms, update_postings
from .schema import FTS_COLUMNS, WRITES
from .text import fts_match_expression


#: from this many units a fresh process reads the postings even before numpy is loaded
POSTINGS_MIN_UNITS = 20_000


class FullText:
    """Keyword search over ``units_fts`` and its postings (a mixin of ``SQLiteIndex``)."""

    def keyword_search(self, terms: list[str], limit: int = 200) -> list[tuple[int, float]]:
        """(unit id, BM25 score, higher = better) for units matching any term: from the
        postings when they are current (``postings.py``: the same scores and order), else FTS5."""
        if not terms:
            return []
        with self.snapshot():  # the norms, the postings and the counter of one state, whoever writes
            if not self.postings_current() or not self._postings_pay():
                return self._fts5_search(terms, limit)
            # FTS5 is still opened on these terms: a damaged full-text index is found (and healed) as before
            self.conn.execute("SELECT rowid FROM units_fts WHERE units_fts MATCH ? LIMIT 1",
                              (fts_match_expression(terms),)).fetchone()
            weights = [float(self.fts_weights[c]) for c in FTS_COLUMNS]
            sizes = self._cached("posting_norms", lambda: row_norms(read_sizes(self.conn)))
            return bm25_search(self.conn, self.tokenizer, terms, weights, limit, sizes,
                               lambda term: self._fts5_search([term], None))

    def _fts5_search(self, terms: list[str], limit: int | None) -> list[tuple[int, float]]:
        weights = ", ".join(str(float(self.fts_weights[c])) for c in FTS_COLUMNS)
        sql = (f"SELECT rowid, -bm25(units_fts, {weights}) AS score FROM units_fts"
               " WHERE units_fts MATCH ? ORDER BY score DESC LIMIT ?")
        return [(r[0], r[1]) for r in self.conn.execute(sql, (fts_match_expression(terms), -1 if limit is None
                                                                else limit))]

    def _postings_pay(self) -> bool:
        """Whether reading the postings beats FTS5 here: numpy is loaded already (a warm process, a
        hybrid recall), or the store is big enough that FTS5's scan of every matching row costs more
        than loading numpy once (~60-100 ms; a cold keyword-only hook must not pay it for nothing)."""
        return "numpy" in sys.modules or self._cached(
            "unit_count", lambda: self.conn.execute("SELECT count(*) FROM units").fetchone()[0]) >= POSTINGS_MIN_UNITS

    # -- the postings ---------------------------------------------------------------------
    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = Tokenizer()
        return self._tokenizer

    def postings_current(self) -> bool:
        """Whether the postings hold every write to the units (whoever wrote)."""
        return can_keep_postings() and self._cached(
            "postings_current", lambda: self.get_meta("postings") == self.get_meta(WRITES))

    def _keep_postings(self, changes: dict | None) -> None:
        """Inside a sync: the postings of ``changes`` (unit -> (row before, after)) brought up to
        date, or (None) all of them computed again."""
        if not can_keep_postings():  # without numpy, FTS5 answers alone (the same scores, by scanning)
            return
        if changes is None:
            rebuild_postings(self.conn, self.tokenizer)
        else:
            update_postings(self.conn, self.tokenizer, changes)
        self.set_meta("postings", self.get_meta(WRITES) or "0")

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
