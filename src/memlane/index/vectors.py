"""Vectors: embed what the index lacks, in batches, and search exactly with numpy.

Embeddings are content-addressed (model, hash of the embedded text), as in simonw/llm:
re-indexing unchanged text never re-embeds, and a renamed note keeps its vector.
An optional :class:`EmbeddingCache` (another SQLite file) shares vectors between indexes,
which the benchmark harness uses for its many small per-question indexes.

``VectorStore`` is the SQLite index's part (a mixin of ``SQLiteIndex``); ``embed_pending`` works
on any store of the storage seam.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from collections.abc import Callable, Iterable

from ..embed.base import Embedder
from ..records import dataclass, field
from .vector_pack import BLOCK_BITS, PackedSimilarities, PackedVectors, current_blocks, fetch_vectors, store_block


@dataclass
class VectorMatrix:
    """All chunk vectors of one model: row i belongs to unit ``unit_ids[i]``."""

    model: str
    unit_ids: "object"  # numpy int64 array
    matrix: "object"  # numpy float32 (n, dim)
    generation: int = 0
    units: "object" = None  # distinct unit ids, in order
    starts: "object" = None  # first row of each unit, or None when one row per unit
    position: dict = field(default_factory=dict)  # unit id -> index into ``units``

    def __post_init__(self) -> None:
        import numpy as np

        ids = self.unit_ids
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
        self.units = ids[starts]
        self.starts = None if len(starts) == len(ids) else starts
        self.position = {uid: pos for pos, uid in enumerate(self.units.tolist())}

    def similarities(self, query_vector) -> "Similarities":
        """The best cosine of every unit: exact search, max-sim over a unit's chunks. Vectors
        are unit-length, so a dot product is the cosine."""
        import numpy as np

        sims = self.matrix @ np.asarray(query_vector, dtype=np.float32)
        if self.starts is not None:
            sims = np.maximum.reduceat(sims, self.starts)
        return Similarities(self.units, sims, self.position)


@dataclass
class Similarities:
    """A query's cosines: ``units[i]`` has ``sims[i]`` (a store may hold only its best
    candidates here); ``cosine_of`` answers for any unit it knows."""

    units: "object"  # numpy int64 array
    sims: "object"  # numpy float32 array
    position: dict = field(default_factory=dict)

    def __iter__(self):  # (units, sims) = similarities(...)
        return iter((self.units, self.sims))

    def __len__(self) -> int:
        return len(self.sims)

    def cosine_of(self, unit_id: int) -> float | None:
        pos = self.position.get(unit_id)
        return None if pos is None else float(self.sims[pos])

    def cosines_of(self, unit_ids: Iterable[int]) -> dict[int, float]:
        """unit -> cosine, for the units known here."""
        found = ((u, self.cosine_of(u)) for u in unit_ids)
        return {u: c for u, c in found if c is not None}

    def top(self, n: int) -> tuple:
        """(positions into ``units``, their cosines): the best ``n``, best first."""
        import numpy as np

        sims = self.sims
        n = min(n, len(sims))
        best = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        best = best[np.argsort(-sims[best], kind="stable")]  # only the candidates get sorted
        return best, sims[best]


class VectorStore:
    """Embeddings in the SQLite index (a mixin of ``SQLiteIndex``)."""

    def pending_chunks(self, model: str) -> list[tuple[str, str]]:
        """(hash, text) of chunks with no vector yet for ``model``, each hash once."""
        return self.conn.execute(
            "SELECT c.hash, min(c.text) FROM chunks c LEFT JOIN embeddings e"
            " ON e.model = ? AND e.hash = c.hash WHERE e.hash IS NULL GROUP BY c.hash", (model,)).fetchall()

    def pending_count(self, model: str) -> int:
        """How many distinct chunk texts still lack a vector for ``model``."""
        return self.conn.execute(
            "SELECT count(DISTINCT c.hash) FROM chunks c LEFT JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
            " WHERE e.hash IS NULL", (model,)).fetchone()[0]

    def store_embeddings(self, model: str, hashes: list[str], vectors) -> None:
        import numpy as np

        rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes(), h) for h, v in zip(hashes, vectors)]
        with self.transaction():  # only for a text a chunk still has: one edited away while it was embedded
            self.conn.executemany(  # (the model ran outside the lock) would leave a vector for no note
                "INSERT OR REPLACE INTO embeddings(model, hash, vec) SELECT ?, ?, ?"
                " WHERE EXISTS (SELECT 1 FROM chunks WHERE hash = ?)", rows)
            self._bump_generation()
        self._vectors.pop(model, None)

    def vector_matrix(self, model: str) -> VectorMatrix | None:
        """All vectors of ``model``, loaded on first use and kept until the index changes."""
        import numpy as np

        generation = self.generation
        cached = self._vectors.get(model)
        if cached is not None and cached.generation == generation:
            return cached
        rows = self.conn.execute(
            "SELECT c.unit, e.vec FROM chunks c JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
            " ORDER BY c.unit, c.seq", (model,)).fetchall()
        if not rows:
            return None
        unit_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        vm = VectorMatrix(model, unit_ids, matrix, generation)
        self._vectors[model] = vm
        return vm

    def similarities(self, model: str, query_vector, *, among=()) -> PackedSimilarities | None:
        """Every unit's best cosine to ``query_vector``, or None without vectors of ``model``
        (exact: every unit is answered for, ``among`` or not; see ``vector_pack.py``)."""
        pack = self.vector_pack(model)
        if pack is None:
            return None
        return pack.similarities(query_vector, lambda rowids: fetch_vectors(self.conn, rowids), among)

    def vector_pack(self, model: str) -> PackedVectors | None:
        """The packed vectors of ``model``, kept until the index changes; then only the blocks
        whose stored row changed are read again (or brought up to date here)."""
        with self.snapshot():  # the generation and the blocks of one state, whoever packs meanwhile
            generation = self.generation
            cached = self._packs.get(model)
            if cached is not None and cached.generation == generation:
                return cached if len(cached) else None
            blocks, _ = current_blocks(self.conn, model, cached.by_block if cached is not None else {})
            pack = self._packs[model] = PackedVectors(model, blocks, generation)
            return pack if len(pack) else None

    def pack_vectors(self, model: str) -> int:
        """Store the blocks of ``model`` that are missing or stale (after embedding); returns how many."""
        with self.transaction():
            blocks, computed = current_blocks(self.conn, model, {}, computed_only=True)
            for block in computed:
                store_block(self.conn, model, block)
            top = self.conn.execute("SELECT max(id) FROM units").fetchone()[0]
            self.conn.execute("DELETE FROM vector_blocks WHERE model = ? AND block > ?",
                              (model, -1 if top is None else top >> BLOCK_BITS))
            self.conn.execute("DELETE FROM vector_dirty WHERE NOT EXISTS (SELECT 1 FROM vector_blocks v"
                              " WHERE v.block = vector_dirty.block AND v.stale = 1)")
        return len(computed)

    def embedded_units(self) -> dict[str, int]:
        """model -> how many units have at least one vector of it."""
        return dict(self.conn.execute(
            "SELECT e.model, count(DISTINCT c.unit) FROM chunks c JOIN embeddings e ON e.hash = c.hash"
            " GROUP BY e.model").fetchall())


class EmbeddingCache:
    def __init__(self, path: Path | str):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS embeddings (model TEXT, hash TEXT, vec BLOB,"
                          " PRIMARY KEY (model, hash))")

    def get(self, model: str, hashes: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):
            batch = hashes[start:start + 500]
            marks = ",".join("?" * len(batch))
            for h, vec in self.conn.execute(
                    f"SELECT hash, vec FROM embeddings WHERE model = ? AND hash IN ({marks})", [model, *batch]):
                out[h] = vec
        return out

    def put(self, model: str, items: list[tuple[str, bytes]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)", [(model, h, v) for h, v in items])


class EmbedTurn:
    """Processes embedding into one index take turns: an advisory ``flock`` on a file beside
    the index, held while a batch is embedded and stored. A process that finds it held waits;
    whoever takes it after another process stored a batch (the file names the last one to store)
    reads again what is still to embed, so no text is embedded twice. A process that dies
    holding it lets it go (the system releases a flock). ``on_wait``: called once, when this
    process first finds the turn taken; while waiting, ``take``'s ``poll`` is called every
    ``poll_s`` seconds (the progress of the other process's work)."""

    def __init__(self, path: str | Path, *, on_wait: Callable[[], None] | None = None, poll_s: float = 1.0):
        import os

        self.path, self.on_wait, self.poll_s = str(path), on_wait, poll_s
        # a link is not followed (a store writes the file: one to a file elsewhere would be overwritten), a
        # pipe refused (it cannot be read at an offset), a file of another user's too (its owner could hold
        # the turn for good): ``OSError``, and the caller embeds without taking turns
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        self._fd: int | None = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            held = os.fstat(self._fd)
            if hasattr(os, "geteuid") and held.st_uid != os.geteuid():
                raise OSError(f"{self.path} belongs to another user")
            self._seen = self._last()  # before the caller reads what is pending
        except BaseException:
            self.close()
            raise
        self._stores = 0
        self.waited = False  # whether this process ever found the turn taken

    def _last(self) -> bytes:
        import os

        return os.pread(self._fd, 64, 0)

    def take(self, poll: Callable[[], None] | None = None) -> bool:
        """Hold the turn (waiting for another process's); True when this process waited, or
        another process stored a batch since this one last looked: what is pending must be read
        again."""
        import fcntl
        import time

        waited = False
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not self.waited and self.on_wait is not None:
                    self.on_wait()
                self.waited = waited = True
                if poll is not None:
                    poll()
                time.sleep(self.poll_s)
        last = self._last()
        moved, self._seen = last != self._seen, last
        return moved or waited

    def try_take(self) -> bool | None:
        """``take`` without waiting: None when another process holds the turn (nothing taken)."""
        import fcntl

        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        last = self._last()
        moved, self._seen = last != self._seen, last
        return moved

    def give(self, *, stored: bool = False) -> None:
        """Let the turn go; ``stored``: this process stored a batch under it."""
        import fcntl
        import os

        if stored:
            self._stores += 1
            self._seen = f"{os.getpid()}:{id(self)}:{self._stores}".encode()
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, self._seen, 0)
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        import os

        if self._fd is not None:
            os.close(self._fd)  # releases the flock too
            self._fd = None


def embed_pending(index, embedder: Embedder, *, batch_size: int = 32, cache: EmbeddingCache | None = None,
                  progress: Callable[[int, int], None] | None = None, turn: EmbedTurn | None = None) -> int:
    """Embed every chunk of ``index`` (any store) that has no vector for ``embedder``; returns how
    many this call embedded. ``turn``: taken for each batch (other processes embed into the same
    index); after waiting for it, what is still pending is read again, and what the other process
    embedded counts as done in ``progress``."""
    import numpy as np

    pending = index.pending_chunks(embedder.name)
    if not pending:
        return 0
    if cache is not None:
        cached = cache.get(embedder.name, [h for h, _ in pending])
        if cached:
            hashes = list(cached)
            index.store_embeddings(embedder.name, hashes,
                                   [np.frombuffer(cached[h], dtype=np.float32) for h in hashes])
            pending = [(h, t) for h, t in pending if h not in cached]
    total, done, embedded = len(pending), 0, 0

    def others_progress() -> None:  # while another process holds the turn: how far it got
        if progress:
            try:
                progress(max(done, min(total - index.pending_count(embedder.name), total - 1)), total)
            except (sqlite3.Error, OSError):
                pass

    while pending:
        if turn is not None and turn.take(others_progress):
            pending = index.pending_chunks(embedder.name)  # the other process embedded some (or all)
            done = max(done, total - len(pending))
            total = done + len(pending)
            if progress:
                progress(done, total)
            if not pending:
                turn.give()
                break
        stored = False
        try:
            batch, pending = pending[:batch_size], pending[batch_size:]
            vectors = embedder.embed_passages([text[: embedder.max_chars] for _, text in batch])
            hashes = [h for h, _ in batch]
            index.store_embeddings(embedder.name, hashes, vectors)
            stored = True
        finally:
            if turn is not None:
                turn.give(stored=stored)
        if cache is not None:
            cache.put(embedder.name, [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors)])
        done += len(batch)
        embedded += len(batch)
        if progress:
            progress(done, total)
    return embedded


def cosine_by_unit(index, model: str, query_vec) -> dict[int, float]:
    """Every unit's best cosine to ``query_vec``, as a dict."""
    with index.snapshot():
        found = index.similarities(model, query_vec)
        if found is None:
            return {}
        return dict(zip(found.units.tolist(), found.sims.tolist()))
