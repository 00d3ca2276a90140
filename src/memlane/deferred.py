"""Writes a resident process makes after it has answered: what a hook's answer leaves behind for
later (the session's "already shown" state, the injection guard's verdicts) needs to be on disk
before the next request, not before this one's reply. The daemon answers inside ``deferring``,
sends the reply, and only then lets the writes run — still holding its workspace, so the next
request reads them. Anywhere else ``later`` runs the write at once."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from collections.abc import Callable, Iterator

from . import logs

log = logs.get(__name__)

_pending: ContextVar[list | None] = ContextVar("memlane_deferred", default=None)


def later(write: Callable[[], None]) -> None:
    """``write()`` now, or when the enclosing ``deferring`` ends."""
    pending = _pending.get()
    if pending is None:
        write()
    else:
        pending.append(write)


@contextmanager
def deferring() -> Iterator[None]:
    """Hold ``later``'s writes until the block ends, then make them in order; a failing write is
    logged and the others still made. A block that raises makes none: a request that did not
    answer (past its deadline, its workspace lost to the judge's wait) leaves nothing behind."""
    pending: list = []
    token = _pending.set(pending)
    try:
        yield
    finally:
        _pending.reset(token)
    for write in pending:
        try:
            write()
        except Exception as exc:  # noqa: BLE001 - a cache or a session's state: never the answer's fault
            log.warning("a deferred write failed: %s: %s", type(exc).__name__, exc)
