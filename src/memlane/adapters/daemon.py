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
  workspace, answering) well under the hook's own timeout. A client that sends half a request, or
  a byte every few seconds, is cut off at the deadline and delays nobody else; when the workspace
  is busy past the deadline (a large refresh), the answer is ``busy`` and the hook client
  answers that prompt itself, keyword-only.
- **Warm before it answers**: the socket is bound only after the index is fresh and the
  model loaded, so a client never waits on a first indexing — it answers keyword-only itself
  meanwhile.
- **Fresh enough**: a warm ``Workspace`` (``workspace.py``) with its background refresher: the
  files are stat-walked at most every ``REFRESH_S`` seconds (0.1 s at 10k notes) and refreshed
  only when they changed, the other domains re-read at most every ``FABRIC_REFRESH_S``; a
  changed config file reopens the workspace.
- **Idle timeout**: it exits after ``idle_minutes`` without a request and removes its socket.
- **The judge** (R4, docs/judge.md), when the user's config sets one: asked here only, within the
  request's deadline, with the workspace free for other requests while it thinks.

Protocol, in bytes (the client imports no JSON): the client sends ``EVENT AGENT\\n`` and the hook's
stdin and closes its side; the daemon answers ``ok\\n`` and what the hook prints, then closes.
Events: ``session-start``, ``user-prompt-submit``, ``ping``, ``stop``.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable

from .. import logs
from ..errors import ConfigError
from .agents import PROMPT, SESSION_START
from .hookclient import daemon_key, forget_refusal, private_dir, project_root, remember_refusal, socket_path
from .hook import check_hook_command
from .workspace import Busy, Workspace

log = logs.get("memlane.daemon")

IDLE_MINUTES = 30.0
REQUEST_DEADLINE_S = 3.0  # a whole request, read to answered; the client waits at most 4 s, the host 10 s
READ_DEADLINE_S = 1.0  # a request is a few kilobytes sent at once
MAX_CONNECTIONS = 32  # served at once; more are told "busy" (the client answers itself)
SOCKET_CHECK_S = 5.0  # how often the daemon looks whether its socket is still its own
MAX_REQUEST = 4_000_000
JUDGE_RESERVE_S = 0.5  # of a request's deadline, kept from the judge: for taking the workspace back and the rest


def open_workspace(root: str, stores: list[str], embedder: str | None, index: str | None,
                   **throttle) -> Workspace:
    """The daemon's warm workspace: opened before the socket is bound (index fresh, model
    loaded, the configured other domains read), kept fresh by a background refresher, so a
    request never waits for a file check or the lifecycle. ``throttle``: ``Workspace``'s
    ``refresh_s``, ``fabric_refresh_s`` or ``clock``, when not the defaults."""
    from ..domains.fabric import other_domains

    workspace = Workspace(stores, embedder, index, root,
                          build_domains=lambda memory: other_domains(memory, refresh=False),
                          build_judge=daemon_judge, **throttle)
    workspace.warm()
    workspace.start_refresher()
    return workspace


def daemon_judge(memory, released):
    """The workspace's judge (R4, ``[judge]`` in the user's config), or None: it waits for its
    answer with the workspace ``released`` to other requests, and keeps its verdicts while the
    workspace is open. Only the daemon has one: the hook client's own keyword-only answer never
    asks a judge."""
    if not memory.config.judge.configured:
        return None
    from ..judge import judge_from_config

    return judge_from_config(memory.config.judge, outside=released)


def answer(workspace: Workspace, event: str, raw: str, agent: str = "claude", *,
           deadline: float | None = None, reply: Callable[[str], None] | None = None) -> str:
    """What the hook prints for this request. Raises ``Busy`` when the workspace cannot be had
    before ``deadline`` (a ``time.monotonic()`` value). The judge stops ``JUDGE_RESERVE_S``
    before it, and the workspace must be had back by it; past it the request answers nothing
    (``Busy``) and saves nothing (no note is marked as shown to a client that gave up).
    ``reply``: sends the answer as soon as it is known; what the request leaves for later (its
    session's state, the guard's verdicts: ``deferred.py``) is written after it, the workspace
    still held."""
    from ..deferred import deferring
    from .hook import handle_event, parse_payload, with_missing_stores

    payload = parse_payload(raw, agent)
    missing = check_hook_command(workspace.args[0], None)  # a store gone since the start: said, the others answer
    try:
        with workspace.held(deadline) as warm, deferring():
            if warm.judge is None:
                out = handle_event(warm.memory, event, payload, agent=agent, fabric=warm.fabric)
            else:
                from ..judge import judging

                until = None if deadline is None else deadline - JUDGE_RESERVE_S
                with judging(warm.judge, until=until):
                    out = handle_event(warm.memory, event, payload, agent=agent, fabric=warm.fabric)
            out = with_missing_stores(out, event, payload, agent, missing)
            if reply is not None:
                reply(out)
            return out
    except Busy:
        raise Busy(f"the workspace was busy past the request's deadline ({REQUEST_DEADLINE_S:g} s)") from None


def answer_recall(workspace: Workspace, raw: str, *, deadline: float | None = None) -> str:
    """``memlane recall``'s stdout and stderr for the request (JSON: the prompt and the options),
    answered warm; raises ``Busy`` like ``answer``."""
    import json

    from .cli.recall import recall_answer

    request = json.loads(raw)
    if not isinstance(request, dict) or not str(request.get("prompt") or "").strip():
        raise ValueError("a recall request needs a prompt")
    request["unscreened"] = False  # only a person at a terminal asks for it, and that recall runs in its own process
    try:
        with workspace.held(deadline) as warm:
            if warm.files_cheap_to_check():  # a note written a moment ago is found, as in a process of its own
                warm.check_files()
            out, err = recall_answer(warm.memory, request)
    except Busy:
        raise Busy(f"the workspace was busy past the request's deadline ({REQUEST_DEADLINE_S:g} s)") from None
    return json.dumps({"stdout": out, "stderr": err})


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
    forget_refusal(key)  # this command is served (a folder it names is back): its clients start it again
    path = socket_path(key)
    compile_own_modules()
    workspace = open_workspace(root, stores, embedder, index)
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
    if threading.current_thread() is threading.main_thread():  # `kill`, a logout: stop as a stop request does
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, lambda *_: stopping.set())
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    last = checked = time.monotonic()
    bound = _inode(path)
    try:
        while not stopping.is_set() and time.monotonic() - last < idle_minutes * 60:
            if time.monotonic() - checked >= SOCKET_CHECK_S:
                checked = time.monotonic()
                if _inode(path) != bound:  # removed (its folder cleaned up) or taken over: no client can reach it
                    log.info("socket %s is gone or no longer this daemon's: stopping", path)
                    break
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            last = time.monotonic()
            if not slots.acquire(blocking=False):
                _reply(conn, b"busy\n")
                conn.close()
                continue
            threading.Thread(target=_serve_connection, args=(conn, workspace, slots, stopping),
                             name="memlane-request", daemon=True).start()
    finally:
        server.close()
        try:
            if _inode(path) == bound:  # never another daemon's socket
                os.unlink(path)
        except OSError:
            pass
        workspace.close()  # after the request in flight, if any
        lock.close()
    log.info("daemon %s stopped", key)
    return 0


def compile_own_modules() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` (or ``-B``) keeps imports from writing ``.pyc`` files, as
    many containers set it, an editable install has none, and every fresh memlane process — a
    hook answered cold, a CLI call — compiles ~70 modules again (~150 ms). The daemon has
    memlane's own package compiled once, in a process of its own beside its warm-up; nothing
    outside the package is written, and the process's own setting stays as it is."""
    if not sys.flags.dont_write_bytecode:
        return
    import subprocess

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        subprocess.Popen([sys.executable, "-P", "-m", "compileall", "-q", "-j", "1", package], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
    except OSError as exc:
        log.info("could not have memlane's modules compiled: %s", exc)


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _serve_connection(conn: socket.socket, workspace: Workspace, slots: threading.BoundedSemaphore,
                      stopping: threading.Event) -> None:
    try:
        with conn, workspace.serving():
            if _handle(conn, workspace, time.monotonic() + REQUEST_DEADLINE_S) == "stop":
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
    """The whole reply, then the end of it: the client stops waiting here, whatever the daemon
    still does with the connection open (the request's deferred writes)."""
    try:
        conn.settimeout(1.0)
        conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _handle(conn: socket.socket, workspace: Workspace, deadline: float) -> str | None:
    uid = peer_uid(conn)
    if uid is not None and uid != os.getuid():
        log.warning("refused a connection from uid %s", uid)
        return None
    event, agent, stdin = "", "", b""
    try:
        data = _read_request(conn, min(deadline, time.monotonic() + READ_DEADLINE_S))
        head, _, stdin = data.partition(b"\n")
        event, _, agent = head.decode("ascii", "replace").strip().partition(" ")
        if event in ("stop", "ping"):
            _reply(conn, b"ok\n")
            return "stop" if event == "stop" else None
        if event == "recall":
            stdout = answer_recall(workspace, stdin.decode("utf-8", "replace"), deadline=deadline)
        elif event in (SESSION_START, PROMPT):
            from .hook import decode_input

            answer(workspace, event, decode_input(stdin), agent or "claude", deadline=deadline,
                   reply=lambda out: _reply(conn, b"ok\n" + out.encode("utf-8")))
            return None  # answered, then its writes made
        else:
            raise ValueError(f"unknown event {event!r}")
    except (Busy, TimeoutError) as exc:
        log.info("request not answered: %s", exc)
        _reply(conn, b"busy\n")  # the client answers this prompt itself
        return None
    except Exception as exc:  # noqa: BLE001 - one bad request must not stop the daemon; the hook stays silent
        log.warning("request failed: %s: %s", type(exc).__name__, exc)
        stdout = _memory_off(event, stdin, agent, exc) if stdin and event in (SESSION_START, PROMPT) else ""
    _reply(conn, b"ok\n" + stdout.encode("utf-8"))
    return None


def _memory_off(event: str, stdin: bytes, agent: str, exc: BaseException) -> str:
    """The once-per-session notice that memory is off (``hook.memory_off``), or nothing."""
    from .hook import memory_off, parse_payload

    try:
        payload = parse_payload(stdin.decode("utf-8", "replace"), agent or "claude")
        return memory_off(event, payload, agent or "claude", exc)
    except Exception:  # noqa: BLE001 - unreadable input: only logged
        return ""


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
        check_hook_command(args.store, args.embedder)  # no daemon idles on a mistake: the hooks say it
    except Exception as exc:  # noqa: BLE001 - logged; the hooks answer themselves, and start no daemon for it again
        log.warning("daemon failed: %s: %s", type(exc).__name__, exc)
        remember_refusal(key, args.store)
        return 1
    try:
        return serve(key, root, args.store, args.embedder, args.index, idle_minutes=args.idle_minutes)
    except Exception as exc:  # noqa: BLE001 - logged; the hooks fall back to answering themselves
        log.warning("daemon failed: %s: %s", type(exc).__name__, exc)
        if isinstance(exc, ConfigError) and exc.path:  # a broken settings file: none started again until it changes
            remember_refusal(key, args.store, [os.fspath(exc.path)])
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
