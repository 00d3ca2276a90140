"""The page of ``memlane graph --html`` (X5), kept as Python strings so it ships in every
install (no package-data entry needed): the template here, the style in ``style.py``, the
script in ``script.py``. Nothing is fetched: a Content-Security-Policy forbids every network
request, and all script and style are inline."""

from __future__ import annotations

import html

from .script import ERROR_TRAP, SCRIPT
from .style import STYLE

#: no request of any kind leaves the page (inline script and style only)
CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

TEMPLATE = """<!doctype html>
<html lang="en" data-status="loading" data-errors="[]">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<script>{trap}</script>
<style>{palette}{style}</style>
</head>
<body>
<header>
  <h1>memlane <span>a picture of memory</span></h1>
  <p id="summary"></p>
  <input id="find" type="search" placeholder="find a note…" aria-label="find a note">
</header>
<main>
  <div id="stage">
    <svg id="graph" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="the link graph of the notes">
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7"
                orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>
      </defs>
      <g id="hulls"></g><g id="edges"></g><g id="nodes"></g><g id="labels"></g>
    </svg>
    <div id="empty" hidden>No notes to draw: the store is empty (or every note is private).</div>
    <div id="progress" aria-live="polite"></div>
  </div>
  <aside id="side">
    <section id="details"><h2>Click a note</h2>
      <p class="hint">Its title, description and text appear here, with why it was last recalled.
      Scroll to zoom, drag to pan, double-click to fit.</p></section>
    <section id="recent"><h3>Last recalls</h3><ol id="recent-list"></ol></section>
    <section id="legend"><h3>Legend</h3>{legend}</section>
  </aside>
</main>
<script type="application/json" id="memlane-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

LEGEND = """
<ul class="legend">
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-user"/></svg>user</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-feedback"/></svg>feedback</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-project"/></svg>project</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-reference"/></svg>reference</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-other"/></svg>other</li>
</ul>
<ul class="legend">
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-project"/></svg>active</li>
  <li><svg width="18" height="18" class="s-dormant"><circle cx="9" cy="9" r="6" class="dot t-project"/></svg>dormant
    (faded)</li>
  <li><svg width="18" height="18" class="s-archived"><circle cx="9" cy="9" r="6" class="dot t-project"/></svg>archived
    (hollow)</li>
</ul>
<ul class="legend">
  <li><svg width="30" height="12"><line x1="2" y1="6" x2="28" y2="6" class="edge k-wiki"/></svg>[[wiki]] link</li>
  <li><svg width="30" height="12"><line x1="2" y1="6" x2="28" y2="6" class="edge k-markdown"/></svg>markdown link</li>
  <li><svg width="30" height="12"><line x1="2" y1="6" x2="28" y2="6" class="edge k-mention"/></svg>file mention</li>
  <li><svg width="30" height="12"><line x1="2" y1="6" x2="24" y2="6" class="edge k-supersedes"
      marker-end="url(#arrow)"/></svg>supersedes</li>
  <li><svg width="30" height="12"><line x1="2" y1="6" x2="28" y2="6" class="edge k-index"/></svg>same MEMORY.md
    section</li>
</ul>
<ul class="legend">
  <li><svg width="30" height="18"><rect x="2" y="2" width="26" height="14" rx="7" class="hull"/></svg>constellation
    (mutually linked, recalled together)</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="6" class="dot t-other hub-dot"/></svg><b>hub</b>
    (most linked-to; named)</li>
  <li><svg width="18" height="18"><circle cx="9" cy="9" r="7" class="ring"/><circle cx="9" cy="9" r="4"
      class="dot t-other"/></svg>recently recalled</li>
  <li class="note">size: PageRank centrality and declared importance</li>
</ul>
"""


def page(data_json: str, *, title: str, colours: dict[str, str]) -> str:
    """The page around ``data_json`` (already safe inside a script element, see
    ``memlane.picture.script_json``); ``colours``: note type -> CSS colour."""
    palette = ":root{" + "".join(f"--{kind}:{colour};" for kind, colour in colours.items()) + "}\n"
    return TEMPLATE.format(csp=CSP, title=html.escape(title), trap=ERROR_TRAP, palette=palette, style=STYLE,
                           legend=LEGEND, data=data_json, script=SCRIPT)
