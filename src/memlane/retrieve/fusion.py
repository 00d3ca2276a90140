"""Combining the keyword and the vector leg (R1), as pure functions.

The hybrid recipe is MemPalace's, ported whole, because its 0.6/0.4 ratio is only valid
with all three of its pieces (docs/design.md, "Relevance"): (1) a real Okapi BM25 with IDF keyword leg,
(2) min-max normalisation on the BM25 leg only, the vector leg kept absolute, and (3) a
unit with no vector renormalised to the leg it has, never scored 0.

One addition, measured (docs/how-recall-works.md): each embedder's cosines live on its
own scale (multilingual-e5 squeezes everything into ~0.78-0.90, MiniLM spreads it over
0-0.7), so the absolute cosine goes through a fixed per-model line that maps the model's
"unrelated" cosine to 0 and its "clearly relevant" cosine to 1. It stays absolute (the
same cosine always gives the same value), never normalised per query.
"""

from __future__ import annotations

from ..records import dataclass, field


@dataclass
class Legs:
    """Per-unit evidence from each leg; ``None`` means the leg has no value for the unit."""

    bm25: float | None = None  # raw FTS5 BM25 (higher = better)
    bm25_norm: float = 0.0
    cosine: float | None = None
    vector: float = 0.0  # calibrated cosine used in fusion
    bm25_rank: int | None = None
    vector_rank: int | None = None
    fused: float = 0.0
    notes: list[str] = field(default_factory=list)


def min_max(scores: dict[int, float]) -> dict[int, float]:
    """Min-max normalise to [0, 1]; a single score (or all equal) maps to 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def calibrate_cosine(cosine: float, floor: float, strong: float = 1.0) -> float:
    """Map a cosine to [0, 1] on the model's scale: ``floor`` and below give 0, ``strong``
    and above give 1."""
    if strong <= floor:
        return 1.0 if cosine >= floor else 0.0
    return max(0.0, min(1.0, (cosine - floor) / (strong - floor)))


def fuse_hybrid(legs: dict[int, Legs], *, vector_weight: float, keyword_weight: float,
                vectors_available: bool) -> None:
    """Set ``fused`` on every unit: weighted sum, renormalised to the legs a unit has."""
    for item in legs.values():
        has_vector = vectors_available and item.cosine is not None
        if has_vector:
            total = vector_weight + keyword_weight
            item.fused = (vector_weight * item.vector + keyword_weight * item.bm25_norm) / total
        else:
            item.fused = item.bm25_norm  # missing vector: the keyword leg alone, at full weight
            if vectors_available:
                item.notes.append("no vector for this unit yet: keyword leg only")


def fuse_rrf(legs: dict[int, Legs], *, k: int, legs_used: int) -> None:
    """Reciprocal-rank fusion, scaled so that first place in every leg scores 1."""
    best = legs_used / (k + 1)
    for item in legs.values():
        score = 0.0
        if item.bm25_rank is not None:
            score += 1 / (k + item.bm25_rank)
        if item.vector_rank is not None:
            score += 1 / (k + item.vector_rank)
        item.fused = score / best if best else 0.0
