"""Opening a derived SQLite index safely: WAL, a busy timeout, healing — and never touching a
file memlane did not create.

Every index memlane keeps (the notes' and each domain's) is derived from files, so a corrupt
one is set aside and rebuilt. But an index path may have been mistyped (or, before repository
configs were screened, chosen by a hostile repository): memlane writes to, moves or renames an
index file only when it is memlane's own —

- it lies in memlane's cache folder (memlane made that folder), or
- memlane left its marker beside it (``<index>.memlane``, written when it created the file), or
- it is a SQLite file stamped with memlane's ``application_id`` (or, from before the stamp,
  one holding memlane's tables).

Anything else is refused with :class:`IndexRefused`, and the file stays exactly as it was.
Corrupt copies are kept for inspection, the newest ``KEEP_CORRUPT`` only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from collections.abc import Callable

from ..errors import IndexRefused
from .. import logs

log = logs.get("memlane.index")

APPLICATION_ID = 0x4D4C4E31  # "MLN1" in the SQLite header: this file is a memlane index
MARKER_SUFFIX = ".memlane"
KEEP_CORRUPT = 2
_SQLITE_MAGIC = b"SQLite format 3\x00"
_MEMLANE_TABLES = {"units", "sections", "turns", "symbols"}  # one of them, with ``meta``: a memlane index


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc``, raised by sqlite3, says the file is damaged. A damaged schema can make
    SQLite's own message raw bytes ("malformed database schema (…)"), which Python cannot decode:
    that arrives as a UnicodeDecodeError."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    text = str(exc).lower()
    return any(s in text for s in ("malformed", "not a database", "corrupt", "disk image", "fts5: corrupt"))


def _in_cache(path: Path) -> bool:
    from ..config import cache_home

    try:
        return path.is_relative_to(Path(os.path.realpath(cache_home())))
    except OSError:
        return False


def _header_says_ours(path: Path) -> bool | None:
    """True: memlane's application_id; False: something else; None: a SQLite file from before
    the stamp (or no header at all) — the caller looks closer."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError:
        return False
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return None
    app_id = int.from_bytes(head[68:72], "big")
    if app_id == APPLICATION_ID:
        return True
    return None if app_id == 0 else False


def _has_memlane_tables(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return "meta" in names and bool(names & _MEMLANE_TABLES)


def owned(path: str | Path) -> bool:
    """Whether memlane may write, move or rebuild the index file at ``path`` (see module doc).
    A path with no file yet, or an empty file (another memlane process just created it), is."""
    real = Path(os.path.realpath(path))
    if not real.exists():
        return True
    if not real.is_file():
        return False
    if real.stat().st_size == 0 or _in_cache(real) or Path(str(real) + MARKER_SUFFIX).is_file():
        return True
    verdict = _header_says_ours(real)
    return verdict if verdict is not None else _has_memlane_tables(real)


def check_owned(path: str | Path) -> None:
    if path != ":memory:" and not owned(path):
        raise IndexRefused(f"{path} exists and is not a memlane index; memlane will not write, move or replace it. "
                           "Choose another index.path in your config (or remove the setting to use the default "
                           "in the cache folder).")


def connect(path: str, setup: Callable[[sqlite3.Connection], None], *, busy_timeout_ms: int = 5000,
            autocommit: bool = True) -> sqlite3.Connection:
    """Open (creating if needed) the index at ``path`` and let ``setup`` bring its schema up to
    date. Raises ``IndexRefused`` for a file that is not memlane's."""
    check_owned(path)
    fresh = path != ":memory:" and not Path(path).exists()
    if path != ":memory:":
        Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh:  # the index holds every note's text (private ones too): the user's alone, as is its WAL
        try:
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:  # SQLite says why when it opens the file
            log.info("could not create %s: %s", path, exc)
    elif path != ":memory:":
        keep_private(path)
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, check_same_thread=False,
                           **({"isolation_level": None} if autocommit else {}))
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if fresh and not _in_cache(Path(os.path.realpath(path))):
            _write_marker(path)
    setup(conn)
    if not autocommit:
        conn.commit()
    return conn


def keep_private(path: str) -> None:
    """A database file made before memlane created it for its user alone (or copied with other
    modes): the file and its WAL files, when they are this user's, become readable by this user
    only (a warning when the file system refuses)."""
    for name in (path, path + "-wal", path + "-shm"):
        try:
            st = os.stat(name)
        except OSError:
            continue  # no such file: SQLite says what matters when it opens it
        if not _others_may_read(st):
            continue
        try:
            os.chmod(name, 0o600)
            log.info("%s was readable by others (mode %o): now the owner's alone", name, st.st_mode & 0o777)
        except OSError as exc:
            log.warning("%s is readable by others (mode %o) and could not be made the owner's alone: %s", name,
                        st.st_mode & 0o777, exc)


def private_file(fd: int) -> None:
    """An open log file of this user's that others can read becomes the user's alone; a device,
    a pipe or a symlink's other target (a log pointed at /dev/null) is left as it is, and a
    refusal is only logged."""
    try:
        if _others_may_read(os.fstat(fd)):
            os.fchmod(fd, 0o600)
    except OSError as exc:
        log.info("a log file's mode was not changed: %s", exc)


def _others_may_read(st: os.stat_result) -> bool:
    """A regular file of this user's with any permission for others (never a device, a pipe, or
    another user's file)."""
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o077) and st.st_uid == os.getuid()


def _write_marker(path: str) -> None:
    try:
        Path(path + MARKER_SUFFIX).write_text(
            "This marker says that memlane created the index file beside it (a derived, disposable index).\n",
            encoding="utf-8")
    except OSError as exc:
        log.info("could not write the index marker beside %s: %s", path, exc)


def set_aside(path: str, exc: BaseException) -> None:
    """Move a corrupt index (and its -wal/-shm) aside for inspection, keeping only the newest
    ``KEEP_CORRUPT`` such copies. Refuses a file that is not memlane's."""
    check_owned(path)
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{time.time_ns() % 1_000_000_000:09d}"
    for suffix in ("", "-wal", "-shm"):
        old = Path(path + suffix)
        if old.exists():
            old.replace(Path(f"{path}.corrupt-{stamp}{suffix}"))
    log.warning("index %s was corrupt (%s); moved aside and rebuilding", path, exc)
    _prune_corrupt(path)


def _prune_corrupt(path: str) -> None:
    folder, name = Path(path).parent, Path(path).name
    copies = sorted((p for p in folder.glob(f"{name}.corrupt-*") if not p.name.endswith(("-wal", "-shm"))),
                    key=lambda p: p.name, reverse=True)
    for old in copies[KEEP_CORRUPT:]:
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(str(old) + suffix).unlink(missing_ok=True)
            except OSError:
                pass


def open_healing(path: str, setup: Callable[[sqlite3.Connection], None], *, busy_timeout_ms: int = 5000,
                 autocommit: bool = True, probe: str | None = None) -> tuple[sqlite3.Connection, bool]:
    """``connect``, and when the file turns out corrupt (opening it, or running ``probe``), set
    it aside and start afresh. Returns the connection and whether it healed."""
    conn = None
    try:
        conn = connect(path, setup, busy_timeout_ms=busy_timeout_ms, autocommit=autocommit)
        if probe:
            conn.execute(probe).fetchone()
        return conn, False
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # the latter: see is_corruption
        if conn is not None:
            conn.close()
        if path == ":memory:" or not is_corruption(exc):
            raise
        set_aside(path, exc)
        return connect(path, setup, busy_timeout_ms=busy_timeout_ms, autocommit=autocommit), True
