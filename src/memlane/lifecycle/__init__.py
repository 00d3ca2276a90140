"""L: what happens to each note over time — the hit-log of every recall (L2), its uses folded
into the index, ACT-R recency for scoring (L1), and Darwinian decay (L3)."""

from .hitlog import HitLog
from .usage import Transition, Usage

__all__ = ["HitLog", "Transition", "Usage"]
