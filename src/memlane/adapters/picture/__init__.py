"""A picture of memory (``memlane graph``): the link graph of the notes as data, and as
Graphviz DOT, a Mermaid flowchart or one self-contained HTML page.

``data`` reads the index into plain data and applies the privacy rule there, once, so
every format inherits it; ``formats`` draws that data. The page's template, script and
style are the package data files ``page.html``, ``trap.js``, ``layout.js``, ``page.js`` and
``page.css`` beside these modules.
"""

from .data import graph_data, note_title
from .formats import TYPE_COLOURS, dot_string, mermaid_label, script_json, to_dot, to_html, to_mermaid

__all__ = ["TYPE_COLOURS", "dot_string", "graph_data", "mermaid_label", "note_title", "script_json", "to_dot",
           "to_html", "to_mermaid"]
