"""The recall pipeline: what one prompt brings back, stage by stage.

1. **relevance** (retrieve/): both legs, fused, for every candidate — thresholds come later,
   because a below-threshold note may still be admitted by association;
2. superseded notes ×0.1, before anything can spread from them (L1);
3. **association** (associate/spread.py): one hop of spreading activation from the seeds (A2);
4. **score** (L1): relevance × importance (hubs A4, the note's ``importance:``) × recency
   (ACT-R base level from the hit-log and the last edit);
5. **select**: archived notes out (unless deep), the relevance threshold (R3), best ``k``;
6. **constellations** (A3): a selected member brings its whole constellation;
7. **divergent** (A5, opt-in): remote associates from other clusters.

``Memory.recall`` and the evaluation harness both run this, so the benchmarks measure the
product. Each stage can be switched off (``RecallPlan``) for ablations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from .associate.divergent import remote_associates
from .associate.spread import SpreadSettings, spread_activation
from .config import Config
from .modes import Depth, Fusion
from .embed.base import Embedder
from .index.storage import Storage as Index
from .index.text import query_terms
from .lifecycle.usage import recency_of, state_of
from .records import dataclass, field
from .retrieve.fusion import Legs
from .guards.exits import neutral_links, risk_kind, row_risk
from .guards.secrets import redact
from .retrieve.recalled import Explanation, Recalled
from .retrieve.search import Hit, order_hits, rank

#: PageRank this many times the average counts as fully central (A4)
HUB_SATURATION = 4.0


@dataclass
class RecallPlan:
    """Which stages of the pipeline a recall runs."""

    fusion: Fusion | str | None = None
    spread: bool = True
    score: bool = True
    constellations: bool = True
    divergent: bool = False
    include_archived: bool = False
    k: int | None = None
    #: the relevance a unit needs to be selected (None: ``retrieve.min_score``); the ranking and
    #: the seeds of spreading are the same either way — 0 selects the best k whatever their score
    min_score: float | None = None


#: the most results one recall returns (the CLI's ``--k`` and the MCP tools' ``k`` hold to it)
MAX_K = 100


@dataclass
class RecallOutcome:
    """What a recall selected, the whole ranking, and each stage's time."""

    selected: list[Hit]  # what is recalled, in order (constellation companions and remote associates included)
    ranking: list[Hit] = field(default_factory=list)  # every candidate, best first (for evaluation)
    timings_ms: dict[str, float] = field(default_factory=dict)


def run_recall(index: Index, prompt: str, config: Config, *, embedder: Embedder | None, plan: RecallPlan,
               query_vector=None, exclude: frozenset[int] = frozenset(), now: float | None = None) -> RecallOutcome:
    rc, ac, sc = config.retrieve, config.associate, config.score
    k = rc.k if plan.k is None else plan.k
    if not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if not query_terms(prompt):
        return RecallOutcome([], [], timings)  # "thanks!": no content word, nothing to recall (R3)
    hits = rank(index, prompt, rc, embedder=embedder, fusion=plan.fusion, apply_threshold=False,
                query_vector=query_vector, exclude=exclude)
    timings["relevance"] = _ms(started)
    if not hits:
        return RecallOutcome([], [], timings)

    started = time.perf_counter()
    facts = index.unit_facts([h.unit_id for h in hits])
    _demote_superseded(index, hits, sc.superseded_factor)
    hybrid = meaning_judges(prompt, plan.fusion or rc.fusion)
    if plan.spread and ac.spread:
        seeds = [h.unit_id for h in hits if h.score >= rc.min_score and not (hybrid and words_alone(h))]
        links = index.neighbours_of(seeds)
        hits = spread_activation(hits, lambda unit: links.get(unit, ()), SpreadSettings(
            decay=ac.decay, fan=ac.fan, blend=ac.blend, min_score=rc.min_score, margin=ac.margin,
            boost_seeds=ac.boost_seeds, admit=ac.admit, admit_vector=ac.admit_vector),
            names=index.names_of)
    for hit in hits:
        hit.relevance = hit.score
    if plan.score:
        _score(hits, facts, max(1, index.node_count()), config, now)
    hits = order_hits(hits)
    timings["associate_score"] = _ms(started)

    started = time.perf_counter()
    states = {u: state_of(f) for u, f in facts.items()}
    for hit in hits:
        hit.state = states.get(hit.unit_id, "active")
    eligible = [h for h in hits if plan.include_archived or h.state != "archived"]
    floor = rc.min_score if plan.min_score is None else plan.min_score
    selected = [h for h in eligible if selectable(h, floor, hybrid)][:k]
    if plan.constellations and ac.constellations and selected:
        selected = _with_constellations(index, selected, {h.unit_id: h for h in hits}, config,
                                        skip=exclude, include_archived=plan.include_archived)
    if plan.divergent:
        selected += _remote(index, [h for h in hits if not (hybrid and words_alone(h))], selected, config, states,
                            plan.include_archived)
    if exclude:  # whatever a link, a constellation or a cluster brings in, excluded stays out
        selected = [h for h in selected if h.unit_id not in exclude]
    timings["select"] = _ms(started)
    chosen = {h.unit_id for h in selected}
    return RecallOutcome(selected, selected + [h for h in hits if h.unit_id not in chosen], timings)


#: a prompt of fewer content words is a lookup: its words are what it means ("emoji", "ferryctl")
WORDS_ALONE_MIN_TERMS = 3


def meaning_judges(prompt: str, fusion) -> bool:
    """Whether the meaning leg may call a note found by words alone unrelated (``words_alone``):
    hybrid fusion, and a prompt of at least ``WORDS_ALONE_MIN_TERMS`` content words."""
    return Fusion(fusion) is Fusion.HYBRID and len(query_terms(prompt)) >= WORDS_ALONE_MIN_TERMS


def selectable(hit: Hit, floor: float, hybrid: bool) -> bool:
    """Whether selection takes ``hit`` (archived or not aside): relevant enough, and not found by
    words alone where the meaning leg judges (``hybrid``: ``meaning_judges``)."""
    return hit.relevance >= floor and not (hybrid and words_alone(hit))


def words_alone(hit: Hit) -> bool:
    """A unit the meaning leg calls unrelated (its cosine at or below the model's floor), found
    by its words alone: it neither seeds association nor is recalled, a remote associate or one
    of a hook's further candidates (``Memory.further_candidates``). Min-max scaling gives every
    prompt's best keyword match 1.0, which alone reaches the threshold (0.3 x 1.0 with the
    default weights), so a prompt no note applies to ("how do I make a good cup of coffee")
    brought the note sharing its commonest word. Activation it receives still counts (spreading
    admits a neighbour only with its own meaning leg at ``associate.admit_vector`` or more), so it
    is one test before and after spreading."""
    return hit.legs.cosine is not None and hit.legs.vector <= 0.0 and not hit.activation


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _demote_superseded(index: Index, hits: list[Hit], factor: float) -> None:
    """L1: a superseded note scores ×factor — kept (never dropped), but it yields to its
    replacement and does not seed spreading."""
    superseded = index.superseded()
    if not superseded:
        return
    for hit in hits:
        by = superseded.get(hit.unit_id)
        if by is not None:
            hit.score *= factor
            hit.legs.notes.append(f"superseded by {by}: score x{factor}")


def _score(hits: list[Hit], facts: dict[int, tuple], nodes: int, config: Config, now: float | None) -> None:
    """final = relevance × importance × recency (Park et al. 2023, Generative Agents)."""
    sc = config.score
    now = time.time() if now is None else now
    for hit in hits:
        declared, mtime, _status, pagerank, _state_, recent, refs = facts.get(hit.unit_id, (None,) * 7)
        importance = 1.0
        if sc.hub_weight and pagerank:
            centrality = min(1.0, max(0.0, math.log(pagerank * nodes) / math.log(HUB_SATURATION)))
            importance += sc.hub_weight * centrality
        if sc.importance_weight and declared is not None:
            importance += sc.importance_weight * (2 * min(1.0, max(0.0, float(declared))) - 1)
        factor, b, _refs = recency_of(mtime, recent, refs, weight=sc.recency_weight,
                                      d=config.lifecycle.base_decay, now=now)
        hit.importance, hit.recency, hit.base_level = importance, factor, b
        hit.score = hit.relevance * importance * factor


def _with_constellations(index: Index, selected: list[Hit], candidates: dict[int, Hit], config: Config, *,
                         skip: frozenset[int], include_archived: bool) -> list[Hit]:
    """A3: each selected member brings the rest of its constellation, right after it,
    bypassing the per-member relevance gate (the set is load-bearing as a whole) — even a
    member the prompt did not reach at all. Archived members stay out unless deep."""
    ac = config.associate
    groups = [g for g in index.constellations_of([h.unit_id for h in selected])
              if ac.constellation_min <= len(g) <= ac.constellation_max]
    if not groups:
        return selected
    members = {m for g in groups for m in g}
    states = {u: state_of(f) for u, f in index.unit_facts(members).items()}
    names = index.names_of({h.unit_id for h in selected})
    out, placed = [], {h.unit_id for h in selected}
    for hit in selected:
        out.append(hit)
        for group in groups:
            if hit.unit_id not in group:
                continue
            for member in group:
                if member in placed or member in skip or member not in states:
                    continue
                if states[member] == "archived" and not include_archived:
                    continue
                placed.add(member)
                companion = candidates.get(member) or Hit(member, 0.0, Legs(), state=states[member])
                companion.companion_of = names.get(hit.unit_id, str(hit.unit_id))
                companion.path = companion.path + [f"constellation with [[{companion.companion_of}]]"]
                out.append(companion)
    return out


def _remote(index: Index, hits: list[Hit], selected: list[Hit], config: Config, states: dict[int, str],
            include_archived: bool) -> list[Hit]:
    """A5: remote associates from clusters the convergent selection does not touch."""
    ac = config.associate
    by_id = {h.unit_id: h for h in hits}
    clusters = index.clusters()
    candidates = remote_associates(index.adjacency(), {h.unit_id: h.relevance for h in hits},
                                   [h.unit_id for h in selected], clusters, min_score=ac.divergent_min_score,
                                   damping=ac.divergent_damping, limit=ac.divergent_remote * 2)
    found = [c for c in candidates if include_archived or states.get(c[0]) != "archived"][: ac.divergent_remote]
    leaders = index.cluster_leaders()
    leader = {node: leaders.get(clusters.get(node, node), node) for node, _, _ in found}
    names = index.names_of({n for node, _, path in found for n, _ in path} | set(leader.values()))
    out = []
    for node, score, path in found:
        hit = by_id.get(node) or Hit(node, 0.0, Legs(), state=states.get(node, "active"))
        hit.remote, hit.score = True, score
        cluster = names.get(leader[node], "?")
        if len(path) > 1:
            chain = " → ".join(f"[[{names.get(n, n)}]]" for n, _ in path[:-1])
            hops = len(path) - 1
            how = f"via {chain} → here ({hops} hop{'s' if hops > 1 else ''}; walk score {score:.3f})"
        else:
            how = f"no link path; relevance {hit.relevance:.3f} (the flatter divergent threshold)"
        hit.path = [f"remote, from the cluster of [[{cluster}]]: {how}"]
        out.append(hit)
    return out


# -- from a ranking to what is handed out ------------------------------------------------------
def excluded_units(index: Index, prompt: str, *, mixed_scopes: bool, include_private: bool,
                   paths: Iterable[str] = ()) -> frozenset[int]:
    """Units that are not candidates for this prompt: user-scope notes a project note overrides
    by a shared recall keyword the prompt uses (the narrower scope wins), private notes when the
    answer goes to an agent, and the notes at ``paths``."""
    exclude = _overridden_user_units(index, prompt) if mixed_scopes else frozenset()
    if not include_private:
        exclude = exclude | index.private_units()
    paths = list(paths)
    if paths:
        exclude = exclude | {row["id"] for row in index.units_by_path(paths)}
    return exclude


def recalled_units(index: Index, prompt: str, hits: list[Hit], *, depth: Depth, explain: bool) -> list[Recalled]:
    """The selected hits as ``Recalled`` units, best first, every string field redacted."""
    rows = index.units_by_id([h.unit_id for h in hits])
    chosen = [(hit, rows[hit.unit_id]) for hit in hits if hit.unit_id in rows]
    matched = index.matched_fields(query_terms(prompt), [h.unit_id for h, _ in chosen]) if explain else {}
    return [recalled_note(row, rank=n, hit=hit, depth=depth, matched=matched.get(hit.unit_id) if explain else None)
            for n, (hit, row) in enumerate(chosen, start=1)]


def recalled_note(row: dict, *, rank: int = 0, hit: Hit | None = None, depth: Depth = Depth.FULL,
                  matched: dict | None = None, reached: str | None = None) -> Recalled:
    """One indexed note as a ``Recalled`` unit (``hit``: the ranking's evidence, when it was
    ranked; ``matched``: its matched fields, which also asks for the explanation)."""
    meta = row["meta"]
    explanation = None
    if matched is not None and hit is not None:
        legs = hit.legs
        explanation = Explanation(
            bm25=None if legs.bm25 is None else round(legs.bm25, 4), bm25_norm=round(legs.bm25_norm, 4),
            cosine=None if legs.cosine is None else round(legs.cosine, 4), vector=round(legs.vector, 4),
            fused=round(legs.fused, 4), bm25_rank=legs.bm25_rank, vector_rank=legs.vector_rank,
            matched_fields=matched, notes=tuple(legs.notes), activation=round(hit.activation, 4),
            relevance=round(hit.relevance, 4), importance=round(hit.importance, 4), recency=round(hit.recency, 4),
            base_level=None if hit.base_level is None else round(hit.base_level, 3), state=hit.state,
            path=tuple(neutral_links(step) for step in hit.path),
            risk=risk_kind(row_risk(row)))  # --explain: the kind, never the note's words (an agent may run it)
    return Recalled(
        name=redact(row["name"]), path=redact(row["path"]), rank=rank, score=round(hit.score, 4) if hit else 0.0,
        reached=reached or ("; ".join(hit.path) if hit and hit.path else "seed"),
        title=redact(row["title"] or row["name"]), type=row["type"], scope=row["scope"],
        description=redact(row["description"]), body=redact(row["body"]), hook=redact(meta.get("index_hook") or ""),
        recall=tuple(redact(k) for k in meta.get("recall", [])), paths=tuple(redact(p) for p in meta.get("paths", [])),
        kind=meta.get("kind"), status=meta.get("status"), private=bool(meta.get("private")),
        state=hit.state if hit else "active", explain=explanation, depth=depth, uid=row["uid"])


def log_recall(hit_log, prompt: str, results: list[Recalled], hits: list[Hit], *, session: str | None, depth: Depth,
               layer: str, bracket: str | None) -> None:
    """Write what was recalled, and why, to the hit-log (the lifecycle reads it back)."""
    if hit_log is None or not results:
        return
    hit_log.record(prompt, [
        {"path": r.path, "name": r.name, "rank": r.rank, "score": r.score,
         "parts": {"bm25_norm": round(h.legs.bm25_norm, 4), "vector": round(h.legs.vector, 4),
                   "fused": round(h.legs.fused, 4), "activation": round(h.activation, 4),
                   "relevance": round(h.relevance, 4), "importance": round(h.importance, 4),
                   "recency": round(h.recency, 4), "reached": _reached_kind(h),
                   **({"via": r.reached} if r.reached != "seed" else {})}}
        for r, h in zip(results, hits)], session=session, depth=depth.value, layer=layer, bracket=bracket)


def _reached_kind(hit: Hit) -> str:
    if hit.remote:
        return "remote"
    if hit.companion_of:
        return "constellation"
    if hit.activation and not (hit.path and hit.path[0] == "seed"):
        return "spread"
    return "seed"


def _overridden_user_units(index: Index, prompt: str) -> frozenset[int]:
    """User-scope units that share a recall keyword, used by the prompt, with a narrower-scope
    unit: the narrower scope wins, so they leave both legs before ranking."""
    from .store import scope_rank

    terms = set(query_terms(prompt))
    rows = index.recall_keywords()

    def used(keyword: str) -> bool:
        words = set(query_terms(keyword))
        return bool(words) and words <= terms

    narrower = {kw.lower() for _, scope, kws in rows if scope_rank(scope) > 0 for kw in kws if used(kw)}
    return frozenset(uid for uid, scope, kws in rows
                     if scope_rank(scope) == 0 and narrower & {kw.lower() for kw in kws})
