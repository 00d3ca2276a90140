"""The agents memlane serves, one module each (see ``base.py``); ``load(name)`` imports only the
one asked for."""

from __future__ import annotations

from importlib import import_module

from .base import PROMPT, SESSION_START, Agent

#: every agent memlane has hooks for, in the order help lists them
NAMES = ("claude", "codex", "gemini", "cursor")
DEFAULT = "claude"


def load(name: str) -> Agent:
    """The agent called ``name``; ``ValueError`` for one memlane does not know."""
    if name not in NAMES:
        raise ValueError(f"unknown agent {name!r}; memlane knows {', '.join(NAMES)}")
    return import_module(f".{name}", __name__).AGENT


__all__ = ["Agent", "DEFAULT", "NAMES", "PROMPT", "SESSION_START", "load"]
