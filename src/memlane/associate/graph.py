"""The link graph (A1): notes are nodes; ``[[links]]``, markdown links, filename mentions,
``supersedes`` and index membership are typed edges. A ``[[link]]`` to a note that does not exist is a
future-write marker (S5): kept for lint, never an edge. A markdown link or a mention that
names no note is usually a repository document (``docs/restore.md``) and is simply no edge.

Index membership: notes listed under the same heading of a ``MEMORY.md`` that has several
headings ("Behavior Rules", "Active Project Notes") are filed together by their author; each
such small section links its notes to each other (kind ``index``, a weak edge). An index with
no headings, or one long section, says nothing about which notes belong together.

A target matches a note's ``name``, its file stem, or the stem without its type prefix
(``feedback_x.md`` answers to ``x``), with case, ``_``, ``-`` and spaces interchangeable —
the ways real agent stores write links.
"""

from __future__ import annotations

import os

from ..index.storage import Edge
from ..records import dataclass, field
from ..store.links import link_key
from ..store.note import answer_keys

EDGE_KINDS = ("wiki", "markdown", "mention", "supersedes", "index")
INDEX_SECTION_MAX = 8  # a longer MEMORY.md section is a list, not a grouping


@dataclass
class LinkGraph:
    """The notes' links resolved to edges, and the targets no note answers to."""

    edges: list[Edge] = field(default_factory=list)
    missing: list[tuple[int, str, str]] = field(default_factory=list)  # (src, target as written, kind)


def resolve_links(units: list[dict]) -> LinkGraph:
    """Edges between ``units`` (dicts with ``id``, ``name``, ``path``, ``scope``, ``meta``
    as the index stores them). A target several notes answer to resolves to the ones in the
    linking note's own folder, if any; self-links are dropped."""
    by_key: dict[str, list[dict]] = {}
    for unit in units:
        for key in answer_keys(unit["name"], unit["path"]):
            by_key.setdefault(key, []).append(unit)
    graph = LinkGraph()
    for unit in units:
        meta = unit.get("meta") or {}
        targets = [(t, k) for t, k in meta.get("links", [])] + [(t, "supersedes") for t in meta.get("supersedes", [])]
        edges, missing = unit_edges(unit, targets, by_key)
        graph.edges += edges
        graph.missing += missing
    seen = {(e.src, e.dst, e.kind) for e in graph.edges}
    for members in _index_sections(units):
        for a in members:
            for b in members:
                if a != b and (a, b, "index") not in seen:
                    seen.add((a, b, "index"))
                    graph.edges.append(Edge(a, b, "index"))
    return graph


def unit_edges(unit: dict, targets: list[tuple[str, str]],
               by_key: dict[str, list[dict]]) -> tuple[list[Edge], list[tuple[int, str, str]]]:
    """The edges ``unit``'s (target, kind) pairs resolve to among ``by_key`` (link key -> the
    units answering to it), self-links and repeats dropped, and its future-write markers."""
    edges, missing, seen = [], [], set()
    for target, kind in targets:
        found = _resolve(target, unit, by_key)
        if not found:
            if kind == "wiki":  # S5; an unresolved path or mention is usually a repository doc
                missing.append((unit["id"], target, kind))
            continue
        for dst in found:
            key = (unit["id"], dst["id"], kind)
            if dst["id"] != unit["id"] and key not in seen:
                seen.add(key)
                edges.append(Edge(*key))
    return edges, missing


def _index_sections(units: list[dict]) -> list[list[int]]:
    """Groups of unit ids filed under one heading of one store's ``MEMORY.md``."""
    by_store: dict[str, dict[str, list[int]]] = {}
    for unit in units:
        meta = unit.get("meta") or {}
        section = meta.get("index_section")
        if section:
            by_store.setdefault(meta.get("store", ""), {}).setdefault(section, []).append(unit["id"])
    groups = []
    for sections in by_store.values():
        if len(sections) < 2:
            continue
        groups += [ids for ids in sections.values() if 2 <= len(ids) <= INDEX_SECTION_MAX]
    return groups


def _resolve(target: str, unit: dict, by_key: dict[str, list[dict]]) -> list[dict]:
    candidates = by_key.get(link_key(target), [])
    if len(candidates) <= 1:
        return candidates
    folder = os.path.dirname(unit["path"])
    local = [c for c in candidates if os.path.dirname(c["path"]) == folder]
    return local or candidates


def superseded_map(units: list[dict], edges) -> dict[int, str]:
    """unit -> the name of what replaces it: another note ``supersedes`` it, or it names a
    ``superseded_by``. A ``supersedes`` loop (a replaces b, b replaces a) says nothing about
    which is current: notes on a loop are not demoted (``supersedes_loops`` lists them)."""
    names = {u["id"]: u["name"] for u in units}
    pairs = [(e.src, e.dst) for e in edges if e.kind == "supersedes"]
    looped = on_cycles(pairs)
    out = {dst: names.get(src, str(src)) for src, dst in pairs if dst not in looped}
    for unit in units:
        by = unit["meta"].get("superseded_by") or []
        if by and unit["id"] not in out:
            out[unit["id"]] = ", ".join(map(str, by))
    return out


def on_cycles(pairs: list[tuple[int, int]]) -> set[int]:
    """Nodes that lie on a directed cycle of ``pairs`` (supersedes chains are short)."""
    forward: dict[int, set[int]] = {}
    for src, dst in pairs:
        forward.setdefault(src, set()).add(dst)
    on_cycle: set[int] = set()
    for start in forward:
        stack, seen = list(forward[start]), set()
        while stack:
            node = stack.pop()
            if node == start:
                on_cycle.add(start)
                break
            if node not in seen:
                seen.add(node)
                stack.extend(forward.get(node, ()))
    return on_cycle
