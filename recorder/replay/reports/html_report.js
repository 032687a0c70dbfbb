// recorder's HTML report: draws the page from the JSON in #report-data (the JSON report, with
// each exchange's replies). Every value goes into the page as text (textContent), never markup.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const CONTEXT = 3; // equal lines shown around a difference
  const FOLD = 2 * CONTEXT + 4; // an equal run longer than this is folded
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const root = document.getElementById("report");
  root.textContent = "";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (name === "class") node.className = value;
      else node.setAttribute(name, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    return node;
  }

  function percent(value) {
    return (Math.round(value * 1000) / 10).toString() + "%";
  }

  function shown(value) {
    return value === undefined ? "(absent)" : JSON.stringify(value);
  }

  function verdictClass(verdict) {
    return verdict.replace(/ /g, "-");
  }

  function isFlaky(exchange) {
    const t = exchange.trials;
    return Boolean(t) && t.passed > 0 && t.passed < t.runs;
  }

  // ------------------------------------------------------------------ head and filters
  const summary = data.summary || {};
  root.append(el("h1", {}, "recorder play"));
  if (data.error) {
    root.append(el("p", { class: "error-text", id: "run-error" }, "The run stopped: " + data.error));
  }
  if (summary.line) root.append(el("p", { class: "summary", id: "summary-line" }, summary.line));
  const exchanges = data.exchanges || [];
  const flakyCount = exchanges.filter(isFlaky).length;
  const counts = el("div", { class: "counts" });
  for (const [label, key] of [
    ["files", "files"], ["exchanges", "exchanges"], ["passed", "passed"], ["failed", "failed"],
    ["errors", "errors"], ["not played", "not_played"], ["skipped", "skipped"],
  ]) {
    if (summary[key] !== undefined) {
      counts.append(el("span", { class: "count" }, el("b", {}, String(summary[key])), label));
    }
  }
  if (flakyCount) counts.append(el("span", { class: "count" }, el("b", {}, String(flakyCount)), "flaky"));
  root.append(counts);

  const filters = [
    ["all", "All", () => true],
    ["failed", "Failed", (e) => e.verdict !== "passed" && e.verdict !== "skipped"],
    ["flaky", "Flaky", isFlaky],
    ["error", "Errors", (e) => e.verdict === "error"],
    ["passed", "Passed", (e) => e.verdict === "passed"],
  ];
  const toolbar = el("div", { class: "toolbar", role: "toolbar" });
  const search = el("input", { type: "search", placeholder: "filter by file, title or path", id: "search" });
  let current = exchanges.some((e) => e.verdict !== "passed" && e.verdict !== "skipped") ? "failed" : "all";
  const buttons = {};
  for (const [key, label, test] of filters) {
    const count = exchanges.filter(test).length;
    const button = el("button", { type: "button", "data-filter": key }, `${label} (${count})`);
    button.addEventListener("click", () => { current = key; apply(); });
    buttons[key] = button;
    toolbar.append(button);
  }
  toolbar.append(search);
  search.addEventListener("input", apply);
  root.append(toolbar);

  // ------------------------------------------------------------------ the trials chart
  const withTrials = exchanges.filter((e) => e.trials);
  if (withTrials.length) {
    root.append(el("h2", {}, "Trial pass rates"));
    root.append(el("p", { class: "legend" },
      "bar: the pass rate; black tick: its Wilson lower bound; dashed line: the rate required"));
    const chart = el("div", { class: "chart", id: "trials-chart" });
    for (const exchange of withTrials) {
      const t = exchange.trials;
      const name = `${exchange.file} #${exchange.exchange} ${exchange.title || ""}`.trim();
      const figure = svg("svg", { viewBox: "0 0 200 18", preserveAspectRatio: "none", role: "img" });
      const title = svg("title", {});
      title.textContent = `${t.passed} of ${t.runs} passed (${percent(t.rate)}); lower bound ` +
        `${percent(t.lower_bound)} at ${percent(t.confidence)}; required ${percent(t.required_rate)}`;
      figure.append(title);
      figure.append(svg("rect", { x: 0, y: 3, width: 200, height: 12, fill: "#eaeef2" }));
      const color = exchange.verdict === "passed" ? "#1a7f37" : "#cf222e";
      figure.append(svg("rect", { x: 0, y: 3, width: 200 * t.rate, height: 12, fill: color, class: "rate" }));
      figure.append(svg("line", { x1: 200 * t.lower_bound, x2: 200 * t.lower_bound, y1: 0, y2: 18,
        stroke: "#000", "stroke-width": 2, class: "bound" }));
      figure.append(svg("line", { x1: 200 * t.required_rate, x2: 200 * t.required_rate, y1: 0, y2: 18,
        stroke: "#59636e", "stroke-width": 1.5, "stroke-dasharray": "3 2", class: "required" }));
      chart.append(el("div", { class: "mono", "data-key": key(exchange) }, name));
      chart.append(el("div", { "data-key": key(exchange) }, figure,
        el("span", { class: "reason" }, ` ${t.passed}/${t.runs} · bound ${percent(t.lower_bound)}`)));
    }
    root.append(chart);
  }

  // ------------------------------------------------------------------ the exchanges
  function key(exchange) {
    return `${exchange.file}#${exchange.exchange}`;
  }

  function why(m) {
    // the message less what the other columns say: a check's reason, or the note a plain
    // mismatch's message ends with in parentheses (the whole message is the row's title)
    const text = m.message.startsWith(m.path + ": ") ? m.message.slice(m.path.length + 2) : m.message;
    if (m.check) return text;
    const note = text.match(/\(([^()]*)\)$/);
    return note ? note[1] : "the values differ";
  }

  function mismatchTable(mismatches) {
    const table = el("table", { class: "mismatches" });
    table.append(el("tr", {}, el("th", {}, "where"), el("th", {}, "expected (recorded)"),
      el("th", {}, "actual (live)"), el("th", {}, "why")));
    for (const m of mismatches) {
      const where = m.frame ? `frame ${m.frame}: ${m.path}` : m.path;
      table.append(el("tr", { class: "mismatch", title: m.message },
        el("td", { class: "mono path" }, where),
        el("td", { class: "mono expected" }, shown(m.expected)),
        el("td", { class: "mono actual" }, shown(m.actual)),
        el("td", { class: "reason" }, why(m))));
    }
    return table;
  }

  function diffRow(left, right) {
    // left / right: [number, text, class] or null
    const row = el("tr", {});
    for (const side of [left, right]) {
      if (side === null) {
        row.append(el("td", { class: "num" }), el("td", { class: "text" }));
      } else {
        row.append(el("td", { class: "num " + side[2] }, String(side[0])),
          el("td", { class: "text " + side[2] }, side[1]));
      }
    }
    return row;
  }

  function repliesView(replies) {
    const wrap = el("div", { class: "replies" });
    const { recorded, live, ops } = replies;
    if (ops.every((op) => op[0] === "equal")) {
      wrap.append(el("p", { class: "same" }, "The normalized replies are the same text."));
    }
    const table = el("table", { class: "diff" });
    table.append(el("colgroup", {}, el("col", { class: "num" }), el("col", {}),
      el("col", { class: "num" }), el("col", {})));
    table.append(el("tr", {}, el("th", { colspan: "2" }, "recorded reply (normalized)"),
      el("th", { colspan: "2" }, "live reply (normalized)")));
    const single = ops.length === 1;
    ops.forEach((op, index) => {
      const [tag, i1, i2, j1, j2] = op;
      if (tag === "equal") {
        const length = i2 - i1;
        const head = index === 0 ? 0 : CONTEXT;
        const tail = index === ops.length - 1 ? 0 : CONTEXT;
        const folded = !single && length > FOLD ? [i1 + head, i2 - tail] : null;
        const hidden = [];
        for (let k = 0; k < length; k++) {
          const row = diffRow([i1 + k + 1, recorded[i1 + k], ""], [j1 + k + 1, live[j1 + k], ""]);
          // a stream's frame headings stay in sight: a folded stream still says where it is
          const heading = /^frame \d+/.test(recorded[i1 + k]);
          if (folded && i1 + k >= folded[0] && i1 + k < folded[1] && !heading) {
            row.classList.add("hidden");
            hidden.push(row);
          }
          if (folded && i1 + k === folded[0]) {
            const fold = el("tr", { class: "fold" },
              el("td", { colspan: "4" }, `⋯ ${folded[1] - folded[0]} equal lines (click to show)`));
            fold.addEventListener("click", () => {
              hidden.forEach((r) => r.classList.remove("hidden"));
              fold.remove();
            });
            table.append(fold);
          }
          table.append(row);
        }
        return;
      }
      const rows = Math.max(i2 - i1, j2 - j1);
      for (let k = 0; k < rows; k++) {
        const left = i1 + k < i2 ? [i1 + k + 1, recorded[i1 + k], "del"] : null;
        const right = j1 + k < j2 ? [j1 + k + 1, live[j1 + k], "ins"] : null;
        table.append(diffRow(left, right));
      }
    });
    wrap.append(table);
    if (replies.cut) wrap.append(el("p", { class: "reason" }, "(long replies are cut in this page)"));
    return wrap;
  }

  function trialsView(t) {
    const lines = [
      `${t.passed} of ${t.runs} trials passed${t.stopped_early ? ` (stopped early; ${t.planned} planned)` : ""}` +
        `, ${t.needed} needed; rate ${percent(t.rate)}, required ${percent(t.required_rate)}` +
        `; Wilson lower bound ${percent(t.lower_bound)} at confidence ${percent(t.confidence)}` +
        (t.judged_by_bound ? " (judged by the bound)" : ""),
    ];
    const box = el("div", { class: "trials" }, el("p", {}, lines[0]));
    for (const failure of t.failures || []) {
      box.append(el("p", { class: "reason" }, `trial ${failure.trial}:` +
        (failure.error ? ` ${failure.error}` : "")));
      if (failure.mismatches && failure.mismatches.length) box.append(mismatchTable(failure.mismatches));
    }
    return box;
  }

  function exchangeView(exchange) {
    const verdict = exchange.verdict;
    const flaky = isFlaky(exchange);
    const open = verdict !== "passed" && verdict !== "skipped";
    const details = el("details", { class: "exchange " + verdictClass(verdict), "data-verdict": verdict,
      "data-key": key(exchange) });
    if (flaky) details.setAttribute("data-flaky", "true");
    details.open = open;
    const where = exchange.line ? `${exchange.file}:${exchange.line}` : exchange.file;
    details.append(el("summary", {},
      el("span", { class: "badge " + verdictClass(verdict) }, verdict),
      flaky ? el("span", { class: "badge flaky" }, "flaky") : null,
      el("span", { class: "mono" }, `#${exchange.exchange}`),
      el("span", { class: "title" }, exchange.title || "(untitled)"),
      el("span", { class: "where" }, `${where} · ${Math.round(exchange.duration * 1000)} ms`)));
    const body = el("div", { class: "body" });
    if (exchange.error) body.append(el("p", { class: "error-text" }, exchange.error));
    for (const note of exchange.notes || []) body.append(el("p", { class: "note" }, note));
    if (exchange.mismatches && exchange.mismatches.length) body.append(mismatchTable(exchange.mismatches));
    if (exchange.trials) body.append(trialsView(exchange.trials));
    if (exchange.replies) body.append(repliesView(exchange.replies));
    details.append(body);
    return details;
  }

  const files = new Map();
  for (const exchange of exchanges) {
    if (!files.has(exchange.file)) files.set(exchange.file, []);
    files.get(exchange.file).push(exchange);
  }
  const list = el("div", { id: "exchanges" });
  for (const [file, own] of files) {
    const section = el("section", { class: "file", "data-file": file }, el("h3", {}, file));
    for (const exchange of own) {
      const view = exchangeView(exchange);
      view.dataset.search = `${file} ${exchange.title || ""} ` +
        (exchange.mismatches || []).map((m) => m.path).join(" ");
      section.append(view);
    }
    list.append(section);
  }
  root.append(list);
  const empty = el("p", { class: "same hidden", id: "nothing" }, "No exchange matches the filter.");
  root.append(empty);

  function apply() {
    const test = filters.find((f) => f[0] === current)[2];
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const byKey = new Map(exchanges.map((e) => [key(e), e]));
    let visible = 0;
    for (const view of list.querySelectorAll("details.exchange")) {
      const exchange = byKey.get(view.dataset.key);
      const text = view.dataset.search.toLowerCase();
      const show = test(exchange) && words.every((w) => text.includes(w));
      view.classList.toggle("hidden", !show);
      visible += show ? 1 : 0;
    }
    for (const section of list.querySelectorAll("section.file")) {
      section.classList.toggle("hidden", !section.querySelector("details.exchange:not(.hidden)"));
    }
    for (const [name, button] of Object.entries(buttons)) {
      button.setAttribute("aria-pressed", String(name === current));
    }
    empty.classList.toggle("hidden", visible > 0);
  }
  apply();
  root.setAttribute("data-ready", "true");
})();
