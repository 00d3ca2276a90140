"""A small progress bar on stderr (stdout stays data), silent when stderr is not a TTY."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    def __init__(self, stream=None, width: int = 30):
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._open = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = int(self.width * done / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{stage:<6} [{bar}] {done}/{total}")
        self._open = True
        if done >= total:
            self.stream.write("\n")
            self._open = False
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self._open = False
