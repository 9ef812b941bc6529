// The report's interactive section (shardbudget.report.interactive). It only looks things up in the
// grid embedded in the page (<script type="application/json" id="sb-grid">, see report/grid.py):
// every sentence, label and number it shows was computed by the planner in Python. It loads
// nothing, writes only text (textContent, never HTML), and logs nothing.
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";  // a namespace name, not a resource
  var grid = JSON.parse(document.getElementById("sb-grid").textContent);
  var byId = function (id) { return document.getElementById(id); };
  var controls = {budget: byId("sb-budget"), system: byId("sb-system"), engine: byId("sb-engine"),
                  batch: byId("sb-batch")};
  var LABEL_CLASS = {"ok": "ok", "latency-optimal": "ok", "over budget": "warn", "sharded too far": "bad",
                     "does not fit": "bad"};

  function node(tag, text, cls) {
    var n = document.createElement(tag);
    if (text !== undefined) { n.textContent = text; }
    if (cls) { n.className = cls; }
    return n;
  }

  function svg(tag, attrs, text) {
    var n = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs).forEach(function (k) { n.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) { n.textContent = text; }
    return n;
  }

  function selection() {
    var s = Number(controls.system.value), e = Number(controls.engine.value), b = Number(controls.batch.value);
    var k = Number(controls.budget.value);
    var cell = grid.cells[s][e][b];
    return {s: s, e: e, b: b, k: k, cell: cell, step: cell.steps[k], budget: grid.budgets[k]};
  }

  function showVerdict(sel) {
    var box = byId("sb-verdict");
    var parts = [node("p", grid.strings[sel.step.lead], "lead")];
    sel.step.sentences.forEach(function (i) { parts.push(node("p", grid.strings[i])); });
    box.replaceChildren.apply(box, parts);
  }

  function label(sel, row) { return grid.labels[sel.step.labels[row]]; }

  // One horizontal bar per plan, fewest GPUs first: compute, communication, host, end to end = ITL.
  function drawBars(sel) {
    var cell = sel.cell, rowH = 26, top = 50, left = 120, right = 300, width = 1000;
    var plotW = width - left - right, height = top + rowH * cell.order.length + 12;
    var longest = 0;
    cell.order.forEach(function (i) { longest = Math.max(longest, cell.rows[i].itl_s); });
    var scale = longest * 1.06, budget = sel.budget.s, pinned = false;
    if (budget !== null && budget <= 1.5 * longest) { scale = Math.max(scale, budget * 1.04); }
    else if (budget !== null) { pinned = true; }  // far beyond every bar: a marker at the right edge
    var x = function (t) { return left + plotW * t / scale; };
    var bx = budget === null ? null : (pinned ? left + plotW : x(budget));
    var root = svg("svg", {viewBox: "0 0 " + width + " " + height, id: "sb-bars-svg", role: "img",
                           "aria-label": "Inter-token latency per plan, split into compute, communication and host"});
    var lx = left;
    grid.parts.forEach(function (p) {
      root.appendChild(svg("rect", {x: lx, y: 4, width: 12, height: 12, fill: p.color, stroke: "#8795a1"}));
      root.appendChild(svg("text", {x: lx + 17, y: 14, "font-size": 13, fill: "#1c2833"}, p.label));
      lx += 30 + 7.5 * p.label.length;
    });
    cell.order.forEach(function (i, n) {
      var r = cell.rows[i], y = top + n * rowH, at = 0, pick = sel.step.pick === i;
      var g = svg("g", {"data-plan": r.plan, "data-row": i, "data-itl": r.itl_s, opacity: r.fits ? 1 : 0.35});
      g.appendChild(svg("text", {x: left - 8, y: y + 16, "text-anchor": "end", "font-size": 13,
                                 "font-weight": pick ? 700 : 400, fill: "#1c2833"}, r.plan));
      grid.parts.forEach(function (p) {
        var t = r[p.key];
        g.appendChild(svg("rect", {x: x(at), y: y + 3, width: Math.max(0, x(at + t) - x(at)), height: rowH - 8,
                                   fill: p.color, "data-part": p.key, "data-s": t}));
        at += t;
      });
      var words = r.itl + " · " + label(sel, i) + (pick ? " · the pick" : "");
      var wx = x(at) + 6;  // words that would run across the budget line go past it (7.5 px a character)
      if (bx !== null && wx < bx && wx + 7.5 * words.length > bx - 4) { wx = bx + 6; }
      g.appendChild(svg("text", {x: wx, y: y + 16, "font-size": 12.5, "font-weight": pick ? 700 : 400,
                                 fill: "#1c2833"}, words));
      root.appendChild(g);
    });
    if (budget !== null) {
      root.appendChild(svg("line", {x1: bx, x2: bx, y1: top - 6, y2: height - 4, stroke: "#0072B2",
                                    "stroke-width": 2, "stroke-dasharray": "6 4", id: "sb-budget-line"}));
      root.appendChild(svg("text", {x: bx + 4, y: top - 10, "font-size": 12.5, fill: "#0072B2", id: "sb-budget-label"},
                           "budget " + sel.budget.label + (pinned ? " →" : "")));
    }
    byId("sb-bars").replaceChildren(root);
  }

  // deploy --batch's options for the selected system, engine and batch, ranked under the selected
  // budget, each with deploy's own largest batch within that budget.
  var DEPLOY_CLASS = ["ok", "warn", "warn", "bad"];  // per grid.deploy_labels: meets, TPOT, TTFT, memory

  function fillDeploy(sel) {
    var body = byId("sb-deploy").tBodies[0], rows = [], picked = false;
    var cell = grid.deploy[sel.s][sel.e], step = cell.steps[sel.b][sel.k];
    byId("explore-deploy").textContent = "Deployments of " + grid.systems[sel.s] + " with " +
      grid.engines[sel.e].label + " at batch " + grid.batches[sel.b] + ", " +
      (sel.budget.s === null ? "no budget" : "budget " + sel.budget.label);
    step.order.forEach(function (j, n) {
      var d = grid.deploy_rows[cell.rows[sel.b][j]], tr = node("tr"), lab = step.labels[n];
      [d.plan, String(d.gpus), String(d.in_flight), d.itl, d.tpot, d.tokens, d.mem, cell.largest[sel.k][j]]
        .forEach(function (v, k) { tr.appendChild(node("td", v, k === 0 ? "l" : "")); });
      tr.appendChild(node("td", grid.deploy_labels[lab], "l " + DEPLOY_CLASS[lab]));
      if (lab === 0 && !picked) { tr.className = "pick"; picked = true; }
      rows.push(tr);
    });
    if (!rows.length) {
      var none = node("td", "No option: no split of this system's GPUs holds the model, or the batch is past " +
                      "the end of deploy's sweep.", "l");
      none.colSpan = 8;
      rows.push(node("tr"));
      rows[0].appendChild(none);
    }
    body.replaceChildren.apply(body, rows);
  }

  function update() {
    var sel = selection();
    byId("sb-budget-value").textContent = sel.budget.label;
    controls.budget.setAttribute("aria-valuetext", sel.budget.label);
    showVerdict(sel);
    drawBars(sel);
    fillDeploy(sel);
    byId("explore").setAttribute("data-selection", [sel.s, sel.e, sel.b, sel.k].join(","));
  }

  controls.budget.addEventListener("input", update);
  [controls.system, controls.engine, controls.batch].forEach(function (c) { c.addEventListener("change", update); });
  update();
})();
