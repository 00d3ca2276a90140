"""Every error memlane raises on purpose, as one tree; each says what went wrong and what to do.

    MemlaneError
    ├── ConfigError          a setting is unknown or has a bad value
    ├── IndexRefused         an index path holds something that is not memlane's
    ├── WriteError           a write memlane refuses (nothing was written)
    ├── InstallError         an agent's settings cannot be changed safely
    ├── EvalError            a benchmark folder cannot be read
    ├── EmbedderUnavailable  an embedder's optional dependency or weights are missing
    ├── TeamStoreError       the team store cannot be reached or used
    ├── ToolError            an agent's tool call (MCP) that memlane refuses
    └── UsageError           a command was called the wrong way

``exit_code`` maps each to the exit status the CLI returns, in one place.
"""

from __future__ import annotations


class MemlaneError(Exception):
    """Base of every error memlane raises on purpose; the message is for the user."""

    exit_code = 2


class ConfigError(MemlaneError, ValueError):
    """A setting is unknown or has a bad value; ``path``: the config file it is in, when known."""

    def __init__(self, message: str, path=None):
        super().__init__(message)
        self.path = path


class IndexRefused(MemlaneError, PermissionError):
    """An index path holds a file memlane did not create; memlane will not move or write it.
    Also a ``PermissionError``: whatever copes with an unopenable index (an in-memory index
    for this run, with a warning) copes with this."""


class WriteError(MemlaneError, ValueError):
    """A write memlane refuses; the message says why. Nothing was written."""


class InstallError(MemlaneError):
    """An agent's settings cannot be changed safely; the message says why."""


class EvalError(MemlaneError, ValueError):
    """A benchmark folder or file cannot be read."""


class EmbedderUnavailable(MemlaneError, RuntimeError):
    """An embedder's optional dependency is not installed; recall degrades to keyword-only."""


class ToolError(MemlaneError, ValueError):
    """A request from an agent (an MCP tool call) that memlane refuses; the message is the
    answer the agent sees."""


class TeamStoreError(MemlaneError):
    """The team store (PostgreSQL) cannot be reached or used; local scopes still answer."""


class UsageError(MemlaneError):
    """A command was called the wrong way (a missing argument, a folder that does not exist)."""


def exit_code(exc: BaseException) -> int:
    """The CLI's exit status for ``exc``: 2 for memlane's own errors, 1 otherwise."""
    return exc.exit_code if isinstance(exc, MemlaneError) else 1


__all__ = ["ConfigError", "EmbedderUnavailable", "EvalError", "IndexRefused", "InstallError", "MemlaneError",
           "TeamStoreError", "ToolError", "UsageError", "WriteError", "exit_code"]
