"""What an agent's transcript says about the session: how full the context window is, and
what the user said recently (the context a short prompt borrows). Three formats, each read by the
agent that writes it (``adapters/agents/``), or told apart by their content:

- **Claude Code** (JSONL): fill comes from the
  last main-thread assistant line with ``usage``: input + cache-creation + cache-read tokens
  over the window size — the statusline's own formula. Sidechain (subagent) lines and
  ``<synthetic>`` messages carry no real usage and are skipped; a ``compact_boundary`` after
  the last usage means the context was just compacted and its fill is unknown.
- **Codex CLI** rollout (JSONL of ``{timestamp, type, payload}``): the last ``event_msg`` of
  type ``token_count`` gives ``info.last_token_usage.input_tokens`` (cached input included)
  and the window itself, ``info.model_context_window``; ``user_message`` events are the
  user's turns; a ``compacted`` line is a compaction.
- **Gemini CLI** chat recording (one JSON object, ``messages``; newer versions write it as
  JSONL records instead): the last ``gemini`` message's ``tokens.input`` over the model's
  window; ``user`` messages are the turns.

The transcript is written asynchronously (the current turn may be missing). Only the tail of
a large JSONL transcript is read.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

from ..domains.turns import extract_turn
from ..records import dataclass, field
from .. import logs

log = logs.get("memlane.inject")

FIRST_READ = 256_000  # the answer is near the end of the transcript ...
TAIL_BYTES = 2_000_000  # ... but a long session's last turns can hold large tool results
DEFAULT_WINDOW = 200_000
GEMINI_MAX_BYTES = 20_000_000  # a Gemini recording is one JSON document: read whole, up to this
#: model id fragments with a 1M-token window (Claude Code: "[1m]" suffix for extended context;
#: the Gemini 2.5+ models)
LARGE_WINDOW_MARKERS = ("[1m]", "-1m", "gemini")


@dataclass
class TranscriptView:
    """What the transcript tells a hook: context in use, model, compaction, recent turns."""

    used_tokens: int | None = None  # context in use at the last assistant turn
    model: str | None = None
    compacted: bool = False  # a compact boundary came after the last usage
    recent_user_turns: list[str] = field(default_factory=list)  # newest last, text only
    problem: str | None = None  # why nothing could be read, if so
    window: int | None = None  # the window size, when the transcript states it (Codex)

    def fill(self, window: int | None = None) -> float | None:
        """Fraction of the window in use, or None when unknown."""
        if self.used_tokens is None or self.compacted:
            return None
        size = window or self.window or window_for(self.model)
        return min(1.0, self.used_tokens / size) if size else None


def window_for(model: str | None) -> int:
    if model and any(marker in model.lower() for marker in LARGE_WINDOW_MARKERS):
        return 1_000_000
    return DEFAULT_WINDOW


def read_transcript(path: str | Path | None, *, user_turns: int = 2) -> TranscriptView:
    """Parse the tail of a transcript; never raises (a missing or garbled file yields an
    empty view with ``problem`` set). The last ``FIRST_READ`` bytes usually hold the answer;
    only when they do not is up to ``TAIL_BYTES`` read."""
    if not path:
        return TranscriptView(problem="no transcript path")
    if str(path).endswith(".json"):
        return read_gemini(path, user_turns=user_turns)
    return read_jsonl(path, user_turns=user_turns)


def read_jsonl(path: str | Path | None, *, user_turns: int = 2) -> TranscriptView:
    """A Claude Code transcript or a Codex rollout (JSONL, told apart line by line): its tail."""
    if not path:
        return TranscriptView(problem="no transcript path")
    view = TranscriptView()
    for window in (FIRST_READ, TAIL_BYTES):
        try:
            with _open_file(path) as handle:
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - window))
                data = handle.read(window)
        except OSError as exc:
            return TranscriptView(problem=f"transcript unreadable: {exc}")
        lines = data.split(b"\n")
        if size > window:
            lines = lines[1:]  # the first line of a tail is probably cut
        view = TranscriptView()
        if _scan(reversed(lines), view, user_turns) or size <= window:
            return view
    return view


def _open_file(path: str | Path):
    """``path`` opened for reading if it is a regular file; ``OSError`` otherwise. A FIFO would
    block the open until a writer came, and ``/dev/zero`` or a terminal never ends: either would
    hold the hook (and the daemon's workspace) for good. A ``transcript_path`` that is no string
    (a number, a list: the hook input is the agent's, or anyone's) is no file either."""
    if not isinstance(path, (str, os.PathLike)):
        raise OSError(errno.EINVAL, "not a file path", repr(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _scan(lines, view: TranscriptView, user_turns: int) -> bool:
    """Fill ``view`` from ``lines`` (newest first); True once it has everything it wants."""
    for raw in lines:
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            continue
        kind = entry.get("type")
        if isinstance(entry.get("payload"), dict) and kind in CODEX_KINDS:
            _codex(kind, entry["payload"], view, user_turns)
        elif kind == "system" and entry.get("subtype") == "compact_boundary" and view.used_tokens is None:
            view.compacted = True
        elif kind == "assistant" and view.used_tokens is None and not view.compacted:
            _take_usage(entry, view)
        elif kind == "user" and len(view.recent_user_turns) < user_turns:
            text = _user_text(entry)
            if text:
                view.recent_user_turns.insert(0, text)
        if (view.used_tokens is not None or view.compacted) and len(view.recent_user_turns) >= user_turns:
            return True
    return False


CODEX_KINDS = {"session_meta", "turn_context", "event_msg", "response_item", "compacted"}


def _codex(kind: str, payload: dict, view: TranscriptView, user_turns: int) -> None:
    """One Codex rollout line (newest first)."""
    settled = view.used_tokens is not None or view.compacted
    if kind == "compacted" and not settled:
        view.compacted = True
    elif kind == "turn_context" and view.model is None and isinstance(payload.get("model"), str):
        view.model = payload["model"]
    elif kind == "event_msg" and payload.get("type") == "token_count" and not settled:
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        used = last.get("input_tokens") if isinstance(last, dict) else None
        if _count(used):
            view.used_tokens = used
            window = info.get("model_context_window")
            view.window = window if _count(window) and window > 0 else None
    elif kind == "event_msg" and payload.get("type") == "user_message" and len(view.recent_user_turns) < user_turns:
        text = payload.get("message")
        if isinstance(text, str) and text.strip():
            view.recent_user_turns.insert(0, text.strip())


def read_gemini(path: str | Path | None, *, user_turns: int = 2) -> TranscriptView:
    """A Gemini CLI chat recording (one JSON document, or the JSONL newer versions write; never raises)."""
    if not path:
        return TranscriptView(problem="no transcript path")
    try:
        with _open_file(path) as handle:
            if os.fstat(handle.fileno()).st_size > GEMINI_MAX_BYTES:
                return TranscriptView(problem=f"transcript larger than {GEMINI_MAX_BYTES:,} bytes: not read")
            raw = handle.read(GEMINI_MAX_BYTES)
    except OSError as exc:
        return TranscriptView(problem=f"transcript unreadable: {exc}")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        records = _gemini_records(raw)
        if records is None:
            return TranscriptView(problem="transcript is not JSON")
        data = {"messages": records}
    messages = data.get("messages") if isinstance(data, dict) else None
    view = TranscriptView()
    for message in reversed(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        if message.get("type") == "gemini" and view.used_tokens is None:
            tokens = message.get("tokens")
            used = tokens.get("input") if isinstance(tokens, dict) else None
            if _count(used):
                view.used_tokens = used
                view.model = message.get("model") if isinstance(message.get("model"), str) else None
        elif message.get("type") == "user" and len(view.recent_user_turns) < user_turns:
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                view.recent_user_turns.insert(0, content.strip())
        if view.used_tokens is not None and len(view.recent_user_turns) >= user_turns:
            break
    return view


def _gemini_records(raw: bytes) -> list | None:
    """The messages of a JSONL Gemini recording, or None when ``raw`` holds no JSON line: a
    metadata line, then each message as recorded — again, whole, each time it changes (it keeps
    its place) — ``{"$rewindTo": id}`` when the user rewinds (that message and every later one
    go; an id no message has leaves the history as it is), and ``{"$set": {...}}`` updates, whose
    ``messages`` replace the history."""
    messages: dict = {}
    found = False
    for line in raw.split(b"\n"):
        try:
            record = json.loads(line) if line.strip() else None
        except (ValueError, UnicodeDecodeError):
            continue  # a torn last line
        if not isinstance(record, dict):
            continue
        found = True
        rewind, update = record.get("$rewindTo"), record.get("$set")
        if isinstance(rewind, str) and rewind in messages:
            ids = list(messages)
            for key in ids[ids.index(rewind):]:
                del messages[key]
        elif isinstance(rewind, str):  # no message of this recording's: nothing to rewind to
            log.info("a Gemini recording rewinds to a message it does not hold (%s); its history is kept", rewind[:80])
        elif isinstance(update, dict) and isinstance(update.get("messages"), list):
            messages = {m["id"] if isinstance(m.get("id"), str) else i: m
                        for i, m in enumerate(update["messages"]) if isinstance(m, dict)}
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
    return list(messages.values()) if found else None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _take_usage(entry: dict, view: TranscriptView) -> None:
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return
    parts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    numbers = [p for p in parts if isinstance(p, int) and not isinstance(p, bool)]
    if not numbers:
        return
    view.used_tokens = sum(numbers)
    view.model = message.get("model") if isinstance(message.get("model"), str) else None


def _user_text(entry: dict) -> str:
    """The words a person typed (the transcript domain's rule for what is a turn: no tool
    results, slash-command echoes or injected reminders)."""
    piece = extract_turn(entry)
    return piece.text if piece is not None and piece.role == "user" else ""
