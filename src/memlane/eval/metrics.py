"""Retrieval metrics as pure functions of one ranking (E1), and the gate's per-query test (E2).

``ranked`` is a list of unit ids, best first; ``relevant`` a set of ids, or a dict
``id -> gain`` for graded relevance. Definitions follow the benchmarks' own:

- Recall@k: fraction of the relevant units found in the top k (LongMemEval's recall_all@k);
- Hit@k: 1 if any relevant unit is in the top k (recall_any@k);
- NDCG@k: Järvelin & Kekäläinen (2002), linear gains, log2(rank + 1) discount, the ideal
  ranking built from all relevant units (as trec_eval does);
- MRR: reciprocal rank of the first relevant unit over the whole ranking (0 if none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from ..index.text import estimate_tokens

__all__ = [
    "estimate_tokens", "gate_outcome", "hit_at_k", "latency_summary", "mean", "must_not_in_top_k",
    "must_not_outranks_relevant", "ndcg_at_k", "percentile", "recall_at_k", "reciprocal_rank",
]


def _ids(relevant: Iterable[str] | Mapping[str, float]) -> set[str]:
    return set(relevant.keys() if isinstance(relevant, Mapping) else relevant)


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float], k: int) -> float:
    wanted = _ids(relevant)
    if not wanted:
        return 0.0
    return len(wanted & set(ranked[:k])) / len(wanted)


def hit_at_k(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float], k: int) -> float:
    wanted = _ids(relevant)
    return 1.0 if any(uid in wanted for uid in ranked[:k]) else 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float], k: int = 10) -> float:
    gains = dict(relevant) if isinstance(relevant, Mapping) else {uid: 1.0 for uid in relevant}
    if not gains:
        return 0.0
    dcg = sum(gains.get(uid, 0.0) / math.log2(pos + 2) for pos, uid in enumerate(ranked[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(pos + 2) for pos, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float]) -> float:
    wanted = _ids(relevant)
    for pos, uid in enumerate(ranked, start=1):
        if uid in wanted:
            return 1.0 / pos
    return 0.0


def must_not_in_top_k(ranked: Sequence[str], must_not: Iterable[str], k: int) -> int:
    """How many of the must-not units are in the top k."""
    return len(set(must_not) & set(ranked[:k]))


def must_not_outranks_relevant(ranked: Sequence[str], relevant: Iterable[str] | Mapping[str, float],
                               must_not: Iterable[str]) -> bool:
    """True when some must-not unit is ranked above every relevant unit (a relevant unit
    missing from the ranking counts as ranked last), as in agent_notes_dev's validate.py."""
    position = {uid: pos for pos, uid in reversed(list(enumerate(ranked)))}
    worst = len(ranked) + 1
    best_lure = min((position[u] for u in must_not if u in position), default=None)
    if best_lure is None:
        return False
    return best_lure < min((position.get(u, worst) for u in _ids(relevant)), default=worst)


def gate_outcome(keyword_top: Sequence[str], hybrid_top: Sequence[str],
                 relevant: Iterable[str] | Mapping[str, float], acceptable: Iterable[str] = ()) -> dict:
    """One query of the semantic gate (docs/design.md, "Evaluation"): does hybrid catch a relevant unit that
    keyword-only missed, and which units does hybrid add that are not relevant?

    Both lists are what each mode returns (its top k). An added false positive is a unit in
    ``hybrid_top``, not relevant, not acceptable (``also_ok``), and not in ``keyword_top``.
    """
    wanted = _ids(relevant)
    keyword = set(keyword_top)
    caught = [uid for uid in hybrid_top if uid in wanted and uid not in keyword]
    lost = [uid for uid in keyword_top if uid in wanted and uid not in set(hybrid_top)]
    ok = set(acceptable)
    added_fp = [uid for uid in hybrid_top if uid not in wanted and uid not in ok and uid not in keyword]
    return {"caught": caught, "lost": lost, "added_fp": added_fp, "hybrid_n": len(hybrid_top),
            "keyword_n": len(keyword_top)}


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def percentile(values: Iterable[float], p: float) -> float:
    """The ``p``-th percentile (0-100) with linear interpolation between order statistics
    (numpy's default method)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(milliseconds: Iterable[float]) -> dict:
    values = list(milliseconds)
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "mean": mean(values), "max": max(values, default=0.0)}


