"""The hit-log (L2): one JSON line per recalled unit — time, session, query hash, unit,
layer, depth, bracket and score parts. It feeds the lifecycle (ACT-R base-level activation,
decay) and answers "what did memory bring back, and why".

Cheap enough for a hook: one ``open(O_APPEND)`` and one ``write`` per recall, so lines from
parallel processes never interleave (each write lands whole at the end of the file). Rotated
by size (``hits.jsonl`` → ``hits.jsonl.1`` …) under an advisory lock. Reading skips truncated
or corrupt lines. A log that cannot be written is logged and skipped: a recall never fails
because of it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path
from collections.abc import Iterator

from ..index.connection import keep_private, private_file
from .. import logs
from ..digest import sha256

log = logs.get("memlane.hitlog")

MAX_BYTES = 5_000_000
KEEP = 3


def query_hash(query: str) -> str:
    return sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class HitLog:
    def __init__(self, path: Path | str, *, max_bytes: int = MAX_BYTES, keep: int = KEEP):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.keep = keep

    def record(self, query: str, results: list[dict], *, session: str | None = None, layer: str = "recall",
               depth: str = "summary", bracket: str | None = None) -> bool:
        """Append one line per result (dicts with path, name, rank, score, parts); False, with a
        log line, if the log could not be written."""
        if not results:
            return True
        now = round(time.time(), 3)
        qhash = query_hash(query)
        lines = []
        for r in results:
            lines.append(json.dumps({
                "t": now, "session": session, "q": qhash, "unit": r.get("path"), "name": r.get("name"),
                "rank": r.get("rank"), "layer": layer, "depth": depth, "bracket": bracket, "score": r.get("score"),
                "parts": r.get("parts", {}),
            }, ensure_ascii=False, separators=(",", ":")))
        return self._append(lines)

    def record_event(self, query: str, event: dict, *, session: str | None = None, layer: str = "recall") -> bool:
        """Append one line about a recall that is no use of a unit — it has no ``unit``, so the
        lifecycle and the graph page pass over it: e.g. a judge's verdict (``{"judge": {...}}``)."""
        line = {"t": round(time.time(), 3), "session": session, "q": query_hash(query), "layer": layer, **event}
        return self._append([json.dumps(line, ensure_ascii=False, separators=(",", ":"))])

    def _append(self, lines: list[str]) -> bool:
        """One write of whole lines at the end of the log (rotated past ``max_bytes``)."""
        data = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                private_file(fd)  # a log from before it was made 0600
                end = os.fstat(fd).st_size
                if end and os.pread(fd, 1, end - 1) != b"\n":
                    data = b"\n" + data  # a torn last line (a crash mid-write) stays apart from ours
                os.write(fd, data)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("hit-log %s not written (%s); recall goes on", self.path, exc)
            return False
        if size > self.max_bytes:
            self._rotate()
        return True

    def _rotate(self) -> None:
        try:
            with open(f"{self.path}.lock", "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return  # another process is rotating
                if not self.path.exists() or self.path.stat().st_size <= self.max_bytes:
                    return  # rotated meanwhile
                for n in range(self.keep - 1, 0, -1):
                    older = Path(f"{self.path}.{n}")
                    if older.exists():
                        older.replace(Path(f"{self.path}.{n + 1}"))
                        keep_private(f"{self.path}.{n + 1}")  # one rotated before the logs were made 0600
                self.path.replace(Path(f"{self.path}.1"))
        except OSError as exc:
            log.warning("hit-log %s not rotated (%s)", self.path, exc)

    def files(self) -> list[Path]:
        """Oldest first: the rotated files, then the live one."""
        rotated = [Path(f"{self.path}.{n}") for n in range(self.keep, 0, -1)]
        return [p for p in rotated + [self.path] if p.exists()]

    def read(self) -> Iterator[dict]:
        """Every readable record, oldest first; truncated or corrupt lines are skipped."""
        for path in self.files():
            try:
                with open(path, "rb") as handle:
                    for raw in handle:
                        try:
                            record = json.loads(raw)
                        except (ValueError, UnicodeDecodeError):
                            continue
                        if isinstance(record, dict):
                            yield record
            except OSError as exc:
                log.warning("hit-log %s unreadable (%s); skipped", path, exc)
