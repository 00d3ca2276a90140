"""Darwinian decay (docs/design.md, "Lifecycle"): "knowledge must eliminate itself".

Each note has a **stability**, starting at 1 and grown by use — Ebbinghaus's forgetting curve
with Hebbian potentiation: every reference strengthens the trace, and a reference that comes
after a gap strengthens it more than one massed right after the last (the spacing effect):

    stability += spacing_gain × (1 − exp(−gap / spacing_days))

A note idle (unreferenced and unedited) for ``dormant_days × stability`` is **dormant**: still
recalled, but its recency has sunk. Idle for ``archive_days × stability`` (default 90 days
for a note never used) it is **archived**: it leaves default recall, stays searchable in deep
mode, and a use brings it back. The clock starts no earlier than the day memlane first saw the
note, so installing memlane over an old store archives nothing.

All of this is computed from the hit-log and file dates and kept in the index; the user's
files are never rewritten. A ``status:`` written in a note's frontmatter is the author's
decision and wins.
"""

from __future__ import annotations

import math

from .activation import DAY
from ..records import dataclass

STATES = ("active", "dormant", "archived")


@dataclass(frozen=True)
class Verdict:
    """A note's lifecycle state, with the reason and the figures behind it."""

    state: str
    reason: str
    idle_days: float
    stability: float


def potentiate(stability: float, gap_seconds: float, *, gain: float, spacing_days: float) -> float:
    """Stability after one more reference, ``gap_seconds`` after the previous one."""
    gap_days = max(0.0, gap_seconds) / DAY
    return stability + gain * (1.0 - math.exp(-gap_days / spacing_days))


def judge(*, now: float, last_use: float, stability: float, dormant_days: float, archive_days: float,
          declared: str | None = None) -> Verdict:
    """The state a note should be in now. ``last_use``: its latest reference, edit, or the
    moment memlane first saw it, whichever is latest."""
    idle = max(0.0, (now - last_use) / DAY)
    if declared in STATES:
        return Verdict(declared, f"status: {declared} in its frontmatter", idle, stability)
    dormant_at, archive_at = dormant_days * stability, archive_days * stability
    if idle >= archive_at:
        return Verdict("archived", f"idle {idle:.0f} d >= {archive_at:.0f} d (archive_days {archive_days:g} x "
                       f"stability {stability:.2f})", idle, stability)
    if idle >= dormant_at:
        return Verdict("dormant", f"idle {idle:.0f} d >= {dormant_at:.0f} d (dormant_days {dormant_days:g} x "
                       f"stability {stability:.2f})", idle, stability)
    return Verdict("active", f"idle {idle:.0f} d < {dormant_at:.0f} d", idle, stability)
