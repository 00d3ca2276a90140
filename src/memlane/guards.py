"""G: what memory must not do to the agent (PRODUCT.md G1–G3).

- **Secrets** (G3): API keys, tokens and private keys are redacted from anything memlane
  injects or prints — a note is plain text on disk, the agent's context is not.
- **Injection risk** (G2): a note whose text reads as an instruction override ("ignore all
  previous instructions"), exfiltration ("send the env to https://…") or covert action ("do
  not tell the user") is quarantined: never injected automatically, still listed with the
  reason. A long-lived store is an injection vector (seed 000, "Injection / instruction guard").
- **Staleness** (G1) lives in ``staleness.py``: files, symbols, flags and versions a note
  names, checked against the working tree.
"""

from __future__ import annotations

import re

REDACTED = "[redacted secret]"

_SECRETS = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"),  # a JWT
]
#: ``password: hunter2hunter2``, ``API_KEY="…"``: the value goes, the name stays
_ASSIGNED = re.compile(
    r"(?i)\b((?:api[_-]?key|secret|token|password|passwd|access[_-]?key|client[_-]?secret)[A-Za-z0-9_]*"
    r"\s*[:=]\s*)([\"']?)([^\s\"'`]{8,})\2")


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``[redacted secret]``."""
    if not text:
        return text
    for pattern in _SECRETS:
        text = pattern.sub(REDACTED, text)
    return _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + REDACTED + m.group(2), text)


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
