"""The link graph as plain data: what every format of ``memlane graph`` draws.

``graph_data`` reads the index once and returns notes sized by importance (PageRank
centrality and declared ``importance:``), with their type, lifecycle state, scope and
store; typed edges; constellations; hubs; and the last recalls from the hit-log.

The privacy rule is applied here, once, so every format inherits it: a ``private: true``
note is left out entirely (no node, no edge, no constellation member, no recall), and one
redaction pass runs over every exported field, whatever a format later makes of it.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import PurePath

from ...guards import redact
from ...guards.secrets import redact_data
from ...lifecycle.usage import state_of
from ...store.vocabulary import NOTE_TYPES
from ... import logs

log = logs.get("memlane.picture")

BODY_CHARS = 20_000  # a longer body is cut in the page (the file holds the rest)
HUB_LABELS = 25  # at most this many hubs are named on the picture
_TYPE_PREFIX = re.compile(r"^(?:%s)[_-]+" % "|".join(NOTE_TYPES), re.IGNORECASE)


def graph_data(memory, *, recent: int = 20, refresh: bool = True) -> dict:
    """The graph of ``memory``'s public notes as plain data (see the module docstring)."""
    if refresh:
        memory.refresh(embed=False)
    _fold_hit_log(memory)
    index = memory.index
    rows = {i: r for i, r in index.units_by_id(index.all_ids()).items() if not r["meta"].get("private")}
    facts = index.unit_facts(rows)
    info = index.node_info(rows)
    node_id = {unit: f"n{unit}" for unit in rows}
    last = _last_recalls(memory, {r["path"]: unit for unit, r in rows.items()})
    store_of = _store_finder(memory.specs)
    nodes = [_node(unit, rows[unit], facts.get(unit), info.get(unit), last.get(unit), store_of(rows[unit]["path"]))
             for unit in sorted(rows)]
    _size_nodes(nodes)
    hubs = _hubs(index, rows, node_id, len(rows))
    for node in nodes:
        node["hub"] = node["id"] in hubs
    limits = memory.config.associate
    groups = [[node_id[u] for u in group if u in rows] for group in index.constellation_groups()
              if limits.constellation_min <= len(group) <= limits.constellation_max]
    title = {node["id"]: node["title"] for node in nodes}
    recent_list = sorted((dict(rec, id=node_id[unit], name=rows[unit]["name"], title=title[node_id[unit]])
                          for unit, rec in last.items()),
                         key=lambda r: (-r["t"], r["rank"] or 0, r["id"]))[:max(0, recent)]
    return redact_data({  # one redaction pass over every field, whatever the format made of it later
        "generated": _iso(time.time()),
        "stores": [str(spec.path) for spec in memory.specs],
        "nodes": nodes,
        "edges": _edges(index, rows, node_id),
        "constellations": [g for g in groups if len(g) >= 2],
        "hubs": hubs,
        "recent": recent_list,
        "counts": {"notes": len(nodes), "clusters": len({n["cluster"] for n in nodes})},
    })


def note_title(title: str | None, name: str) -> str:
    """What a note is called on the picture: its ``MEMORY.md`` title when it has one, else
    its name made readable (the ``feedback_`` / ``project_`` … prefix dropped, since the
    colour already tells the type, and ``_`` / ``-`` read as spaces)."""
    if title and title.strip():
        return title.strip()
    words = " ".join(re.split(r"[_-]+", _TYPE_PREFIX.sub("", name))).strip()
    return words or name


def _fold_hit_log(memory) -> None:
    """Bring lifecycle usage up to date with the hit-log (as ``status`` does); a locked
    index is read as it is."""
    try:
        memory.usage.consume()
    except (sqlite3.Error, OSError) as exc:
        log.info("hit-log not folded in: %s", exc)


def _store_finder(specs):
    """path -> the store (mounted folder) holding it: the deepest one, since a folder may be
    mounted inside another. Gives the folder, where its mount came from and whether memlane
    may write there, so a reader can tell a repository's notes from a mounted library."""
    ordered = sorted(specs, key=lambda s: len(PurePath(s.path).parts), reverse=True)

    def store_of(path: str) -> dict:
        for spec in ordered:
            if PurePath(path).is_relative_to(spec.path):
                return {"path": str(spec.path), "source": spec.label or "", "read_only": bool(spec.read_only)}
        return {"path": "", "source": "", "read_only": False}

    return store_of


def _node(unit: int, row: dict, facts: tuple | None, info: tuple | None, last: dict | None, store: dict) -> dict:
    meta = row["meta"]
    declared = meta.get("importance")
    body = redact(row["body"] or "")
    if len(body) > BODY_CHARS:
        body = body[:BODY_CHARS] + "\n… (cut here; the file holds the rest)"
    return {
        "id": f"n{unit}", "name": row["name"], "title": redact(note_title(row["title"], row["name"])),
        "type": row["type"] if row["type"] in NOTE_TYPES else "other", "scope": row["scope"] or "project",
        "store": store, "state": state_of(facts) if facts else "active", "kind": meta.get("kind"),
        "importance": float(declared) if isinstance(declared, (int, float)) else None,
        "pagerank": round(info[1], 6) if info else 0.0, "in_degree": info[0] if info else 0,
        "cluster": info[2] if info else -1, "uses": (facts[6] or 0) if facts else 0,
        "path": meta.get("rel") or row["path"], "description": redact(row["description"] or ""), "body": body,
        "last_recall": last,
    }


def _size_nodes(nodes: list[dict]) -> None:
    """``size`` in 0..1: two thirds centrality (PageRank, min-max over the notes), one third
    declared importance (0.5 when none is given)."""
    ranks = [n["pagerank"] for n in nodes]
    low, high = (min(ranks), max(ranks)) if ranks else (0.0, 0.0)
    for node in nodes:
        centrality = (node["pagerank"] - low) / (high - low) if high > low else 0.0
        importance = min(1.0, max(0.0, node["importance"] if node["importance"] is not None else 0.5))
        node["size"] = round(2 / 3 * centrality + 1 / 3 * importance, 4)


def _hubs(index, rows: dict, node_id: dict, total: int) -> list[str]:
    """The most central linked-to public notes: at least 5, one in 15 notes, at most HUB_LABELS."""
    wanted = min(HUB_LABELS, max(5, total // 15))
    found = [unit for unit, _, _ in index.hubs(limit=wanted + len(index.private_units())) if unit in rows]
    return [node_id[u] for u in found[:wanted]]


def _edges(index, rows: dict, node_id: dict) -> list[dict]:
    """Directed, typed edges between public notes (each edge once)."""
    edges = []
    for unit, links in index.neighbours_of(rows).items():
        for other, kind, direction in links:
            if direction == "out" and other in rows:
                edges.append({"source": node_id[unit], "target": node_id[other], "kind": kind})
    return sorted(edges, key=lambda e: (e["source"], e["target"], e["kind"]))


def _last_recalls(memory, unit_by_path: dict[str, int]) -> dict[int, dict]:
    """unit -> its latest hit-log record (what the page shows as "why it was last recalled").
    Records of notes not in ``unit_by_path`` (private, excluded or gone) are skipped."""
    hit_log = memory.hit_log
    if hit_log is None:
        return {}
    last: dict[int, dict] = {}
    for record in hit_log.read():
        unit = unit_by_path.get(record.get("unit"))
        t = record.get("t")
        if unit is None or not isinstance(t, (int, float)) or (unit in last and last[unit]["t"] > t):
            continue
        parts = record.get("parts") if isinstance(record.get("parts"), dict) else {}
        last[unit] = {"t": t, "time": _iso(t), "q": record.get("q"), "layer": record.get("layer"),
                      "rank": record.get("rank"), "depth": record.get("depth"), "bracket": record.get("bracket"),
                      "score": record.get("score"), "reached": parts.get("via") or parts.get("reached"),
                      "parts": {k: v for k, v in parts.items() if k not in ("reached", "via")}}
    return last


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
