"""``PostgresStorage``: the storage seam (``index/storage.py``) on PostgreSQL with pgvector.

One namespace of one database: every row it reads or writes carries ``team = namespace``, and
every statement says so (row-level security is the boundary between teams; the explicit filter
keeps a role that belongs to several teams, or the superuser of a test, inside one). The class
is assembled like ``SQLiteIndex``, one mixin per concern: ``pg_units.py`` (units, facts, the
parse cache), ``pg_search.py`` (BM25 over the weighted tsvector, vectors with HNSW or exact
search), ``pg_graph.py`` (the stored link graph and usage). This module holds what they share:
connections, transactions, meta, the generation counter and the cache of derived reads.

Connections come from a psycopg pool (autocommit). ``transaction()`` checks one out for the
calling thread, opens a transaction and takes this namespace's writer lock — a row lock on its
``meta`` row, which row-level security keeps other teams from taking — so writers of one team take
turns as SQLite's ``BEGIN IMMEDIATE`` makes them, and a read-then-write stays one transaction.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from collections.abc import Iterable

from ..index.storage import DerivedReads
from .connect import display_dsn, make_pool
from .pg_graph import GraphRows, UsageRows
from .pg_search import FullTextSearch, VectorSearch
from .pg_units import UnitRows
from .. import logs

log = logs.get("memlane.team")

FTS_COLUMNS = ("name", "description", "keywords", "body")


class PostgresStorage(UnitRows, FullTextSearch, VectorSearch, GraphRows, UsageRows, DerivedReads):
    """The units of one namespace (a team) of a memlane PostgreSQL database.

    ``pool``: a psycopg pool to borrow (not closed here); else one is made for ``dsn``.
    ``exact_max``: up to this many vectors of a model, similarity is exact (every unit's cosine,
    as SQLite answers); above it, HNSW finds the ``hnsw_candidates`` nearest. ``generation_ttl``:
    how long (s) a read of the generation counter is trusted outside a transaction (a team scope
    on a remote database saves round trips; 0: always read)."""

    def __init__(self, dsn: str | None = None, *, namespace: str, pool=None,
                 fts_weights: dict[str, float] | None = None, busy_timeout_ms: int = 5000,
                 exact_max: int = 5000, hnsw_candidates: int = 200, generation_ttl: float = 0.0):
        if not namespace:
            raise ValueError("a PostgresStorage needs a namespace (the team's name)")
        self.namespace = namespace
        self._dsn = dsn
        self._pool = pool
        self._own_pool = pool is None
        self.path = f"{display_dsn(dsn) if dsn else 'postgresql'}#{namespace}"
        self.fts_weights = {c: 1.0 for c in FTS_COLUMNS} | (fts_weights or {})
        self.busy_timeout_ms = busy_timeout_ms
        self.exact_max, self.hnsw_candidates = exact_max, hnsw_candidates
        self.exact_scan = False  # past exact_max: the nearest by a full scan instead of HNSW (benchmarks)
        self.generation_ttl = generation_ttl
        self.healed = False
        self.heals = 0
        self._local = threading.local()
        self._derived: dict[str, tuple[int, object]] = {}
        self._generation_seen: tuple[int, float] | None = None

    # -- connections ----------------------------------------------------------------
    @property
    def pool(self):
        if self._pool is None:
            self._pool = make_pool(self._dsn)
        return self._pool

    @contextmanager
    def _conn(self):
        """This thread's transaction connection, or one from the pool for one call."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self.pool.connection() as conn:
            yield conn

    def _rows(self, sql: str, params=()) -> list[tuple]:
        with self._conn() as conn:
            return conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params=()):
        with self._conn() as conn:
            return conn.execute(sql, params).fetchone()

    def _run(self, sql: str, params=()) -> int:
        with self._conn() as conn:
            return conn.execute(sql, params).rowcount

    def _many(self, sql: str, rows: list) -> None:
        if rows:
            with self._conn() as conn, conn.cursor() as cur:
                cur.executemany(sql, rows)

    def _insert(self, table: str, columns: tuple[str, ...], rows: Iterable[tuple], batch: int = 1000) -> None:
        """Rows in bulk, one statement per ``batch``: ``INSERT … SELECT FROM unnest(arrays)``
        (COPY is refused under row-level security). ``columns``: "name:type" each."""
        names = [c.partition(":")[0] for c in columns]
        types = [c.partition(":")[2] or "text" for c in columns]
        arrays = ", ".join(f"%s::{'text' if kind in ('jsonb', 'tsvector') else kind}[]" for kind in types)
        values = ", ".join(f"x.c{i}::{kind}" for i, kind in enumerate(types))
        sql = (f"INSERT INTO {table} ({', '.join(names)}) SELECT {values} FROM unnest({arrays})"
               f" AS x({', '.join(f'c{i}' for i in range(len(names)))})")
        pending: list[tuple] = []
        with self._conn() as conn:
            for row in rows:
                pending.append(row)
                if len(pending) >= batch:
                    conn.execute(sql, [_array(col, kind) for col, kind in zip(zip(*pending), types)])
                    pending = []
            if pending:
                conn.execute(sql, [_array(col, kind) for col, kind in zip(zip(*pending), types)])

    @contextmanager
    def snapshot(self):
        """The storage seam's read state: each search here is answered whole by the server in one
        statement and read at once (no lazily fetched rows), so there is nothing to hold."""
        yield self

    @contextmanager
    def transaction(self):
        """One write transaction holding this namespace's writer lock; inside one already open
        in this thread, it joins it."""
        if getattr(self._local, "conn", None) is not None:
            yield self
            return
        with self.pool.connection() as conn:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = {max(1, int(self.busy_timeout_ms))}")
                conn.execute("INSERT INTO meta (team, key, value) VALUES (%s, 'writer', '') ON CONFLICT DO NOTHING",
                             (self.namespace,))
                conn.execute("SELECT 1 FROM meta WHERE team = %s AND key = 'writer' FOR UPDATE", (self.namespace,))
                self._local.conn = conn
                try:
                    yield self
                finally:
                    self._local.conn = None
                    self._generation_seen = None

    @contextmanager
    def _reading(self):
        """A read-only transaction (for ``SET LOCAL``), or the open write transaction."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self.pool.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        if self._own_pool and self._pool is not None:
            self._pool.close()
            self._pool = None

    def check_integrity(self) -> str | None:
        """None when the namespace answers and its counts agree; else the problem."""
        try:
            row = self._one("SELECT (SELECT count(*) FROM units WHERE team = %(t)s),"
                            " (SELECT count(*) FROM chunks c WHERE c.team = %(t)s"
                            "    AND NOT EXISTS (SELECT 1 FROM units u WHERE u.id = c.unit AND u.team = %(t)s))",
                            {"t": self.namespace})
        except Exception as exc:  # noqa: BLE001 - whatever keeps it from answering is the finding
            return f"{type(exc).__name__}: {exc}"
        return None if row[1] == 0 else f"{row[1]} chunk(s) belong to no unit of {self.namespace}"

    def heal(self, exc: BaseException):
        raise exc  # the database is the truth: nothing to rebuild from here

    # -- meta -----------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._one("SELECT value FROM meta WHERE team = %s AND key = %s", (self.namespace, key))
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._run("INSERT INTO meta (team, key, value) VALUES (%s, %s, %s)"
                  " ON CONFLICT (team, key) DO UPDATE SET value = EXCLUDED.value", (self.namespace, key, value))
        if key == "generation":
            self._generation_seen = None

    @property
    def generation(self) -> int:
        """Moves whenever the units, the graph or the vectors change: derived reads are kept until then."""
        seen = self._generation_seen
        now = time.monotonic()
        outside = getattr(self._local, "conn", None) is None
        if outside and seen is not None and now - seen[1] < self.generation_ttl:
            return seen[0]
        value = int(self.get_meta("generation", "0") or 0)
        self._generation_seen = (value, now) if outside else None
        return value

    def _bump_generation(self, key: str = "generation") -> None:
        self._run("INSERT INTO meta (team, key, value) VALUES (%s, %s, '1') ON CONFLICT (team, key)"
                  " DO UPDATE SET value = ((coalesce(meta.value, '0'))::bigint + 1)::text", (self.namespace, key))
        self._generation_seen = None

    def counts(self) -> dict[str, int]:
        row = self._one("SELECT (SELECT count(*) FROM units WHERE team = %(t)s),"
                        " (SELECT count(*) FROM chunks WHERE team = %(t)s),"
                        " (SELECT count(*) FROM embeddings WHERE team = %(t)s)", {"t": self.namespace})
        return {"units": row[0], "chunks": row[1], "embeddings": row[2]}

    def drop_namespace(self) -> None:
        """Remove every derived row of this namespace (benchmarks and tests; never the notes)."""
        with self.transaction():
            for table in ("hits", "usage", "parsed", "constellations", "graph_nodes", "missing_links", "edges",
                          "embeddings", "chunks", "units"):
                self._run(f"DELETE FROM {table} WHERE team = %s", (self.namespace,))
            self._run("DELETE FROM meta WHERE team = %s AND key <> 'writer'", (self.namespace,))
        self._derived.clear()


def _element(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array(values, kind: str = "") -> str:
    """A column of rows as one array literal (psycopg's own list dumping is the slow part of a
    bulk write; the server casts the literal)."""
    if kind in ("int", "bigint") and None not in values:
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join(map(_element, values)) + "}"


__all__ = ["PostgresStorage"]
