"""``memlane-hook EVENT``: the command agent hooks run. Standard library only, so a prompt
pays for a Python start-up and a socket round trip, not for loading memlane and a model.

It sends the hook's stdin to the user's resident daemon (``memlane serve --daemon``) and
prints the answer. When no daemon answers within a few milliseconds it starts one for the
next prompt (unless the one it started for an earlier prompt is still starting) and answers
this one itself, keyword-only (no model to load). Whatever happens it
exits 0 — a hook never blocks the agent — and stdout carries only the hook protocol.

The daemon's socket lives in a directory only the user can open (0700, checked before every
connect); the daemon also checks the peer's uid. One daemon serves one store set: the
repository the agent runs in (or ``--store`` folders), keyed like its index.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib

try:  # the C module behind ``socket``: the same calls, without importing enum and selectors (~9 ms)
    import _socket as _sock
except ImportError:  # pragma: no cover - not CPython
    import socket as _sock

CONNECT_TIMEOUT_S = 0.05  # a daemon that is up answers connect() at once
#: a remembered refusal (``daemon_refused``) stands this long at most: a model installed since is tried again
REFUSAL_TTL_S = 600.0
REPLY_TIMEOUT_S = 4.0  # the daemon answers or says "busy" within 3 s; the host waits 10 s (memlane install)
MAX_REPLY = 4_000_000
#: a daemon this client started is left to start (load its model, bring the index up to date) this
#: long before another prompt's client starts one again: while it lives, no other is started
STARTING_S = 120.0
EVENTS = ("session-start", "user-prompt-submit")  # memlane's event names (agents/base.py)


def runtime_dir() -> str:
    """``$XDG_RUNTIME_DIR/memlane`` or ``$TMPDIR/memlane-<uid>``: private to the user. When the
    latter is there but not a folder of the user's (anyone may create it first in a shared /tmp,
    whose sticky bit then keeps the user from removing it), the user's own cache folder's ``run``
    instead: a squatted name must not leave every prompt without its daemon."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base):
        return os.path.join(base, "memlane")
    shared = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"memlane-{os.getuid()}")
    try:
        st = os.lstat(shared)
    except OSError:
        return shared  # not there yet: created, 0700, when a daemon starts
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
        return shared  # the user's own (``private_dir`` checks its mode)
    own = os.path.join(_cache_home(), "run")
    # a socket's path holds ~107 bytes: a deep cache folder cannot serve (the shared one is then refused, as before)
    return own if len(os.fsencode(own)) + len("/0123456789abcdef.sock") <= 104 else shared


def _cache_home() -> str:
    """memlane's cache folder, as ``config.cache_home`` finds it (config is not imported here)."""
    return os.environ.get("MEMLANE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "memlane")


def private_dir(create: bool) -> str | None:
    """The socket directory, if it is a real directory owned by this user with mode 0700
    (created so when asked); None when it is missing or unsafe."""
    path = runtime_dir()
    if create:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # the cache's, for ``run``
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        return None
    return path


def project_root(cwd: str | None) -> str:
    """The git repository holding ``cwd`` (or ``cwd`` itself): what a daemon serves."""
    start = folder = os.path.abspath(cwd or os.getcwd())
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def daemon_key(root: str, stores: list[str], embedder: str | None, index: str | None) -> str:
    spec = "\0".join([root, *sorted(os.path.abspath(s) for s in stores), "|", embedder or "", index or ""])
    spec = spec.encode("utf-8", "surrogateescape")  # a path in another encoding still has its daemon
    return f"{zlib.crc32(spec):08x}{zlib.adler32(spec):08x}"  # zlib: no hashlib/json to import on the hot path


def socket_path(key: str) -> str:
    return os.path.join(runtime_dir(), f"{key}.sock")


def refused_path(key: str) -> str:
    return os.path.join(runtime_dir(), f"{key}.refused")


def starting_path(key: str) -> str:
    return os.path.join(runtime_dir(), f"{key}.starting")


def daemon_starting(key: str) -> bool:
    """Whether a daemon a client started for ``key`` less than ``STARTING_S`` ago is still alive
    (``start_daemon`` left its process id beside the socket): it is starting — loading its model
    takes seconds — so no other is started, which would only find it and exit. One that died (it
    exits at once when another serves, or on a mistake) leaves nothing that stops a new start."""
    import time

    path = starting_path(key)
    try:
        age = time.time() - os.stat(path).st_mtime
        if not 0 <= age < STARTING_S:  # old, or from the future (the clock set back): no daemon is starting
            return False
        with open(path, "rb") as handle:
            pid = int(handle.read(32).strip() or b"0")
    except (OSError, ValueError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # no signal sent: only whether the process is there
    except PermissionError:
        return True  # there, but not ours (a reused id): a daemon of ours may still come; after STARTING_S, another
    except OSError:
        return False
    return True


def folders_state(stores: list[str]) -> str:
    """Which of the command's ``--store`` folders are there now, one ``1`` or ``0`` each: what a
    refusal is remembered with (``'~/notes'`` read from the home folder, as the store is)."""
    return "".join("1" if os.path.isdir(os.path.expanduser(folder)) else "0" for folder in stores)


def _file_stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_mtime_ns}:{st.st_size}"


def refusal_state(stores: list[str], files: list[str] = ()) -> str:
    """What a refusal is remembered with: the folders (``folders_state``) and, a line each, the
    files whose mistake it was (a broken settings file) as they are now — edited, they are tried again."""
    return "\n".join([folders_state(stores), *(f"{f}\t{_file_stamp(f)}" for f in files)])


def daemon_refused(key: str, stores: list[str]) -> bool:
    """Whether the daemon for this command (``key``) refused it, with its folders and the files it
    named as they are now, less than ``REFUSAL_TTL_S`` ago: then no daemon is started for it — one
    started would exit at once, and a spawn for every prompt costs a Python start-up and memlane's
    imports each time."""
    if private_dir(create=False) is None:
        return False
    try:
        fd = os.open(refused_path(key), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            st = os.fstat(fd)
            text = os.fsdecode(os.read(fd, 16384)).strip("\n")
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return False
    import time

    fresh = 0 <= time.time() - st.st_mtime < REFUSAL_TTL_S
    if not (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and fresh):
        return False
    files = [line.rsplit("\t", 1)[0] for line in text.split("\n")[1:]]  # the first line: the folders
    return text == refusal_state(stores, files)


def remember_refusal(key: str, stores: list[str], files: list[str] = ()) -> None:
    """What the daemon writes when it refuses its command: the folders as they were, and the
    files at fault (``daemon_refused``)."""
    folder = private_dir(create=True)
    if folder is None:
        return
    path = refused_path(key)
    tmp = f"{path}.{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, os.fsencode(refusal_state(stores, files)) + b"\n")
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


def forget_refusal(key: str) -> None:
    """A daemon that serves its command: no refusal of it stands."""
    try:
        os.unlink(refused_path(key))
    except OSError:
        pass


def ask_daemon(path: str, event: str, stdin: str | bytes = "") -> str | None:
    """What the daemon says the hook should print (possibly nothing), or None when no daemon
    is there, it is busy, or it is not safe to talk to. The protocol is bytes: ``EVENT\\n`` and
    the hook's stdin, then the hook's stdout until the daemon closes — no JSON to import here.
    The whole exchange has one deadline (``REPLY_TIMEOUT_S``), however the daemon spaces its bytes."""
    if private_dir(create=False) is None:
        return None
    import time

    sock = _sock.socket(_sock.AF_UNIX, _sock.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(path)
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        sock.settimeout(REPLY_TIMEOUT_S)
        data = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8", "surrogateescape")
        sock.sendall(event.encode() + b"\n" + data)
        sock.shutdown(_sock.SHUT_WR)
        chunks, size = [], 0
        while size < MAX_REPLY:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            sock.settimeout(remaining)
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        reply = b"".join(chunks)
        if not reply.startswith(b"ok\n"):
            return None  # "busy", a refusal, or garbage: this process answers itself
        return reply[3:].decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def start_daemon(key: str, root: str, stores: list[str], embedder: str | None, index: str | None) -> None:
    """Start the daemon in the background for the next prompt (it exits at once if another
    one holds the lock) — unless the one started for an earlier call is still starting."""
    import subprocess

    if private_dir(create=True) is None or daemon_starting(key):
        return
    # -P: the daemon runs in the repository, whose folder must not come first on its import path
    # (an ``argparse.py`` there would run as the standard library's)
    cmd = [sys.executable, "-P", "-m", "memlane.adapters.daemon", "--key", key, "--root", root]
    for folder in stores:
        cmd += ["--store", folder]
    if embedder:
        cmd += ["--embedder", embedder]
    if index:
        cmd += ["--index", index]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True, cwd=root if os.path.isdir(root) else None)
    except OSError:
        return
    path = starting_path(key)
    try:  # the next prompts' clients leave it to start (``daemon_starting``); written whole, then renamed
        fd = os.open(f"{path}.{os.getpid()}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"{proc.pid}\n".encode())
        finally:
            os.close(fd)
        os.replace(f"{path}.{os.getpid()}", path)
    except OSError:
        pass


def parse_args(argv: list[str]) -> dict:
    args = {"event": None, "stores": [], "embedder": None, "index": None, "no_daemon": False, "as_is": False,
            "agent": "claude"}
    it = iter(argv)
    for arg in it:
        if arg in EVENTS:
            args["event"] = arg
        elif arg == "--store":
            args["stores"].append(next(it, ""))
        elif arg == "--embedder":
            args["embedder"] = next(it, None)
        elif arg == "--index":
            args["index"] = next(it, None)
        elif arg == "--no-daemon":
            args["no_daemon"] = True
        elif arg == "--index-as-is":  # what a hook answers while its daemon starts (the benchmarks time it)
            args["as_is"] = True
        elif arg == "--agent":
            args["agent"] = next(it, "claude")
    return args


def turned_off() -> bool:
    """``MEMLANE_OFF=1`` in the agent's environment (``MEMLANE_OFF=1 claude``) turns the hooks off
    for that session: they inject nothing."""
    return os.environ.get("MEMLANE_OFF", "").strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except Exception:  # noqa: BLE001 - a hook never blocks the agent (the fallback logs its own failures)
        return 0


def _main(argv: list[str] | None) -> int:
    if turned_off():
        return 0  # memory off for this session: inject nothing, start nothing
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args["event"] is None:
        sys.stderr.write(f"usage: memlane-hook {{{','.join(EVENTS)}}} [--agent claude|codex|gemini|cursor] [--store DIR] "
                         "[--embedder NAME] [--index FILE] [--no-daemon [--index-as-is]]\n")
        return 0  # even a misconfigured hook must not block the agent
    try:  # bytes, as sent: input that is not UTF-8 is read with U+FFFD by whoever answers (and logged)
        buffer = getattr(sys.stdin, "buffer", None)  # none on a stream of text only (a caller's StringIO)
        data = buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
    except (AttributeError, OSError, ValueError):  # no stdin at all (None), or closed
        data = b""
    raw = data.decode("utf-8", "replace")
    from .agents import load

    try:
        agent = load(args["agent"])
    except ValueError:
        return 0  # an agent memlane does not know: nothing to say, never a blocked prompt
    root = project_root(agent.root_from_payload(raw))  # most agents run hooks in the project folder
    key = daemon_key(root, args["stores"], args["embedder"], args["index"])
    refused = False
    if not args["no_daemon"]:
        answer = ask_daemon(socket_path(key), f"{args['event']} {args['agent']}", data)
        if answer is not None:
            sys.stdout.write(answer)
            return 0
        refused = daemon_refused(key, args["stores"])  # refused as it is now: it would exit at once again
        if not refused:  # (none while one started earlier is still starting: the next prompt finds it)
            start_daemon(key, root, args["stores"], args["embedder"], args["index"])
    # no daemon (yet): answer in this process, keyword-only — no model to load
    import io

    from .hook import run_hook

    unsafe = None if args["no_daemon"] or private_dir(create=False) is not None else runtime_dir()
    # while a daemon starts, the index as it is (the daemon brings it up to date); when none will
    # come — --no-daemon, its folder is not private, or it refused this command — the notes are read
    # again here, else a note added, edited or deleted since would never reach (or leave) the agent
    none_will = args["no_daemon"] and not args["as_is"]
    return run_hook(args["event"], stores=args["stores"] or None, embedder="none",
                    index=args["index"], stdin=io.BytesIO(data), refresh=bool(unsafe) or refused or none_will,
                    agent=args["agent"], unsafe_socket_folder=unsafe, wanted_embedder=args["embedder"], root=root)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
