"""The page's script: plain JavaScript, no library.

``ERROR_TRAP`` runs first and records every error (``window.onerror``, unhandled
rejections, ``console.error``, blocked requests) into the ``data-errors`` attribute of
``<html>``, so a headless browser's ``--dump-dom`` shows them.

``SCRIPT`` lays the graph out with a force-directed method (Fruchterman & Reingold 1991,
"Graph drawing by force-directed placement": repulsion k²/d, attraction d²/k, a cooling
temperature) plus a weak pull to the centre and collision padding. Repulsion is only felt
within a cutoff, found through a uniform grid, so one iteration costs about O(n) instead
of O(n²); the iteration count is capped and the work is sliced between animation frames,
so ~2,000 notes lay out in a second or two without freezing the page. Starting positions
group each cluster together (the index's clusters), which the forces then refine.
All note text reaches the page through ``textContent``, never as HTML.
"""

ERROR_TRAP = r"""
(function () {
  var errors = [];
  function note(message) {
    errors.push(String(message).slice(0, 500));
    document.documentElement.setAttribute('data-errors', JSON.stringify(errors));
  }
  window.addEventListener('error', function (e) {
    note((e.message || 'error') + (e.lineno ? ' (line ' + e.lineno + ':' + e.colno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) {
    note('unhandled rejection: ' + ((e.reason && e.reason.message) || e.reason));
  });
  document.addEventListener('securitypolicyviolation', function (e) {
    note('blocked by the page policy: ' + e.violatedDirective + ' ' + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  window.memlaneNoteError = note;
})();
"""

SCRIPT = r"""
(function () {
'use strict';
var SVG = 'http://www.w3.org/2000/svg';
var root = document.documentElement;
var data = JSON.parse(document.getElementById('memlane-data').textContent);
var svg = document.getElementById('graph');
var layers = {hulls: byId('hulls'), edges: byId('edges'), nodes: byId('nodes'), labels: byId('labels')};
var EDGE_LENGTH = 62;            // k of Fruchterman-Reingold: the ideal distance between linked notes
var CUTOFF = 3.5 * EDGE_LENGTH;  // repulsion is felt within this distance (grid cell size)
var GRAVITY = 0.02;
var CHAR_WIDTH = 6.6;           // a label's width per character, in layout units at scale 1
var KIND_PULL = {wiki: 1, markdown: 1, mention: 0.7, supersedes: 0.8, index: 0.35};
var HULL_PAD = 10;
var ASPECT = 1;  // the stage's width / height: weaker pull sideways on a wide screen fills it

function byId(id) { return document.getElementById(id); }
function el(name, attrs, parent) {
  var node = document.createElementNS(SVG, name);
  for (var key in attrs) { node.setAttribute(key, attrs[key]); }
  if (parent) { parent.appendChild(node); }
  return node;
}
function html(name, text, cls, parent) {
  var node = document.createElement(name);
  if (text !== undefined && text !== null) { node.textContent = String(text); }
  if (cls) { node.className = cls; }
  if (parent) { parent.appendChild(node); }
  return node;
}

// -- the model ------------------------------------------------------------------------
var nodes = data.nodes.map(function (d, i) {
  return {d: d, i: i, x: 0, y: 0, r: 5 + 13 * Math.sqrt(Math.max(0, d.size || 0)), lw: 0, out: [], inn: []};
});
var index = {};
nodes.forEach(function (n) { index[n.d.id] = n; });
var links = [];
data.edges.forEach(function (e) {
  var s = index[e.source], t = index[e.target];
  if (!s || !t || s === t) { return; }
  var link = {s: s, t: t, kind: e.kind};
  links.push(link); s.out.push(link); t.inn.push(link);
});
// a hub's many spokes pull more softly, so its neighbours spread around it instead of piling up
links.forEach(function (l) {
  var degree = Math.max(l.s.out.length + l.s.inn.length, l.t.out.length + l.t.inn.length, 2);
  l.ease = Math.sqrt(2 / degree);
});
var recentRank = {};
data.recent.forEach(function (r, i) { recentRank[r.id] = i + 1; });
var hubs = {};
data.hubs.forEach(function (id) { hubs[id] = true; });

svg.setAttribute('data-nodes', String(nodes.length));
svg.setAttribute('data-edges', String(links.length));
svg.setAttribute('data-constellations', String(data.constellations.length));
svg.setAttribute('data-recent', String(data.recent.length));
byId('summary').textContent = nodes.length + ' notes · ' + links.length + ' links · ' +
  data.constellations.length + ' constellations · ' + data.counts.clusters + ' clusters · ' +
  data.recent.length + ' recent recalls · drawn ' + data.generated;

// -- starting positions: each cluster on its own patch, patches on a sunflower spiral ---
var GOLDEN = Math.PI * (3 - Math.sqrt(5));
function seed() {
  var clusters = {};
  nodes.forEach(function (n) { (clusters[n.d.cluster] = clusters[n.d.cluster] || []).push(n); });
  var groups = Object.keys(clusters).map(function (k) { return clusters[k]; });
  groups.sort(function (a, b) { return b.length - a.length; });
  var placed = 0;
  groups.forEach(function (members, g) {
    var spot = placed + members.length / 2;
    var cx = 1.15 * EDGE_LENGTH * Math.sqrt(spot) * Math.cos(g * GOLDEN * 7);
    var cy = 1.15 * EDGE_LENGTH * Math.sqrt(spot) * Math.sin(g * GOLDEN * 7);
    members.sort(function (a, b) { return b.r - a.r; });
    members.forEach(function (n, j) {
      var rr = 0.6 * EDGE_LENGTH * Math.sqrt(j + 0.5);
      n.x = cx + rr * Math.cos(j * GOLDEN);
      n.y = cy + rr * Math.sin(j * GOLDEN);
    });
    placed += members.length;
  });
}

// -- one iteration of the forces ----------------------------------------------------------
function step(temperature) {
  var k2 = EDGE_LENGTH * EDGE_LENGTH, grid = new Map(), i, n;
  for (i = 0; i < nodes.length; i++) {
    n = nodes[i]; n.dx = 0; n.dy = 0;
    n.gx = Math.floor(n.x / CUTOFF); n.gy = Math.floor(n.y / CUTOFF);
    var key = n.gx * 100003 + n.gy;
    var cell = grid.get(key);
    if (cell) { cell.push(n); } else { grid.set(key, [n]); }
  }
  for (i = 0; i < nodes.length; i++) {
    n = nodes[i];
    for (var ox = -1; ox <= 1; ox++) {
      for (var oy = -1; oy <= 1; oy++) {
        var near = grid.get((n.gx + ox) * 100003 + (n.gy + oy));
        if (!near) { continue; }
        for (var j = 0; j < near.length; j++) {
          var m = near[j];
          if (m.i <= n.i) { continue; }
          var dx = n.x - m.x, dy = n.y - m.y, d2 = dx * dx + dy * dy;
          if (d2 > CUTOFF * CUTOFF) { continue; }
          if (d2 < 0.01) { dx = (n.i % 7) - 3 + 0.5; dy = (m.i % 5) - 2 + 0.5; d2 = dx * dx + dy * dy; }
          var d = Math.sqrt(d2), f = k2 / d, gap = n.r + m.r + 6;
          if (d < gap) { f += (gap - d) * 4; }  // collision: overlapping discs push apart hard
          n.dx += dx / d * f; n.dy += dy / d * f; m.dx -= dx / d * f; m.dy -= dy / d * f;
          if (n.lw || m.lw) { labelPush(n, m); }
        }
      }
    }
  }
  for (i = 0; i < links.length; i++) {
    var l = links[i], ex = l.t.x - l.s.x, ey = l.t.y - l.s.y, ed = Math.sqrt(ex * ex + ey * ey) || 0.01;
    var pull = ed * ed / EDGE_LENGTH * (KIND_PULL[l.kind] || 0.5) * l.ease;
    l.s.dx += ex / ed * pull; l.s.dy += ey / ed * pull; l.t.dx -= ex / ed * pull; l.t.dy -= ey / ed * pull;
  }
  for (i = 0; i < nodes.length; i++) {
    n = nodes[i];
    n.dx -= n.x * GRAVITY * EDGE_LENGTH / 10 / ASPECT; n.dy -= n.y * GRAVITY * EDGE_LENGTH / 10;
    var len = Math.sqrt(n.dx * n.dx + n.dy * n.dy);
    if (len > 0) { var move = Math.min(len, temperature); n.x += n.dx / len * move; n.y += n.dy / len * move; }
  }
}

// two named notes whose label boxes overlap move apart vertically (labels sit right of the disc)
function labelPush(n, m) {
  var ax0 = n.x - n.r, ax1 = n.x + n.r + n.lw, bx0 = m.x - m.r, bx1 = m.x + m.r + m.lw;
  var overlapX = Math.min(ax1, bx1) - Math.max(ax0, bx0);
  var ah = Math.max(n.r, 9), bh = Math.max(m.r, 9), overlapY = ah + bh - Math.abs(n.y - m.y);
  if (overlapX <= 0 || overlapY <= 0) { return; }
  var sign = n.y > m.y || (n.y === m.y && n.i > m.i) ? 1 : -1, push = Math.min(overlapY, 30) * 6;
  n.dy += sign * push; m.dy -= sign * push;
}

// -- drawing ----------------------------------------------------------------------------------
var nodeEls = {}, labelEls = {}, edgeEls = [];
function draw() {
  links.forEach(function (l) {
    var line = el('line', {'class': 'edge k-' + l.kind}, layers.edges);
    if (l.kind === 'supersedes') { line.setAttribute('marker-end', 'url(#arrow)'); }
    l.el = line; edgeEls.push(line);
  });
  var labelAll = nodes.length <= 60;
  nodes.forEach(function (n) {
    var d = n.d;
    var cls = 'node t-' + d.type + ' s-' + d.state + (hubs[d.id] ? ' hub' : '') + (recentRank[d.id] ? ' recent' : '');
    var g = el('g', {'class': cls, 'data-id': d.id, 'data-name': d.name, 'data-state': d.state}, layers.nodes);
    if (recentRank[d.id]) { n.ring = el('circle', {'class': 'ring', r: n.r + 4}, g); }
    n.dot = el('circle', {'class': 'dot t-' + d.type, r: n.r}, g);
    el('title', {}, g).textContent = d.title + (d.description ? ' — ' + d.description : '');
    g.addEventListener('click', function (event) { event.stopPropagation(); select(d.id); });
    n.el = g; nodeEls[d.id] = g;
    if (labelAll || hubs[d.id] || recentRank[d.id]) {
      var text = el('text', {'class': (hubs[d.id] ? 'hub-label ' : '') + (recentRank[d.id] ? 'recent-label' : '')},
                    layers.labels);
      text.textContent = d.name + (recentRank[d.id] ? ' ⟲' + recentRank[d.id] : '');
      n.label = text; labelEls[d.id] = text;
      n.lw = 4 + CHAR_WIDTH * text.textContent.length;
    }
  });
}

function place() {
  nodes.forEach(function (n) {
    n.el.setAttribute('transform', 'translate(' + n.x.toFixed(1) + ',' + n.y.toFixed(1) + ')');
    if (n.label) { n.label.setAttribute('x', (n.x + n.r + 4).toFixed(1)); n.label.setAttribute('y', (n.y + 4).toFixed(1)); }
  });
  links.forEach(function (l) {
    var dx = l.t.x - l.s.x, dy = l.t.y - l.s.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
    var end = l.kind === 'supersedes' ? l.t.r + 2 : 0;  // the arrow stops at the note's rim
    l.el.setAttribute('x1', l.s.x.toFixed(1)); l.el.setAttribute('y1', l.s.y.toFixed(1));
    l.el.setAttribute('x2', (l.t.x - dx / d * end).toFixed(1)); l.el.setAttribute('y2', (l.t.y - dy / d * end).toFixed(1));
  });
}

// constellations: the convex hull (Andrew's monotone chain) of discs around their members
function hull(points) {
  points.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
  function cross(o, a, b) { return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]); }
  var lower = [], upper = [], i;
  for (i = 0; i < points.length; i++) {
    while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], points[i]) <= 0) { lower.pop(); }
    lower.push(points[i]);
  }
  for (i = points.length - 1; i >= 0; i--) {
    while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], points[i]) <= 0) { upper.pop(); }
    upper.push(points[i]);
  }
  return lower.slice(0, -1).concat(upper.slice(0, -1));
}
function drawHulls() {
  while (layers.hulls.firstChild) { layers.hulls.removeChild(layers.hulls.firstChild); }
  data.constellations.forEach(function (group, c) {
    var points = [];
    group.forEach(function (id) {
      var n = index[id];
      if (!n) { return; }
      for (var a = 0; a < 12; a++) {
        var angle = a * Math.PI / 6, rr = n.r + HULL_PAD;
        points.push([n.x + rr * Math.cos(angle), n.y + rr * Math.sin(angle)]);
      }
    });
    if (points.length < 3) { return; }
    var path = hull(points).map(function (p, i) { return (i ? 'L' : 'M') + p[0].toFixed(1) + ',' + p[1].toFixed(1); });
    var shape = el('path', {'class': 'hull', d: path.join(' ') + 'Z', 'data-constellation': String(c + 1)}, layers.hulls);
    el('title', {}, shape).textContent = 'constellation ' + (c + 1) + ': ' +
      group.map(function (id) { return index[id] ? index[id].d.name : id; }).join(', ');
  });
}

// -- view: fit, zoom, pan; labels and rings keep a constant size on screen -------------------------
var view = {x: -100, y: -100, w: 200, h: 200};
function applyView() {
  svg.setAttribute('viewBox', [view.x, view.y, view.w, view.h].map(function (v) { return v.toFixed(1); }).join(' '));
  var box = svg.getBoundingClientRect();
  var scale = Math.max(view.w / Math.max(box.width, 1), view.h / Math.max(box.height, 1));
  layers.labels.setAttribute('font-size', (12 * scale).toFixed(2));
}
function fit() {
  if (!nodes.length) { return; }
  var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  nodes.forEach(function (n) {
    x0 = Math.min(x0, n.x - n.r); y0 = Math.min(y0, n.y - n.r);
    x1 = Math.max(x1, n.x + n.r + (n.lw || 0)); y1 = Math.max(y1, n.y + n.r);
  });
  var pad = 30, box = svg.getBoundingClientRect(), aspect = box.height > 0 ? box.width / box.height : 1.5;
  var w = x1 - x0 + 2 * pad, h = y1 - y0 + 2 * pad;
  if (w / h < aspect) { var wide = h * aspect; x0 -= (wide - w) / 2; w = wide; }
  else { var tall = w / aspect; y0 -= (tall - h) / 2; h = tall; }
  view = {x: x0 - pad, y: y0 - pad, w: w, h: h};
  applyView();
}
function toView(event) {
  var box = svg.getBoundingClientRect();
  var scale = Math.max(view.w / box.width, view.h / box.height);
  var offsetX = (box.width * scale - view.w) / 2, offsetY = (box.height * scale - view.h) / 2;
  return {x: view.x - offsetX + (event.clientX - box.left) * scale, y: view.y - offsetY + (event.clientY - box.top) * scale,
          scale: scale};
}
svg.addEventListener('wheel', function (event) {
  event.preventDefault();
  var at = toView(event), factor = Math.exp(event.deltaY * 0.0015);
  view = {x: at.x - (at.x - view.x) * factor, y: at.y - (at.y - view.y) * factor, w: view.w * factor, h: view.h * factor};
  applyView();
}, {passive: false});
var drag = null;
svg.addEventListener('mousedown', function (event) {
  drag = {x: event.clientX, y: event.clientY, view: view, moved: false}; svg.classList.add('panning');
});
window.addEventListener('mousemove', function (event) {
  if (!drag) { return; }
  var at = toView(event), dx = event.clientX - drag.x, dy = event.clientY - drag.y;
  if (Math.abs(dx) + Math.abs(dy) > 3) { drag.moved = true; }
  view = {x: drag.view.x - dx * at.scale, y: drag.view.y - dy * at.scale, w: drag.view.w, h: drag.view.h};
  applyView();
});
window.addEventListener('mouseup', function () { svg.classList.remove('panning'); setTimeout(function () { drag = null; }, 0); });
svg.addEventListener('click', function () { if (!drag || !drag.moved) { select(null); } });
svg.addEventListener('dblclick', fit);
window.addEventListener('resize', applyView);

// -- the side panel -------------------------------------------------------------------------------
function goto(id, text, parent) {
  var a = html('a', text, 'goto', parent);
  a.addEventListener('click', function () { select(id, true); });
  return a;
}
function why(box, recall) {
  if (!recall) {
    box.className = 'why never';
    box.textContent = 'Not recalled yet (no hit-log record).';
    return;
  }
  html('strong', 'Last recalled ' + recall.time, null, box);
  var dl = html('dl', null, null, box);
  function row(term, value) {
    if (value === null || value === undefined || value === '') { return; }
    html('dt', term, null, dl); html('dd', value, null, dl);
  }
  row('reached', recall.reached);
  row('layer', recall.layer);
  row('rank', recall.rank);
  row('query', recall.q ? '#' + recall.q : null);
  row('depth', recall.depth);
  row('bracket', recall.bracket);
  row('score', recall.score);
  var parts = recall.parts || {};
  Object.keys(parts).forEach(function (k) { row(k, parts[k]); });
}
function details(n) {
  var box = byId('details');
  while (box.firstChild) { box.removeChild(box.firstChild); }
  if (!n) {
    html('h2', 'Click a note', null, box);
    html('p', 'Its title, description and text appear here, with why it was last recalled.', 'hint', box);
    return;
  }
  var d = n.d;
  html('h2', d.title, null, box);
  var badges = html('div', null, 'badges', box);
  html('span', d.type, 'badge type t-' + d.type, badges);
  html('span', d.scope, 'badge', badges);
  html('span', d.state, 'badge', badges);
  if (d.kind) { html('span', d.kind, 'badge', badges); }
  if (hubs[d.id]) { html('span', 'hub', 'badge', badges); }
  html('span', 'in-links ' + d.in_degree, 'badge', badges);
  html('span', 'PageRank ' + d.pagerank.toFixed(4), 'badge', badges);
  if (d.importance !== null) { html('span', 'importance ' + d.importance, 'badge', badges); }
  if (d.uses) { html('span', 'uses ' + d.uses, 'badge', badges); }
  html('div', d.name + ' — ' + d.path, 'path', box);
  if (d.description) { html('p', d.description, 'description', box); }
  html('h3', 'Why it was last recalled', null, box);
  why(html('div', null, 'why', box), d.last_recall);
  if (n.out.length || n.inn.length) {
    html('h3', 'Links', null, box);
    var list = html('ul', null, 'links', box);
    n.out.forEach(function (l) { var li = html('li', '→ ', null, list); goto(l.t.d.id, l.t.d.name, li); li.appendChild(document.createTextNode(' (' + l.kind + ')')); });
    n.inn.forEach(function (l) { var li = html('li', '← ', null, list); goto(l.s.d.id, l.s.d.name, li); li.appendChild(document.createTextNode(' (' + l.kind + ')')); });
  }
  html('h3', 'Text', null, box);
  html('pre', d.body || '(empty)', 'body', box);
}
var selected = null;
function select(id, centre) {
  if (selected && nodeEls[selected]) { nodeEls[selected].classList.remove('selected'); }
  Array.prototype.forEach.call(svg.querySelectorAll('.near'), function (e) { e.classList.remove('near'); });
  selected = id && index[id] ? id : null;
  svg.classList.toggle('focused', !!selected);
  root.setAttribute('data-selected', selected || '');
  if (!selected) { details(null); return; }
  var n = index[selected];
  n.el.classList.add('selected', 'near');
  if (n.label) { n.label.classList.add('near'); }
  n.out.concat(n.inn).forEach(function (l) {
    l.el.classList.add('near');
    [l.s, l.t].forEach(function (m) { m.el.classList.add('near'); if (m.label) { m.label.classList.add('near'); } });
  });
  details(n);
  if (centre) { view = {x: n.x - view.w / 2, y: n.y - view.h / 2, w: view.w, h: view.h}; applyView(); }
}
function recentList() {
  var list = byId('recent-list');
  if (!data.recent.length) { html('li', 'none in the hit-log yet', 'meta', list); return; }
  data.recent.forEach(function (r) {
    var li = html('li', null, null, list);
    goto(r.id, r.name, li);
    html('div', r.time + ' · ' + r.layer + (r.rank ? ' #' + r.rank : '') + (r.reached ? ' · ' + r.reached : '') +
         (r.q ? ' · q ' + r.q.slice(0, 8) : ''), 'meta', li);
  });
}
byId('find').addEventListener('keydown', function (event) {
  if (event.key !== 'Enter') { return; }
  var q = event.target.value.trim().toLowerCase();
  if (!q) { select(null); return; }
  var hit = nodes.filter(function (n) {
    return n.d.name.toLowerCase().indexOf(q) >= 0 || n.d.title.toLowerCase().indexOf(q) >= 0;
  })[0];
  if (hit) { select(hit.d.id, true); }
});

// a link to one note: page.html#n12 opens with that note selected
function selectFromHash() {
  var wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted && index[wanted]) { select(wanted, true); }
}
window.addEventListener('hashchange', selectFromHash);

// -- run: the layout in slices, so the page stays responsive ---------------------------------------
function run() {
  recentList();
  if (!nodes.length) {
    byId('empty').hidden = false;
    root.setAttribute('data-status', 'ready');
    return;
  }
  var stage = svg.getBoundingClientRect();
  ASPECT = stage.width > 0 && stage.height > 0 ? Math.min(3, Math.max(1 / 3, stage.width / stage.height)) : 1;
  seed(); draw(); place(); fit();
  var iterations = nodes.length <= 500 ? 350 : Math.max(120, Math.floor(175000 / nodes.length));
  var temperature = 3 * EDGE_LENGTH, cooling = Math.pow(0.02, 1 / iterations), done = 0;
  var started = Date.now(), BUDGET_MS = 6000;
  function slice() {
    var until = Date.now() + 24;
    while (done < iterations && Date.now() < until) { step(temperature); temperature *= cooling; done++; }
    if (Date.now() - started > BUDGET_MS) { done = iterations; }  // a slow machine gets what was done
    place();
    byId('progress').textContent = done < iterations ? 'laying out… ' + Math.round(100 * done / iterations) + '%' : '';
    if (done < iterations) { setTimeout(slice, 0); return; }
    drawHulls(); fit();
    root.setAttribute('data-iterations', String(done));
    selectFromHash();
    root.setAttribute('data-status', 'ready');
  }
  slice();
}
try { run(); } catch (error) { window.memlaneNoteError(error && error.stack || error); throw error; }
})();
"""
