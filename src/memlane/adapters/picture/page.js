// The page's script: plain JavaScript, no library. It reads the graph from the JSON
// element, lays it out with layout.js (memlaneLayout), and draws it as SVG: colour is the
// note's type, fill its lifecycle state, shape its scope; labels are the notes' titles.
// All note text reaches the page through textContent, never as HTML.
(function () {
'use strict';
var SVG = 'http://www.w3.org/2000/svg';
var root = document.documentElement;
var data = JSON.parse(document.getElementById('memlane-data').textContent);
var svg = document.getElementById('graph');
var layers = {hulls: byId('hulls'), edges: byId('edges'), nodes: byId('nodes'), labels: byId('labels')};
var layout = window.memlaneLayout;
var CHAR_WIDTH = 6.6;           // a label's width per character, in layout units at scale 1
var LABEL_CHARS = 40;           // a longer title is cut on the picture (the panel shows it whole)
var HULL_PAD = 10;
// the scope's shape: the project scope, where most notes live, keeps the plain disc
var SCOPE_SHAPES = {user: 'square', team: 'diamond'};

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

// -- drawing ----------------------------------------------------------------------------------
var nodeEls = {}, labelEls = {}, edgeEls = [];
function scopeShape(scope) { return SCOPE_SHAPES[scope] || 'disc'; }
// a disc, a rounded square or a diamond of about the same area, centred on 0,0
function mark(shape, r, attrs, parent) {
  if (shape === 'square') {
    var half = 0.89 * r;
    attrs.x = -half; attrs.y = -half; attrs.width = 2 * half; attrs.height = 2 * half; attrs.rx = 0.35 * half;
    return el('rect', attrs, parent);
  }
  if (shape === 'diamond') {
    var tip = 1.25 * r;
    attrs.points = [0, -tip, tip, 0, 0, tip, -tip, 0].join(' ');
    return el('polygon', attrs, parent);
  }
  attrs.r = r;
  return el('circle', attrs, parent);
}
function shortLabel(text) {
  return text.length > LABEL_CHARS ? text.slice(0, LABEL_CHARS - 1).replace(/\s+$/, '') + '…' : text;
}
function scopeText(d) {
  return d.scope + ' scope' + (d.store && d.store.source ? ' · from ' + d.store.source : '') +
    (d.store && d.store.read_only ? ' (read-only)' : '');
}
function draw() {
  links.forEach(function (l) {
    var line = el('line', {'class': 'edge k-' + l.kind}, layers.edges);
    if (l.kind === 'supersedes') { line.setAttribute('marker-end', 'url(#arrow)'); }
    l.el = line; edgeEls.push(line);
  });
  var labelAll = nodes.length <= 60;
  nodes.forEach(function (n) {
    var d = n.d;
    var shape = scopeShape(d.scope);
    var cls = 'node t-' + d.type + ' s-' + d.state + ' scope-' + shape + (hubs[d.id] ? ' hub' : '') +
      (recentRank[d.id] ? ' recent' : '');
    var g = el('g', {'class': cls, 'data-id': d.id, 'data-name': d.name, 'data-title': d.title,
                     'data-state': d.state, 'data-scope': d.scope}, layers.nodes);
    if (recentRank[d.id]) { n.ring = mark(shape, n.r + 4, {'class': 'ring'}, g); }
    n.dot = mark(shape, n.r, {'class': 'dot t-' + d.type}, g);
    el('title', {}, g).textContent = d.title + (d.description ? ' — ' + d.description : '') +
      '\n' + d.name + ' · ' + scopeText(d);
    g.addEventListener('click', function (event) { event.stopPropagation(); select(d.id); });
    n.el = g; nodeEls[d.id] = g;
    if (labelAll || hubs[d.id] || recentRank[d.id]) {
      var text = el('text', {'class': (hubs[d.id] ? 'hub-label ' : '') + (recentRank[d.id] ? 'recent-label' : '')},
                    layers.labels);
      text.textContent = shortLabel(d.title) + (recentRank[d.id] ? ' ⟲' + recentRank[d.id] : '');
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
    var end = l.kind === 'supersedes' ? l.t.r * (scopeShape(l.t.d.scope) === 'disc' ? 1 : 1.2) + 2 : 0;  // the arrow stops at the note's rim
    l.el.setAttribute('x1', l.s.x.toFixed(1)); l.el.setAttribute('y1', l.s.y.toFixed(1));
    l.el.setAttribute('x2', (l.t.x - dx / d * end).toFixed(1)); l.el.setAttribute('y2', (l.t.y - dy / d * end).toFixed(1));
  });
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
    var path = layout.hull(points).map(function (p, i) { return (i ? 'L' : 'M') + p[0].toFixed(1) + ',' + p[1].toFixed(1); });
    var shape = el('path', {'class': 'hull', d: path.join(' ') + 'Z', 'data-constellation': String(c + 1)}, layers.hulls);
    el('title', {}, shape).textContent = 'constellation ' + (c + 1) + ': ' +
      group.map(function (id) { return index[id] ? index[id].d.title : id; }).join(', ');
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
    html('p', 'Its title, name, scope, description and text appear here, with why it was last recalled.',
         'hint', box);
    return;
  }
  var d = n.d;
  html('h2', d.title, null, box);
  var badges = html('div', null, 'badges', box);
  html('span', d.type, 'badge type t-' + d.type, badges);
  html('span', d.scope + ' scope', 'badge scope', badges);
  html('span', d.state, 'badge', badges);
  if (d.kind) { html('span', d.kind, 'badge', badges); }
  if (hubs[d.id]) { html('span', 'hub', 'badge', badges); }
  html('span', 'in-links ' + d.in_degree, 'badge', badges);
  html('span', 'PageRank ' + d.pagerank.toFixed(4), 'badge', badges);
  if (d.importance !== null) { html('span', 'importance ' + d.importance, 'badge', badges); }
  if (d.uses) { html('span', 'uses ' + d.uses, 'badge', badges); }
  var where = html('dl', null, 'where', box);
  var store = d.store || {};
  var storeText = store.path ? store.path + (store.source ? ' · from ' + store.source : '') +
    (store.read_only ? ' · read-only' : '') : '';
  [['name', d.name], ['file', d.path], ['store', storeText]].forEach(
    function (row) { if (row[1]) { html('dt', row[0], null, where); html('dd', row[1], 'where-' + row[0], where); } });
  if (d.description) { html('p', d.description, 'description', box); }
  html('h3', 'Why it was last recalled', null, box);
  why(html('div', null, 'why', box), d.last_recall);
  if (n.out.length || n.inn.length) {
    html('h3', 'Links', null, box);
    var list = html('ul', null, 'links', box);
    n.out.forEach(function (l) { var li = html('li', '→ ', null, list); goto(l.t.d.id, l.t.d.title, li); li.appendChild(document.createTextNode(' (' + l.kind + ')')); });
    n.inn.forEach(function (l) { var li = html('li', '← ', null, list); goto(l.s.d.id, l.s.d.title, li); li.appendChild(document.createTextNode(' (' + l.kind + ')')); });
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
    goto(r.id, r.title || r.name, li);
    html('div', r.time + ' · ' + r.layer + (r.rank ? ' #' + r.rank : '') + (r.reached ? ' · ' + r.reached : '') +
         (r.q ? ' · q ' + r.q.slice(0, 8) : ''), 'meta', li);
  });
}
// the legend's stores: each folder drawn, its scope, where its mount came from, its note count
function storeList() {
  var list = byId('store-list'), stores = {}, order = [];
  nodes.forEach(function (n) {
    var s = n.d.store || {}, key = s.path || '(unknown)';
    if (!stores[key]) { stores[key] = {store: s, scopes: {}, count: 0}; order.push(key); }
    stores[key].count++; stores[key].scopes[n.d.scope] = true;
  });
  order.forEach(function (key) {
    var entry = stores[key], li = html('li', null, null, list);
    html('span', key, 'store-path', li);
    html('div', Object.keys(entry.scopes).join(', ') + ' scope · ' + entry.count + (entry.count === 1 ? ' note' : ' notes') +
         (entry.store.source ? ' · from ' + entry.store.source : '') + (entry.store.read_only ? ' · read-only' : ''),
         'meta', li);
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
  recentList(); storeList();
  if (!nodes.length) {
    byId('empty').hidden = false;
    root.setAttribute('data-status', 'ready');
    return;
  }
  var stage = svg.getBoundingClientRect();
  var aspect = stage.width > 0 && stage.height > 0 ? Math.min(3, Math.max(1 / 3, stage.width / stage.height)) : 1;
  layout.seed(nodes); draw(); place(); fit();
  var iterations = nodes.length <= 500 ? 350 : Math.max(120, Math.floor(175000 / nodes.length));
  var temperature = 3 * layout.EDGE_LENGTH, cooling = Math.pow(0.02, 1 / iterations), done = 0;
  var started = Date.now(), BUDGET_MS = 6000;
  function slice() {
    var until = Date.now() + 24;
    while (done < iterations && Date.now() < until) { layout.step(nodes, links, temperature, aspect); temperature *= cooling; done++; }
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
