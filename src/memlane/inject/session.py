"""Per-session state for the hooks: what was injected (J4 dedup) and the context fill the
statusline last reported (J3).

One small JSON file per session under the cache directory, replaced atomically. A unit is
injected once per session — again only when its text changed, when ``refresh_minutes`` passed,
when it can now be shown deeper than before (an index line earlier, the full note now), or
after the context was compacted or cleared (SessionStart with source ``compact``/``clear``
resets the state). A damaged or missing file is an empty state: the worst case is one
repeated injection.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

from .. import logs
from ..config import cache_home
from ..digest import sha256
from ..modes import Depth
from ..records import dataclass, field

log = logs.get("memlane.inject")

KEEP_DAYS = 14  # session files older than this are removed when a new session starts


def sessions_dir() -> Path:
    return cache_home() / "sessions"


def _safe(session_id: str) -> str:
    """``session_id`` as a file name: as it is when it is one already in lower case (Claude Code's
    UUIDs), else cleaned and followed by a digest of the id, so two ids never share a file ("a/b"
    and "a_b", two long ids alike in their first 120 characters, "Ab" and "aB" on a file system
    that ignores case, as macOS's does by default)."""
    session_id = session_id or ""  # none: a name of its own, which no id that is a file name can take
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:120].lstrip(".")
    # an id that is a name already, unless it reads as one written below ("a_b-" and a digest is the
    # name of "a/b", "session-" and one that of no id): those are every one followed by a digest too
    if cleaned and cleaned == session_id and not any("A" <= c <= "Z" for c in cleaned) \
            and not re.search(r"-[0-9a-f]{16}\Z", cleaned):
        return cleaned
    digest = sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{cleaned or 'session'}-{digest}"


@dataclass
class SessionState:
    """What a session has been shown so far, by unit."""

    session_id: str
    injected: dict[str, list] = field(default_factory=dict)  # uid -> [content hash, time, depth]
    path: Path | None = None

    @classmethod
    def load(cls, session_id: str) -> "SessionState":
        path = sessions_dir() / f"{_safe(session_id)}.json"
        state = cls(session_id, path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("injected"), dict):
                state.injected = {k: v for k, v in data["injected"].items() if isinstance(v, list) and len(v) == 3}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            log.info("session state %s unreadable (%s); starting afresh", path, exc)
        return state

    def wants(self, uid: str, content_hash: str, depth: str, *, refresh_s: float, now: float | None = None) -> bool:
        """Whether injecting ``uid`` at ``depth`` adds something this session has not seen."""
        seen = self.injected.get(uid)
        if seen is None:
            return True
        old_hash, when, old_depth = seen
        now = time.time() if now is None else now
        return (old_hash != content_hash or now - float(when) >= refresh_s
                or _rank(depth) > _rank(old_depth))

    def mark(self, uid: str, content_hash: str, depth: str, now: float | None = None) -> None:
        self.injected[uid] = [content_hash, time.time() if now is None else now, depth]

    def reset(self) -> None:
        self.injected = {}

    def save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _replace_with_json(self.path, {"session": self.session_id, "injected": self.injected}, ".state-")
        except OSError as exc:
            log.warning("session state %s not saved (%s); a note may be injected twice", self.path, exc)


def _replace_with_json(path: Path, data: dict, prefix: str) -> None:
    """``data`` as JSON in a new file of the user's alone beside ``path``, then moved over it: a
    reader sees the old file or the new one, never half of one. Not ``tempfile.mkstemp``: importing
    tempfile (with shutil, random, bz2 and lzma) is ~3 ms of every hook answered in a fresh process."""
    tmp = path.parent / f"{prefix}{os.getpid()}-{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)  # a full disk, a failed move: no half-written file left behind
        except OSError:
            pass
        raise


def _rank(depth: str) -> int:
    try:
        return Depth(depth).rank
    except ValueError:
        return -1


def first_time_told(session_id: str, what: str) -> bool:
    """True the first time in a session that the user is told ``what`` (a one-word topic), and
    False after: a marker file is created exclusively, so two hooks at once tell it once. A
    session without an id cannot remember, and is told each time."""
    if not session_id:
        return True
    path = sessions_dir() / f"{_safe(session_id)}.{_safe(what)}.told"
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return True
    except FileExistsError:
        return False
    except OSError:
        return True  # cannot remember: telling twice beats never telling


def prune_old_sessions(now: float | None = None) -> None:
    now = time.time() if now is None else now
    try:
        for path in sessions_dir().iterdir():
            if now - path.stat().st_mtime > KEEP_DAYS * 86_400:
                path.unlink(missing_ok=True)
    except OSError:
        pass


# -- the statusline side file (J3) -----------------------------------------------------------
def context_file(session_id: str) -> Path:
    return sessions_dir() / f"{_safe(session_id)}.context"


def context_percentage(value) -> float | None:
    """``used_percentage`` as a share the brackets can use: a finite number, held to 0–100;
    None for anything else (null early in a session, a string, true, NaN, infinity)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 100.0)


def write_context(session_id: str, used_percentage: float | None, window: int | None) -> None:
    """What ``memlane statusline`` records for the hooks: the fill Claude Code reported."""
    used_percentage = context_percentage(used_percentage)
    path = context_file(session_id)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _replace_with_json(path, {"used_percentage": used_percentage, "window": window, "t": time.time()}, ".ctx-")
    except OSError as exc:
        log.info("statusline side file %s not written: %s", path, exc)


def read_context(session_id: str, *, max_age_s: float) -> tuple[float | None, int | None]:
    """(fill fraction, window size) from the side file, if it is recent enough."""
    try:
        data = json.loads(context_file(session_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict) or time.time() - float(data.get("t") or 0) > max_age_s:
        return None, None
    used, window = data.get("used_percentage"), data.get("window")
    used = context_percentage(used)
    fill = used / 100 if used is not None else None
    return fill, int(window) if isinstance(window, int) and window > 0 else None
