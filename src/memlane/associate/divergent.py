"""Divergent recall (A5): remote associates for ideation.

Convergent recall (spread.py) stays near the prompt: one hop, intent-gated. Divergent mode
opts out of that bound on purpose (docs/design.md, "Associative recall"): Mednick's flat associative
hierarchy and Koestler's bisociation — the useful frame comes from a note several hops away,
in a part of the store the task would never touch.

Mechanically it is HippoRAG's personalised PageRank: random walks restart at the prompt's
seeds (weighted by relevance, with a lower threshold than convergent mode) and wander along
links with probability ``damping`` per step; the notes where they pile up, outside the
clusters the convergent results sit in, are the remote associates. Each says how it was
reached (the shortest link path from a seed). The walk is confined to a few hops around the
seeds, so its cost does not grow with the store.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from .spread import EDGE_WEIGHTS

Adjacency = Mapping[int, list[tuple[int, str]]]
MAX_HOPS = 4
ITERATIONS = 30


def neighbourhood(adjacency: Adjacency, seeds: list[int], hops: int = MAX_HOPS) -> dict[int, tuple[int, int | None, str]]:
    """node -> (hops from the nearest seed, previous node on a shortest path, edge kind)."""
    seen: dict[int, tuple[int, int | None, str]] = {s: (0, None, "seed") for s in seeds}
    queue = deque(seeds)
    while queue:
        node = queue.popleft()
        depth = seen[node][0]
        if depth >= hops:
            continue
        for other, kind in adjacency.get(node, ()):
            if other not in seen:
                seen[other] = (depth + 1, node, kind)
                queue.append(other)
    return seen


def personalized_pagerank(adjacency: Adjacency, restart: Mapping[int, float], *, damping: float = 0.85,
                          nodes: set[int] | None = None, iterations: int = ITERATIONS) -> dict[int, float]:
    """Stationary visit probabilities of walks that restart at ``restart`` (weights need not
    sum to 1), over the weighted, undirected graph, confined to ``nodes``."""
    total = sum(w for w in restart.values() if w > 0)
    if total <= 0:
        return {}
    start = {n: w / total for n, w in restart.items() if w > 0}
    nodes = set(start) | (nodes or set())
    out: dict[int, list[tuple[int, float]]] = {}
    for node in nodes:
        links = [(o, EDGE_WEIGHTS.get(k, 0.5)) for o, k in adjacency.get(node, ()) if o in nodes and o != node]
        norm = sum(w for _, w in links)
        out[node] = [(o, w / norm) for o, w in links] if norm else []
    rank = dict(start)
    for _ in range(iterations):
        nxt = {n: (1 - damping) * w for n, w in start.items()}
        stuck = 0.0
        for node, mass in rank.items():
            if not out[node]:
                stuck += mass
                continue
            for other, share in out[node]:
                nxt[other] = nxt.get(other, 0.0) + damping * mass * share
        for n, w in start.items():  # a walk with nowhere to go restarts
            nxt[n] = nxt.get(n, 0.0) + damping * stuck * w
        rank = nxt
    return rank


def remote_associates(adjacency: Adjacency, relevance: Mapping[int, float], chosen: list[int],
                      clusters: Mapping[int, int], *, min_score: float, damping: float, limit: int
                      ) -> list[tuple[int, float, list[tuple[int, str]]]]:
    """Up to ``limit`` (node, score, path) outside the clusters of ``chosen``, best first.

    Walk-reached notes come first, ranked by walk mass × (1 + relevance); the path is the
    shortest link chain from a seed: [(node, edge kind), ...]. When the links reach nothing
    new, the remaining places go to the most relevant notes of other clusters down to the
    flatter threshold ``min_score``, with a one-element path (no link)."""
    if limit <= 0:
        return []
    restart = {n: r for n, r in relevance.items() if r >= min_score}
    for node in chosen:
        restart.setdefault(node, max(relevance.get(node, 0.0), min_score))
    near = neighbourhood(adjacency, list(restart))
    ppr = personalized_pagerank(adjacency, restart, damping=damping, nodes=set(near))
    taken = set(chosen)
    home = {clusters.get(n, n) for n in chosen}
    top_mass = max(ppr.values(), default=0.0) or 1.0

    def remote(node: int) -> bool:
        return node not in taken and clusters.get(node, node) not in home

    walked = sorted(((ppr[n] / top_mass * (1 + relevance.get(n, 0.0)), n) for n in ppr
                     if remote(n) and near.get(n, (0,))[0] > 0 and ppr[n] > 0), key=lambda item: (-item[0], item[1]))
    out = [(node, score, _path(near, node)) for score, node in walked[:limit]]
    if len(out) < limit:
        picked = {node for node, _, _ in out}
        flat = sorted(((r, n) for n, r in relevance.items() if r >= min_score and remote(n) and n not in picked),
                      key=lambda item: (-item[0], item[1]))
        out += [(node, score, [(node, "relevance")]) for score, node in flat[: limit - len(out)]]
    return out


def _path(near: dict[int, tuple[int, int | None, str]], node: int) -> list[tuple[int, str]]:
    chain = []
    current: int | None = node
    while current is not None and current in near:
        _, previous, kind = near[current]
        chain.append((current, kind))
        current = previous
    return list(reversed(chain))
