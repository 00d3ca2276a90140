"""Ranking units for a query: the keyword leg, the vector leg, thresholds, fusion (R1, R3)."""

from __future__ import annotations


from ..config import RetrieveConfig
from ..modes import Fusion
from ..embed.base import Embedder, QueryLine
from ..index.storage import Storage
from ..index.text import query_terms
from .fusion import Legs, calibrate_cosine, fuse_hybrid, fuse_rrf, min_max
from ..records import dataclass, field
from .. import logs

log = logs.get("memlane.retrieve")


@dataclass
class Hit:
    """A ranked unit: its score, its legs, and the query terms it matched."""

    unit_id: int
    score: float
    legs: Legs
    matched: dict[str, list[str]] | None = None  # field -> query terms found there
    activation: float = 0.0  # received by spreading activation (associate/spread.py)
    path: list[str] = field(default_factory=list)  # "seed" and/or "via [[a]] ..." (A6)
    relevance: float = 0.0  # text relevance plus activation, before importance and recency
    importance: float = 1.0  # L1 (hubs, the note's own importance:)
    recency: float = 1.0  # L1 (ACT-R base level)
    base_level: float | None = None
    companion_of: str | None = None  # recalled with this constellation member (A3)
    remote: bool = False  # a divergent-mode remote associate (A5)
    state: str = "active"  # lifecycle state: active, dormant or archived (L3)


def rank(index: Storage, query: str, settings: RetrieveConfig, *, embedder: Embedder | None,
         fusion: Fusion | str | None = None, limit: int | None = None,
         apply_threshold: bool = True, query_vector=None, exclude: frozenset[int] = frozenset()) -> list[Hit]:
    """Units relevant to ``query``, best first, each with the evidence of both legs — both legs
    read one state of the index, whoever writes meanwhile."""
    with index.snapshot():
        return _rank(index, query, settings, embedder=embedder, fusion=fusion, limit=limit,
                     apply_threshold=apply_threshold, query_vector=query_vector, exclude=exclude)


def _rank(index: Storage, query: str, settings: RetrieveConfig, *, embedder: Embedder | None,
          fusion: Fusion | str | None, limit: int | None, apply_threshold: bool, query_vector,
          exclude: frozenset[int]) -> list[Hit]:
    fusion = Fusion(fusion or settings.fusion)
    terms = query_terms(query)
    if apply_threshold and not terms:
        return []  # "thanks!", "ok great": no content word, nothing to recall (R3)
    legs: dict[int, Legs] = {}

    if fusion is not Fusion.VECTOR:
        keyword = {u: s for u, s in index.keyword_search(terms, limit=settings.candidates) if u not in exclude}
        for position, (unit_id, norm) in enumerate(
                sorted(min_max(keyword).items(), key=lambda kv: -kv[1]), start=1):
            legs[unit_id] = Legs(bm25=keyword[unit_id], bm25_norm=norm, bm25_rank=position)

    vectors_available = False
    if embedder is not None and fusion is not Fusion.KEYWORD:
        found = None
        if query.strip():
            qvec = query_vector if query_vector is not None else embedder.embed_query(query[: embedder.max_chars])
            line = embedder.query_line(query, qvec)  # a CJK prompt: the part of the model that reads it
            found = index.similarities(embedder.name, line.vector, among=list(legs))  # the keyword candidates too
        if found is not None:
            vectors_available = True
            _add_vector_leg(legs, found, settings, line, apply_threshold, exclude)

    if not legs:
        return []
    if fusion is Fusion.RRF:
        fuse_rrf(legs, k=settings.rrf_k, legs_used=1 + int(vectors_available))
    elif fusion is Fusion.VECTOR:
        for item in legs.values():
            item.fused = item.vector
    else:
        fuse_hybrid(legs, vector_weight=settings.vector_weight, keyword_weight=settings.keyword_weight,
                    vectors_available=vectors_available and fusion is Fusion.HYBRID)
    hits = [Hit(unit_id, item.fused, item) for unit_id, item in legs.items()]
    if apply_threshold:
        hits = [h for h in hits if h.score >= settings.min_score]
    hits = order_hits(hits)
    return hits[:limit] if limit else hits


def order_hits(hits: list[Hit]) -> list[Hit]:
    """Best first; equal scores (e.g. several notes below the vector floor) fall back to the
    raw cosine, then the raw BM25, then the unit id, so the order never depends on insertion."""
    return sorted(hits, key=lambda h: (-h.score, -(h.legs.cosine if h.legs.cosine is not None else -2.0),
                                       -(h.legs.bm25 or 0.0), h.unit_id))


def _add_vector_leg(legs: dict[int, Legs], found, settings: RetrieveConfig,
                    line: QueryLine, apply_threshold: bool, exclude=frozenset()) -> None:
    units = found.units
    # a configured min_cosine is a floor on the model's usual line, not on another one
    floor = settings.min_cosine if settings.min_cosine is not None and not line.why else line.min_cosine
    strong = max(line.strong_cosine, floor + 1e-6)
    top, sims = found.top(min(settings.candidates, len(found)))  # the best, best first
    for rank_no, (pos, cosine) in enumerate(zip(top.tolist(), sims.tolist()), start=1):
        if int(units[pos]) in exclude:
            continue
        if apply_threshold and cosine < floor:
            break  # below the leg's threshold nothing is recalled by this leg (R3)
        item = legs.setdefault(int(units[pos]), Legs())
        item.cosine, item.vector_rank = cosine, rank_no
        item.vector = calibrate_cosine(cosine, floor, strong)
    # keyword candidates outside the vector top-N still get their cosine (no rank)
    for unit_id, cosine in found.cosines_of([u for u, item in legs.items() if item.cosine is None]).items():
        legs[unit_id].cosine, legs[unit_id].vector = cosine, calibrate_cosine(cosine, floor, strong)
    if line.why:
        for item in legs.values():
            if item.cosine is not None:
                item.notes.append(f"cosine by {line.why}")


def matched_fields(index: Storage, query: str, unit_ids: list[int]) -> dict[int, dict[str, list[str]]]:
    """For each unit, which query terms the keyword leg finds in which field (for ``--explain``)."""
    return index.matched_fields(query_terms(query), unit_ids)
