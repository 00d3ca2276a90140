"""Which lines of a Claude Code transcript are turns of the conversation (format: reference
Claude Code's transcript format): what the user typed and what the assistant answered in words. Tool
calls and results, thinking, slash-command echoes, ``<system-reminder>`` injections,
sidechains (subagents), meta and compact-summary lines and ``<synthetic>`` messages are not.
Shared by the transcript domain and the hooks (which read the user's recent turns)."""

from __future__ import annotations

from ..records import dataclass


_SKIP_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                  "<local-command-stderr>", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
_NOISE = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")


@dataclass
class Piece:
    """The turn one transcript line carries."""

    role: str
    text: str
    time: str = ""
    cwd: str = ""
    msg_id: str = ""


def _strip_reminders(text: str) -> str:
    """Drop ``<system-reminder>…</system-reminder>`` injections (the host's, not the user's)."""
    while "<system-reminder>" in text:
        start = text.index("<system-reminder>")
        end = text.find("</system-reminder>", start)
        text = text[:start] + (text[end + len("</system-reminder>"):] if end >= 0 else "")
    return text.strip()


def _user_text(content) -> str:
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):  # text blocks only: tool_result and image blocks are not turns
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    else:
        return ""
    kept = []
    for part in parts:
        part = _strip_reminders(str(part))
        if part and not part.startswith(_SKIP_PREFIXES) and part not in _NOISE:
            kept.append(part)
    return "\n\n".join(kept)


def _assistant_text(content) -> str:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    return "\n\n".join(str(b.get("text", "")).strip() for b in content
                       if isinstance(b, dict) and b.get("type") == "text" and str(b.get("text", "")).strip())


def extract_turn(record) -> Piece | None:
    """The user or assistant text turn of one parsed transcript line, or None (not a turn)."""
    if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
        return None  # summary, system (compact_boundary …), file-history-snapshot, …
    if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return None
    role = record["type"]
    text = _user_text(message.get("content")) if role == "user" else _assistant_text(message.get("content"))
    if not text:
        return None
    return Piece(role, text, str(record.get("timestamp") or ""), str(record.get("cwd") or ""),
                 str(message.get("id") or "") if role == "assistant" else "")
