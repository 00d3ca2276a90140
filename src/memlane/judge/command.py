"""A judge that is a command (``judge.command``): an argv list run without a shell, the request
JSON on its stdin, its answer read from its stdout — ``claude -p``, ``llm``, ``gemini -p``, any
script.

- **No shell**: the argv is executed as given; nothing in a prompt or a note is ever parsed as a
  command line.
- **The program you named**: an absolute path, or a bare name found on ``PATH`` (resolved to an
  absolute path before it runs); a relative path with a slash is refused, never resolved against
  the folder the daemon runs in (``resolve_program``; ``memlane doctor`` says so too).
- **A deadline**: the command gets what is left of the judge's time; past it its whole process
  group is killed (it runs in a session of its own, so a wrapper's children go too).
- **Quiet**: its stdout is read by memlane and nothing else (never the hook's stdout); its stderr
  goes, cut, to the log.
- **No recursion**: it runs with ``MEMLANE_OFF=1``, so an agent CLI used as the judge does not
  run memlane's hooks again for its own prompt.
- It runs in a private empty folder (``workdir``: under memlane's cache, yours alone), not the
  project and not the shared temporary folder: a CLI agent there finds no project files, and no
  instructions or settings another local user could have planted.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from ..retrieve.recalled import shorten
from .. import logs

log = logs.get("memlane.judge")

MAX_STDERR_LOGGED = 500
MAX_STDERR_KEPT = 64_000  # bytes of stderr kept (the rest is read and dropped)
MAX_OUTPUT = 1_000_000  # bytes of stdout read at most: past it the command is killed, no verdict


class JudgeFailed(RuntimeError):
    """The judge could not answer (it is missing, failed, or refused); the message says why."""


def run_command(argv: list[str], stdin: bytes, deadline: float) -> str:
    """The command's stdout, or ``TimeoutError`` at ``deadline`` (a ``time.monotonic()`` value),
    or ``JudgeFailed`` (also when it prints more than ``MAX_OUTPUT`` bytes: it is killed then)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left")
    argv = [resolve_program(argv[0]), *argv[1:]]
    env = {**os.environ, "MEMLANE_OFF": "1"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=workdir(), start_new_session=True, close_fds=True)
    except OSError as exc:  # not found, not executable
        raise JudgeFailed(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        out, err = _exchange(proc, stdin, deadline)
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise TimeoutError("the command did not exit in time") from None
    except BaseException:
        _kill(proc)
        raise
    if err.strip():
        log.info("judge %s said on stderr: %s", os.path.basename(argv[0]),
                 shorten(err.decode("utf-8", "replace"), MAX_STDERR_LOGGED))
    if proc.returncode != 0:
        raise JudgeFailed(f"{os.path.basename(argv[0])} exited with status {proc.returncode}")
    return out.decode("utf-8", "replace")


def workdir() -> str:
    """The folder a judge command runs in: ``judge-cwd`` under memlane's cache folder, created
    0700 and checked to be yours and private; else a private temporary folder of this process."""
    global _FALLBACK_DIR
    from ..config import cache_home

    path = cache_home() / "judge-cwd"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
            return str(path)
    except OSError:
        pass
    if _FALLBACK_DIR is None or not os.path.isdir(_FALLBACK_DIR):
        _FALLBACK_DIR = tempfile.mkdtemp(prefix="memlane-judge-")  # 0700, ours
    return _FALLBACK_DIR


_FALLBACK_DIR: str | None = None


def resolve_program(program: str) -> str:
    """The absolute path of the program ``judge.command`` names, the way a user means it: an
    absolute path (``~`` is your home), or a bare name looked up on ``PATH``. A relative path
    with a slash (``scripts/judge.sh``) is refused: the daemon runs in a folder of its own
    choosing, and whatever that folder is (the temporary one: anyone's to write), what runs
    would not be what you named. ``JudgeFailed`` says why."""
    name = os.path.expanduser(program.strip())
    if os.path.isabs(name):
        if not (os.path.isfile(name) and os.access(name, os.X_OK)):
            raise JudgeFailed(f"judge.command {program!r} is not an executable file")
        return name
    if os.sep in name or (os.altsep and os.altsep in name):
        raise JudgeFailed(f"judge.command {program!r} is a relative path, which memlane does not resolve against "
                          "whatever folder it runs in: give the absolute path (or ~/...), or a program name on PATH")
    found = shutil.which(name)
    if found is None:
        raise JudgeFailed(f"judge.command {program!r} is not found on PATH")
    if not os.path.isabs(found):  # PATH holds "." or an empty or relative entry: that is a folder-relative path too
        raise JudgeFailed(f"judge.command {program!r} is found only through a relative PATH entry ({found}): "
                          "give its absolute path")
    return found


def _exchange(proc: subprocess.Popen, stdin: bytes, deadline: float) -> tuple[bytes, bytes]:
    """Write ``stdin`` and read stdout and stderr until the command closes both, never past
    ``deadline`` (``TimeoutError``) nor past ``MAX_OUTPUT`` bytes of stdout (``JudgeFailed``);
    stderr past ``MAX_STDERR_KEPT`` is read and dropped."""
    import selectors

    out, err, sizes = [], [], {"out": 0, "err": 0}
    view, sent = memoryview(stdin), 0
    with selectors.DefaultSelector() as selector:
        for stream, event, what in ((proc.stdin, selectors.EVENT_WRITE, "in"), (proc.stdout, selectors.EVENT_READ, "out"),
                                    (proc.stderr, selectors.EVENT_READ, "err")):
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, event, what)
        if not stdin:
            selector.unregister(proc.stdin)
            proc.stdin.close()
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the command did not answer in time")
            for key, _ in selector.select(remaining):
                if key.data == "in":
                    try:
                        sent += os.write(key.fd, view[sent:sent + 65536])
                    except BrokenPipeError:  # it stopped reading: its answer still counts
                        sent = len(view)
                    except BlockingIOError:
                        continue
                    if sent >= len(view):
                        selector.unregister(key.fileobj)
                        key.fileobj.close()
                    continue
                try:
                    chunk = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                sizes[key.data] += len(chunk)
                if key.data == "out":
                    out.append(chunk)
                    if sizes["out"] > MAX_OUTPUT:
                        raise JudgeFailed(f"it printed more than {MAX_OUTPUT:,} bytes (killed)")
                elif sizes["err"] <= MAX_STDERR_KEPT:
                    err.append(chunk)
    return b"".join(out), b"".join(err)


def _kill(proc: subprocess.Popen) -> None:
    """The command and everything it started, gone, and reaped."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()  # a child that left the group may hold the pipes: never wait on them
        except OSError:
            pass
    try:
        proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        pass
