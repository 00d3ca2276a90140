"""The injection guard's verdicts kept between processes, beside the index: a hook answered in a
fresh process (no daemon yet) would otherwise compile the guard's rules and read every note it
injects again, prompt after prompt (~50-100 ms). A verdict is keyed by the SHA-256 of exactly the
text screened and of the rules that screened it, so an edited note or a changed rule set is
screened afresh; the file is the user's, as the index is. Any failure to read or write it only
means screening again: it never decides anything itself."""

from __future__ import annotations

import os
import sqlite3
import threading
from functools import cache
from collections.abc import Callable

from ..deferred import later
from ..index.connection import keep_private
from .. import logs
from ..digest import sha256

log = logs.get(__name__)

#: verdicts kept per file; past it the oldest half goes
MAX_ROWS = 40_000


@cache
def rules_version() -> str | None:
    """A digest of the guard's code — its rules and the readings it screens — and of the
    Python and Unicode tables it reads with (a changed guard or interpreter screens everything
    again); None when its source cannot be read (then nothing is kept). Read as bytes: nothing
    is compiled."""
    import sys
    import unicodedata
    from pathlib import Path

    here = Path(__file__).parent
    digest = sha256(f"{sys.version}\0{unicodedata.unidata_version}".encode())
    try:
        for name in ("injection.py", "sanitize.py", "exits.py", "secrets.py"):
            digest.update((here / name).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()[:16]


def key_of(text: str) -> str:
    return sha256(f"{rules_version()}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()


class Verdicts:
    """``risks(texts, screen)``: each text's verdict (a reason, or None), from the file when it
    holds one, else from ``screen`` (then kept)."""

    def __init__(self, path: str | None):
        self.path = path
        self._seen: dict[str, str] = {}  # key -> verdict ("" safe) read or kept by this process
        self._conn: sqlite3.Connection | None = None  # kept open: a resident process reads and writes often
        self._lock = threading.Lock()
        self.screened = 0  # texts this process screened itself (no verdict kept for them yet)
        self.ahead: dict[int, float] = {}  # units screened ahead (inject.layers.screen_ahead): id -> its row's stamp

    def risks(self, texts: list[str], screen: Callable[[str], str | None]) -> list[str | None]:
        if rules_version() is None:
            return [screen(t) for t in texts]
        keys = [key_of(t) for t in texts]
        # one look each: the daemon's background round (``screen_ahead``) calls this outside the
        # workspace's lock, so another thread may clear what this one read a moment before
        known = {k: v for k, v in zip(keys, map(self._seen.get, keys)) if v is not None}
        unseen = [k for k in keys if k not in known]
        if unseen:  # the file only for what this process has not seen: a resident one rarely reads it
            known.update(self._read(unseen))
        fresh = {}
        out = []
        for key, text in zip(keys, texts):
            if key in known:
                out.append(known[key] or None)
            else:
                verdict = screen(text)
                fresh[key] = verdict or ""
                out.append(verdict)
        self._seen.update(known)
        if fresh:
            self.screened += len(fresh)
            self._seen.update(fresh)
            later(lambda: self._write(fresh))
        if len(self._seen) > MAX_ROWS:
            self._seen.clear()
        return out

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, or a new one (after a failure, the next call opens afresh)."""
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _failed(self, exc: BaseException, what: str) -> None:
        log.debug("screening verdicts not %s (%s)", what, exc)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _connect(self) -> sqlite3.Connection | None:
        if not self.path or self.path == ":memory:":
            return None
        try:
            if os.stat(self.path).st_uid != os.getuid():  # only a file of this user's own is believed
                log.warning("screening verdicts in %s belong to another user: not used", self.path)
                return None
            keep_private(self.path)  # its verdicts quote notes: the user's alone, as the index is
        except FileNotFoundError:
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError:
                pass  # SQLite says why when it opens the file
        conn = sqlite3.connect(self.path, timeout=0.05, isolation_level=None, check_same_thread=False)
        # a cache: write-ahead logging without a sync per commit (a crash loses the newest verdicts, never the file)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, verdict TEXT NOT NULL)")
        return conn

    def _read(self, keys: list[str]) -> dict[str, str]:
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return {}
                marks = ",".join("?" * len(keys))
                return dict(conn.execute(f"SELECT key, verdict FROM verdicts WHERE key IN ({marks})", keys))
            except (sqlite3.Error, OSError) as exc:
                self._failed(exc, "read: screening again")
                return {}

    def _write(self, fresh: dict[str, str]) -> None:
        with self._lock:
            try:
                self._write_now(fresh)
            except (sqlite3.Error, OSError) as exc:
                self._failed(exc, "kept")

    def _write_now(self, fresh: dict[str, str]) -> None:
        conn = self._connection()
        if conn is not None:
            with conn:  # one transaction for the lot (autocommit would sync once per verdict)
                conn.execute("BEGIN")
                conn.executemany("INSERT OR REPLACE INTO verdicts (key, verdict) VALUES (?, ?)", fresh.items())
                # rowids only grow (a replaced verdict gets a new one): their span bounds the count,
                # read from the table's two ends instead of counting its rows at every write
                low, high = conn.execute("SELECT min(rowid), max(rowid) FROM verdicts").fetchone()
                if high - low >= MAX_ROWS:
                    conn.execute("DELETE FROM verdicts WHERE rowid <= ?", (high - MAX_ROWS // 2,))
                    # what this process remembers as kept may be gone from the file now: read it again,
                    # and screen ahead again what the file no longer holds
                    self._seen.clear()
                    self.ahead.clear()
