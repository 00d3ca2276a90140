"""Full text for the team store, token for token what the SQLite index sees (I2).

PostgreSQL's own parsers split and stem text differently from SQLite's ``porter unicode61``
tokenizer (no Porter stemmer, a parser that keeps ``foo-bar`` and file paths whole), and the
benchmarks must give the same figures on both backends. So the tokens are made by the very
tokenizer the SQLite index uses — an in-memory FTS5 table read back through ``fts5vocab`` — from
the very text it is given (``index.text.fts_text``: CJK runs as bigrams), and PostgreSQL stores
them as a weighted ``tsvector``: name ``A``, description ``B``, recall keywords ``C``, body ``D``,
each with its token positions (for phrases). Queries go through the same tokenizer, each query
term becoming one lexeme or, when the tokenizer splits it (``feedback_ci_cache``), one phrase.

The tsvector finds the candidates (GIN) and matches phrases by position; the counts BM25 needs
are kept exactly beside it (``units.tf``), since a tsvector stops at 16,383 positions and keeps at
most 256 of one lexeme (a phrase past those limits may be missed in a body of over ~12,000 tokens).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence

from ..index.text import fts_text

#: the SQLite index's columns, in its order, and the tsvector label each becomes
COLUMNS = ("name", "description", "keywords", "body")
LABELS = {"name": "A", "description": "B", "keywords": "C", "body": "D"}
#: where each column's positions start and end (a phrase never spans two columns)
_RANGES = {"name": (1, 999), "description": (1001, 2999), "keywords": (3001, 3999), "body": (4001, 16383)}
TOKENIZER = "porter unicode61 remove_diacritics 2"  # index/schema.py's units_fts
#: PostgreSQL's limits: a lexeme (in a tsvector or a tsquery) of at most 2,046 bytes, a tsvector of
#: at most 1 MB of lexemes and positions, at most 256 positions of a lexeme
MAX_LEXEME_BYTES = 2046
MAX_TSVECTOR_BYTES = (1 << 20) - 1
MAX_POSITIONS = 256


class Tokenizer:
    """SQLite's FTS5 tokenizer, through one private in-memory table (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({', '.join(COLUMNS)}, tokenize = '{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def documents(self, rows: Sequence[Sequence[str]]) -> list[dict[str, list[tuple[str, int]]]]:
        """For each row of four column texts (already ``fts_text``), column -> [(token, offset)]."""
        if not rows:
            return []
        out: list[dict[str, list[tuple[str, int]]]] = [{} for _ in rows]
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(f"INSERT INTO t(rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?)",
                                       [(n, *row) for n, row in enumerate(rows, start=1)])
                found = self._conn.execute("SELECT doc, col, term, offset FROM v").fetchall()
                self._conn.execute("DELETE FROM t")
            finally:
                self._conn.execute("COMMIT")
        for doc, col, term, offset in found:
            out[doc - 1].setdefault(col, []).append((term, offset))
        return out

    def phrases(self, terms: Iterable[str]) -> list[list[str]]:
        """Each query term as the tokens FTS5 makes of it (a quoted term is a phrase)."""
        terms = list(terms)
        docs = self.documents([(fts_text(t), "", "", "") for t in terms])
        return [[tok for tok, _ in sorted(d.get("name", []), key=lambda x: x[1])] for d in docs]


_TOKENIZER: Tokenizer | None = None
_TOKENIZER_LOCK = threading.Lock()


def tokenizer() -> Tokenizer:
    global _TOKENIZER
    with _TOKENIZER_LOCK:
        if _TOKENIZER is None:
            _TOKENIZER = Tokenizer()
        return _TOKENIZER


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def unit_columns(unit) -> tuple[str, str, str, str]:
    """A unit's four full-text columns exactly as ``index/units.py`` writes them to FTS5."""
    name_field = " ".join(p for p in (unit.name, unit.title) if p)
    return (fts_text(name_field.replace("_", " ").replace("-", " ")), fts_text(unit.fts_description()),
            fts_text(unit.keywords), fts_text(unit.body))


def tsvectors(units: Sequence) -> list[tuple[str, int, dict[str, list[int]]]]:
    """Each unit's tsvector literal, its token count (FTS5's document length) and its term
    frequencies (lexeme -> occurrences in name, description, keywords, body): BM25 reads those
    exactly, where a tsvector keeps at most 256 positions of a lexeme."""
    out = []
    for doc in tokenizer().documents([unit_columns(u) for u in units]):
        positions: dict[str, list[str]] = {}
        counts: dict[str, list[int]] = {}
        total = 0
        for n, column in enumerate(COLUMNS):
            low, high = _RANGES[column]
            label = LABELS[column]
            for token, offset in doc.get(column, []):
                total += 1
                positions.setdefault(token, []).append(f"{min(high, low + offset)}{label}")
                counts.setdefault(token, [0, 0, 0, 0])[n] += 1
        for token in [t for t in counts if len(t.encode("utf-8")) > MAX_LEXEME_BYTES]:
            del positions[token], counts[token]  # past what PostgreSQL indexes: no query term can match it
        out.append((_literal(positions), total, counts))
    return out


def _literal(positions: dict[str, list[str]]) -> str:
    """The tsvector literal of lexeme -> positions, within PostgreSQL's size: past it, the later
    lexemes (the body's last new words) are left out of the tsvector — BM25 reads them from
    ``postings`` all the same; a phrase of them is missed."""
    parts, size = [], 0
    for token, pos in positions.items():
        size += len(token.encode("utf-8")) + 1 + 2 + 2 * min(MAX_POSITIONS, len({p[:-1] for p in pos}))
        if size > MAX_TSVECTOR_BYTES:
            break
        parts.append(f"{_quote(token)}:{','.join(pos)}")
    return " ".join(parts)


def tsquery(phrase: Sequence[str]) -> str:
    """A tsquery literal for one phrase: ``'a'`` or ``'a' <-> 'b'``."""
    return " <-> ".join(_quote(t) for t in phrase)


def any_query(phrases: Sequence[Sequence[str]]) -> str:
    """The OR of every phrase (the candidates: units that match any query term)."""
    return " | ".join(f"( {tsquery(p)} )" for p in phrases if p)


__all__ = ["COLUMNS", "LABELS", "MAX_LEXEME_BYTES", "Tokenizer", "any_query", "tokenizer", "tsquery", "tsvectors",
           "unit_columns"]
