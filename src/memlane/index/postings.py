"""The keyword leg's own inverted index (I2): per term and block of 4,096 unit ids, the units
that hold the term and how often in each field, kept beside FTS5 in the same transaction; and a
BM25 over it that computes what FTS5's ``bm25()`` computes — the same doubles in the same order,
ties by rowid as SQLite's ``ORDER BY … LIMIT`` leaves them — while reading only the query's
terms instead of scoring every row that matches one.

FTS5's ``bm25()`` (``fts5_aux.c``), per matching row, with N rows, ``avgdl`` tokens per row, a
phrase's ``nHit`` matching rows and the row's D tokens:
``score = Σ_phrases idf · (f · (k1 + 1)) / (f + k1 · (1 − b + b · D / avgdl))``, k1 = 1.2,
b = 0.75, ``idf = ln((N − nHit + 0.5) / (nHit + 0.5))`` (1e-6 when not positive), ``f`` the
column weights summed over the phrase's instances in the row (Robertson & Zaragoza 2009).

Tokens are FTS5's own: text goes through a private in-memory FTS5 table with the index's
tokenizer. A query term that is not one token (``snake_case`` is two) gets its share from FTS5
itself, a query for that phrase alone — exact, and cheap for the rare phrase it usually is.
Whether the postings are current is a counter that triggers on ``units`` move with every write,
from any writer; when they are not, FTS5 answers and the next sync rebuilds them.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator

from .schema import FTS_COLUMNS, FTS_TOKENIZE

BLOCK_BITS = 12
K1, B = 1.2, 0.75
_TOKENIZE_BATCH = 4096

FtsRow = tuple[str, str, str, str]  # name, description, keywords, body as given to FTS5


def can_keep_postings() -> bool:
    """Whether numpy is installed (the ``embed`` extra): the postings are read with it; without
    it the keyword leg is FTS5's alone, which ranks the same."""
    global _NUMPY
    if _NUMPY is None:
        import importlib.util

        _NUMPY = importlib.util.find_spec("numpy") is not None
    return _NUMPY


_NUMPY: bool | None = None


class Tokenizer:
    """FTS5's tokenizer, through a private in-memory FTS5 table."""

    def __init__(self):
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.lock = threading.Lock()
        self._terms: dict[str, tuple[str, ...]] = {}
        self._column = {name: i for i, name in enumerate(FTS_COLUMNS)}
        self._create()

    def _create(self) -> None:
        self.conn.execute(f"CREATE VIRTUAL TABLE tok USING fts5({', '.join(FTS_COLUMNS)}, tokenize = '{FTS_TOKENIZE}')")
        self.conn.execute("CREATE VIRTUAL TABLE tok_i USING fts5vocab(tok, instance)")

    def _reset(self) -> None:
        self.conn.execute("DROP TABLE tok_i")
        self.conn.execute("DROP TABLE tok")
        self._create()

    def tokens(self, text: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of ``text`` (a query term), in order."""
        found = self._terms.get(text)
        if found is None:
            with self.lock:
                self.conn.execute("INSERT INTO tok(rowid, body) VALUES (1, ?)", (text,))
                found = tuple(t for (t,) in self.conn.execute("SELECT term FROM tok_i ORDER BY offset"))
                self.conn.execute("DELETE FROM tok")  # one row: ~10x cheaper than dropping the tables
            if len(self._terms) > 4096:
                self._terms.clear()
            self._terms[text] = found
        return found

    def postings(self, rows: dict[int, FtsRow]) -> tuple[dict[int, int], dict[str, tuple]]:
        """(unit -> its tokens in all fields, term -> (units ascending, [count in each field]))
        of the ``rows`` (unit -> its full-text row), counted by SQLite."""
        sizes: dict[int, int] = dict.fromkeys(rows, 0)  # a row with no token still counts in FTS5's N
        terms: dict[str, tuple] = {}
        items = list(rows.items())
        with self.lock:
            for start in range(0, len(items), _TOKENIZE_BATCH):
                batch = items[start:start + _TOKENIZE_BATCH]
                self.conn.executemany(f"INSERT INTO tok(rowid, {', '.join(FTS_COLUMNS)}) VALUES (?,?,?,?,?)",
                                      [(unit, *row) for unit, row in batch])
                _add_instances(self.conn.execute(self._instances_sql).fetchone(), sizes, terms)
                self._reset()
        return sizes, terms

    @property
    def _instances_sql(self) -> str:
        """Every token instance as three lists (doc, field number, term), in one aggregate: no sort."""
        field = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(FTS_COLUMNS))
        return (f"SELECT group_concat(doc), group_concat(CASE col {field} END), group_concat(term, char(31))"
                " FROM tok_i")


def _add_instances(row, sizes: dict[int, int], terms: dict[str, tuple]) -> None:
    """Fold one batch's instance lists into ``sizes`` and ``terms`` (see ``Tokenizer.postings``)."""
    import numpy as np

    docs_text, fields_text, terms_text = row
    if not docs_text:
        return
    docs = np.fromstring(docs_text, dtype=np.int64, sep=",")
    fields = np.fromstring(fields_text, dtype=np.int64, sep=",")
    names = np.array(terms_text.split("\x1f"), dtype=object)
    width = len(FTS_COLUMNS)
    starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    term_id = np.cumsum(np.r_[False, names[1:] != names[:-1]])  # instances come by term, doc, field
    order = np.lexsort((fields, docs, term_id))  # a no-op when they do (kept for safety)
    docs, fields, term_id = docs[order], fields[order], term_id[order]
    pair = np.flatnonzero(np.r_[True, (term_id[1:] != term_id[:-1]) | (docs[1:] != docs[:-1])])
    counts = np.zeros((len(pair), width), dtype=np.uint32)
    np.add.at(counts, (np.cumsum(np.r_[False, (term_id[1:] != term_id[:-1]) | (docs[1:] != docs[:-1])]), fields), 1)
    pair_term, pair_doc = term_id[pair], docs[pair]
    cuts = np.r_[np.flatnonzero(np.r_[True, pair_term[1:] != pair_term[:-1]]), len(pair)]
    for a, b in zip(cuts[:-1], cuts[1:]):
        name = names[starts[pair_term[a]]]
        units, freqs = pair_doc[a:b], counts[a:b]
        if name in terms:  # the same term in an earlier batch of the same block
            units, freqs = np.concatenate([terms[name][0], units]), np.concatenate([terms[name][1], freqs])
            order = np.argsort(units, kind="stable")
            units, freqs = units[order], freqs[order]
        terms[name] = (units, freqs)
    found, per_doc = np.unique(docs, return_counts=True)
    sizes.update(zip(found.tolist(), per_doc.tolist()))


# -- the stored postings ------------------------------------------------------------------------
def _decode(units_blob: bytes, freqs_blob: bytes, block: int):
    import numpy as np

    units = np.frombuffer(units_blob, dtype=np.uint16).astype(np.int64) + (block << BLOCK_BITS)
    wide = len(freqs_blob) == len(units) * len(FTS_COLUMNS) * 4
    freqs = np.frombuffer(freqs_blob, dtype=np.uint32 if wide else np.uint16).reshape(len(units), len(FTS_COLUMNS))
    return units, freqs


def _encode(units, freqs, block: int) -> tuple[bytes, bytes]:
    import numpy as np

    dtype = np.uint16 if (freqs.max() if len(freqs) else 0) < 1 << 16 else np.uint32
    return (np.asarray(units - (block << BLOCK_BITS), dtype=np.uint16).tobytes(),
            np.ascontiguousarray(freqs, dtype=dtype).tobytes())


def read_postings(conn, term: str):
    """(units, per-field counts) of ``term``, units ascending."""
    import numpy as np

    rows = conn.execute("SELECT block, units, freqs FROM postings WHERE term = ? ORDER BY block", (term,)).fetchall()
    width = len(FTS_COLUMNS)
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, width), dtype=np.uint16)
    lengths = [len(u) // 2 for _, u, _ in rows]
    units = np.frombuffer(b"".join(u for _, u, _ in rows), dtype=np.uint16).astype(np.int64)
    units += np.repeat(np.array([b << BLOCK_BITS for b, _, _ in rows], dtype=np.int64), lengths)
    if all(len(f) == 2 * width * n for (_, _, f), n in zip(rows, lengths)):
        return units, np.frombuffer(b"".join(f for _, _, f in rows), dtype=np.uint16).reshape(-1, width)
    return units, np.concatenate([_decode(u, f, b)[1].astype(np.uint32) for b, u, f in rows])


def read_sizes(conn):
    """(dense tokens-per-row by unit id, rows, tokens) over every unit."""
    import numpy as np

    parts = [(np.frombuffer(u, dtype=np.uint16).astype(np.int64) + (b << BLOCK_BITS), np.frombuffer(s, dtype=np.uint32))
             for b, u, s in conn.execute("SELECT block, units, sizes FROM posting_sizes ORDER BY block")]
    units = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    sizes = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.uint32)
    dense = np.zeros(int(units.max()) + 1 if len(units) else 0, dtype=np.float64)
    dense[units] = sizes
    return dense, len(units), int(sizes.sum(dtype=np.int64))


def update_postings(conn, tokenizer: Tokenizer, changes: dict[int, tuple[FtsRow | None, FtsRow | None]]) -> None:
    """Bring the postings of the ``changes`` (unit -> (its full-text row before, after); None:
    absent) up to date, one block of units at a time."""
    by_block: dict[int, list[int]] = {}
    for unit in changes:
        by_block.setdefault(unit >> BLOCK_BITS, []).append(unit)
    for block, units in sorted(by_block.items()):
        _, before = tokenizer.postings({u: changes[u][0] for u in units if changes[u][0] is not None})
        sizes, after = tokenizer.postings({u: changes[u][1] for u in units if changes[u][1] is not None})
        _merge_block(conn, block, set(units), set(before) | set(after), sizes, after)


def rebuild_postings(conn, tokenizer: Tokenizer) -> None:
    """Every posting computed again from the full-text rows."""
    conn.execute("DELETE FROM postings")
    conn.execute("DELETE FROM posting_sizes")
    for block, rows in _blocks_of(conn.execute(f"SELECT rowid, {', '.join(FTS_COLUMNS)} FROM units_fts ORDER BY rowid")):
        sizes, after = tokenizer.postings(rows)
        conn.executemany("INSERT INTO postings(term, block, units, freqs) VALUES (?,?,?,?)",
                         [(term, block, *_encode(units, freqs, block)) for term, (units, freqs) in sorted(after.items())])
        _write_sizes(conn, block, sizes)


def _blocks_of(cursor) -> Iterator[tuple[int, dict[int, FtsRow]]]:
    block, rows = None, {}
    for unit, *row in cursor:
        if block is not None and unit >> BLOCK_BITS != block:
            yield block, rows
            rows = {}
        block = unit >> BLOCK_BITS
        rows[unit] = tuple(row)
    if rows:
        yield block, rows


def _merge_block(conn, block: int, changed: set[int], terms: set[str], sizes: dict[int, int],
                 after: dict[str, tuple]) -> None:
    """Postings of ``terms`` and the row sizes in ``block``: the ``changed`` units' old entries
    out, their new ones (``after``, ``sizes``) in."""
    import numpy as np

    gone = np.fromiter(changed, dtype=np.int64)
    for term in sorted(terms):
        units, freqs = after.get(term, (np.zeros(0, dtype=np.int64), np.zeros((0, len(FTS_COLUMNS)), np.uint32)))
        row = conn.execute("SELECT units, freqs FROM postings WHERE term = ? AND block = ?", (term, block)).fetchone()
        if row is not None:
            old_units, old_freqs = _decode(row[0], row[1], block)
            keep = ~np.isin(old_units, gone)
            units = np.concatenate([old_units[keep], units])
            freqs = np.concatenate([old_freqs[keep].astype(np.uint32), freqs])
            order = np.argsort(units, kind="stable")
            units, freqs = units[order], freqs[order]
        if len(units):
            conn.execute("INSERT OR REPLACE INTO postings(term, block, units, freqs) VALUES (?,?,?,?)",
                         (term, block, *_encode(units, freqs, block)))
        elif row is not None:
            conn.execute("DELETE FROM postings WHERE term = ? AND block = ?", (term, block))
    row = conn.execute("SELECT units, sizes FROM posting_sizes WHERE block = ?", (block,)).fetchone()
    if row is not None:
        old_units = np.frombuffer(row[0], dtype=np.uint16).astype(np.int64) + (block << BLOCK_BITS)
        old_sizes = np.frombuffer(row[1], dtype=np.uint32)
        sizes = {**{u: s for u, s in zip(old_units.tolist(), old_sizes.tolist()) if u not in changed}, **sizes}
    _write_sizes(conn, block, sizes)


def _write_sizes(conn, block: int, sizes: dict[int, int]) -> None:
    import numpy as np

    units = np.array(sorted(sizes), dtype=np.int64)
    if not len(units):
        conn.execute("DELETE FROM posting_sizes WHERE block = ?", (block,))
        return
    conn.execute("INSERT OR REPLACE INTO posting_sizes(block, units, sizes) VALUES (?,?,?)",
                 (block, np.asarray(units - (block << BLOCK_BITS), dtype=np.uint16).tobytes(),
                  np.array([sizes[u] for u in units.tolist()], dtype=np.uint32).tobytes()))


# -- BM25 ----------------------------------------------------------------------------------------
def weighted_frequency(freqs, weights: list[float]):
    """FTS5's ``f``: each instance adds its column's weight, instances in (column, offset) order."""
    import numpy as np

    if all(float(w).is_integer() for w in weights):  # integer sums are exact in any order
        return freqs.astype(np.float64) @ np.asarray(weights, dtype=np.float64)
    f = np.zeros(len(freqs), dtype=np.float64)
    for column, weight in enumerate(weights):
        counts = freqs[:, column]
        for k in range(int(counts.max()) if len(counts) else 0):
            f[counts > k] += weight
    return f


def bm25_search(conn, tokenizer: Tokenizer, terms: list[str], weights: list[float], limit: int,
                sizes, phrase_scores) -> list[tuple[int, float]]:
    """(unit, BM25) of the best ``limit`` rows matching any term, as FTS5 ranks them; ``sizes``
    is ``row_norms``'s answer, ``phrase_scores(term)`` FTS5's own (unit, score) for one phrase."""
    import numpy as np

    norm, n_rows = sizes
    if not n_rows:
        return []
    score = np.zeros(len(norm), dtype=np.float64)
    matched = np.zeros(len(norm), dtype=bool)
    for term in terms:
        tokens = tokenizer.tokens(term)
        if not tokens:
            continue  # an empty phrase matches nothing and adds nothing
        if len(tokens) == 1:
            units, freqs = read_postings(conn, tokens[0])
            if not len(units):
                continue
            idf = math.log((n_rows - len(units) + 0.5) / (len(units) + 0.5))
            idf = idf if idf > 0.0 else 1e-6
            f = weighted_frequency(freqs, weights)
            share = idf * ((f * (K1 + 1.0)) / (f + norm[units]))
        else:
            found = phrase_scores(term)
            if not found:
                continue
            units = np.fromiter((u for u, _ in found), dtype=np.int64, count=len(found))
            share = np.fromiter((s for _, s in found), dtype=np.float64, count=len(found))
        score[units] += share
        matched[units] = True
    candidates = np.flatnonzero(matched)
    if len(candidates) > limit > 0:  # only the best and their ties get sorted
        scores = score[candidates]
        candidates = candidates[scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit]]
    best = candidates[np.lexsort((candidates, -score[candidates]))][:limit]
    return list(zip(best.tolist(), score[best].tolist()))


def row_norms(sizes) -> tuple:
    """(per unit ``k1 · (1 − b + b · D / avgdl)`` as FTS5 computes it, rows) from ``read_sizes``."""
    dense, n_rows, n_tokens = sizes
    if not n_rows:
        return dense, 0
    return K1 * (1 - B + B * dense / (n_tokens / n_rows)), n_rows
