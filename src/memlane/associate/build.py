"""Computing the link graph a store keeps: edges from the notes' links, future-write markers,
what supersedes what, and — when the edges or the notes changed — hubs (in-degree, PageRank),
clusters and constellations. The store only keeps what this computes (``replace_graph``).

A large store whose edit moved only some notes' own links is not rebuilt whole (~10 s at 100k
notes): ``relink`` re-resolves just those notes' links and their targets' in-degree, and marks
the whole-graph structure — PageRank, clusters, constellations — *unsettled*; recall reads the
new edges at once and the structure as it was, until ``settle_graph`` recomputes it (a process
the daemon starts, ``settle.py``; ``memlane index`` in the foreground) or a complete refresh does."""

from __future__ import annotations

from ..index.schema import WRITES
from ..index.storage import GraphData
from ..store.links import link_key
from ..store.note import answer_keys
from .graph import on_cycles, resolve_links, superseded_map, unit_edges
from .structure import clusters, constellations, in_degree, pagerank

#: bump when the graph is computed differently: every index then rebuilds it on its next refresh
GRAPH_VERSION = "5"
#: the stored graph version while its structure waits to settle (``relink``)
UNSETTLED = GRAPH_VERSION + ":unsettled"
#: meta: the count of writes to the units (``WRITES``) the stored edges reflect
GRAPH_UNITS = "graph_units"
#: from this many notes up, an edit that moved only some notes' links relinks them in place
RELINK_FROM = 20_000
#: what a note's own links make; ``supersedes`` and ``MEMORY.md`` sections are rebuilt whole
LINK_KINDS = ("wiki", "markdown", "mention")
#: more distinct targets than this in one edit (a bulk edit across the store): rebuilt whole
RELINK_MAX_TARGETS = 50


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


def rebuild_graph(store, changed: bool = True, edited: tuple[dict, dict] | None = None,
                  writes: tuple[str | None, str | None] = (None, None)) -> bool:
    """Recompute and store ``store``'s graph when its units ``changed`` or it was computed by an
    older version; returns whether it did. ``edited``: (before, after) link facts by uid of the
    only notes that changed — their links alone are re-resolved when ``relink`` can. ``writes``:
    the sync's count of writes to the units before and after it.

    The graph records the count of writes it reflects (``graph_units``). A sync commits before
    its graph is stored; a graph step that fails then (a lock at that moment) leaves the count
    behind, and the next refresh — which finds no note to change — rebuilds the graph whole
    instead of trusting it."""
    state = store.get_meta("graph")
    current = state in (GRAPH_VERSION, UNSETTLED)
    before, after = writes
    known, writes_now = store.get_meta(GRAPH_UNITS), store.get_meta(WRITES)
    tracked = writes_now is not None  # a store that counts its writes (SQLite)
    if not changed and current:
        if not tracked or known == writes_now:
            return False  # an unsettled structure waits for settle_graph, not for every refresh
        if before is not None and known == before:  # only this sync wrote since, and moved no link
            with store.transaction():
                if store.get_meta(GRAPH_UNITS) == before:
                    store.set_meta(GRAPH_UNITS, after)
                    return False
    if changed and current and tracked and known is not None and known == writes_now:
        return False  # another process stored the graph after this sync wrote: it holds these notes already
    if (changed and edited is not None and current and (not tracked or known == before)
            and relink(store, *edited)):
        if tracked:
            store.set_meta(GRAPH_UNITS, after)
        return True
    with store.transaction():  # read and write in one go: another process's sync cannot come between
        store.replace_graph(build_graph(store.link_facts(), store.stored_structure()))
        if tracked:
            store.set_meta(GRAPH_UNITS, store.get_meta(WRITES))
    return True


def settle_graph(store, plan: tuple[int, GraphData] | None = None) -> bool:
    """Recompute the whole-graph structure if ``relink`` left it unsettled, or store ``plan``
    (``settlement``'s, computed elsewhere) unless the index moved since it was read; returns
    whether the structure was stored."""
    with store.transaction():
        if store.get_meta("graph") != UNSETTLED or (plan is not None and plan[0] != store.generation):
            return False
        store.replace_graph(plan[1] if plan is not None else build_graph(store.link_facts(), store.stored_structure()))
    return True


def settlement(reader) -> tuple[int, GraphData] | None:
    """(the generation read at, the settled graph) from one read of ``reader`` (``settle.py``
    computes it, then stores it with ``settle_graph`` unless the index moved), or None when
    nothing is unsettled."""
    with reader.snapshot():
        if reader.get_meta("graph") != UNSETTLED:
            return None
        return reader.generation, build_graph(reader.link_facts(), reader.stored_structure())


def relink(store, before: dict[str, dict], after: dict[str, dict]) -> bool:
    """Store the edited notes' own edges anew (``before``: their stored link facts, with ids;
    ``after``: what they hold now) — when the store is large, only ``links`` moved, and the
    store's link keys are current; False otherwise (the caller rebuilds the whole graph)."""
    if not hasattr(store, "replace_links_of") or store.node_count() < RELINK_FROM:
        return False
    for uid, now in after.items():
        was = before[uid]["meta"]
        if any(was.get(k) != now["meta"].get(k) for k in ("supersedes", "superseded_by", "index_section", "store")):
            return False  # what supersedes what, and sections, are whole-graph facts
    keys = sorted({link_key(t) for now in after.values() for t, _ in now["meta"].get("links", [])} - {""})
    if len(keys) > RELINK_MAX_TARGETS:
        return False
    with store.transaction():  # read and write in one go, as rebuild_graph does
        answering = store.units_answering(keys)
        if answering is None:
            return False  # the keys are behind the notes: resolved whole
        by_key: dict[str, list[dict]] = {}
        for candidate in answering:
            for key in answer_keys(candidate["name"], candidate["path"]):
                by_key.setdefault(key, []).append(candidate)
        for uid, now in after.items():  # as resolve_links resolves them
            unit = {"id": before[uid]["id"], "path": now["path"]}
            edges, missing = unit_edges(unit, [tuple(link) for link in now["meta"].get("links", [])], by_key)
            store.replace_links_of(unit["id"], edges, missing, LINK_KINDS)
        store.set_meta("graph", UNSETTLED)
    return True
