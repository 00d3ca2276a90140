"""The agents memlane serves, one module each (see ``base.py``); ``load(name)`` imports only the
one asked for."""

from __future__ import annotations

from .base import PROMPT, SESSION_START, Agent

#: every agent memlane has hooks for, in the order help lists them
NAMES = ("claude", "codex", "gemini", "cursor")
DEFAULT = "claude"


def load(name: str) -> Agent:
    """The agent called ``name``; ``ValueError`` for one memlane does not know."""
    if name not in NAMES:
        raise ValueError(f"unknown agent {name!r}; memlane knows {', '.join(NAMES)}")
    # __import__ rather than importlib.import_module: importlib (with warnings) is ~0.7 ms of
    # every hook process, whose whole budget is a Python start-up
    return getattr(__import__(f"{__name__}.{name}", fromlist=["AGENT"]), "AGENT")


__all__ = ["Agent", "DEFAULT", "NAMES", "PROMPT", "SESSION_START", "load"]
