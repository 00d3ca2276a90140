"""Recency as ACT-R base-level activation (Anderson & Schooler 1991; Anderson et al. 2004).

    B = ln( Σ_j t_j ** -d )

over the past uses of a note (its recalls, from the hit-log, and its last edit), ``t_j`` in
days since each use (at least an hour), ``d`` = 0.5. Frequent and recent use raises B; disuse
lets it sink as a power law — the shape of human forgetting. Only the last few use times are
kept per note; older ones enter through Petrov's (2006) approximation from their count and
the oldest time.

L1 multiplies relevance by a recency factor in ``[1 − weight, 1]``: a logistic of B centred
where a single use 30 days ago sits. A note with no known use at all is neutral (1.0).
"""

from __future__ import annotations

import math

DAY = 86_400.0
MIN_AGE_DAYS = 1 / 24
#: B of one use 30 days ago: the middle of the recency range
CENTRE = -0.5 * math.log(30.0)


def base_level(ages_days: list[float], *, d: float = 0.5, older: int = 0, oldest_days: float | None = None) -> float | None:
    """B from the ages (days) of the kept uses, plus ``older`` uses not kept, spread back to
    ``oldest_days`` (Petrov 2006). None when there is no use at all."""
    ages = [max(MIN_AGE_DAYS, a) for a in ages_days]
    if not ages and not older:
        return None
    total = sum(a ** -d for a in ages)
    if older > 0 and oldest_days is not None and d != 1:
        newest_old = max(ages) if ages else MIN_AGE_DAYS
        oldest = max(oldest_days, newest_old + MIN_AGE_DAYS)
        total += older * (oldest ** (1 - d) - newest_old ** (1 - d)) / ((1 - d) * (oldest - newest_old))
    return math.log(total) if total > 0 else None


def recency_factor(b: float | None, weight: float) -> float:
    """Multiplier in ``[1 − weight, 1]``; 1.0 when nothing is known."""
    if b is None or weight <= 0:
        return 1.0
    return 1.0 - weight + weight / (1.0 + math.exp(-(b - CENTRE)))
