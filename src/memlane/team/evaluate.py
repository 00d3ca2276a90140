"""The evaluation harness on the PostgreSQL backend: each scope of a benchmark (a haystack, a
repository's notes) in a namespace of its own, made on first use and dropped afterwards — the
same figures as on SQLite, measured (``memlane eval --postgres DSN``, ``bench/team.py``)."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from collections.abc import Callable, Iterator


@contextmanager
def namespaces(dsn: str, *, fts_weights: dict[str, float] | None = None) -> Iterator[Callable[[str], object]]:
    """A factory of fresh namespaces of the database at ``dsn`` (one pool for all of them); every
    namespace it made is dropped on exit. The role needs rights on any namespace: a superuser, or
    the database's owner."""
    from .connect import make_pool
    from .postgres import PostgresStorage

    pool = make_pool(dsn, max_size=2, wait=True)
    made: list[PostgresStorage] = []
    run = uuid.uuid4().hex[:8]

    def storage(scope: str) -> PostgresStorage:
        store = PostgresStorage(dsn, namespace=f"eval_{run}_{len(made)}", pool=pool, fts_weights=fts_weights)
        made.append(store)
        return store

    try:
        yield storage
    finally:
        try:
            for store in made:
                store.drop_namespace()
        finally:
            pool.close()


__all__ = ["namespaces"]
