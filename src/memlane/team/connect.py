"""Reaching the team database: the connection pool, the vector type, and errors in plain words.

Every connection fails fast: libpq's ``connect_timeout`` (whole seconds, at least 2; without it
libpq waits 130 s), a statement timeout, and a pool whose ``getconn`` waits at most ``timeout``.
Connections are autocommit (a read is one round trip); writes open an explicit transaction.
psycopg reports a connection failure with no SQLSTATE, and through a pool only as a timeout
with the cause in the pool's log, so ``explain`` turns both into what happened and what to do.
"""

from __future__ import annotations

import struct
from typing import Any

from .. import logs
from ..errors import TeamStoreError

log = logs.get("memlane.team")

CONNECT_TIMEOUT_S = 2  # libpq's floor
STATEMENT_TIMEOUT_MS = 10_000  # whatever a statement does, it ends: an abandoned recall frees its connection
INSTALL_HINT = "the team store needs psycopg: pip install 'memlane[team]'"


def require_driver():
    """psycopg, or ``TeamStoreError`` saying what to install."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise TeamStoreError(f"{INSTALL_HINT} ({exc})") from None
    return psycopg


def display_dsn(dsn: str | None) -> str:
    """The DSN without its password, for messages, logs and ``Storage.path``."""
    if not dsn:
        return "(no dsn)"
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
    except Exception:  # noqa: BLE001 - a malformed DSN is shown as "(unreadable dsn)"
        return "(unreadable dsn)"
    user, host, db = parts.get("user", ""), parts.get("host", ""), parts.get("dbname", "")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user + '@' if user else ''}{host}{port}/{db}"


def conninfo(dsn: str, *, connect_timeout: int = CONNECT_TIMEOUT_S, **extra: Any) -> str:
    """``dsn`` with memlane's timeouts and application name added (what the DSN says wins)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        given = conninfo_to_dict(dsn)
    except Exception as exc:  # noqa: BLE001 - psycopg.ProgrammingError: a malformed DSN
        # never libpq's words: they quote the DSN around the fault, a password's words included
        raise TeamStoreError("the team DSN cannot be read: check that it is a postgresql:// URL or key=value pairs, "
                             "with a value that holds spaces in single quotes") from None
    wanted = {"connect_timeout": max(CONNECT_TIMEOUT_S, int(connect_timeout)), "application_name": "memlane",
              **extra}
    return make_conninfo(dsn, **{k: v for k, v in wanted.items() if k not in given})


# -- the vector type (numpy <-> pgvector), text and binary, without the pgvector package --------
def register_vector(conn) -> bool:
    """Teach ``conn`` to send numpy arrays as ``vector`` and read ``vector`` as numpy; False when
    numpy or the extension is missing (keyword-only still works)."""
    try:
        import numpy as np
    except ImportError:
        return False
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        return False
    info.register(conn)

    class VectorText(Dumper):
        oid = info.oid

        def dump(self, obj):
            return ("[" + ",".join(f"{x:.9g}" for x in np.asarray(obj, dtype=np.float32)) + "]").encode()

    class VectorBinary(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj):
            arr = np.asarray(obj, dtype=">f4")
            return struct.pack(">HH", arr.shape[0], 0) + arr.tobytes()

    class VectorTextLoader(Loader):
        def load(self, data):
            return np.array(bytes(data)[1:-1].split(b","), dtype=np.float32)

    class VectorBinaryLoader(Loader):
        format = Format.BINARY

        def load(self, data):
            dim = struct.unpack_from(">H", data)[0]
            return np.frombuffer(bytes(data), dtype=">f4", count=dim, offset=4).astype(np.float32)

    for dumper in (VectorText, VectorBinary):
        conn.adapters.register_dumper(np.ndarray, dumper)
    conn.adapters.register_loader(info.oid, VectorTextLoader)
    conn.adapters.register_loader(info.oid, VectorBinaryLoader)
    return True


def _configure(statement_timeout_ms: int):
    def configure(conn) -> None:
        conn.execute(f"SET statement_timeout = {int(statement_timeout_ms)}")
        register_vector(conn)
        if not conn.autocommit:
            conn.commit()  # the pool refuses a connection left in a transaction
    return configure


def make_pool(dsn: str, *, min_size: int = 1, max_size: int = 4, timeout: float = 2.0,
              connect_timeout: int = CONNECT_TIMEOUT_S, statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
              wait: bool = False):
    """A pool of autocommit connections to ``dsn``. ``timeout``: the most ``getconn`` waits.
    ``wait``: open the first connection now (a wrong DSN fails here, explained), else in the
    background (a daemon starts at once even when the database is down)."""
    require_driver()
    import logging

    from psycopg_pool import ConnectionPool, PoolTimeout

    pool_log = logging.getLogger("psycopg.pool")
    if pool_log.level == logging.NOTSET:  # a reconnect attempt per second while down: memlane says it once
        pool_log.setLevel(logging.ERROR)

    pool = ConnectionPool(conninfo(dsn, connect_timeout=connect_timeout), min_size=min_size, max_size=max_size,
                          timeout=timeout, open=False, kwargs={"autocommit": True},
                          configure=_configure(statement_timeout_ms), check=ConnectionPool.check_connection,
                          reconnect_timeout=30.0, name="memlane-team")
    pool.open(wait=False)
    if wait:
        try:
            pool.wait(timeout=max(timeout, connect_timeout + 0.5))
        except PoolTimeout:
            problem = probe(dsn, connect_timeout=connect_timeout)
            pool.close()
            raise TeamStoreError(problem or f"the team store at {display_dsn(dsn)} did not answer in time") from None
    return pool


def connect(dsn: str, *, connect_timeout: int = CONNECT_TIMEOUT_S, autocommit: bool = True):
    """One connection (admin commands, migrations), its failure explained."""
    psycopg = require_driver()
    try:
        conn = psycopg.connect(conninfo(dsn, connect_timeout=connect_timeout), autocommit=autocommit)
    except psycopg.Error as exc:
        raise TeamStoreError(explain(exc, dsn)) from None
    register_vector(conn)
    return conn


def probe(dsn: str, *, connect_timeout: int = CONNECT_TIMEOUT_S) -> str | None:
    """Why a connection to ``dsn`` fails now, in words (None: it connects)."""
    try:
        connect(dsn, connect_timeout=connect_timeout).close()
    except TeamStoreError as exc:
        return str(exc)
    return None


def explain(exc: BaseException, dsn: str | None = None) -> str:
    """A database error as what happened and what to do (never the password)."""
    where = display_dsn(dsn) if dsn else "the team store"
    text = _scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, dsn)
    low = text.lower()
    name = type(exc).__name__
    if "password authentication failed" in low or "no password supplied" in low:
        return (f"{where}: the password was refused (or the role does not exist): check the user and password in "
                "[team] dsn, MEMLANE_TEAM_DSN or ~/.pgpass")
    if "is not permitted to log in" in low:
        return f"{where}: this role may not log in; ask the team store's admin for a login role"
    if "does not exist" in low and "database" in low:
        return f"{where}: {text}; check the database name in [team] dsn"
    if "permission denied for database" in low or "connect privilege" in low:
        return f"{where}: this role may not connect to the database; ask its admin to GRANT CONNECT"
    if name in ("InsufficientPrivilege",) or "permission denied" in low:
        return (f"{where}: this role lacks a right memlane needs ({text}); ask the admin to run "
                "`memlane team add-member ROLE --team NAME` for it")
    if name in ("ConnectionTimeout", "PoolTimeout") or "timeout expired" in low or "couldn't get a connection" in low:
        return f"{where} did not answer in time ({text}): the database is down, slow or unreachable"
    if name == "QueryCanceled":
        return f"{where} took too long for this request ({text})"
    if "no such file or directory" in low or "connection refused" in low or "could not connect" in low \
            or "connection to server" in low:
        return f"{where} is not reachable ({text}): is the server running, and the host, port or socket right?"
    if name in ("AdminShutdown", "OperationalError") or "terminating connection" in low:
        return f"{where} closed the connection ({text}): the server restarted or went down"
    return f"{where}: {name}: {text}"


def _scrub(text: str, dsn: str | None) -> str:
    """A driver's message without DSN text: what it quotes of a connection string (where a
    password's words may stand) and anything of the DSN's password."""
    import re

    if "connection info string" in text or "invalid connection option" in text or "invalid URI" in text \
            or "conninfo" in text.lower():
        return "the DSN cannot be read (malformed)"
    if dsn:
        try:
            from psycopg.conninfo import conninfo_to_dict

            parts = conninfo_to_dict(dsn)
            secrets = [str(parts[k]) for k in ("password", "sslpassword") if parts.get(k)]
        except Exception:  # noqa: BLE001 - a malformed DSN: drop every quoted fragment of it
            secrets = []
            text = re.sub(r'"[^"]*"', lambda m: '"…"' if m.group(0)[1:-1] and m.group(0)[1:-1] in dsn else m.group(0),
                          text)
        for secret in secrets:  # the password, and the client key's passphrase
            text = text.replace(secret, "…")
    from ..guards.exits import clean

    return clean(text)


def is_transient(exc: BaseException) -> bool:
    """Down, slow, restarting: worth retrying later (never a refused password or a missing right)."""
    try:
        import psycopg
    except ImportError:
        return False
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return False
    return isinstance(exc, (psycopg.OperationalError, TimeoutError))


__all__ = ["CONNECT_TIMEOUT_S", "INSTALL_HINT", "conninfo", "connect", "display_dsn", "explain", "is_transient",
           "make_pool", "probe", "register_vector", "require_driver"]
