"""Progress on stderr (stdout stays data) for work that takes a while: a bar with the rate and the
time left on a terminal; elsewhere (a pipe, a log, CI) one plain line every few seconds once the
work has taken more than ``QUIET_S`` — so a long first index is never silent, and a quick one
prints nothing."""

from __future__ import annotations

import sys
import time

#: outside a terminal, nothing is said for work shorter than this (seconds)
QUIET_S = 2.0
#: outside a terminal, at most one line this often (seconds)
EVERY_S = 5.0
STAGES = {"index": "reading notes", "embed": "embedding", "docs": "reading docs", "code": "reading code",
          "transcripts": "reading transcripts"}


def eta(seconds: float) -> str:
    """``seconds`` left, as a person says it."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class ProgressBar:
    """A ``(stage, done, total)`` callback (``index.refresh``'s progress)."""

    def __init__(self, stream=None, width: int = 30, *, clock=time.monotonic):
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.clock = clock
        self._started = clock()
        self._stage: str | None = None
        self._stage_started = self._started
        self._last = float("-inf")
        self._open = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if total <= 0:
            return
        now = self.clock()
        if stage != self._stage:
            self._stage, self._stage_started = stage, now
        finished = done >= total
        if self.tty:
            if not finished and now - self._last < 0.1:
                return
            filled = int(self.width * done / total)
            bar = "#" * filled + "-" * (self.width - filled)
            self.stream.write(f"\r{stage:<6} [{bar}] {done}/{total}{self._rate(done, total, now)}\033[K")
            self._open = not finished
            if finished:
                self.stream.write("\n")
        else:
            if now - self._started < QUIET_S or (now - self._last < EVERY_S and not finished):
                return
            if finished and self._last == float("-inf"):
                return  # done before the first line was due: nothing to report
            what = STAGES.get(stage, stage)
            self.stream.write(f"memlane: {what} {done}/{total}{self._rate(done, total, now)}\n")
        self._last = now
        self.stream.flush()

    def _rate(self, done: int, total: int, now: float) -> str:
        elapsed = now - self._stage_started
        if done <= 0 or elapsed < 0.5:
            return ""
        rate = done / elapsed
        left = "" if done >= total else f", about {eta((total - done) / rate)} left"
        return f" ({rate:.0f}/s{left})" if rate >= 1 else f" ({60 * rate:.0f}/min{left})"

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self._open = False
