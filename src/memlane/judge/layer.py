"""The judge in layer 3 (``inject/layers.user_prompt``): the candidates it sees, and what its
verdict does to what is injected.

The candidates are the notes layer 3 recalled (the ranking's choice and the ``paths:``
triggers), then the best of the ranking below them — the notes the threshold or ``k`` left out
— up to ``judge.candidates``. With a verdict, the notes it chose are injected in its order, and
nothing else from layer 3; it may bring back a note the ranking left below the threshold. With no
verdict (a timeout, a failure, garbage), the ranking stands as if there were no judge. Either way
the verdict goes to the report (``--explain``) and, unless a dry run, to the hit-log.
"""

from __future__ import annotations

from ..modes import Depth
from ..guards.exits import clean_data
from ..retrieve.recalled import Recalled
from .judge import Judge
from .protocol import candidates_of
from .. import logs

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ..memory import Memory

log = logs.get("memlane.judge")


def judge_layer(judge: Judge, memory: Memory, *, query: str, prompt: str, turns: list[str],
                recalled: list[Recalled], until: float | None = None, record: bool = True,
                session: str | None = None, bracket: str | None = None) -> tuple[list[Recalled], dict, list[Recalled]]:
    """(layer 3's notes after the judge, the verdict's report, the candidates a verdict ruled out)."""
    limit = judge.config.candidates
    try:
        more = ranking_below(memory, query, recalled, limit - len(recalled))
    except Exception as exc:  # noqa: BLE001 - the judge then sees what layer 3 recalled
        log.info("judge: the ranking below the threshold was not read (%s: %s)", type(exc).__name__, exc)
        more = []
    pool = candidates_of(recalled + more)
    if not pool:
        return recalled, {"by": judge.by, "outcome": "skipped", "why": "no candidates"}, []
    verdict = judge.choose(prompt, turns, [c for c, _ in pool], max_chosen=max(memory.config.retrieve.k, len(recalled)),
                           until=until)
    report = clean_data(verdict.as_dict())
    if record:
        _record(memory, query, verdict, report, {c.name: item for c, item in pool}, recalled, session, bracket)
    if verdict.stands:
        return recalled, report, []
    by_name = {c.name: item for c, item in pool}
    chosen = [name for name, _ in verdict.chosen]
    return [by_name[name] for name in chosen], report, [item for c, item in pool if c.name not in chosen]


def ranking_below(memory: Memory, query: str, known: list[Recalled], limit: int) -> list[Recalled]:
    """Up to ``limit`` notes from the ranking for ``query`` that ``known`` does not hold, best
    first: what ``k`` or the threshold left out. Never a private note, an archived one, or one a
    narrower scope overrides (the same exclusions as the hooks' recall)."""
    if limit <= 0:
        return []
    from ..recall import RecallPlan, excluded_units, recalled_units, run_recall
    from ..store import scope_rank

    index = memory.index
    mixed = len({scope_rank(s.scope) for s in memory.specs}) > 1
    exclude = excluded_units(index, query, mixed_scopes=mixed, include_private=False,
                             paths=[r.path for r in known if not r.address])
    outcome = run_recall(index, query, memory.config, embedder=memory.embedder,
                         plan=RecallPlan(constellations=False), exclude=exclude)
    rest = [h for h in outcome.ranking
            if h.unit_id not in exclude and h.state != "archived" and h.relevance > 0][:limit]
    return recalled_units(index, query, rest, depth=Depth.FULL, explain=False)


def _record(memory: Memory, query: str, verdict, report: dict, by_name: dict[str, Recalled],
            recalled: list[Recalled], session: str | None, bracket: str | None) -> None:
    """The verdict in the hit-log (one line, no unit: not a use), and the notes it brought from
    below the threshold as uses (they are injected; the ranking's own were logged by the recall)."""
    hit_log = memory.hit_log
    if hit_log is None:
        return
    hit_log.record_event(query, {"judge": report}, session=session, layer="L3")
    if verdict.stands:
        return
    known = {r.path for r in recalled}
    added = [(n, by_name[name], reason) for n, (name, reason) in enumerate(verdict.chosen, start=1)
             if by_name[name].path not in known]
    if added:
        hit_log.record(query, [{"path": item.path, "name": item.name, "rank": n, "score": item.score,
                                "parts": {"reached": "judge", "judge": reason}} for n, item, reason in added],
                       session=session, layer="L3", depth=Depth.FULL.value, bracket=bracket)
