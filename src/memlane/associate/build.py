"""Computing the link graph a store keeps: edges from the notes' links, future-write markers,
what supersedes what, and — when the edges or the notes changed — hubs (in-degree, PageRank),
clusters and constellations. The store only keeps what this computes (``replace_graph``)."""

from __future__ import annotations

from ..index.storage import GraphData
from .graph import on_cycles, resolve_links, superseded_map
from .structure import clusters, constellations, in_degree, pagerank

#: bump when the graph is computed differently: every index then rebuilds it on its next refresh
GRAPH_VERSION = "5"


def build_graph(units: list[dict], stored: tuple[set, set, str | None] | None = None) -> GraphData:
    """The graph of ``units`` (a store's ``link_facts``). With ``stored`` (its
    ``stored_structure``) the structure is recomputed only when the edges or nodes differ."""
    graph = resolve_links(units)
    edges = {(e.src, e.dst, e.kind) for e in graph.edges}
    nodes = [u["id"] for u in units]
    data = GraphData(edges=graph.edges, missing=graph.missing, superseded=superseded_map(units, graph.edges),
                     loops=sorted(on_cycles([(e.src, e.dst) for e in graph.edges if e.kind == "supersedes"])),
                     version=GRAPH_VERSION)
    if stored is not None and stored[2] == GRAPH_VERSION and stored[0] == edges and stored[1] == set(nodes):
        return data  # most edits touch neither the links nor the set of notes: nodes stays None
    links = [(e.src, e.dst) for e in graph.edges if e.kind not in ("supersedes", "index")]
    every = [(e.src, e.dst) for e in graph.edges]
    degree, ranks, community = in_degree(nodes, links), pagerank(nodes, links), clusters(nodes, every)
    data.nodes = {n: (degree[n], ranks[n], community[n]) for n in nodes}
    data.constellations = [sorted(members) for members in constellations(links, min_size=2)]
    return data


def rebuild_graph(store, changed: bool = True) -> bool:
    """Recompute and store ``store``'s graph when its units ``changed`` or it was computed by an
    older version; returns whether it did."""
    if not changed and store.get_meta("graph") == GRAPH_VERSION:
        return False
    with store.transaction():  # read and write in one go: another process's sync cannot come between
        store.replace_graph(build_graph(store.link_facts(), store.stored_structure()))
    return True
