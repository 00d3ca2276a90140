// The page's force layout: plain JavaScript, no library, no DOM (page.js draws).
//
// Fruchterman & Reingold 1991, "Graph drawing by force-directed placement": repulsion
// k²/d, attraction d²/k, a cooling temperature; plus a weak pull to the centre and
// collision padding. Repulsion is only felt within a cutoff, found through a uniform grid,
// so one iteration costs about O(n) instead of O(n²); page.js caps the iteration count and
// slices the work between animation frames, so ~2,000 notes lay out in a second or two
// without freezing the page. Starting positions group each cluster (the index's clusters)
// on its own patch, which the forces then refine.
//
// A node is {i, x, y, r, lw (its label's width, 0 if unlabelled), d: {cluster}}; a link is
// {s, t, kind, ease}.
var memlaneLayout = (function () {
'use strict';
var EDGE_LENGTH = 62;            // k of Fruchterman-Reingold: the ideal distance between linked notes
var CUTOFF = 3.5 * EDGE_LENGTH;  // repulsion is felt within this distance (grid cell size)
var GRAVITY = 0.02;
var KIND_PULL = {wiki: 1, markdown: 1, mention: 0.7, supersedes: 0.8, index: 0.35};
var GOLDEN = Math.PI * (3 - Math.sqrt(5));

// starting positions: each cluster on its own patch, patches on a sunflower spiral
function seed(nodes) {
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

// one iteration of the forces; aspect (the stage's width / height) weakens the sideways
// pull on a wide screen, so the picture fills it
function step(nodes, links, temperature, aspect) {
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
    n.dx -= n.x * GRAVITY * EDGE_LENGTH / 10 / aspect; n.dy -= n.y * GRAVITY * EDGE_LENGTH / 10;
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

// constellations: the convex hull (Andrew's monotone chain) of [x, y] points
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

return {EDGE_LENGTH: EDGE_LENGTH, seed: seed, step: step, hull: hull};
})();
