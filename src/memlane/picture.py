"""A picture of memory (X5): the link graph as data, and as Graphviz DOT, a Mermaid
flowchart or one self-contained HTML page.

``graph_data`` reads the index once and returns plain data: notes sized by importance
(PageRank centrality and declared ``importance:``), coloured by type, with their lifecycle
state; typed edges; constellations; hubs; and the last recalls from the hit-log. The
privacy rule (G3) is applied here, once, so every format inherits it: a ``private: true``
note is left out entirely — no node, no edge, no constellation member, no recall — and
every text that is exported is redacted.

The HTML page needs no network: its script and style are inlined from
``memlane.picture_assets`` and the data travels inside it as JSON.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time

from .guards import redact
from .guards.secrets import redact_data
from .lifecycle.usage import state_of

log = logging.getLogger("memlane.picture")

NOTE_TYPES = ("user", "feedback", "project", "reference")
BODY_CHARS = 20_000  # a longer body is cut in the page (the file holds the rest)
HUB_LABELS = 25  # at most this many hubs are named on the picture


# -- the data ----------------------------------------------------------------------------
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
    nodes = [_node(unit, rows[unit], facts.get(unit), info.get(unit), last.get(unit)) for unit in sorted(rows)]
    _size_nodes(nodes)
    hubs = _hubs(index, rows, node_id, len(rows))
    for node in nodes:
        node["hub"] = node["id"] in hubs
    limits = memory.config.associate
    groups = [[node_id[u] for u in group if u in rows] for group in index.constellation_groups()
              if limits.constellation_min <= len(group) <= limits.constellation_max]
    recent_list = sorted((dict(rec, id=node_id[unit], name=rows[unit]["name"]) for unit, rec in last.items()),
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


def _fold_hit_log(memory) -> None:
    """Bring lifecycle usage up to date with the hit-log (as ``status`` does); a locked
    index is read as it is."""
    try:
        memory.usage.consume()
    except (sqlite3.Error, OSError) as exc:
        log.info("hit-log not folded in: %s", exc)


def _node(unit: int, row: dict, facts: tuple | None, info: tuple | None, last: dict | None) -> dict:
    meta = row["meta"]
    declared = meta.get("importance")
    body = redact(row["body"] or "")
    if len(body) > BODY_CHARS:
        body = body[:BODY_CHARS] + "\n… (cut here; the file holds the rest)"
    return {
        "id": f"n{unit}", "name": row["name"], "title": redact(row["title"] or row["name"]),
        "type": row["type"] if row["type"] in NOTE_TYPES else "other", "scope": row["scope"],
        "state": state_of(facts) if facts else "active", "kind": meta.get("kind"),
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


# -- Graphviz DOT ----------------------------------------------------------------------------
TYPE_COLOURS = {"user": "#0072B2", "feedback": "#D55E00", "project": "#009E73", "reference": "#CC79A7",
                "other": "#8C8C8C"}
DOT_EDGE_STYLES = {"wiki": 'color="#555555"', "markdown": 'color="#4A6FA5"',
                   "mention": 'color="#888888", style=dotted',
                   "supersedes": 'color="#C0392B", style=dashed, penwidth=1.6, label="supersedes"',
                   "index": 'color="#BBBBBB", style=dashed, arrowhead=none'}


def dot_string(text: str) -> str:
    """``text`` as a DOT quoted string: backslashes and quotes escaped, line breaks as ``\\n``."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n") + '"'


def constellation_groups(data: dict) -> list[tuple[int, list[str]]]:
    """(number, members) per constellation for the text formats, which nest a node in one
    subgraph only: a note sits in the first constellation it belongs to."""
    placed: set[str] = set()
    out = []
    for number, group in enumerate(data["constellations"], start=1):
        members = [m for m in group if m not in placed]
        if len(members) >= 2:
            placed.update(members)
            out.append((number, members))
    return out


def to_dot(data: dict) -> str:
    """The graph in Graphviz DOT: one ``subgraph cluster_`` per constellation (a note sits in
    the first one it belongs to), node ids ``n<id>`` quoted, names only in labels."""
    lines = ["digraph memlane {", '  graph [rankdir=LR, overlap=false, fontname="Helvetica"];',
             '  node [shape=ellipse, style=filled, fontname="Helvetica", fontsize=10];',
             '  edge [arrowsize=0.6];']
    for number, members in constellation_groups(data):
        lines.append(f"  subgraph cluster_{number} {{")
        lines.append(f'    label="constellation {number}"; style="rounded,dashed"; color="#7E57C2";')
        lines.extend(f'    "{m}";' for m in members)
        lines.append("  }")
    for node in data["nodes"]:
        lines.append(f'  "{node["id"]}" [{_dot_node_attributes(node)}];')
    for edge in data["edges"]:
        lines.append(f'  "{edge["source"]}" -> "{edge["target"]}" [{DOT_EDGE_STYLES.get(edge["kind"], "")}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_node_attributes(node: dict) -> str:
    colour = TYPE_COLOURS[node["type"]]
    attributes = [f"label={dot_string(node['name'])}", f"tooltip={dot_string(node['description'] or node['title'])}",
                  f'color="{colour}"', f'width={0.4 + node["size"]:.2f}']
    if node["state"] == "archived":
        attributes += ['fillcolor="white"', 'style="dashed"', f'fontcolor="{colour}"']
    elif node["state"] == "dormant":
        attributes += [f'fillcolor="{colour}55"', 'fontcolor="#555555"']
    else:
        attributes += [f'fillcolor="{colour}"', 'fontcolor="white"']
    if node["hub"]:
        attributes.append("penwidth=3")
    if node["last_recall"] is not None:
        attributes.append('peripheries=2')
    return ", ".join(attributes)


# -- Mermaid ---------------------------------------------------------------------------------
MERMAID_EDGES = {"wiki": "-->", "markdown": "-->", "mention": "-.->", "supersedes": "==>|supersedes|",
                 "index": "-.-"}
_MERMAID_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;", "&": "#amp;",
                    ";": "#59;", "|": "#124;", "\\": "#92;"}


def mermaid_label(text: str) -> str:
    """``text`` as a quoted Mermaid label: the characters Mermaid reads as syntax become its
    entity codes (``#quot;``, ``#35;`` …), line breaks become spaces."""
    flat = " ".join(text.split())
    return '"' + "".join(_MERMAID_ESCAPES.get(ch, ch) for ch in flat) + '"'


def to_mermaid(data: dict) -> str:
    """The graph as a Mermaid flowchart; constellations as subgraphs (first membership wins),
    types and lifecycle states as classes."""
    lines = ["flowchart LR"]
    for number, members in constellation_groups(data):
        lines.append(f'  subgraph c{number}["constellation {number}"]')
        lines.extend(f"    {m}" for m in members)
        lines.append("  end")
    for node in data["nodes"]:
        shape = ("((", "))") if node["hub"] else ("(", ")")
        lines.append(f"  {node['id']}{shape[0]}{mermaid_label(node['name'])}{shape[1]}")
    for edge in data["edges"]:
        lines.append(f"  {edge['source']} {MERMAID_EDGES.get(edge['kind'], '-->')} {edge['target']}")
    for kind, colour in TYPE_COLOURS.items():
        lines.append(f"  classDef {kind} fill:{colour},stroke:{colour},color:#fff")
    lines.append("  classDef dormant opacity:0.45")
    lines.append("  classDef archived fill:#fff,stroke-dasharray:4 3,color:#333")
    lines.append("  classDef recent stroke:#FFB000,stroke-width:4px")
    for cls, members in _mermaid_classes(data["nodes"]).items():
        for start in range(0, len(members), 50):
            lines.append(f"  class {','.join(members[start:start + 50])} {cls}")
    return "\n".join(lines) + "\n"


def _mermaid_classes(nodes: list[dict]) -> dict[str, list[str]]:
    """class name -> node ids; later classes override earlier ones' styles."""
    classes: dict[str, list[str]] = {}
    for node in nodes:
        classes.setdefault(node["type"], []).append(node["id"])
        if node["state"] != "active":
            classes.setdefault(node["state"], []).append(node["id"])
        if node["last_recall"] is not None:
            classes.setdefault("recent", []).append(node["id"])
    return classes


# -- HTML ------------------------------------------------------------------------------------
def script_json(data) -> str:
    """JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` as
    ``\\u`` escapes, so no ``</script>`` or ``<!--`` can end or bend the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                        ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text


def to_html(data: dict) -> str:
    """One self-contained page: inline style, inline script, the data as JSON; no network."""
    from .picture_assets import page

    return page(script_json(data), title=f"memlane — {data['counts']['notes']} notes", colours=TYPE_COLOURS)
