/* minigrad's graph page (mg.viz.html): folds, dagre layout, SVG drawing, pan and zoom, search,
   details. The data (nodes, edges, folds) is the JSON in #graph-data, written by minigrad/viz/_page.py. */
(function () {
  "use strict";
  var t0 = performance.now();
  var D = JSON.parse(document.getElementById("graph-data").textContent);
  var N = D.nodes, E = D.edges, F = D.folds;
  var SVGNS = "http://www.w3.org/2000/svg";
  var FANOUT = 8;
  var svg = document.getElementById("view"), scene = document.getElementById("scene");
  var panel = document.getElementById("panel"), search = document.getElementById("search");
  var countEl = document.getElementById("count");
  var outEdges = N.map(function () { return []; });
  E.forEach(function (e, k) { outEdges[e[0]].push(k); });
  var fopen = F.map(function (f) { return !!f.open; });
  var members = F.map(function () { return []; });   // per fold, its nodes (ops and leaves), at any depth
  N.forEach(function (n, i) { var f = n.f; while (f !== -1) { members[f].push(i); f = F[f].p; } });
  var state = { sel: null, hot: null, matches: null, units: null, pos: null, view: { x: 0, y: 0, k: 1 } };

  // -- what is visible: a node, or the outermost closed fold around it -------------------------------
  function closedAbove(f) { var u = null; while (f !== -1) { if (!fopen[f]) u = f; f = F[f].p; } return u; }
  function unitOf(i) { var f = closedAbove(N[i].f); return f === null ? "n" + i : "f" + f; }

  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; }); }
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function boxSize(name, sub) {
    var w = Math.max(name.length * 7.2, (sub || "").length * 6.1) + 18;
    return { width: Math.min(Math.max(w, 44), 320), height: sub ? 36 : 24 };
  }

  // -- layout and drawing ----------------------------------------------------------------------------
  function layout() {
    var t = performance.now();
    var g = new dagre.graphlib.Graph({ compound: true });
    g.setGraph({ rankdir: "TB", nodesep: 16, ranksep: 26, edgesep: 8, marginx: 16, marginy: 16 });
    g.setDefaultEdgeLabel(function () { return {}; });
    var units = {}, unitOfNode = new Array(N.length);
    for (var i = 0; i < N.length; i++) {
      var u = unitOf(i);
      unitOfNode[i] = u;
      if (units[u]) continue;
      var info;
      if (u[0] === "n") {
        var n = N[i];
        info = { id: u, kind: "n", i: i, name: (n.bad || n.badv ? "⚠ " : "") + n.name, sub: n.sub, cls: n.cls, parent: n.f };
      } else {
        var f = +u.slice(1), fd = F[f];
        info = { id: u, kind: "f", i: f, name: "▸ " + fd.name, sub: fd.sub, cls: "fold " + fd.kind, parent: fd.p };
      }
      units[u] = info;
    }
    // open folds with nothing closed above them are frames (dagre clusters)
    var clusters = [];
    F.forEach(function (fd, f) { if (fopen[f] && closedAbove(f) === null && members[f].length) clusters.push(f); });
    clusters.forEach(function (f) { g.setNode("c" + f, { cluster: f }); });
    clusters.forEach(function (f) { if (F[f].p !== -1) g.setParent("c" + f, "c" + F[f].p); });
    Object.keys(units).forEach(function (u) {
      var info = units[u], s = boxSize(info.name, info.sub);
      s.info = info;
      g.setNode(u, s);
      if (info.parent !== -1) g.setParent(u, "c" + info.parent);
    });
    // edges between visible units, merged; a unit feeding more than FANOUT others gets a copy (↪) by each further one
    var agg = {}, order = [];
    E.forEach(function (e, k) {
      var a = unitOfNode[e[0]], b = unitOfNode[e[1]];
      if (a === b) return;
      var key = a + ">" + b, m = agg[key];
      if (!m) { m = agg[key] = { a: a, b: b, ks: [], mark: "" }; order.push(m); }
      m.ks.push(k);
      if (e[2]) m.mark = e[2];
    });
    // a unit feeding more than FANOUT others (a weight shared by every step) keeps its first edge;
    // each further box names it on a line of its own (↪) instead: long edges make layouts slow and unreadable
    var fan = {};
    order.forEach(function (m) { (fan[m.a] || (fan[m.a] = [])).push(m); });
    var drawn = [];
    order.forEach(function (m) {
      var ms = fan[m.a];
      if (ms.length > FANOUT && ms[0] !== m) {
        var b = units[m.b];
        (b.also || (b.also = [])).push(units[m.a].name);
        (b.alsoEdges || (b.alsoEdges = [])).push(m);
      } else drawn.push(m);
    });
    Object.keys(units).forEach(function (u) {
      var info = units[u];
      if (!info.also) return;
      var txt = "↪ " + info.also.join(", ");
      info.alsoText = txt.length > 48 ? txt.slice(0, 47) + "…" : txt;
      var nd = g.node(u), w = info.alsoText.length * 6.1 + 18;
      nd.height += 13;
      nd.width = Math.min(Math.max(nd.width, w), 320);
    });
    order = drawn;
    order.forEach(function (m) { g.setEdge(m.a, m.b, { m: m }); });
    dagre.layout(g);
    state.g = g;
    state.units = units;
    state.unitOfNode = unitOfNode;
    state.layoutMs = performance.now() - t;
    draw(g, clusters);
  }

  function draw(g, clusters) {
    while (scene.firstChild) scene.removeChild(scene.firstChild);
    var cl = el("g", {}, scene), eg = el("g", {}, scene), ng = el("g", {}, scene);
    clusters.forEach(function (f) {
      var c = g.node("c" + f), fd = F[f];
      var grp = el("g", { "class": "cluster " + fd.kind, "data-fold": f }, cl);
      el("rect", { x: c.x - c.width / 2, y: c.y - c.height / 2, width: c.width, height: c.height, rx: 6 }, grp);
      var tx = el("text", { x: c.x - c.width / 2 + 6, y: c.y - c.height / 2 + 12 }, grp);
      tx.textContent = "▾ " + fd.name + "  (click to fold)";
      tx.addEventListener("click", function (ev) { ev.stopPropagation(); fopen[f] = false; layout(); mark(); });
    });
    state.edgeEls = [];
    g.edges().forEach(function (ed) {
      var e = g.edge(ed), pts = e.points, d = "M" + pts[0].x + "," + pts[0].y;
      for (var j = 1; j < pts.length; j++) d += "L" + pts[j].x + "," + pts[j].y;
      var p = el("path", { d: d, "class": "edge" + (e.m.mark ? " mark" : ""), "marker-end": "url(#arrow)" }, eg);
      if (e.m.mark) el("title", {}, p).textContent = e.m.mark;
      state.edgeEls.push([p, e.m]);
    });
    state.nodeEls = {};
    g.nodes().forEach(function (id) {
      var nd = g.node(id);
      if (!nd || !nd.info) return;
      var info = nd.info, n = info.kind === "n" ? N[info.i] : null;
      var cls = "node " + info.cls + (n && (n.bad || n.badv) ? " bad" : "") + (n && n.anom ? " anom" : "");
      if (info.kind === "f" && members[info.i].some(function (j) { return N[j].bad || N[j].badv || N[j].anom; })) cls += " bad";
      var grp = el("g", { "class": cls, "data-unit": id, tabindex: 0, role: "button", "aria-label": info.name + " " + (info.sub || "") }, ng);
      el("rect", { x: nd.x - nd.width / 2, y: nd.y - nd.height / 2, width: nd.width, height: nd.height, rx: info.kind === "n" && n.k !== "op" ? 12 : 4 }, grp);
      var top = nd.y - nd.height / 2;
      var t1 = el("text", { x: nd.x, y: top + (info.sub ? 15 : 16), "text-anchor": "middle" }, grp);
      t1.textContent = info.name;
      if (info.sub) {
        var t2 = el("text", { x: nd.x, y: top + 30, "text-anchor": "middle", "class": "sub" }, grp);
        t2.textContent = info.sub;
      }
      if (info.alsoText) {
        var t3 = el("text", { x: nd.x, y: top + (info.sub ? 43 : 31), "text-anchor": "middle", "class": "sub" }, grp);
        t3.textContent = info.alsoText;
        el("title", {}, grp).textContent = "also reads " + info.also.join(", ") + " (drawn once, at its first use)";
      }
      grp.addEventListener("click", function (ev) { if (!state.dragged) activate(info); ev.stopPropagation(); });
      grp.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); activate(info); } });
      state.nodeEls[id] = grp;
    });
    document.getElementById("visible").textContent = Object.keys(state.units).length + " boxes shown";
    mark();
  }

  // -- selection, the path to the output, search marks ----------------------------------------------
  function activate(info) {
    if (info.kind === "f") { fopen[info.i] = true; layout(); select({ kind: "f", i: info.i }); return; }
    select({ kind: "n", i: info.i });
  }

  function downstream(start) {
    var seen = new Uint8Array(N.length), stack = start.slice();
    start.forEach(function (i) { seen[i] = 1; });
    while (stack.length) {
      var ks = outEdges[stack.pop()];
      for (var j = 0; j < ks.length; j++) { var b = E[ks[j]][1]; if (!seen[b]) { seen[b] = 1; stack.push(b); } }
    }
    return seen;
  }

  function select(sel) {
    state.sel = sel;
    state.hot = sel ? downstream(sel.kind === "n" ? [sel.i] : members[sel.i]) : null;
    showDetails(sel);
    mark();
  }

  function mark() {
    if (!state.nodeEls) return;
    var hotUnits = {}, selUnit = null, matchUnits = {};
    if (state.hot) for (var i = 0; i < N.length; i++) if (state.hot[i]) hotUnits[state.unitOfNode[i]] = 1;
    if (state.sel) selUnit = state.sel.kind === "n" ? state.unitOfNode[state.sel.i] : (state.units["f" + state.sel.i] ? "f" + state.sel.i : null);
    if (state.matches) state.matches.forEach(function (m) { if (m.kind === "n") matchUnits[state.unitOfNode[m.i]] = 1; else if (state.units["f" + m.i]) matchUnits["f" + m.i] = 1; });
    Object.keys(state.nodeEls).forEach(function (id) {
      var e = state.nodeEls[id], key = id;
      e.classList.toggle("hot", !!hotUnits[key]);
      e.classList.toggle("sel", key === selUnit);
      e.classList.toggle("match", !!matchUnits[key]);
    });
    state.edgeEls.forEach(function (pm) {
      var hot = false;
      if (state.hot) for (var j = 0; j < pm[1].ks.length && !hot; j++) { var e = E[pm[1].ks[j]]; hot = state.hot[e[0]] && state.hot[e[1]]; }
      pm[0].classList.toggle("hot", !!hot);
    });
  }

  function fmt(x) {
    if (x === undefined || x === null) return "–";
    if (typeof x === "string") return x;
    if (x === 0) return "0";
    var a = Math.abs(x);
    return a >= 1e4 || a < 1e-3 ? x.toExponential(3) : x.toPrecision(4);
  }
  function sumRow(label, s) {
    if (!s) return "<tr><td>" + label + '</td><td colspan="6" class="muted">not kept</td></tr>';
    if (!s.n) return "<tr><td>" + label + '</td><td colspan="6" class="muted">empty</td></tr>';
    var bad = s.nan + s.inf;
    return "<tr><td>" + label + "</td><td>" + fmt(s.min) + "</td><td>" + fmt(s.mean) + "</td><td>" + fmt(s.max) + "</td><td>" + fmt(s.norm) +
      "</td><td" + (bad ? ' class="warn"' : "") + ">" + s.nan + " / " + s.inf + "</td></tr>";
  }

  function showDetails(sel) {
    if (!sel) { panel.innerHTML = '<p class="muted">Click a box to see its details. Folded boxes (▸) open on a click.</p>'; return; }
    var h = [];
    if (sel.kind === "n") {
      var n = N[sel.i];
      h.push('<h2 id="detail-name">' + esc(n.name) + "</h2>");
      if (n.anom) h.push('<p class="warn">anomaly: ' + esc(n.anom) + "</p>");
      if (n.bad) h.push('<p class="warn">NaN/inf in the gradient</p>');
      if (n.badv) h.push('<p class="warn">NaN/inf in the value</p>');
      h.push('<table id="detail-rows">');
      n.rows.forEach(function (r) { h.push("<tr><td>" + esc(r[0]) + "</td><td>" + esc(r[1]) + "</td></tr>"); });
      h.push("</table>");
      h.push('<table class="sum" id="detail-summary"><tr><th></th><th>min</th><th>mean</th><th>max</th><th>norm</th><th>NaN / inf</th></tr>');
      h.push(sumRow("value", n.val) + sumRow("gradient", n.grad) + "</table>");
      if (n.val === null && n.k === "op") h.push('<p class="muted">An intermediate value is kept only while the rule holds it (before backward) or with retain_grad().</p>');
      h.push('<p class="muted">In red: this box and the path its gradient takes from the output.</p>');
    } else {
      var fd = F[sel.i];
      h.push('<h2 id="detail-name">' + esc(fd.name) + "</h2>");
      h.push('<table id="detail-rows"><tr><td>kind</td><td>' + esc(fd.kind) + "</td></tr><tr><td>ops inside</td><td>" + fd.n +
        "</td></tr><tr><td>most common</td><td>" + esc(fd.sub) + "</td></tr></table>");
      h.push('<p class="muted">Opened: its frame\'s title folds it again.</p>');
    }
    panel.innerHTML = h.join("");
  }

  function reveal(i) {   // open every fold around node i, then select it and bring it into view
    var f = N[i].f;
    while (f !== -1) { fopen[f] = true; f = F[f].p; }
    layout();
    select({ kind: "n", i: i });
    var nd = state.g.node(state.unitOfNode[i]);
    if (nd) centerOn(nd.x, nd.y);
  }

  // -- search ---------------------------------------------------------------------------------------
  function runSearch() {
    var q = search.value.trim().toLowerCase();
    var list = document.getElementById("results");
    list.innerHTML = "";
    if (!q) { state.matches = null; countEl.textContent = ""; mark(); return; }
    var ms = [];
    N.forEach(function (n, i) { if (n.name.toLowerCase().indexOf(q) >= 0) ms.push({ kind: "n", i: i }); });
    state.matches = ms;
    countEl.textContent = ms.length + (ms.length === 1 ? " match" : " matches");
    ms.slice(0, 40).forEach(function (m) {
      var n = N[m.i], li = document.createElement("li");
      var where = n.f !== -1 ? " · in " + F[n.f].name : "";
      li.textContent = (n.k === "op" ? "#" + m.i + " " : "") + n.name + " " + n.sub + where;
      li.addEventListener("click", function () { reveal(m.i); });
      list.appendChild(li);
    });
    mark();
  }
  var timer = null;
  search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(runSearch, 120); });
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { runSearch(); if (state.matches && state.matches.length) reveal(state.matches[0].i); }
  });

  // -- pan and zoom ---------------------------------------------------------------------------------
  function apply() { var v = state.view; scene.setAttribute("transform", "translate(" + v.x + "," + v.y + ") scale(" + v.k + ")"); }
  function fit() {
    var gr = state.g.graph(), r = svg.getBoundingClientRect();
    var k = Math.min(r.width / (gr.width || 1), r.height / (gr.height || 1), 1.5);
    k = Math.max(k, 0.02);
    state.view = { k: k, x: (r.width - gr.width * k) / 2, y: Math.max(0, (r.height - gr.height * k) / 2) };
    apply();
  }
  function centerOn(x, y) {
    var r = svg.getBoundingClientRect(), v = state.view;
    if (v.k < 0.6) v.k = 0.9;
    v.x = r.width / 2 - x * v.k; v.y = r.height / 2 - y * v.k;
    apply();
  }
  svg.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var r = svg.getBoundingClientRect(), v = state.view, mx = ev.clientX - r.left, my = ev.clientY - r.top;
    var k = Math.min(Math.max(v.k * Math.exp(-ev.deltaY * 0.0015), 0.01), 8);
    v.x = mx - (mx - v.x) * k / v.k; v.y = my - (my - v.y) * k / v.k; v.k = k;
    apply();
  }, { passive: false });
  var drag = null;
  svg.addEventListener("pointerdown", function (ev) { drag = { x: ev.clientX, y: ev.clientY, vx: state.view.x, vy: state.view.y }; state.dragged = false; });
  window.addEventListener("pointermove", function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!state.dragged && Math.abs(dx) + Math.abs(dy) < 4) return;
    state.dragged = true;
    svg.classList.add("dragging");
    state.view.x = drag.vx + dx; state.view.y = drag.vy + dy;
    apply();
  });
  window.addEventListener("pointerup", function () { drag = null; svg.classList.remove("dragging"); setTimeout(function () { state.dragged = false; }, 0); });
  svg.addEventListener("click", function () { if (!state.dragged) select(null); });
  document.getElementById("fit").addEventListener("click", fit);

  // -- start ----------------------------------------------------------------------------------------
  layout();
  fit();
  if (state.view.k < 0.45) {   // too tall to read whole: open at a readable size, on the output end
    var gr = state.g.graph(), r = svg.getBoundingClientRect();
    state.view.k = 0.8;
    state.view.x = (r.width - gr.width * 0.8) / 2;
    if (gr.width * 0.8 > r.width) state.view.x = r.width - gr.width * 0.8 - 10;
    state.view.y = r.height - gr.height * 0.8 - 10;
    apply();
  }
  if (D.select !== null && D.select !== undefined) reveal(D.select); else showDetails(null);
  var loadMs = performance.now() - t0;
  window.minigradPage = { ready: true, loadMs: loadMs, layoutMs: state.layoutMs, boxes: function () { return Object.keys(state.units).length; }, reveal: reveal, select: function (i) { select({ kind: "n", i: i }); } };
  document.body.setAttribute("data-ready", "1");
})();
