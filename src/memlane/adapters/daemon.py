"""``memlane serve --daemon``: a resident recall process per user and store set, so a prompt
costs a socket round trip and a warm recall instead of loading Python modules, the index and
an embedding model (~0.3 s or more on 2 cores).

- **Private**: the socket lives in a directory only the user can open (0700, owned by the
  user — checked at start; an unsafe directory stops the daemon), is created with mode 0600,
  and every connection's peer uid is checked (``SO_PEERCRED``): another local user is refused
  even if they reached the socket.
- **One per store set**: an exclusive lock file next to the socket; a second daemon started
  for the same set exits at once.
- **Live whatever a client does**: each connection is served on its own thread, with one
  deadline for the whole request (``REQUEST_DEADLINE_S``: reading it, waiting for the warm
  engine, answering) well under the hook's own timeout. A client that sends half a request, or
  a byte every few seconds, is cut off at the deadline and delays nobody else; when the engine
  is busy past the deadline (a large refresh), the answer is ``busy`` and the hook client
  answers that prompt itself, keyword-only.
- **Warm before it answers**: the socket is bound only after the index is fresh and the
  model loaded, so a client never waits on a first indexing — it answers keyword-only itself
  meanwhile.
- **Fresh enough**: the files are re-checked at most every ``refresh_s`` seconds (the stat
  walk costs 0.1 s at 10k notes); a changed config file rebuilds the engine.
- **Idle timeout**: it exits after ``idle_minutes`` without a request and removes its socket.

Protocol, in bytes (the client imports no JSON): the client sends ``EVENT AGENT\\n`` and the hook's
stdin and closes its side; the daemon answers ``ok\\n`` and what the hook prints, then closes.
Events: ``session-start``, ``user-prompt-submit``, ``ping``, ``stop``.
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import logging
import os
import socket
import struct
import sys
import threading
import time

from ..errors import MemlaneError
from .hookclient import daemon_key, private_dir, project_root, socket_path

log = logging.getLogger("memlane.daemon")

IDLE_MINUTES = 30.0
REQUEST_DEADLINE_S = 3.0  # a whole request, read to answered; the client waits at most 4 s, the host 10 s
READ_DEADLINE_S = 1.0  # a request is a few kilobytes sent at once
MAX_CONNECTIONS = 32  # served at once; more are told "busy" (the client answers itself)
REFRESH_S = 2.0
FABRIC_REFRESH_S = 15.0  # the other domains (transcripts grow, code changes) are re-checked less often
MAX_REQUEST = 4_000_000


class Engine:
    """A warm ``Memory`` for one store set. Requests never wait for a file check or the
    lifecycle: a background thread stats the store every ``REFRESH_S`` seconds and, only when
    something changed, refreshes the index; it also folds the hit-log in (and, hourly, moves
    notes between lifecycle states) — under the lock requests take, so never during one. A
    changed configuration file rebuilds the engine."""

    def __init__(self, root: str, stores: list[str], embedder: str | None, index: str | None):
        self.root, self.stores, self.embedder_name, self.index = root, stores, embedder, index
        self.memory = None
        self.fabric = None  # the other recall domains, when the configuration names some
        self.fabric_checked = 0.0
        self.config_stamp = None
        self.files_stamp = None
        self.lock = threading.Lock()
        self._open()
        self._watcher = threading.Thread(target=self._watch, name="memlane-watch", daemon=True)
        self._watcher.start()

    def _open(self) -> None:
        from ..memory import Memory

        from ..domains.fabric import other_domains

        if self.fabric is not None:
            self.fabric.close()
        if self.memory is not None:
            self.memory.close()
        self.memory = Memory(self.stores or None, embedder=self.embedder_name, index_path=self.index, cwd=self.root)
        self.config_stamp = self._config_stamp()
        self.memory.refresh()  # index fresh and the model loaded before the first answer
        self.files_stamp = self.memory.files_stamp()
        self.memory.trust_index()  # from now on the watcher decides when to look at the files
        self.memory.auto_lifecycle = False  # ... and folds the hit-log, between requests
        self.fabric = other_domains(self.memory)  # indexed now; refreshed by the watcher
        self.fabric_checked = time.monotonic()
        # what the warm-up loaded (index caches, the model's objects) lives as long as the
        # engine: out of the collector's way, so no full collection lands in a request
        gc.unfreeze()  # (a reopened engine: the old one's objects may be collected now)
        gc.collect()
        gc.freeze()

    def _watch(self) -> None:
        while True:
            time.sleep(REFRESH_S)
            try:
                memory = self.memory
                stamp = memory.files_stamp()  # a stat walk, no database access
                with self.lock:
                    if stamp != self.files_stamp:
                        memory.refresh(force=False, recheck=True)
                        self.files_stamp = stamp
                    memory.maintain_lifecycle()  # new uses in; states moved at most hourly
                    if self.fabric is not None and time.monotonic() - self.fabric_checked > FABRIC_REFRESH_S:
                        self.fabric.refresh()  # new transcript turns, edited docs and code
                        self.fabric_checked = time.monotonic()
            except Exception as exc:  # noqa: BLE001 - the next round tries again
                log.info("file check failed: %s", exc)

    def _config_stamp(self):
        stamps = []
        for path in self.memory.config.sources:
            try:
                st = os.stat(path)
                stamps.append((path, st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((path, None, None))
        return stamps

    def answer(self, event: str, raw: str, agent: str = "claude", *, deadline: float | None = None) -> str:
        """What the hook prints for this request. Raises ``Busy`` when the engine cannot be had
        before ``deadline`` (a ``time.monotonic()`` value)."""
        from .hook import handle_event, parse_payload

        payload = parse_payload(raw, agent)
        wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self.lock.acquire(timeout=wait):
            raise Busy(f"the engine was busy past the request's deadline ({REQUEST_DEADLINE_S:g} s)")
        try:
            if self._config_stamp() != self.config_stamp:
                log.info("configuration changed: reopening")
                self._open()
            return handle_event(self.memory, event, payload, agent=agent, fabric=self.fabric)
        finally:
            self.lock.release()


class Busy(MemlaneError):
    """The warm engine could not take a request before its deadline."""


def peer_uid(conn: socket.socket) -> int | None:
    """The connecting process's uid (Linux ``SO_PEERCRED``); None where the OS lacks it."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    data = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid


def serve(key: str, root: str, stores: list[str], embedder: str | None, index: str | None, *,
          idle_minutes: float = IDLE_MINUTES) -> int:
    folder = private_dir(create=True)
    if folder is None:
        log.warning("socket directory is missing or not private (must be 0700 and yours); not serving")
        return 1
    lock = open(os.path.join(folder, f"{key}.lock"), "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log.info("another daemon serves %s", key)
        return 0
    path = socket_path(key)
    engine = Engine(root, stores, embedder, index)
    if os.path.exists(path):
        os.unlink(path)  # a stale socket of a daemon that died; we hold the lock
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(old_umask)
    server.listen(64)
    server.settimeout(0.25)  # how soon a stop request or the idle timeout is noticed
    log.info("serving %s (%s) on %s", root, key, path)
    stopping = threading.Event()
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    last = time.monotonic()
    try:
        while not stopping.is_set() and time.monotonic() - last < idle_minutes * 60:
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            last = time.monotonic()
            if not slots.acquire(blocking=False):
                _reply(conn, b"busy\n")
                conn.close()
                continue
            threading.Thread(target=_serve_connection, args=(conn, engine, slots, stopping),
                             name="memlane-request", daemon=True).start()
    finally:
        server.close()
        try:
            os.unlink(path)
        except OSError:
            pass
        with engine.lock:  # let a request in flight finish before the engine closes
            if engine.fabric is not None:
                engine.fabric.close()
            engine.memory.close()
        lock.close()
    log.info("daemon %s stopped", key)
    return 0


def _serve_connection(conn: socket.socket, engine: Engine, slots: threading.BoundedSemaphore,
                      stopping: threading.Event) -> None:
    try:
        with conn:
            if _handle(conn, engine, time.monotonic() + REQUEST_DEADLINE_S) == "stop":
                stopping.set()
    except Exception as exc:  # noqa: BLE001 - one connection's trouble never stops the daemon
        log.info("connection dropped: %s: %s", type(exc).__name__, exc)
    finally:
        slots.release()


def _read_request(conn: socket.socket, deadline: float) -> bytes:
    """The whole request (the client closes its side when done), or ``TimeoutError`` at
    ``deadline``: a client that sends slowly is cut off, however it spaces its bytes."""
    chunks, size = [], 0
    while size < MAX_REQUEST:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request was not complete before its deadline")
        conn.settimeout(remaining)
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _reply(conn: socket.socket, data: bytes) -> None:
    try:
        conn.settimeout(1.0)
        conn.sendall(data)
    except OSError:
        pass


def _handle(conn: socket.socket, engine: Engine, deadline: float) -> str | None:
    uid = peer_uid(conn)
    if uid is not None and uid != os.getuid():
        log.warning("refused a connection from uid %s", uid)
        return None
    try:
        data = _read_request(conn, min(deadline, time.monotonic() + READ_DEADLINE_S))
        head, _, stdin = data.partition(b"\n")
        event, _, agent = head.decode("ascii", "replace").strip().partition(" ")
        if event in ("stop", "ping"):
            _reply(conn, b"ok\n")
            return "stop" if event == "stop" else None
        if event not in ("session-start", "user-prompt-submit"):
            raise ValueError(f"unknown event {event!r}")
        stdout = engine.answer(event, stdin.decode("utf-8", "replace"), agent or "claude", deadline=deadline)
    except (Busy, TimeoutError) as exc:
        log.info("request not answered: %s", exc)
        _reply(conn, b"busy\n")  # the client answers this prompt itself
        return None
    except Exception as exc:  # noqa: BLE001 - one bad request must not stop the daemon; the hook stays silent
        log.warning("request failed: %s: %s", type(exc).__name__, exc)
        stdout = ""
    _reply(conn, b"ok\n" + stdout.encode("utf-8"))
    return None


def tune_threads() -> None:
    """Thread settings for a process that answers prompts (daemon, in-process hook); called
    before numpy or a model loads.

    Two thread pools share the cores in a recall: the e5 engine's OpenMP threads and numpy's
    OpenBLAS threads (the 10k-row similarity product). OpenBLAS threads busy-waiting after the
    product starve the next query embedding, and a product this size gains nothing from a
    second thread. Measured on 2 cores, warm hybrid recall at 10k notes (handle_event, p50 /
    p95): OpenMP passive waiting 43 / 77 ms; one OpenBLAS thread and OpenMP's default short
    spin 33 / 59 ms (passive OpenMP waiting doubles the embedding's cost, ~13 -> ~27 ms)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memlane-daemon", description="memlane's resident recall daemon")
    parser.add_argument("--key")
    parser.add_argument("--root")
    parser.add_argument("--store", action="append", default=[])
    parser.add_argument("--embedder")
    parser.add_argument("--index")
    parser.add_argument("--idle-minutes", type=float, default=IDLE_MINUTES)
    args = parser.parse_args(argv)
    tune_threads()
    from .hook import _file_logging

    _file_logging()
    root = args.root or project_root(None)
    key = args.key or daemon_key(root, args.store, args.embedder, args.index)
    try:
        return serve(key, root, args.store, args.embedder, args.index, idle_minutes=args.idle_minutes)
    except Exception as exc:  # noqa: BLE001 - logged; the hooks fall back to answering themselves
        log.warning("daemon failed: %s: %s", type(exc).__name__, exc)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
