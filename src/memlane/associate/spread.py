"""Spreading activation, convergent mode (A2, A6).

Collins & Loftus (1975) spreading activation, bounded as seed 000 asks ("one hop,
intent-gated, decaying"), the cheap analogue of HippoRAG's personalised PageRank:

- seeds are the units that pass the relevance filter on their own (fused score ≥ min_score);
- each seed sends ``activation × decay × edge weight`` one hop along real edges, both
  directions (a link says the two notes belong together, whichever wrote it);
- a neighbour is admitted only when it is itself plausibly relevant (its own fused score at
  least ``admit × min_score``): activation never replaces relevance — a peer that ranked by
  activation alone saturated and scored Hit@5 0.08 on LongMemEval (issue 3);
- a neighbour that is a seed itself already spreads: that is the "strong neighbour becomes a
  seed and may spread once more" rule, so nothing travels further than one hop from a seed;
- the final score is relevance + ``blend`` × the strongest activation received.

Every admitted unit records its path: ``seed`` or ``via [[a]]`` with the activations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..retrieve.search import Hit, order_hits

EDGE_WEIGHTS = {"wiki": 1.0, "markdown": 1.0, "mention": 0.8, "supersedes": 0.5}

Neighbours = Callable[[int], Iterable[tuple[int, str, str]]]


@dataclass
class SpreadSettings:
    """Defaults from a first sweep on agent_notes_dev and the demo store (README, "Associative
    recall"); the full calibration, with hubs and constellations, is issue 3's."""

    decay: float = 0.5
    blend: float = 1.0
    admit: float = 0.5
    min_score: float = 0.30


def spread_activation(hits: list[Hit], neighbours: Neighbours, settings: SpreadSettings,
                      names: dict[int, str] | None = None) -> list[Hit]:
    """Return ``hits`` re-scored by one hop of activation from the seeds, best first."""
    relevance = {h.unit_id: h for h in hits}
    seeds = [h for h in hits if h.score >= settings.min_score]
    floor = settings.admit * settings.min_score
    received: dict[int, tuple[float, int, str]] = {}  # unit -> (activation, from seed, edge kind)
    for seed in seeds:
        for other, kind, _direction in neighbours(seed.unit_id):
            target = relevance.get(other)
            if target is None or target.score < floor or other == seed.unit_id:
                continue  # not plausibly relevant on its own: not admitted
            activation = seed.score * settings.decay * EDGE_WEIGHTS.get(kind, 0.5)
            if activation > received.get(other, (0.0, 0, ""))[0]:
                received[other] = (activation, seed.unit_id, kind)
    out = []
    for hit in hits:
        got = received.get(hit.unit_id)
        if got is None:
            hit.path = ["seed"] if hit.score >= settings.min_score else []
            out.append(hit)
            continue
        activation, source, kind = got
        source_name = (names or {}).get(source, str(source))
        hit.activation = activation
        hit.path = (["seed"] if hit.score >= settings.min_score else []) + [
            f"via [[{source_name}]] ({kind}; seed {relevance[source].score:.3f} -> {activation:.3f})"]
        hit.score = hit.score + settings.blend * activation
        out.append(hit)
    return order_hits(out)
