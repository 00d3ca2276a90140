"""A judge that is a command (``judge.command``): an argv list run without a shell, the request
JSON on its stdin, its answer read from its stdout — ``claude -p``, ``llm``, ``gemini -p``, any
script.

- **No shell**: the argv is executed as given; nothing in a prompt or a note is ever parsed as a
  command line.
- **A deadline**: the command gets what is left of the judge's time; past it its whole process
  group is killed (it runs in a session of its own, so a wrapper's children go too).
- **Quiet**: its stdout is read by memlane and nothing else (never the hook's stdout); its stderr
  goes, cut, to the log.
- **No recursion**: it runs with ``MEMLANE_OFF=1``, so an agent CLI used as the judge does not
  run memlane's hooks again for its own prompt.
- It runs in the temporary folder, not the project: a CLI agent there finds no project files or
  instructions to read.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import tempfile
import time

from ..retrieve.recalled import shorten

log = logging.getLogger("memlane.judge")

MAX_STDERR_LOGGED = 500


class JudgeFailed(RuntimeError):
    """The judge could not answer (it is missing, failed, or refused); the message says why."""


def run_command(argv: list[str], stdin: bytes, deadline: float) -> str:
    """The command's stdout, or ``TimeoutError`` at ``deadline`` (a ``time.monotonic()`` value),
    or ``JudgeFailed``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left")
    env = {**os.environ, "MEMLANE_OFF": "1"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=tempfile.gettempdir(), start_new_session=True, close_fds=True)
    except OSError as exc:  # not found, not executable
        raise JudgeFailed(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(stdin, timeout=remaining)
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise TimeoutError("the command did not answer in time") from None
    except BaseException:
        _kill(proc)
        raise
    if err.strip():
        log.info("judge %s said on stderr: %s", os.path.basename(argv[0]),
                 shorten(err.decode("utf-8", "replace"), MAX_STDERR_LOGGED))
    if proc.returncode != 0:
        raise JudgeFailed(f"{os.path.basename(argv[0])} exited with status {proc.returncode}")
    return out.decode("utf-8", "replace")


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
