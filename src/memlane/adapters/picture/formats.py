"""The graph data drawn three ways: Graphviz DOT, a Mermaid flowchart, one HTML page.

The three share one visual vocabulary, so a reader who learnt one can read the others:
colour is the note's type (the Okabe–Ito palette, told apart by colour-blind readers too),
fill is its lifecycle state (solid active, faded dormant, hollow archived), and shape or a
label suffix is its scope (a project note is the plain round one). Labels are titles; the
raw note names stay in the page's details panel and in the page's ``data-name`` attributes.

The page's template, script and style are package data files next to this module, read
only when a page is written (never at import), and inlined into the page: it fetches
nothing, and a Content-Security-Policy in the template forbids every request.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources

from ...errors import MemlaneError

#: note type -> colour, all five from the Okabe–Ito palette. "other" is its sky blue: a mid
#: grey there fell within a few ΔE of reference and project for deuteranopes, and grey
#: (the page's --ink) is kept for what has no type: the legend's state and scope entries.
TYPE_COLOURS = {"user": "#0072B2", "feedback": "#D55E00", "project": "#009E73", "reference": "#CC79A7",
                "other": "#56B4E9"}
INK = "#1f2328"  # dark text, used on a fill where it reads better than white
#: the scope's shape: DOT shape names; the page draws the same (circle, rounded square, diamond)
SCOPE_SHAPES = {"project": "ellipse", "user": "box", "team": "diamond"}
DOT_EDGE_STYLES = {"wiki": 'color="#555555"', "markdown": 'color="#4A6FA5"',
                   "mention": 'color="#888888", style=dotted',
                   "supersedes": 'color="#C0392B", style=dashed, penwidth=1.6, label="supersedes"',
                   "index": 'color="#BBBBBB", style=dashed, arrowhead=none'}
PAGE_FILES = {"style": "page.css", "trap": "trap.js", "layout": "layout.js", "script": "page.js"}


def text_on(colour: str) -> str:
    """White or dark text on ``colour``, whichever has the higher contrast ratio (relative
    luminance as in WCAG): white on the blue, dark on the sky blue."""
    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    fill = luminance(colour)
    return "white" if 1.05 / (fill + 0.05) >= (fill + 0.05) / (luminance(INK) + 0.05) else INK


def scope_suffix(node: dict) -> str:
    """`` · user scope`` for a note outside the project scope; the project scope, where most
    notes live, goes unsaid so the labels stay short."""
    scope = node.get("scope") or "project"
    return "" if scope == "project" else f" · {scope} scope"


# -- Graphviz DOT ----------------------------------------------------------------------------
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
    the first one it belongs to), node ids ``n<id>`` quoted, titles only in labels."""
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
    scope = node.get("scope") or "project"
    shape = SCOPE_SHAPES.get(scope, "ellipse")
    tooltip = f"{node['description'] or node['title']}\n{node['name']} · {scope} scope"
    attributes = [f"label={dot_string(node['title'] + scope_suffix(node))}", f"tooltip={dot_string(tooltip)}",
                  f'color="{colour}"', f'width={0.4 + node["size"]:.2f}', f"shape={shape}"]
    style = ["rounded"] if shape == "box" else []
    if node["state"] == "archived":
        style.append("dashed")
        attributes += ['fillcolor="white"', f'fontcolor="{colour}"']
    elif node["state"] == "dormant":
        style.append("filled")
        attributes += [f'fillcolor="{colour}55"', 'fontcolor="#555555"']
    else:
        style.append("filled")
        attributes += [f'fillcolor="{colour}"', f'fontcolor="{text_on(colour)}"']
    attributes.append(f'style="{",".join(style)}"')
    if node["hub"]:
        attributes.append("penwidth=3")
    if node["last_recall"] is not None:
        attributes.append("peripheries=2")
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
    types and lifecycle states as classes, the scope as a label suffix."""
    lines = ["flowchart LR"]
    for number, members in constellation_groups(data):
        lines.append(f'  subgraph c{number}["constellation {number}"]')
        lines.extend(f"    {m}" for m in members)
        lines.append("  end")
    for node in data["nodes"]:
        shape = ("((", "))") if node["hub"] else ("(", ")")
        lines.append(f"  {node['id']}{shape[0]}{mermaid_label(node['title'] + scope_suffix(node))}{shape[1]}")
    for edge in data["edges"]:
        lines.append(f"  {edge['source']} {MERMAID_EDGES.get(edge['kind'], '-->')} {edge['target']}")
    for kind, colour in TYPE_COLOURS.items():
        lines.append(f"  classDef {kind} fill:{colour},stroke:{colour},color:{text_on(colour)}")
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


def page_file(name: str) -> str:
    """One of the page's files (``page.html``, ``page.js`` …), read from the installed package.
    An install built without its package data lacks them: that is said in one line, not as a
    traceback."""
    try:
        return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise MemlaneError(f"the page file {name} is missing from this memlane install ({exc.strerror or exc}); "
                           "reinstall memlane to get it back") from None


def to_html(data: dict) -> str:
    """One self-contained page: inline style, inline script, the data as JSON; no network.

    The template's ``{{slot}}`` marks are filled in one pass, so text put into one slot (a
    note's body inside the data, say) is never read again as a mark."""
    palette = ":root{" + "".join(f"--{kind}:{colour};--{kind}-text:{text_on(colour)};"
                                 for kind, colour in TYPE_COLOURS.items()) + "}\n"
    values = {slot: page_file(name) for slot, name in PAGE_FILES.items()}
    values.update(title=html.escape(f"memlane — {data['counts']['notes']} notes"), palette=palette,
                  data=script_json(data))
    template = page_file("page.html")
    missing = set(values) - set(re.findall(r"\{\{(\w+)\}\}", template))
    if missing:
        raise MemlaneError(f"the page template of this memlane install lacks its slots {sorted(missing)}; "
                           "reinstall memlane")
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)
