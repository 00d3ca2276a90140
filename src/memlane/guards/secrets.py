"""Secrets in notes: API keys, tokens and private keys are redacted from anything memlane
injects or prints — a note is plain text on disk, the agent's context is not."""

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
