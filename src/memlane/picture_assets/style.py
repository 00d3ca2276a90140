"""The page's style (the type colours come from ``memlane.picture.TYPE_COLOURS`` as CSS
variables, so the page, DOT and Mermaid agree)."""

STYLE = r"""
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: #1f2328;
       background: #fafafa; display: flex; flex-direction: column; }
header { display: flex; align-items: baseline; gap: 18px; padding: 8px 16px; border-bottom: 1px solid #ddd;
         background: #fff; }
header h1 { font-size: 17px; margin: 0; white-space: nowrap; }
header h1 span { font-weight: normal; color: #666; }
#summary { margin: 0; color: #444; flex: 1; }
#find { width: 220px; padding: 4px 8px; border: 1px solid #ccc; border-radius: 4px; font: inherit; }
main { flex: 1; display: flex; min-height: 0; }
#stage { flex: 1; position: relative; min-width: 0; }
#graph { width: 100%; height: 100%; display: block; cursor: grab; user-select: none; }
#graph.panning { cursor: grabbing; }
#empty { position: absolute; inset: 40% 0 auto 0; text-align: center; color: #666; font-size: 16px; }
#progress { position: absolute; left: 12px; bottom: 8px; color: #888; font-size: 12px; }
#side { width: 380px; border-left: 1px solid #ddd; background: #fff; overflow-y: auto; padding: 0 16px 16px; }
#side h2 { font-size: 17px; margin: 14px 0 4px; overflow-wrap: anywhere; }
#side h3 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #666; margin: 18px 0 6px; }
.hint, .note { color: #777; }
.badges { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; }
.badge { font-size: 12px; padding: 1px 7px; border-radius: 9px; background: #eee; color: #333; }
.badge.type { color: #fff; }
.path { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; color: #666; overflow-wrap: anywhere; }
.description { font-style: italic; }
pre.body { white-space: pre-wrap; overflow-wrap: anywhere; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo,
           monospace; background: #f6f8fa; border: 1px solid #e4e4e4; border-radius: 4px; padding: 8px;
           max-height: 45vh; overflow-y: auto; }
.why { background: #fff8e6; border: 1px solid #f3d48a; border-radius: 4px; padding: 6px 8px; font-size: 13px; }
.why.never { background: #f4f4f4; border-color: #e0e0e0; color: #666; }
.why dl { display: grid; grid-template-columns: auto 1fr; gap: 0 10px; margin: 4px 0 0; }
.why dt { color: #777; }
.why dd { margin: 0; overflow-wrap: anywhere; }
ul.links, #recent-list { padding-left: 18px; margin: 4px 0; }
ul.links li, #recent-list li { margin: 2px 0; }
a.goto { color: #0b5cad; cursor: pointer; text-decoration: none; }
a.goto:hover { text-decoration: underline; }
#recent-list .meta { color: #777; font-size: 12px; }
ul.legend { list-style: none; padding: 0; margin: 0 0 8px; }
ul.legend li { display: flex; align-items: center; gap: 6px; margin: 2px 0; font-size: 13px; }
ul.legend svg { flex: none; overflow: visible; }

.dot { stroke-width: 1.5px; vector-effect: non-scaling-stroke; }
.t-user { fill: var(--user); stroke: var(--user); }
.t-feedback { fill: var(--feedback); stroke: var(--feedback); }
.t-project { fill: var(--project); stroke: var(--project); }
.t-reference { fill: var(--reference); stroke: var(--reference); }
.t-other { fill: var(--other); stroke: var(--other); }
.badge.t-user { background: var(--user); } .badge.t-feedback { background: var(--feedback); }
.badge.t-project { background: var(--project); } .badge.t-reference { background: var(--reference); }
.badge.t-other { background: var(--other); }
.s-dormant .dot, svg.s-dormant .dot { fill-opacity: .28; stroke-opacity: .55; }
.s-dormant text { opacity: .6; }
.s-archived .dot, svg.s-archived .dot { fill: #fff; fill-opacity: 1; stroke-dasharray: 3 2; stroke-width: 1.8px; }
.hub .dot, .hub-dot { stroke: #1f2328; stroke-width: 2.5px; }
.ring { fill: none; stroke: #FFB000; stroke-width: 3.5px; vector-effect: non-scaling-stroke; }
.node { cursor: pointer; }
.node.selected .dot { stroke: #000; stroke-width: 3.5px; }

.edge { stroke-width: 1.2px; vector-effect: non-scaling-stroke; fill: none; stroke-opacity: .75; }
.k-wiki { stroke: #59606b; }
.k-markdown { stroke: #4A6FA5; }
.k-mention { stroke: #8d8d8d; stroke-dasharray: 2 3; }
.k-supersedes { stroke: #C0392B; stroke-dasharray: 6 4; stroke-width: 1.8px; }
.k-index { stroke: #b9b9b9; stroke-dasharray: 4 4; stroke-opacity: .6; }
.arrowhead { fill: #C0392B; }
.hull { fill: #7E57C2; fill-opacity: .09; stroke: #7E57C2; stroke-opacity: .55; stroke-width: 1.3px;
        stroke-dasharray: 5 3; vector-effect: non-scaling-stroke; }

#labels text { paint-order: stroke; stroke: #fafafa; stroke-width: 3.5px; stroke-linejoin: round; fill: #1f2328;
               pointer-events: none; vector-effect: non-scaling-stroke; }
#labels text.hub-label { font-weight: 700; }
#labels text.recent-label { fill: #8a5a00; }

#graph.focused .node, #graph.focused .edge, #graph.focused #labels text { opacity: .15; }
#graph.focused .node.near, #graph.focused .edge.near, #graph.focused #labels text.near { opacity: 1; }
"""
