"""Vectors (I3): embed what the index lacks, in batches, and search exactly with numpy.

Embeddings are content-addressed (model, hash of the embedded text), as in simonw/llm:
re-indexing unchanged text never re-embeds, and a renamed note keeps its vector.
An optional :class:`EmbeddingCache` (another SQLite file) shares vectors between indexes,
which the benchmark harness uses for its many small per-question indexes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from ..embed.base import Embedder
from .db import Index


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


def embed_pending(index: Index, embedder: Embedder, *, batch_size: int = 32,
                  cache: EmbeddingCache | None = None,
                  progress: Callable[[int, int], None] | None = None) -> int:
    """Embed every chunk of ``index`` that has no vector for ``embedder``; returns how many."""
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
    total = len(pending)
    for start in range(0, total, batch_size):
        batch = pending[start:start + batch_size]
        vectors = embedder.embed_passages([text[: embedder.max_chars] for _, text in batch])
        hashes = [h for h, _ in batch]
        index.store_embeddings(embedder.name, hashes, vectors)
        if cache is not None:
            cache.put(embedder.name, [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors)])
        if progress:
            progress(min(start + batch_size, total), total)
    return total


def unit_similarities(index: Index, model: str, query_vec):
    """(unit ids, best cosine per unit) over the whole index: exact search, max-sim over
    a unit's chunks. Vectors are unit-length, so a dot product is the cosine."""
    import numpy as np

    vm = index.vector_matrix(model)
    if vm is None:
        return None
    sims = vm.matrix @ np.asarray(query_vec, dtype=np.float32)
    if vm.starts is None:
        return vm.units, sims
    return vm.units, np.maximum.reduceat(sims, vm.starts)


def cosine_by_unit(index: Index, model: str, query_vec) -> dict[int, float]:
    found = unit_similarities(index, model, query_vec)
    if found is None:
        return {}
    return dict(zip(found[0].tolist(), found[1].tolist()))
