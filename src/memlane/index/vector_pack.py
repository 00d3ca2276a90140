"""The vector leg's packed form (I3): every chunk vector of a model as int8 codes, in blocks of
1,024 consecutive unit ids, scored in one pass and rescored exactly.

A process reads and keeps a quarter of the float32 bytes (one int8 code per dimension, one
scale per row); the float32 vectors stay in ``embeddings`` as the truth. A query scores every
row from its codes, then computes the exact cosine of every unit that could be among the best
``n`` — a row's code is off by at most its stored residual norm (Cauchy–Schwarz:
|q·(v − v̂)| ≤ ‖q‖·‖v − v̂‖), so a unit whose upper bound falls below the n-th best lower bound
cannot be in the top ``n`` — and of every unit asked for by id. Exact here means the float32
rounding of the float64 dot product of the stored float32 vectors: the same value whichever
rows are computed together (a float32 matrix product differs in the last bit with its blocking).

Blocks are derived data. Triggers (schema migration 6) drop a block whenever a chunk of its
units or an embedding they use changes, whoever writes; ``pack_vectors`` stores the missing
blocks after embedding; a reader builds what is still missing in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from ..records import dataclass

BLOCK_BITS = 10  # 1,024 unit ids a block; the triggers of schema migration 6 use the same shift
#: float32 rounding of the first pass, ~100x its typical size; added to every row's bound
SLACK = 1e-4
_PASS_ROWS = 512  # int8 rows widened to float32 at a time (stays in the CPU cache)
#: from this many rows up, the first pass runs on two threads (numpy lets go of the interpreter
#: while it widens and multiplies) — in a process whose BLAS runs one thread, as the resident
#: ones set it (``adapters/daemon.tune_threads``): 100k notes' pass 13 -> 7 ms. Below it a
#: thread costs more than it saves; beside a multi-threaded BLAS the threads only contend.
PARALLEL_ROWS = 40_000
_pool = None
_FETCH_BATCH = 500

_BLOCK_ROWS_SQL = ("SELECT c.unit, e.rowid, e.vec FROM chunks c CROSS JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
                   " WHERE c.unit >= ? AND c.unit < ? ORDER BY c.unit, c.seq")

Fetch = Callable[[object], object]  # embeddings rowids -> their float32 vectors, one row each


@dataclass
class Block:
    """The rows of one block of units: unit, ``embeddings`` rowid, int8 code, scale, bound."""

    block: int
    version: int | None  # the stored row's id (None: built in memory, not stored)
    units: object  # int64 per row
    rowids: object  # int64 per row
    codes: object  # int8 (rows, dim)
    scales: object  # float32 per row
    errors: object  # float32 per row: ‖v − scale·code‖, rounded up


def quantize(matrix) -> tuple:
    """(int8 codes, float32 scales, float32 residual norms rounded up) of float32 rows."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    peak = np.abs(matrix).max(axis=1) if len(matrix) else np.zeros(0, dtype=np.float32)
    scales = np.where(peak > 0, peak / 127, 1).astype(np.float32)
    codes = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
    residual = matrix.astype(np.float64) - codes.astype(np.float64) * scales[:, None].astype(np.float64)
    errors = np.linalg.norm(residual, axis=1).astype(np.float32)
    return codes, scales, np.nextafter(errors, np.float32(np.inf))


def exact_cosines(vectors, query64) -> object:
    """float32 of the float64 dot products: independent of how rows are batched."""
    import numpy as np

    return (np.asarray(vectors, dtype=np.float64) @ query64).astype(np.float32)


def _rows_to_block(block: int, units, rowids, vectors, version=None) -> Block:
    import numpy as np

    codes, scales, errors = quantize(vectors)
    return Block(block, version, np.asarray(units, dtype=np.int64), np.asarray(rowids, dtype=np.int64), codes,
                 scales, errors)


def _fetch_rows(conn, sql: str, params) -> tuple:
    """(units, rowids, float32 vectors) of a query yielding (unit, rowid, vec) rows."""
    import numpy as np

    rows = conn.execute(sql, params).fetchall()
    dim = len(rows[0][2]) // 4 if rows else 0
    vectors = np.empty((len(rows), dim), dtype=np.float32)
    for i, row in enumerate(rows):
        vectors[i] = np.frombuffer(row[2], dtype=np.float32)
    return [r[0] for r in rows], [r[1] for r in rows], vectors


def build_block(conn, model: str, block: int) -> Block:
    """A block computed from the chunks and embeddings of its units."""
    low = block << BLOCK_BITS
    return _rows_to_block(block, *_fetch_rows(conn, _BLOCK_ROWS_SQL, (model, low, low + (1 << BLOCK_BITS))))


def update_block(conn, model: str, old: Block, dirty: set[int]) -> Block:
    """``old`` with the rows of its ``dirty`` units computed again (a unit's rows in order)."""
    import numpy as np

    if len(dirty) > (1 << BLOCK_BITS) // 4 or not len(old.units):
        return build_block(conn, model, old.block)
    ids = sorted(dirty)
    fresh = _rows_to_block(old.block, *_fetch_rows(
        conn, "SELECT c.unit, e.rowid, e.vec FROM chunks c CROSS JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
              f" WHERE c.unit IN ({','.join('?' * len(ids))}) ORDER BY c.unit, c.seq", [model, *ids]))
    keep = ~np.isin(old.units, ids)
    parts = [old] if not len(fresh.units) else [old, fresh]
    masks = [keep] if not len(fresh.units) else [keep, slice(None)]
    field = {f: np.concatenate([getattr(b, f)[m] for b, m in zip(parts, masks)])
             for f in ("units", "rowids", "codes", "scales", "errors")}
    order = np.argsort(field["units"], kind="stable")  # a unit's rows are all old or all fresh
    return Block(old.block, None, *(field[f][order] for f in ("units", "rowids", "codes", "scales", "errors")))


def build_blocks(conn, model: str, blocks: set[int]) -> dict[int, Block]:
    """Many blocks at once, from one pass over the model's embeddings in the order they are
    stored (a block's own rows are scattered over the file)."""
    import numpy as np

    places: dict[str, list[tuple[int, int]]] = {}
    for digest, unit, seq in conn.execute("SELECT hash, unit, seq FROM chunks"):
        if unit >> BLOCK_BITS in blocks:
            places.setdefault(digest, []).append((unit, seq))
    keys, rowids, pieces, batch = [], [], [], []
    for rowid, digest, vec in conn.execute("SELECT rowid, hash, vec FROM embeddings WHERE +model = ?", (model,)):
        for unit, seq in places.get(digest, ()):
            keys.append((unit, seq))
            rowids.append(rowid)
            batch.append(vec)
        if len(batch) >= 4096:
            pieces.append(quantize(np.frombuffer(b"".join(batch), dtype=np.float32).reshape(len(batch), -1)))
            batch = []
    if batch:
        pieces.append(quantize(np.frombuffer(b"".join(batch), dtype=np.float32).reshape(len(batch), -1)))
    out = {block: Block(block, None, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.int8),
                        np.zeros(0, np.float32), np.zeros(0, np.float32)) for block in blocks}
    if not keys:
        return out
    order = np.lexsort((np.array([k[1] for k in keys]), np.array([k[0] for k in keys])))
    units = np.array([k[0] for k in keys], dtype=np.int64)[order]
    rowids = np.array(rowids, dtype=np.int64)[order]
    codes, scales, errors = (np.concatenate([p[i] for p in pieces])[order] for i in range(3))
    cuts = np.searchsorted(units >> BLOCK_BITS, sorted(blocks))
    for block, start, stop in zip(sorted(blocks), cuts, np.r_[cuts[1:], len(units)]):
        out[block] = Block(block, None, units[start:stop], rowids[start:stop], codes[start:stop],
                           scales[start:stop], errors[start:stop])
    return out


def store_block(conn, model: str, b: Block) -> None:
    cur = conn.execute(
        "INSERT OR REPLACE INTO vector_blocks(model, block, stale, rows, dim, units, rowids, codes, scales, errors)"
        " VALUES (?,?,0,?,?,?,?,?,?,?)",
        (model, b.block, len(b.units), b.codes.shape[1] if b.codes.ndim == 2 else 0, b.units.tobytes(),
         b.rowids.tobytes(), b.codes.tobytes(), b.scales.tobytes(), b.errors.tobytes()))
    b.version = cur.lastrowid


def load_block(conn, version: int) -> Block:
    import numpy as np

    block, rows, dim, units, rowids, codes, scales, errors = conn.execute(
        "SELECT block, rows, dim, units, rowids, codes, scales, errors FROM vector_blocks WHERE id = ?",
        (version,)).fetchone()
    return Block(block, version, np.frombuffer(units, dtype=np.int64), np.frombuffer(rowids, dtype=np.int64),
                 np.frombuffer(codes, dtype=np.int8).reshape(rows, dim), np.frombuffer(scales, dtype=np.float32),
                 np.frombuffer(errors, dtype=np.float32))


def stored_blocks(conn, model: str) -> dict[int, tuple[int, bool]]:
    """block -> (its row id, whether it is stale)."""
    return {block: (version, bool(stale)) for block, version, stale in
            conn.execute("SELECT block, id, stale FROM vector_blocks WHERE model = ?", (model,))}


def dirty_units(conn, block: int) -> set[int]:
    return {u for (u,) in conn.execute("SELECT unit FROM vector_dirty WHERE block = ?", (block,))}


def wanted_blocks(conn) -> range:
    top = conn.execute("SELECT max(id) FROM units").fetchone()[0]
    return range(0 if top is None else (top >> BLOCK_BITS) + 1)


def current_blocks(conn, model: str, cached: dict[int, Block], *,
                   computed_only: bool = False) -> tuple[list[Block], list[Block]]:
    """(every block of ``model``, those computed here): stored ones read (or kept from
    ``cached`` while their row is unchanged), stale ones brought up to date, missing ones built
    (``computed_only``: the stored, current ones are neither read nor returned)."""
    stored, blocks, computed = stored_blocks(conn, model), [], []
    wanted = wanted_blocks(conn)
    missing = {b for b in wanted if b not in stored}
    built = build_blocks(conn, model, missing) if len(missing) > 8 else {}
    for block in wanted:
        version, stale = stored.get(block, (None, False))
        kept = cached.get(block)
        if version is None:
            b = built.get(block) or build_block(conn, model, block)
        elif not stale and (computed_only or (kept is not None and kept.version == version)):
            if computed_only:
                continue
            b = kept
        else:
            b = kept if kept is not None and kept.version == version else load_block(conn, version)
            if stale:
                b = update_block(conn, model, b, dirty_units(conn, block))
        blocks.append(b)
        if b.version is None:
            computed.append(b)
    return blocks, computed


class PackedVectors:
    """Every vector of one model as blocks, with the whole-store arrays a query needs."""

    def __init__(self, model: str, blocks: list[Block], generation: int):
        import numpy as np

        self.model, self.generation = model, generation
        self.by_block = {b.block: b for b in blocks}
        self.blocks = [b for b in blocks if len(b.units)]
        cat = (lambda name, dtype: np.concatenate([getattr(b, name) for b in self.blocks])
               if self.blocks else np.zeros(0, dtype=dtype))
        self.row_units, self.rowids = cat("units", np.int64), cat("rowids", np.int64)
        self.scales, self.errors = cat("scales", np.float32), cat("errors", np.float32)
        ids = self.row_units
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
        self.units = ids[starts]  # ascending: blocks in order, rows by unit
        self.starts = None if len(starts) == len(ids) else starts
        self.ends = None if self.starts is None else np.r_[starts[1:], len(ids)]
        self.dim = self.blocks[0].codes.shape[1] if self.blocks else 0

    def __len__(self) -> int:
        return len(self.units)

    def first_pass(self, query32) -> object:
        """Every row's cosine from its code (float32; off by at most its bound)."""
        import numpy as np

        out = np.empty(len(self.row_units), dtype=np.float32)
        offsets = np.r_[0, np.cumsum([len(b.codes) for b in self.blocks])].tolist()
        halves = [range(0, len(self.blocks))]
        if (len(out) >= PARALLEL_ROWS and len(self.blocks) > 1 and (os.cpu_count() or 1) > 1
                and os.environ.get("OPENBLAS_NUM_THREADS") == "1"):
            middle = len(self.blocks) // 2
            halves = [range(0, middle), range(middle, len(self.blocks))]

        def widen(blocks: range) -> None:  # each half its own buffer and its own rows of ``out``
            buffer = np.empty((_PASS_ROWS, self.dim), dtype=np.float32)
            for n in blocks:
                codes_of, at = self.blocks[n].codes, offsets[n]
                for start in range(0, len(codes_of), _PASS_ROWS):
                    codes = codes_of[start:start + _PASS_ROWS]
                    wide = buffer[: len(codes)]
                    np.copyto(wide, codes, casting="unsafe")
                    out[at + start:at + start + len(codes)] = wide @ query32

        if len(halves) == 1:
            widen(halves[0])
        else:
            other = _workers().submit(widen, halves[1])
            widen(halves[0])
            other.result()
        out *= self.scales
        return out

    def rows_of(self, positions) -> tuple:
        """(rows, group starts) of the units at ``positions``: every chunk row of each."""
        import numpy as np

        positions = np.asarray(positions, dtype=np.int64)
        if self.starts is None:
            return positions, None
        lengths = self.ends[positions] - self.starts[positions]
        offsets = np.r_[0, np.cumsum(lengths)[:-1]] if len(lengths) else np.zeros(0, dtype=np.int64)
        rows = np.repeat(self.starts[positions] - offsets, lengths) + np.arange(int(lengths.sum()))
        return rows, offsets

    def similarities(self, query_vector, fetch: Fetch, among: Iterable[int] = ()) -> "PackedSimilarities":
        import numpy as np

        query32 = np.asarray(query_vector, dtype=np.float32)
        query64 = query32.astype(np.float64)
        approx, bound = self.first_pass(query32), self.errors * np.float32(np.linalg.norm(query64)) + SLACK
        if self.starts is not None:
            approx, bound = np.maximum.reduceat(approx, self.starts), np.maximum.reduceat(bound, self.starts)
        return PackedSimilarities(self, approx, bound, query64, fetch, among)


class PackedSimilarities:
    """A query's cosines over a :class:`PackedVectors`, exact wherever they are read: ``top(n)``
    (the best ``n``, best first), ``cosine_of``/``cosines_of``, and ``sims`` (every unit, computed
    on first use). Shaped like ``vectors.Similarities``."""

    def __init__(self, pack: PackedVectors, approx, bound, query64, fetch: Fetch, among: Iterable[int] = ()):
        import numpy as np

        self.pack, self.units = pack, pack.units
        self._approx, self._bound, self._query, self._fetch = approx, bound, query64, fetch
        self._exact = np.zeros(len(self.units), dtype=np.float32)
        self._known = np.zeros(len(self.units), dtype=bool)
        self._among = self._positions(among)

    def __len__(self) -> int:
        return len(self.units)

    def __iter__(self):  # (units, sims) = similarities(...)
        return iter((self.units, self.sims))

    @property
    def sims(self):
        """Every unit's exact cosine (reads every float32 vector once)."""
        import numpy as np

        for start in range(0, len(self.units), 8192):
            self._compute(np.arange(start, min(start + 8192, len(self.units))))
        return self._exact

    @property
    def position(self) -> dict[int, int]:
        return {int(u): p for p, u in enumerate(self.units.tolist())}

    @property
    def rescored(self) -> int:
        """How many units have had their exact cosine computed."""
        return int(self._known.sum())

    def top(self, n: int) -> tuple:
        """(positions into ``units``, their exact cosines): the best ``n``, best first; equal
        cosines in unit order."""
        import numpy as np

        count = len(self.units)
        n = min(n, count)
        if n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if n < count:
            lower = self._approx - self._bound
            floor = np.partition(lower, count - n)[count - n]  # the n-th best lower bound
            candidates = np.flatnonzero(self._approx + self._bound >= floor)
        else:
            candidates = np.arange(count)
        self._compute(np.union1d(candidates, self._among))
        exact = self._exact[candidates]
        order = np.lexsort((candidates, -exact))[:n]
        return candidates[order], exact[order]

    def cosine_of(self, unit_id: int) -> float | None:
        return self.cosines_of([unit_id]).get(unit_id)

    def cosines_of(self, unit_ids: Iterable[int]) -> dict[int, float]:
        """unit -> exact cosine, for the units this store has vectors of."""
        positions = self._positions(unit_ids)
        self._compute(positions)
        return dict(zip(self.units[positions].tolist(), self._exact[positions].tolist()))

    def _positions(self, unit_ids: Iterable[int]):
        import numpy as np

        ids = np.fromiter((int(u) for u in unit_ids), dtype=np.int64)
        where = np.searchsorted(self.units, ids)
        found = where < len(self.units)
        found[found] = self.units[where[found]] == ids[found]
        return np.unique(where[found])

    def _compute(self, positions) -> None:
        import numpy as np

        positions = positions[~self._known[positions]]
        if not len(positions):
            return
        rows, offsets = self.pack.rows_of(positions)
        cosines = exact_cosines(self._fetch(self.pack.rowids[rows]), self._query)
        if offsets is not None:
            cosines = np.maximum.reduceat(cosines, offsets)
        self._exact[positions] = cosines
        self._known[positions] = True


def _workers():
    """The one extra thread a large first pass uses (made on first need; a fork starts afresh)."""
    global _pool
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor

        _pool = ThreadPoolExecutor(1, thread_name_prefix="memlane-pass")
    return _pool


def _forget_pool() -> None:
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def fetch_vectors(conn, rowids) -> object:
    """The float32 vectors of ``embeddings`` rows, in the order asked."""
    import numpy as np

    wanted = [int(r) for r in rowids]
    found: dict[int, bytes] = {}
    for start in range(0, len(wanted), _FETCH_BATCH):
        batch = wanted[start:start + _FETCH_BATCH]
        found.update(conn.execute(f"SELECT rowid, vec FROM embeddings WHERE rowid IN ({','.join('?' * len(batch))})",
                                  batch))
    if not wanted:
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(found[r] for r in wanted), dtype=np.float32).reshape(len(wanted), -1)
