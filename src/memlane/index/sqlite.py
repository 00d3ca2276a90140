"""``SQLiteIndex``: the embedded backend of the storage seam (``index/storage.py``) — one
derived SQLite file per store set, in WAL mode with a busy timeout (many hook processes read it
at once), rebuilt incrementally by content hash, and healed by a rebuild when it is corrupt.

The class is assembled from one mixin per concern, each in its own module:
``units.py`` (units, their facts, the parse cache), ``fulltext.py`` (FTS5 BM25),
``vectors.py`` (embeddings and exact similarity), ``graph_store.py`` (the stored link graph and
its queries) and ``usage_store.py`` (usage rows and lifecycle states). This module holds what
they share: the connection and its healing, meta values, the generation counter and the cache
of derived reads.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterable

from .connection import connect, open_healing, set_aside
from .fulltext import FullText
from .graph_store import GraphStore
from .schema import FTS_COLUMNS, migrate
from .storage import DerivedReads
from .units import UnitRows
from .usage_store import UsageStore
from .vectors import VectorStore
from .. import logs

log = logs.get("memlane.index")

BUSY_TIMEOUT_MS = 5000
CHECK_WAIT_MS = 200  # an integrity check waits this long for another process's lock, then says so
NOT_CHECKED_LOCKED = "not checked: another process holds the index's lock (recall reads it as it is)"


class SQLiteIndex(UnitRows, FullText, VectorStore, GraphStore, UsageStore, DerivedReads):
    """One SQLite file (or ``:memory:``) holding the units of a store set."""

    def __init__(self, path: Path | str, *, fts_weights: dict[str, float] | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.fts_weights = {c: 1.0 for c in FTS_COLUMNS} | (fts_weights or {})
        self._conn: sqlite3.Connection | None = None
        self._vectors: dict = {}
        self._packs: dict = {}  # model -> vector_pack.PackedVectors
        self._tokenizer = None  # postings.Tokenizer, made on first use
        self._derived: dict[str, tuple[int, object]] = {}
        self.healed = False
        self.heals = 0

    # -- connection ---------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)

    def _open(self) -> sqlite3.Connection:
        conn, healed = open_healing(self.path, self._setup, busy_timeout_ms=self.busy_timeout_ms,
                                    probe="SELECT count(*) FROM units")
        if healed:
            self._mark_healed()
        return conn

    def heal(self, exc: BaseException) -> sqlite3.Connection:
        """Move the corrupt file aside (kept for inspection) and start a fresh index."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        set_aside(self.path, exc)
        self._mark_healed()
        self._conn = connect(self.path, self._setup, busy_timeout_ms=self.busy_timeout_ms)
        return self._conn

    def _mark_healed(self) -> None:
        self.healed = True
        self.heals += 1  # a resident process rebuilds at once when this moves (see Memory.refresh)
        self._vectors.clear()
        self._packs.clear()
        self._derived.clear()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def check_integrity(self) -> str | None:
        """None when healthy, ``NOT_CHECKED_LOCKED`` while another process holds the index's lock
        (the check waits for it a moment, not the writers' timeout), else the problem found
        (SQLite quick_check + FTS5 integrity-check)."""
        waits = self.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        self.conn.execute(f"PRAGMA busy_timeout = {CHECK_WAIT_MS}")
        try:
            row = self.conn.execute("PRAGMA quick_check").fetchone()
            if row and row[0] != "ok":
                return f"quick_check: {row[0]}"
            self.conn.execute("INSERT INTO units_fts(units_fts) VALUES('integrity-check')")
        except sqlite3.OperationalError as exc:
            return NOT_CHECKED_LOCKED if "locked" in str(exc) or "busy" in str(exc) else str(exc)
        except sqlite3.DatabaseError as exc:
            return str(exc)
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(waits)}")
        return None

    @contextmanager
    def transaction(self):
        """One write transaction (``BEGIN IMMEDIATE``: the write lock is taken at once). Inside one
        already open, it joins it: what reads and then writes in one go stays one transaction."""
        if self.conn.in_transaction:
            yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    @contextmanager
    def snapshot(self):
        """One read transaction: what several reads see is one state of the index, whoever
        commits between them (WAL readers never block writers). Inside a transaction, joins it."""
        if self.conn.in_transaction:
            yield self
            return
        self.conn.execute("BEGIN")
        try:
            yield self
        except BaseException:
            if self.conn.in_transaction:  # a damaged index may have ended it already
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        """Moves whenever the units, the graph or the vectors change: derived reads are kept until then."""
        return int(self.get_meta("generation", "0") or 0)

    def _bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation + 1))

    def _rows_for(self, sql: str, unit_ids: Iterable[int], batch_size: int = 400) -> list[tuple]:
        """Rows of ``sql`` with every ``{ids}`` bound to the unit ids, in batches (SQLite caps
        the number of parameters)."""
        ids = list(dict.fromkeys(unit_ids))
        rows: list[tuple] = []
        for start in range(0, len(ids), batch_size):
            batch = ids[start:start + batch_size]
            marks = ",".join("?" * len(batch))
            rows += self.conn.execute(sql.format(ids=marks), batch * sql.count("{ids}")).fetchall()
        return rows

    def counts(self) -> dict[str, int]:
        c = self.conn
        return {
            "units": c.execute("SELECT count(*) FROM units").fetchone()[0],
            "chunks": c.execute("SELECT count(*) FROM chunks").fetchone()[0],
            "embeddings": c.execute("SELECT count(*) FROM embeddings").fetchone()[0],
        }


Index = SQLiteIndex  # the name most callers know it by
