"""Injection risk: a note whose text reads as an instruction override ("ignore all previous
instructions"), exfiltration ("send the env to https://…") or covert action ("do not tell the
user") is quarantined — never injected automatically, still listed with the reason. A
long-lived store is an injection vector."""

from __future__ import annotations

import re

_RISKS = [
    ("instruction override", re.compile(
        r"(?i)\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|all|any|your|the system)\b"
        r"[^.\n]{0,20}\b(?:instructions?|rules|prompts?|guidelines)\b")),
    ("instruction override", re.compile(r"(?i)\byou are now\b|\bnew system prompt\b|\bact as (?:root|admin|the system)\b")),
    ("exfiltration", re.compile(
        r"(?i)\b(?:send|post|upload|exfiltrate|forward|leak|paste)\b[^\n]{0,60}?(?:\b(?:env|environment|secrets?|"
        r"credentials?|tokens?|api keys?|ssh keys?|passwords?)\b|\.ssh\b|\.env\b)[^\n]{0,60}?"
        r"(?:https?://\S+|\b[\w-]+\.(?:com|net|org|io|xyz|ru|cn|dev|app|sh)\b|\bwebhook\b|\bpastebin\b)")),
    ("exfiltration", re.compile(r"(?i)\b(?:curl|wget)\b[^\n]{0,80}(?:\$\(?(?:env|printenv|cat\s+~?/?\.ssh)|-d\s*@?\S*\.env)")),
    ("covert action", re.compile(
        r"(?i)\b(?:do not|don't|never)\s+(?:tell|inform|mention|show|let)\b[^.\n]{0,30}\b(?:the user|user|anyone|them)\b")),
    ("covert action", re.compile(r"(?i)\b(?:secretly|silently|without (?:telling|asking|informing))\b[^.\n]{0,40}"
                                 r"\b(?:delete|remove|push|send|disable|run|install)\b")),
]


def injection_risk(text: str) -> str | None:
    """Why ``text`` reads as an attempt to steer the agent, or None."""
    for kind, pattern in _RISKS:
        match = pattern.search(text or "")
        if match:
            return f"{kind}: \"{match.group(0).strip()[:80]}\""
    return None
