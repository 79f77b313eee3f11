"use strict";
(function () {
  // Every string of the data is untrusted: nodes are built with textContent only.
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var app = document.getElementById("app");
  var PAGE = 50;

  function el(tag, props, kids) {
    var n = document.createElement(tag);
    if (props) for (var k in props) {
      if (k === "text") n.textContent = props[k];
      else if (k === "cls") n.className = props[k];
      else if (k === "on") for (var ev in props.on) n.addEventListener(ev, props.on[ev]);
      else n.setAttribute(k, String(props[k]));
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      n.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return n;
  }
  function fmt(x, d) {
    if (x === null || x === undefined) return "–";
    if (typeof x !== "number") return String(x);
    return Number.isInteger(x) ? String(x) : x.toFixed(d === undefined ? 3 : d);
  }
  function table(head, rows) {
    return el("table", null, [el("thead", null, [el("tr", null, head.map(function (h) {
      return el("th", { text: h });
    }))]), el("tbody", null, rows)]);
  }
  function td(x) { return el("td", { text: fmt(x) }); }
  function pager(total, page, go) {
    var pages = Math.max(1, Math.ceil(total / PAGE));
    return el("div", { cls: "bar" }, [
      el("button", { text: "‹ prev", "data-test": "prev", on: { click: function () { if (page > 0) go(page - 1); } } }),
      el("span", { text: "page " + (page + 1) + " of " + pages + " (" + total + " rows)" }),
      el("button", { text: "next ›", "data-test": "next", on: { click: function () { if (page + 1 < pages) go(page + 1); } } })
    ]);
  }
  function turnsView(turns, answer) {
    var box = el("div", { cls: "turns" });
    (turns || []).forEach(function (turn, t) {
      box.appendChild(el("h3", { text: "turn " + (t + 1) + " — " + turn.calls.length + " tool call(s)" }));
      turn.calls.forEach(function (c) {
        box.appendChild(el("div", { cls: "call" }, [
          el("div", { cls: "toolcall", text: c.name + "(" + c.args + ")" }),
          c.result !== undefined ? el("pre", { cls: "result", text: c.result }) : null
        ]));
      });
    });
    if (answer !== undefined && answer !== null) {
      box.appendChild(el("h3", { text: "answer" }));
      box.appendChild(el("pre", { cls: "answer", text: answer }));
    }
    return box;
  }
  function fileList(files, scores, gold) {
    var g = {};
    (gold || []).forEach(function (f) { g[f] = true; });
    return el("ol", null, (files || []).map(function (f, i) {
      return el("li", { cls: g[f] ? "hit" : "" }, [f + (scores ? "  (" + fmt(scores[i]) + ")" : "") + (g[f] ? "  ✓ gold" : "")]);
    }));
  }

  // --- curves: inline SVG, drawn on demand ---
  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    var n = document.createElementNS(SVG, tag);
    for (var k in attrs) n.setAttribute(k, String(attrs[k]));
    return n;
  }
  function curve(name, c, alarms, onStep) {
    var W = 320, H = 150, P = 28;
    var xs = c.x, ys = c.y, lo = Infinity, hi = -Infinity;
    ys.forEach(function (y) { if (y !== null) { lo = Math.min(lo, y); hi = Math.max(hi, y); } });
    if (!(hi > lo)) { hi = lo + 1; }
    var x0 = xs[0], x1 = xs[xs.length - 1] === x0 ? x0 + 1 : xs[xs.length - 1];
    function X(x) { return P + (W - P - 6) * (x - x0) / (x1 - x0); }
    function Y(y) { return H - 18 - (H - 30) * (y - lo) / (hi - lo); }
    var s = svg("svg", { width: W, height: H, "class": "curve", "data-curve": name });
    var t = svg("text", { x: 4, y: 12, "font-size": 12 }); t.textContent = name; s.appendChild(t);
    var lt = svg("text", { x: 4, y: H - 4, "font-size": 10 }); lt.textContent = fmt(lo) + " … " + fmt(hi) + "  steps " + x0 + "–" + x1; s.appendChild(lt);
    alarms.forEach(function (a) {
      if (a.metric !== name) return;
      var l = svg("line", { x1: X(a.step), x2: X(a.step), y1: 14, y2: H - 18, stroke: "#b42318", "stroke-dasharray": "3 2" });
      l.addEventListener("click", function () { onStep(a.step); });
      s.appendChild(l);
    });
    var d = "";
    for (var i = 0; i < xs.length; i++) if (ys[i] !== null) d += (d ? "L" : "M") + X(xs[i]).toFixed(1) + " " + Y(ys[i]).toFixed(1);
    s.appendChild(svg("path", { d: d, fill: "none", stroke: "#2563eb", "stroke-width": 1.2 }));
    return s;
  }

  // --- training ---
  function training() {
    var G = DATA.groups, R = DATA.rollouts;
    app.appendChild(el("h1", { text: DATA.title }));
    if (DATA.verdict) app.appendChild(el("pre", { cls: "verdict", text: DATA.verdict }));
    var state = { filter: "all", sort: "step", page: 0, step: null, group: null, rollout: null };
    var alarmBox = el("div", { id: "alarms" });
    DATA.alarms.forEach(function (a) {
      alarmBox.appendChild(el("div", { cls: "alarm", "data-step": a.step, text: "ALARM " + a.name + " at step " + a.step + ": " + a.message, on: { click: function () { goStep(a.step); } } }));
    });
    if (!DATA.alarms.length) alarmBox.appendChild(el("div", { cls: "ok", text: "no alarm" }));
    app.appendChild(alarmBox);
    var cbox = el("div", { cls: "curves", id: "curves" });
    Object.keys(DATA.curves).forEach(function (k) { cbox.appendChild(curve(k, DATA.curves[k], DATA.alarms, goStep)); });
    app.appendChild(el("h2", { text: "curves" })); app.appendChild(cbox);
    (DATA.notes || []).forEach(function (n) { app.appendChild(el("div", { cls: "dim", text: "note: " + n })); });
    if (DATA.bad_count) app.appendChild(el("div", { cls: "bad", text: DATA.bad_count + " bad line(s) skipped, first: " + DATA.bad.slice(0, 3).map(function (b) { return b.file + ":" + b.line + " " + b.reason; }).join("; ") }));
    app.appendChild(el("h2", { text: "rollouts (" + R.length + " in " + G.length + " groups)" }));
    var filter = el("select", { id: "filter", on: { change: function () { state.filter = filter.value; state.page = 0; state.step = null; list(); } } }, [
      el("option", { value: "all", text: "all groups" }), el("option", { value: "zv", text: "zero-variance groups" })]);
    var sort = el("select", { id: "sort", on: { change: function () { state.sort = sort.value; state.page = 0; list(); } } }, [
      el("option", { value: "step", text: "by step" }), el("option", { value: "low", text: "lowest reward first" }),
      el("option", { value: "long", text: "longest rollouts first" })]);
    var stepIn = el("input", { id: "step", type: "number", placeholder: "step", on: { change: function () { goStep(stepIn.value === "" ? null : Number(stepIn.value)); } } });
    app.appendChild(el("div", { cls: "bar" }, ["filter ", filter, " sort ", sort, " go to step ", stepIn]));
    var listBox = el("div", { cls: "pane", id: "groups" }), groupBox = el("div", { cls: "pane", id: "group" }), rollBox = el("div", { cls: "pane", id: "rollout" });
    app.appendChild(el("div", { cls: "panes" }, [listBox, groupBox, rollBox]));
    var order = null, orderKey = "";
    function visible() {
      var key = state.filter + "/" + state.sort + "/" + state.step;
      if (order && orderKey === key) return order;
      var out = [];
      for (var i = 0; i < G.length; i++) {
        if (state.filter === "zv" && !G[i].zv) continue;
        if (state.step !== null && G[i].s !== state.step) continue;
        out.push(i);
      }
      if (state.sort === "low") out.sort(function (a, b) { return (G[a].mean === null ? 1e9 : G[a].mean) - (G[b].mean === null ? 1e9 : G[b].mean); });
      if (state.sort === "long") out.sort(function (a, b) { return G[b].len - G[a].len; });
      order = out; orderKey = key; return out;
    }
    function goStep(step) { state.step = step; state.page = 0; stepIn.value = step === null ? "" : step; list(); var v = visible(); if (v.length) showGroup(v[0]); }
    function list() {
      var v = visible(), page = state.page;
      listBox.textContent = "";
      listBox.appendChild(pager(v.length, page, function (p) { state.page = p; list(); }));
      var rows = v.slice(page * PAGE, page * PAGE + PAGE).map(function (gi) {
        var g = G[gi];
        return el("tr", { cls: "row" + (state.group === gi ? " sel" : ""), "data-step": g.s, "data-group": g.g, on: { click: function () { showGroup(gi); } } },
          [td(g.s), td(g.g), td(g.m.length), td(g.mean), td(g.std), el("td", { text: g.zv ? "zero variance" : "" })]);
      });
      listBox.appendChild(table(["step", "group", "n", "mean reward", "std", ""], rows));
    }
    function showGroup(gi) {
      state.group = gi; var g = G[gi];
      groupBox.textContent = "";
      groupBox.appendChild(el("h2", { text: "step " + g.s + " · group " + g.g }));
      groupBox.appendChild(table(["#", "reward", "advantage", "turns", "calls", "answer / error"], g.m.map(function (ri) {
        var r = R[ri];
        return el("tr", { cls: "row", "data-rollout": r.i, on: { click: function () { showRollout(ri); } } },
          [td(r.i), td(r.r), td(r.a), td(r.t), td(r.c), el("td", { text: r.f ? r.f.join(", ") : (r.err || r.deg || r.st || "") })]);
      })));
      list();
    }
    function showRollout(ri) {
      var r = R[ri];
      rollBox.textContent = "";
      rollBox.appendChild(el("h2", { text: "rollout " + r.i + " of step " + r.s }));
      rollBox.appendChild(table(["reward", "advantage", "group adv.", "c̄", "turns", "calls/turn"], [el("tr", null, [td(r.r), td(r.a), td(r.ag), td(r.cbar), td(r.t), td(r.cpt ? r.cpt.join(" ") : null)])]));
      if (r.id) rollBox.appendChild(el("div", { text: "instance: " + r.id }));
      ["err", "deg", "st", "tp"].forEach(function (k) { if (r[k]) rollBox.appendChild(el("div", { cls: "bad", text: { err: "answer error: ", deg: "degenerate: ", st: "status: ", tp: "test policy: " }[k] + r[k] })); });
      rollBox.appendChild(el("h3", { text: "answer files" })); rollBox.appendChild(fileList(r.f, null, r.gold));
      if (r.gold) { rollBox.appendChild(el("h3", { text: "gold" })); rollBox.appendChild(fileList(r.gold, null, null)); }
      var d = r.T ? turnsOf(r) : null;
      if (d) rollBox.appendChild(turnsView(d.turns, d.ans));
      else rollBox.appendChild(el("div", { cls: "dim", text: "no turns logged (log completions to see the tool calls)" }));
    }
    var blocks = {};
    function turnsOf(r) {  // a step's turns are parsed the first time one of its rollouts opens
      if (!(r.s in blocks)) {
        var node = document.getElementById("turns-" + r.s);
        blocks[r.s] = node ? JSON.parse(node.textContent) : {};
      }
      return blocks[r.s][String(r.i)] || null;
    }
    list();
  }

  // --- retrieval ---
  function retrieval() {
    var C = DATA.cases;
    app.appendChild(el("h1", { text: DATA.title }));
    var state = { sort: "worst", q: "", miss: false, page: 0 };
    var sort = el("select", { id: "sort", on: { change: function () { state.sort = sort.value; state.page = 0; list(); } } }, [
      el("option", { value: "worst", text: "worst F first" }), el("option", { value: "id", text: "by instance" })]);
    var q = el("input", { id: "q", placeholder: "instance or repo contains", on: { input: function () { state.q = q.value; state.page = 0; list(); } } });
    var miss = el("input", { id: "miss", type: "checkbox", on: { change: function () { state.miss = miss.checked; state.page = 0; list(); } } });
    app.appendChild(el("div", { cls: "bar" }, ["sort ", sort, " filter ", q, el("label", null, [miss, " F = 0 only"])]));
    var listBox = el("div", { cls: "pane", id: "cases" }), detail = el("div", { cls: "pane", id: "case" });
    app.appendChild(el("div", { cls: "panes" }, [listBox, detail]));
    function list() {
      var v = [];
      for (var i = 0; i < C.length; i++) {
        var c = C[i];
        if (state.miss && c.f > 0) continue;
        if (state.q && (c.id + " " + c.repo + " " + c.sys).indexOf(state.q) < 0) continue;
        v.push(i);
      }
      if (state.sort === "worst") v.sort(function (a, b) { return C[a].f - C[b].f || (C[a].id < C[b].id ? -1 : 1); });
      else v.sort(function (a, b) { return C[a].id < C[b].id ? -1 : C[a].id > C[b].id ? 1 : 0; });
      listBox.textContent = "";
      listBox.appendChild(pager(v.length, state.page, function (p) { state.page = p; list(); }));
      listBox.appendChild(table(["system", "instance", "F" + DATA.beta, "P", "R", "files", "gold"], v.slice(state.page * PAGE, state.page * PAGE + PAGE).map(function (i) {
        var c = C[i];
        return el("tr", { cls: "row", "data-id": c.id, on: { click: function () { show(i); } } }, [td(c.sys), td(c.id), td(c.f), td(c.p), td(c.rc), td(c.files.length), td(c.gold.length)]);
      })));
    }
    function show(i) {
      var c = C[i];
      detail.textContent = "";
      detail.appendChild(el("h2", { text: c.id + " · " + c.sys }));
      detail.appendChild(el("div", { text: "F" + DATA.beta + " " + fmt(c.f) + " · precision " + fmt(c.p) + " · recall " + fmt(c.rc) + " · turns " + fmt(c.t) + " · tool calls " + fmt(c.c) + " · " + c.status }));
      detail.appendChild(el("h3", { text: "answer" })); detail.appendChild(fileList(c.files, c.scores, c.gold));
      detail.appendChild(el("h3", { text: "gold" })); detail.appendChild(fileList(c.gold, null, null));
      if (c.turns) { detail.appendChild(el("h3", { text: "rollout" })); detail.appendChild(turnsView(c.turns, c.ans)); }
      detail.appendChild(el("h3", { text: "issue" })); detail.appendChild(el("pre", { cls: "issue", text: c.issue }));
    }
    list();
  }

  // --- downstream ---
  function est(e) { return e && typeof e === "object" ? fmt(e.value) + " [" + fmt(e.low) + ", " + fmt(e.high) + "]" : fmt(e); }
  function mde(o) { for (var k in o) if (k.toLowerCase().indexOf("mde") >= 0) return est(o[k]); return null; }
  function downstream() {
    var D = DATA.report;
    app.appendChild(el("h1", { text: DATA.title }));
    app.appendChild(el("div", { text: "denominator " + D.denominator + " (" + D.denominator_source + "), baseline " + D.baseline }));
    var cfgs = D.configs || [], hasMde = cfgs.some(function (c) { return mde(c) !== null; });
    app.appendChild(el("h2", { text: "Table 3" }));
    app.appendChild(table(["configuration", "resolved", "resolve rate [95% CI]"].concat(hasMde ? ["MDE"] : []).concat(["rounds (resolved, median)", "tokens (resolved, median)", "missing"]), cfgs.map(function (c) {
      return el("tr", { cls: "cfg" }, [td(c.name), td(c.resolved + " / " + c.n), td(est(c.resolve_rate))].concat(hasMde ? [td(mde(c))] : []).concat([
        td(c.rounds_resolved ? c.rounds_resolved.median : null), td(c.tokens_resolved ? c.tokens_resolved.median : null), td(c.missing)]));
    })));
    var pairs = D.paired || [], pMde = pairs.some(function (p) { return mde(p) !== null; });
    if (pairs.length) {
      app.appendChild(el("h2", { text: "paired comparisons" }));
      app.appendChild(table(["A", "B", "Δ resolve rate [95% CI]", "McNemar p", "A only", "B only"].concat(pMde ? ["MDE"] : []), pairs.map(function (p) {
        return el("tr", null, [td(p.a), td(p.b), td(est(p.delta)), td(p.mcnemar_p), td(p.a_only), td(p.b_only)].concat(pMde ? [td(mde(p))] : []));
      })));
    }
    (D.notes || []).forEach(function (n) { app.appendChild(el("div", { cls: "dim", text: "note: " + n })); });
    var cases = D.cases || [];
    app.appendChild(el("h2", { text: "cases (" + cases.length + ")" }));
    if (!cases.length) { app.appendChild(el("div", { cls: "dim", text: "no case view (run the report with --cases)" })); return; }
    var state = { cfg: "", only: "", page: 0 };
    var cfgSel = el("select", { id: "config", on: { change: function () { state.cfg = cfgSel.value; state.page = 0; list(); } } }, [el("option", { value: "", text: "every configuration" })].concat(cfgs.map(function (c) { return el("option", { value: c.name, text: c.name }); })));
    var only = el("select", { id: "outcome", on: { change: function () { state.only = only.value; state.page = 0; list(); } } }, [
      el("option", { value: "", text: "resolved or not" }), el("option", { value: "yes", text: "resolved" }), el("option", { value: "no", text: "unresolved" })]);
    app.appendChild(el("div", { cls: "bar" }, ["configuration ", cfgSel, " outcome ", only]));
    var listBox = el("div", { cls: "pane", id: "cases" }), detail = el("div", { cls: "pane", id: "case" });
    app.appendChild(el("div", { cls: "panes" }, [listBox, detail]));
    function list() {
      var v = cases.filter(function (c) { return (!state.cfg || c.config === state.cfg) && (!state.only || (state.only === "yes") === !!c.resolved); });
      listBox.textContent = "";
      listBox.appendChild(pager(v.length, state.page, function (p) { state.page = p; list(); }));
      listBox.appendChild(table(["instance", "configuration", "resolved", "failure", "rounds", "tokens", "injected"], v.slice(state.page * PAGE, state.page * PAGE + PAGE).map(function (c) {
        return el("tr", { cls: "row", "data-id": c.instance_id, on: { click: function () { show(c); } } }, [td(c.instance_id), td(c.config), td(c.resolved ? "yes" : "no"), td(c.failure), td(c.rounds), td(c.tokens), td(c.injected ? c.injected.length : null)]);
      })));
    }
    function show(c) {
      detail.textContent = "";
      detail.appendChild(el("h2", { text: c.instance_id + " · " + c.config }));
      var rows = [];
      for (var k in c) rows.push(el("tr", null, [td(k), el("td", null, [el("pre", { text: typeof c[k] === "object" && c[k] !== null ? JSON.stringify(c[k], null, 1) : fmt(c[k]) })])]));
      detail.appendChild(table(["field", "value"], rows));
    }
    list();
  }

  var t0 = performance.now();
  ({ training: training, retrieval: retrieval, downstream: downstream })[DATA.kind]();
  document.body.setAttribute("data-rendered-ms", (performance.now() - t0).toFixed(0));
  document.body.setAttribute("data-ready", "1");
})();
