"""The shape of the link graph: hubs (A4) and constellations (A3), computed when the graph
is rebuilt and kept in the index for scoring.

- **Hubs**: in-degree and PageRank (Page et al. 1998; damping 0.85, power iteration) over the
  undirected-for-reading, directed-as-written edges; many notes depending on one raises its
  importance (docs/design.md, "Associative recall").
- **Constellations**: sets of notes that all link to each other — "declared by mutual
  [[links]] in the member bodies" (docs/design.md): the maximal cliques of the graph of reciprocal
  links. Every clique of two or more is kept; recall decides which sizes count
  (``associate.constellation_min`` / ``_max``). A note may belong to more than one.
- **Clusters**: communities of the undirected graph by Louvain's local moving (Blondel et al.
  2008), deterministic here; divergent recall (A5) reaches into other clusters.
"""

from __future__ import annotations

from collections.abc import Iterable

DAMPING = 0.85
ITERATIONS = 50


def in_degree(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    counts = {n: 0 for n in nodes}
    for src, dst in set(edges):
        if src != dst and dst in counts:
            counts[dst] += 1
    return counts


def pagerank(nodes: Iterable[int], edges: Iterable[tuple[int, int]], *, damping: float = DAMPING,
             iterations: int = ITERATIONS, tolerance: float = 1e-9) -> dict[int, float]:
    """PageRank by power iteration; dangling nodes spread their rank evenly. Sums to 1."""
    nodes = list(dict.fromkeys(nodes))
    if not nodes:
        return {}
    out: dict[int, set[int]] = {n: set() for n in nodes}
    for src, dst in edges:
        if src in out and dst in out and src != dst:
            out[src].add(dst)
    n = len(nodes)
    rank = {node: 1.0 / n for node in nodes}
    for _ in range(iterations):
        dangling = sum(rank[node] for node in nodes if not out[node])
        nxt = {node: (1 - damping) / n + damping * dangling / n for node in nodes}
        for src, targets in out.items():
            if targets:
                share = damping * rank[src] / len(targets)
                for dst in targets:
                    nxt[dst] += share
        delta = sum(abs(nxt[node] - rank[node]) for node in nodes)
        rank = nxt
        if delta < tolerance:
            break
    return rank


MAX_CLIQUES = 10_000  # a pathological graph cannot make the rebuild explode


def constellations(edges: Iterable[tuple[int, int]], *, min_size: int = 3) -> list[frozenset[int]]:
    """Maximal cliques (Bron–Kerbosch with pivoting) of the reciprocal-link graph, largest first."""
    directed = {(s, d) for s, d in edges if s != d}
    mutual: dict[int, set[int]] = {}
    for s, d in directed:
        if (d, s) in directed:
            mutual.setdefault(s, set()).add(d)
    found: list[frozenset[int]] = []

    def expand(clique: set[int], candidates: set[int], excluded: set[int]) -> None:
        if len(found) >= MAX_CLIQUES:
            return
        if not candidates and not excluded:
            if len(clique) >= min_size:
                found.append(frozenset(clique))
            return
        pivot = max(candidates | excluded, key=lambda v: len(mutual[v] & candidates))
        for v in list(candidates - mutual[pivot]):
            expand(clique | {v}, candidates & mutual[v], excluded & mutual[v])
            candidates.discard(v)
            excluded.add(v)

    expand(set(), set(mutual), set())
    return sorted(found, key=lambda c: (-len(c), sorted(c)))


def clusters(nodes: Iterable[int], edges: Iterable[tuple[int, int]], *, passes: int = 20) -> dict[int, int]:
    """node -> cluster label (the smallest node id of its community).

    The local-moving phase of Louvain (Blondel et al. 2008) on the undirected graph: each node,
    in id order, joins the neighbouring community that raises modularity most, until no node
    moves. Deterministic; a note without links is a cluster of its own."""
    nodes = sorted(set(nodes))
    weight: dict[int, dict[int, float]] = {n: {} for n in nodes}
    for src, dst in edges:
        if src != dst and src in weight and dst in weight:
            weight[src][dst] = weight[src].get(dst, 0.0) + 1.0
            weight[dst][src] = weight[dst].get(src, 0.0) + 1.0
    degree = {n: sum(w.values()) for n, w in weight.items()}
    two_m = sum(degree.values())
    community = {n: n for n in nodes}
    if two_m == 0:
        return community
    total = dict(degree)  # sum of degrees per community
    for _ in range(passes):
        moved = False
        for node in nodes:
            if not weight[node]:
                continue
            own = community[node]
            links: dict[int, float] = {}
            for other, w in weight[node].items():
                links[community[other]] = links.get(community[other], 0.0) + w
            total[own] -= degree[node]
            k = degree[node]
            best, best_gain = own, links.get(own, 0.0) - total[own] * k / two_m
            for label in sorted(links):
                gain = links[label] - total[label] * k / two_m
                if gain > best_gain + 1e-12:
                    best, best_gain = label, gain
            total[best] = total.get(best, 0.0) + k
            if best != own:
                community[node] = best
                moved = True
        if not moved:
            break
    smallest: dict[int, int] = {}
    for node in nodes:
        smallest.setdefault(community[node], node)
    return {node: smallest[community[node]] for node in nodes}
