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
  // A view's selection lives in the URL fragment (#step=3&group=%231&rollout=2), so a link
  // opens one rollout or case; it is read once at load and rewritten on every selection.
  function readHash() {
    var out = Object.create(null);
    try { new URLSearchParams(location.hash.slice(1)).forEach(function (v, k) { out[k] = v; }); } catch (e) { /* a hand-typed fragment */ }
    return out;
  }
  function writeHash(o) {
    var q = new URLSearchParams();
    for (var k in o) if (o[k] !== null && o[k] !== undefined && o[k] !== "") q.set(k, String(o[k]));
    try { history.replaceState(null, "", "#" + q.toString()); } catch (e) { location.hash = q.toString(); }
  }
  function has(text, needle) { return String(text).toLowerCase().indexOf(needle.toLowerCase()) >= 0; }
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
    var g = Object.create(null);  // keyed by untrusted paths: no prototype to hit
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
  function curve(name, c, alarms, onStep, other) {
    // `other`: a second run's series of the same metric, drawn dashed on the same axes
    var W = 340, H = 170, L = 52, R = 8, T = 18, B = 30;
    var xs = c.x, ys = c.y, lo = Infinity, hi = -Infinity, last = null;
    ys.forEach(function (y) { if (y !== null) { lo = Math.min(lo, y); hi = Math.max(hi, y); last = y; } });
    if (other) other.y.forEach(function (y) { if (y !== null) { lo = Math.min(lo, y); hi = Math.max(hi, y); } });
    var constant = !(hi > lo);
    var ylo = constant ? lo - 1 : lo, yhi = constant ? lo + 1 : hi;  // a flat line drawn mid-height
    var x0 = xs[0], x1 = xs[xs.length - 1];
    if (other && other.x.length) { x0 = Math.min(x0, other.x[0]); x1 = Math.max(x1, other.x[other.x.length - 1]); }
    if (x1 === x0) x1 = x0 + 1;
    function X(x) { return L + (W - L - R) * (x - x0) / (x1 - x0); }
    function Y(y) { return H - B - (H - B - T) * (y - ylo) / (yhi - ylo); }
    function text(x, y, str, attrs) {
      var t = svg("text", Object.assign({ x: x, y: y, "font-size": 10 }, attrs || {}));
      t.textContent = str; s.appendChild(t); return t;
    }
    var s = svg("svg", { width: W, height: H, "class": "curve", "data-curve": name });
    text(4, 12, name, { "font-size": 12 });
    var readout = text(W - R, 12, "last " + fmt(last), { "text-anchor": "end", "data-readout": "1" });
    // axes: y ticks at the range's ends and middle (one tick for a constant series), x at the ends
    s.appendChild(svg("line", { x1: L, x2: L, y1: T, y2: H - B, stroke: "#98a2b3" }));
    s.appendChild(svg("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#98a2b3" }));
    (constant ? [lo] : [lo, (lo + hi) / 2, hi]).forEach(function (v) {
      s.appendChild(svg("line", { x1: L - 3, x2: L, y1: Y(v), y2: Y(v), stroke: "#98a2b3" }));
      text(L - 5, Y(v) + 3, fmt(v), { "text-anchor": "end", "data-tick": "y" });
    });
    [x0, x1].forEach(function (v, i) {
      text(X(v), H - B + 12, String(v), { "text-anchor": i ? "end" : "start", "data-tick": "x" });
    });
    text((L + W - R) / 2, H - 4, constant ? "step (constant " + fmt(lo) + ")" : "step", { "text-anchor": "middle" });
    var d = "";
    for (var i = 0; i < xs.length; i++) if (ys[i] !== null) d += (d ? "L" : "M") + X(xs[i]).toFixed(1) + " " + Y(ys[i]).toFixed(1);
    s.appendChild(svg("path", { d: d, fill: "none", stroke: "#2563eb", "stroke-width": 1.2, "data-run": "this" }));
    if (other) {
      var d2 = "";
      for (var j = 0; j < other.x.length; j++) if (other.y[j] !== null) d2 += (d2 ? "L" : "M") + X(other.x[j]).toFixed(1) + " " + Y(other.y[j]).toFixed(1);
      s.appendChild(svg("path", { d: d2, fill: "none", stroke: "#d97706", "stroke-width": 1.2, "stroke-dasharray": "4 2", "data-run": "other" }));
    }
    var dot = svg("circle", { r: 3, fill: "#2563eb", visibility: "hidden" });
    s.appendChild(dot);
    s.addEventListener("mousemove", function (ev) {  // the value at the step under the pointer
      var box = s.getBoundingClientRect(), px = ev.clientX - box.left, best = -1;
      for (var i = 0; i < xs.length; i++) if (ys[i] !== null && (best < 0 || Math.abs(X(xs[i]) - px) < Math.abs(X(xs[best]) - px))) best = i;
      if (best < 0) return;
      readout.textContent = "step " + xs[best] + ": " + fmt(ys[best]);
      dot.setAttribute("cx", X(xs[best])); dot.setAttribute("cy", Y(ys[best])); dot.setAttribute("visibility", "visible");
    });
    s.addEventListener("mouseleave", function () { readout.textContent = "last " + fmt(last); dot.setAttribute("visibility", "hidden"); });
    alarms.forEach(function (a) {  // drawn last: a 12 px band over the dashed line takes the click
      if (a.metric !== name) return;
      s.appendChild(svg("line", { x1: X(a.step), x2: X(a.step), y1: T, y2: H - B, stroke: "#b42318", "stroke-dasharray": "3 2" }));
      var hit = svg("rect", { x: X(a.step) - 6, y: T, width: 12, height: H - B - T, fill: "#b42318", "fill-opacity": 0.08, "class": "alarm-mark", "data-alarm-step": a.step });
      var tip = svg("title", {}); tip.textContent = "ALARM " + a.name + " at step " + a.step; hit.appendChild(tip);
      hit.addEventListener("click", function () { onStep(a.step); });
      s.appendChild(hit);
    });
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
    var OTHER = DATA.compare || null;
    Object.keys(DATA.curves).forEach(function (k) { cbox.appendChild(curve(k, DATA.curves[k], DATA.alarms, goStep, OTHER ? OTHER.curves[k] : null)); });
    app.appendChild(el("h2", { text: "curves" }));
    if (OTHER) app.appendChild(el("div", { cls: "dim", id: "legend", text: "solid: this run · dashed: " + OTHER.title }));
    app.appendChild(cbox);
    if (OTHER) {  // the two runs side by side: each instance's group mean reward at each step
      var side = Object.create(null), sideOrder = [];  // no prototype: a group named "constructor" is data
      function add(g, which) {
        if (!(g.g in side)) { side[g.g] = { a: [], b: [] }; sideOrder.push(g.g); }
        side[g.g][which].push("step " + g.s + ": " + fmt(g.mean, 2));
      }
      DATA.groups.forEach(function (g) { add(g, "a"); });
      OTHER.groups.forEach(function (g) { add(g, "b"); });
      app.appendChild(el("h2", { text: "side by side: group mean reward per instance" }));
      app.appendChild(el("div", { id: "sidebyside", cls: "pane" }, [table(["group", "this run", OTHER.title], sideOrder.map(function (k) {
        return el("tr", { "data-group": k }, [td(k), el("td", { cls: "wrap", text: side[k].a.join(" · ") || "–" }), el("td", { cls: "wrap", text: side[k].b.join(" · ") || "–" })]);
      }))]));
    }
    (DATA.notes || []).forEach(function (n) { app.appendChild(el("div", { cls: "dim", text: "note: " + n })); });
    if (DATA.bad_count) app.appendChild(el("div", { cls: "bad", text: DATA.bad_count + " bad line(s) skipped, first: " + DATA.bad.slice(0, 3).map(function (b) { return b.file + ":" + b.line + " " + b.reason; }).join("; ") }));
    app.appendChild(el("h2", { text: "rollouts (" + R.length + " in " + G.length + " groups)" }));
    var filter = el("select", { id: "filter", on: { change: function () { state.filter = filter.value; state.page = 0; state.step = null; stepIn.value = ""; list(); } } }, [
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
    function goStep(step) {
      // the same step again (the box's change event fires once more when it loses focus): keep
      // the group and rollout that are open
      if (step !== null && step === state.step && state.group !== null && G[state.group].s === step) return;
      state.step = step; state.page = 0; stepIn.value = step === null ? "" : step;
      var v = visible();
      if (v.length && step !== null) { showGroup(v[0]); return; }
      list();
      if (step !== null) {  // nothing at that step: no earlier group stays open beside the empty list
        state.group = null; groupBox.textContent = ""; rollBox.textContent = "";
        groupBox.appendChild(el("div", { cls: "dim", text: "no group at step " + step + (state.filter === "zv" ? " among the zero-variance groups" : "") }));
        writeHash({ step: step });
      }
    }
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
      groupBox.textContent = ""; rollBox.textContent = "";
      writeHash({ step: g.s, group: g.g });
      groupBox.appendChild(el("h2", { text: "step " + g.s + " · group " + g.g }));
      groupBox.appendChild(table(["#", "reward", "advantage", "turns", "calls", "answer / error"], g.m.map(function (ri) {
        var r = R[ri];
        return el("tr", { cls: "row", "data-rollout": r.i, on: { click: function () { showRollout(ri); } } },
          [td(r.i), td(r.r), td(r.a), td(r.t), td(r.c), el("td", { cls: "wrap", text: r.f ? r.f.join(", ") : (r.err || r.deg || r.st || "") })]);
      })));
      list();
    }
    function showRollout(ri) {
      var r = R[ri];
      rollBox.textContent = "";
      writeHash({ step: r.s, group: G[state.group] ? G[state.group].g : null, rollout: r.i });
      rollBox.appendChild(el("h2", { text: "rollout " + r.i + " of step " + r.s }));
      rollBox.appendChild(table(["reward", "advantage", "group adv.", "c̄", "turns", "calls/turn"], [el("tr", null, [td(r.r), td(r.a), td(r.ag), td(r.cbar), td(r.t), td(r.cpt ? r.cpt.join(" ") : null)])]));
      if (r.id) rollBox.appendChild(el("div", { text: "instance: " + r.id }));
      var spent = [];
      if (r.stop) spent.push("stopped: " + r.stop);
      if (r.tok !== undefined) spent.push("rollout tokens " + r.tok);
      if (r.ctok !== undefined) spent.push("completion tokens " + r.ctok);
      if (r.cut !== undefined) spent.push("tool results cut " + r.cut);
      if (spent.length) rollBox.appendChild(el("div", { "data-field": "spent", text: spent.join(" · ") }));
      ["err", "deg", "st", "tp"].forEach(function (k) {
        if (!r[k]) return;
        var plain = k === "st" && r[k] === "answered";  // the normal end is not an error
        rollBox.appendChild(el("div", { cls: plain ? "dim" : "bad", "data-field": k, text: { err: "answer error: ", deg: "degenerate: ", st: "status: ", tp: "test policy: " }[k] + r[k] }));
      });
      rollBox.appendChild(el("h3", { text: "answer files" })); rollBox.appendChild(fileList(r.f, null, r.gold));
      if (r.gold) { rollBox.appendChild(el("h3", { text: "gold" })); rollBox.appendChild(fileList(r.gold, null, null)); }
      var d = r.T ? turnsOf(r) : null;
      if (d) rollBox.appendChild(turnsView(d.turns, d.ans));
      else rollBox.appendChild(el("div", { cls: "dim", text: "no turns logged (log completions to see the tool calls)" }));
      if (r.id) {  // the same instance at every step it was trained on: its group's rewards
        var seen = G.filter(function (g) { return g.g === r.id; });
        if (seen.length > 1) {
          rollBox.appendChild(el("h3", { text: "this instance at every step" }));
          rollBox.appendChild(el("div", { id: "across" }, [table(["step", "mean reward", "rewards"], seen.map(function (g) {
            return el("tr", { cls: g.s === r.s ? "sel" : "" }, [td(g.s), td(g.mean), td(g.m.map(function (m) { return fmt(R[m].r, 2); }).join(" "))]);
          }))]));
        }
      }
      if (d && d.issue) { rollBox.appendChild(el("h3", { text: "issue" })); rollBox.appendChild(el("pre", { cls: "issue", text: d.issue })); }
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
    var h = readHash();  // a link to one step, group or rollout
    if (h.step !== undefined && h.step !== "" && !isNaN(Number(h.step))) {
      goStep(Number(h.step));
      for (var gi = 0; h.group !== undefined && gi < G.length; gi++) {
        if (G[gi].s !== Number(h.step) || G[gi].g !== h.group) continue;
        showGroup(gi);
        G[gi].m.forEach(function (ri) { if (h.rollout !== undefined && String(R[ri].i) === h.rollout) showRollout(ri); });
        break;
      }
    }
  }

  // --- retrieval ---
  function ci(e) { return Array.isArray(e) ? fmt(e[0]) + (e[1] !== e[2] ? " [" + fmt(e[1]) + ", " + fmt(e[2]) + "]" : "") : fmt(e); }
  function retrieval() {
    var C = DATA.cases, B = DATA.beta;
    app.appendChild(el("h1", { text: DATA.title }));
    // the summary: the scorer's rows (with intervals) when given, else the means of the cases
    var rows = DATA.summary && DATA.summary.length ? DATA.summary : null;
    if (!rows) {
      var by = Object.create(null);
      C.forEach(function (c) {
        var a = by[c.sys] || (by[c.sys] = { sys: c.sys, n: 0, missing: 0, empty: 0, f: 0, p: 0, rc: 0 });
        a.n++; a.f += c.f; a.p += c.p; a.rc += c.rc;
        if (c.status === "missing") a.missing++; else if (c.status === "empty") a.empty++;
      });
      rows = Object.keys(by).map(function (k) { var a = by[k]; return { sys: a.sys, n: a.n, missing: a.missing, empty: a.empty, f: a.f / a.n, p: a.p / a.n, rc: a.rc / a.n }; });
    }
    app.appendChild(el("div", { id: "summary" }, [table(["system", "instances", "F" + B + " (mean [95% CI])", "precision", "recall", "no prediction", "empty answer"], rows.map(function (r) {
      return el("tr", { cls: "sum", "data-sys": r.sys }, [td(r.sys), td(r.n), td(ci(r.f)), td(ci(r.p)), td(ci(r.rc)), td(r.missing), td(r.empty)]);
    }))]));
    if (rows.some(function (r) { return r.missing; })) app.appendChild(el("div", { cls: "dim", text: "an instance without a prediction counts as F = 0 in the mean; it is listed as \u201cno prediction\u201d, apart from wrong answers" }));
    var state = { sort: "worst", q: "", show: "", page: 0 };
    var sort = el("select", { id: "sort", on: { change: function () { state.sort = sort.value; state.page = 0; list(); } } }, [
      el("option", { value: "worst", text: "worst F first" }), el("option", { value: "id", text: "by instance" })]);
    var q = el("input", { id: "q", placeholder: "instance, repo or system contains", on: { input: function () { state.q = q.value; state.page = 0; list(); } } });
    var show = el("select", { id: "show", on: { change: function () { state.show = show.value; state.page = 0; list(); } } }, [
      el("option", { value: "", text: "every case" }), el("option", { value: "answered", text: "answered" }),
      el("option", { value: "wrong", text: "answered, F = 0" }), el("option", { value: "missing", text: "no prediction" }),
      el("option", { value: "empty", text: "empty answer" })]);
    app.appendChild(el("div", { cls: "bar" }, ["sort ", sort, " filter ", q, " show ", show]));
    var listBox = el("div", { cls: "pane", id: "cases" }), detail = el("div", { cls: "pane", id: "case" });
    app.appendChild(el("div", { cls: "panes" }, [listBox, detail]));
    function kind(c) { return c.status === "missing" ? "missing" : c.status === "empty" ? "empty" : "answered"; }
    function keep(c) {
      var k = kind(c);
      if (state.show === "answered" && k !== "answered") return false;
      if (state.show === "wrong" && !(k === "answered" && c.f === 0)) return false;
      if ((state.show === "missing" || state.show === "empty") && k !== state.show) return false;
      return !state.q || has(c.id + " " + c.repo + " " + c.sys, state.q);
    }
    function list() {
      var v = [];
      for (var i = 0; i < C.length; i++) if (keep(C[i])) v.push(i);
      function byId(a, b) { return C[a].id < C[b].id ? -1 : C[a].id > C[b].id ? 1 : (C[a].sys < C[b].sys ? -1 : C[a].sys > C[b].sys ? 1 : 0); }
      // worst first among the answers; cases without a prediction after them, not among them
      if (state.sort === "worst") v.sort(function (a, b) { return (kind(C[a]) === "missing") - (kind(C[b]) === "missing") || C[a].f - C[b].f || byId(a, b); });
      else v.sort(byId);
      listBox.textContent = "";
      listBox.appendChild(pager(v.length, state.page, function (p) { state.page = p; list(); }));
      listBox.appendChild(table(["system", "instance", "F" + B, "P", "R", "files", "gold"], v.slice(state.page * PAGE, state.page * PAGE + PAGE).map(function (i) {
        var c = C[i], k = kind(c);
        var scores = k === "missing" ? [el("td", { cls: "dim", colspan: 4, text: "no prediction" })] : [td(c.f), td(c.p), td(c.rc), td(c.files.length)];
        return el("tr", { cls: "row" + (k === "missing" ? " missing" : ""), "data-id": c.id, "data-sys": c.sys, "data-kind": k, on: { click: function () { show_(i); } } }, [td(c.sys), td(c.id)].concat(scores).concat([td(c.gold.length)]));
      })));
    }
    function show_(i) {
      var c = C[i];
      writeHash({ id: c.id, sys: c.sys });
      detail.textContent = "";
      detail.appendChild(el("h2", { text: c.id + " · " + c.sys }));
      detail.appendChild(el("div", { text: kind(c) === "missing" ? "no prediction for this instance (counted as F = 0)" : "F" + B + " " + fmt(c.f) + " · precision " + fmt(c.p) + " · recall " + fmt(c.rc) + " · turns " + fmt(c.t) + " · tool calls " + fmt(c.c) + " · " + c.status }));
      detail.appendChild(el("h3", { text: "answer" })); detail.appendChild(fileList(c.files, c.scores, c.gold));
      detail.appendChild(el("h3", { text: "gold" })); detail.appendChild(fileList(c.gold, null, null));
      var same = C.filter(function (o) { return o.id === c.id; });
      if (same.length > 1) {  // every system's answer for this instance, side by side
        detail.appendChild(el("h3", { text: "every system on this instance" }));
        detail.appendChild(el("div", { cls: "side", id: "compare" }, same.map(function (o) {
          return el("div", { cls: "col" + (o === c ? " sel" : ""), "data-sys": o.sys }, [
            el("div", { cls: "colhead", text: o.sys + " · " + (kind(o) === "missing" ? "no prediction" : "F" + B + " " + fmt(o.f)) }),
            fileList(o.files, o.scores, o.gold)]);
        })));
      }
      if (c.turns) { detail.appendChild(el("h3", { text: "rollout" })); detail.appendChild(turnsView(c.turns, c.ans)); }
      detail.appendChild(el("h3", { text: "issue" })); detail.appendChild(el("pre", { cls: "issue", text: c.issue }));
    }
    list();
    var h = readHash();
    for (var i = 0; h.id !== undefined && i < C.length; i++) if (C[i].id === h.id && (h.sys === undefined || C[i].sys === h.sys)) { show_(i); break; }
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
    var state = { cfg: "", only: "", q: "", page: 0 };
    var outcomes = Object.create(null);  // instance -> {config: resolved}, for the discordant view and the comparison
    cases.forEach(function (c) { (outcomes[c.instance_id] || (outcomes[c.instance_id] = Object.create(null)))[c.config] = !!c.resolved; });
    function discordant(id) { var o = outcomes[id], seen = {}; for (var k in o) seen[o[k]] = true; return seen[true] && seen[false]; }
    // what happened, never "–" for an unresolved run: no failure recorded means the patch ran and the tests failed
    function failure(c) { return c.resolved ? "" : c.failure ? String(c.failure) : "tests failed"; }
    var cfgSel = el("select", { id: "config", on: { change: function () { state.cfg = cfgSel.value; state.page = 0; list(); } } }, [el("option", { value: "", text: "every configuration" })].concat(cfgs.map(function (c) { return el("option", { value: c.name, text: c.name }); })));
    var only = el("select", { id: "outcome", on: { change: function () { state.only = only.value; state.page = 0; list(); } } }, [
      el("option", { value: "", text: "resolved or not" }), el("option", { value: "yes", text: "resolved" }), el("option", { value: "no", text: "unresolved" }),
      el("option", { value: "discordant", text: "configurations disagree" })]);
    var q = el("input", { id: "q", placeholder: "instance contains", on: { input: function () { state.q = q.value; state.page = 0; list(); } } });
    app.appendChild(el("div", { cls: "bar" }, ["configuration ", cfgSel, " outcome ", only, " instance ", q]));
    var listBox = el("div", { cls: "pane", id: "cases" }), detail = el("div", { cls: "pane", id: "case" });
    app.appendChild(el("div", { cls: "panes" }, [listBox, detail]));
    function keep(c) {
      if (state.cfg && c.config !== state.cfg) return false;
      if (state.only === "discordant") { if (!discordant(c.instance_id)) return false; }
      else if (state.only && (state.only === "yes") !== !!c.resolved) return false;
      return !state.q || has(c.instance_id, state.q);
    }
    function list() {
      var v = cases.filter(keep);
      listBox.textContent = "";
      listBox.appendChild(pager(v.length, state.page, function (p) { state.page = p; list(); }));
      listBox.appendChild(table(["instance", "configuration", "resolved", "failure", "rounds", "tokens", "injected"], v.slice(state.page * PAGE, state.page * PAGE + PAGE).map(function (c) {
        return el("tr", { cls: "row", "data-id": c.instance_id, "data-config": c.config, on: { click: function () { show(c); } } }, [td(c.instance_id), td(c.config), td(c.resolved ? "yes" : "no"), td(failure(c)), td(c.rounds), td(c.tokens), td(c.injected ? c.injected.length : null)]);
      })));
    }
    function show(c) {
      writeHash({ id: c.instance_id, config: c.config });
      detail.textContent = "";
      detail.appendChild(el("h2", { text: c.instance_id + " · " + c.config }));
      var same = cases.filter(function (o) { return o.instance_id === c.instance_id; });
      if (same.length > 1) {  // every configuration on this instance, side by side
        var keys = ["resolved", "failure", "rounds", "tokens", "injected", "injected_opened_before_edit", "files_opened_before_edit"];
        detail.appendChild(el("div", { id: "compare" }, [table(["field"].concat(same.map(function (o) { return o.config; })), keys.map(function (k) {
          return el("tr", null, [td(k)].concat(same.map(function (o) {
            var v = k === "resolved" ? (o.resolved ? "yes" : "no") : k === "failure" ? failure(o) : o[k];
            return el("td", { cls: "wrap", text: Array.isArray(v) ? v.join(", ") : fmt(v) });
          })));
        }))]));
      }
      var rows = [];
      for (var k in c) rows.push(el("tr", null, [td(k), el("td", null, [el("pre", { text: typeof c[k] === "object" && c[k] !== null ? JSON.stringify(c[k], null, 1) : fmt(c[k]) })])]));
      detail.appendChild(el("h3", { text: "every field of this run" }));
      detail.appendChild(table(["field", "value"], rows));
    }
    list();
    var h = readHash();
    for (var i = 0; h.id !== undefined && i < cases.length; i++) if (cases[i].instance_id === h.id && (h.config === undefined || cases[i].config === h.config)) { show(cases[i]); break; }
  }

  var t0 = performance.now();
  ({ training: training, retrieval: retrieval, downstream: downstream })[DATA.kind]();
  document.body.setAttribute("data-rendered-ms", (performance.now() - t0).toFixed(0));
  document.body.setAttribute("data-ready", "1");
})();
