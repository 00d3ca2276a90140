"""``Judge``: one configured judge (a command or an endpoint), its deadline and its cache of
verdicts, and the ``Verdict`` it returns — never an exception for anything the judge did.

Outcomes: ``chosen`` (a verdict), ``cached`` (the same verdict for the same prompt and candidate
set), and the ones where the ranking stands: ``timeout``, ``failed`` (the command failed, the
endpoint refused), ``garbage`` (no verdict in the answer), ``skipped`` (no time left before the
request's own deadline). Each of the last four writes one log line saying why.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext

from .. import logs
from ..config import JudgeConfig
from ..records import dataclass, field
from .chat import api_key_from, ask_chat, chat_body
from .command import JudgeFailed, run_command
from .protocol import Candidate, Garbage, build_request, cache_key, parse_verdict, verdict_schema

log = logs.get("memlane.judge")

CACHE_SIZE = 256
MIN_TIME_S = 0.05  # less than this left before the request's deadline: not asked at all


@dataclass(frozen=True)
class Verdict:
    """What the judge said about a prompt's candidates, or why it said nothing."""

    outcome: str  # chosen | cached | timeout | failed | garbage | skipped
    by: str
    chosen: tuple[tuple[str, str], ...] = ()  # (name, reason), in the judge's order
    ignored: tuple[str, ...] = ()  # names it gave that are no candidate's
    why: str = ""
    ms: float = 0.0
    candidates: tuple[str, ...] = field(default=(), compare=False)

    @property
    def stands(self) -> bool:
        """Whether the ranking stands (no usable verdict)."""
        return self.outcome not in ("chosen", "cached")

    def as_dict(self) -> dict:
        out = {"by": self.by, "outcome": self.outcome, "ms": round(self.ms, 1),
               "candidates": list(self.candidates),
               "chosen": [{"name": n, "reason": r} for n, r in self.chosen]}
        if self.ignored:
            out["ignored"] = list(self.ignored)
        if self.why:
            out["why"] = self.why
        return out


class Judge:
    """The judge ``config`` describes. ``outside``: a context manager the wait for its answer
    runs in (the daemon lets other requests have the workspace meanwhile)."""

    def __init__(self, config: JudgeConfig, *, outside: Callable[[], ContextManager] = nullcontext,
                 cache_size: int = CACHE_SIZE):
        self.config = config
        self.outside = outside
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()  # requests may overlap while one waits outside the workspace
        self.by = f"command {config.command[0]}" if config.command else f"{config.url} model {config.model}"

    def choose(self, prompt: str, turns: list[str], candidates: list[Candidate], *, max_chosen: int,
               until: float | None = None) -> Verdict:
        """The judge's verdict on ``candidates`` for ``prompt`` (``turns``: the previous user
        turns), at most ``max_chosen``; ``until``: a ``time.monotonic()`` value it never runs past.
        Never an exception for anything the judge did or the text held: whatever goes wrong, the
        ranking stands (logged). Only ``outside`` may raise (the daemon's workspace, when the
        request can no longer be answered in time): that is the caller's."""
        started = time.monotonic()
        names = tuple(c.name for c in candidates)
        try:
            request = build_request(prompt, turns, candidates, max_chosen=max_chosen)
            key = cache_key(self.by, request)
        except Exception as exc:  # noqa: BLE001 - a text the request cannot carry: no verdict
            return self._stands("failed", f"the request could not be built ({type(exc).__name__}: {exc})", started,
                                names)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return Verdict("cached", self.by, hit.chosen, hit.ignored, ms=_ms(started), candidates=names)
        deadline = started + self.config.timeout_s if until is None else min(started + self.config.timeout_s, until)
        if deadline - started < MIN_TIME_S:
            return self._stands("skipped", "no time left before the request's deadline", started, names)
        with self.outside():  # what leaving and coming back raise is the caller's
            answer = self._answer(request, names, max_chosen, deadline, started)
        if isinstance(answer, Verdict):
            return answer
        try:
            chosen, ignored = parse_verdict(answer, list(names), max_chosen=max_chosen)
        except Garbage as exc:
            return self._stands("garbage", str(exc), started, names)
        except Exception as exc:  # noqa: BLE001 - an answer the parser chokes on (RecursionError, …) is garbage
            return self._stands("garbage", f"the answer could not be read ({type(exc).__name__})", started, names)
        verdict = Verdict("chosen", self.by, tuple(chosen), tuple(ignored), ms=_ms(started), candidates=names)
        if ignored:
            log.info("judge (%s): ignored names that are no candidate's: %s", self.by, ", ".join(ignored[:5]))
        with self._lock:
            self._cache[key] = verdict
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return verdict

    def _answer(self, request: dict, names: tuple[str, ...], max_chosen: int, deadline: float,
                started: float) -> str | Verdict:
        """The judge's raw answer, or the verdict that the ranking stands (never an exception)."""
        try:
            return self._ask(request, list(names), max_chosen, deadline)
        except TimeoutError:
            return self._stands("timeout", f"no answer within {deadline - started:.1f} s", started, names)
        except (JudgeFailed, OSError) as exc:
            return self._stands("failed", str(exc), started, names)
        except Exception as exc:  # noqa: BLE001 - whatever else went wrong asking: no verdict
            return self._stands("failed", f"{type(exc).__name__}: {exc}", started, names)

    def _ask(self, request: dict, names: list[str], max_chosen: int, deadline: float) -> str:
        """The judge's raw answer to ``request``."""
        if self.config.command:
            data = json.dumps(request, ensure_ascii=False).encode("utf-8", "replace")
            return run_command(list(self.config.command), data, deadline)
        rest = {k: v for k, v in request.items() if k != "task"}
        schema = verdict_schema(names, max_chosen) if self.config.structured else None
        body = chat_body(self.config.model, request["task"], json.dumps(rest, ensure_ascii=False), schema)
        return ask_chat(self.config.url, body, deadline, api_key=api_key_from(self.config.api_key_env))

    def _stands(self, outcome: str, why: str, started: float, names: tuple[str, ...]) -> Verdict:
        log.info("judge (%s): %s: %s; the ranking stands", self.by, outcome, why)
        return Verdict(outcome, self.by, why=why, ms=_ms(started), candidates=names)


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
