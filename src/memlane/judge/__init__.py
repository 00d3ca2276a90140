"""The judge (R4, docs/judge.md): an optional model that chooses which of layer 3's candidates
apply to a prompt — a command (``claude -p``, ``llm``, a script) or an OpenAI-compatible
endpoint (Ollama, llama.cpp's server, vLLM, LM Studio), under a deadline, after which the
ranking stands.

Where it runs: in the daemon (``adapters/daemon.py`` holds one per warm workspace, with its
cache, and makes it the active judge for each request with ``judging``), and in the dry runs
that show what the daemon would inject (``memlane hook … --explain``, ``memlane recall
--prompt-json``). Never in the standard-library hook client, nor in the keyword-only answer a
hook gives in its own process when no daemon answers.

- ``protocol.py``: the request and the answer, both sides of the trust boundary;
- ``command.py`` and ``chat.py``: the two ways to ask;
- ``judge.py``: ``Judge`` (deadline, cache, outcomes) and its ``Verdict``;
- ``layer.py``: the candidates layer 3 shows it, and what its verdict changes.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from collections.abc import Iterator

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ..config import JudgeConfig
    from .judge import Judge

__all__ = ["active_judge", "judge_from_config", "judging"]

#: (the judge, the time.monotonic() it must not run past) for the request being answered
_ACTIVE: ContextVar[tuple["Judge | None", "float | None"]] = ContextVar("memlane_judge", default=(None, None))


def judge_from_config(config: JudgeConfig, **options) -> Judge | None:
    """The judge ``config`` sets up, or None when none is (or it is turned off). ``options``:
    ``Judge``'s (``outside``, ``cache_size``)."""
    if not config.configured:
        return None
    from .judge import Judge

    return Judge(config, **options)


@contextmanager
def judging(judge: Judge | None, *, until: float | None = None) -> Iterator[None]:
    """Make ``judge`` the active one for what runs inside (this thread's request), never past
    ``until``."""
    token = _ACTIVE.set((judge, until))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_judge() -> tuple[Judge | None, float | None]:
    """(the active judge, its limit), or (None, None) outside ``judging``."""
    return _ACTIVE.get()
