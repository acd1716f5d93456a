// kubeletapi web UI: the node overview with the pods table (/ui/), a pod's page
// (/ui/pods/<namespace>/<pod>[/<container>]). No framework: DOM, fetch and uPlot.
// The first render draws the views the server inlined in the page (#ui-data); then the page polls
// the JSON views every POLL_MS while the tab is visible; charts are updated in place. Every address
// is relative to the UI's root (<html data-base>, "./" or "../../"), so the pages work wherever
// /ui/ is mounted (the node's /ui/, the API server's /api/v1/nodes/<node>/proxy/ui/).
(() => {
  "use strict";
  performance.mark("ui:script"); // the marks say where a load's time goes (bench/ui_bench.py reads them)
  const POLL_MS = 5000;
  const LOG_LINES_MAX = 5000;
  const charts = {};
  window.kubeletapiCharts = charts; // read by the browser test: every chart and its data
  const main = document.getElementById("main");
  const ROOT = new URL(document.documentElement.dataset.base || "./", location.href);
  const url = (path) => new URL(path, ROOT).href; // a path below the UI's root
  const up = (path) => new URL(`../${path}`, ROOT).href; // a path of the kubelet API beside /ui/
  let timer = null;

  // --- formatting ------------------------------------------------------------------------------
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  function bytes(v) {
    if (v === null || v === undefined) return "–";
    let i = 0;
    while (Math.abs(v) >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
    return `${v.toFixed(i === 0 ? 0 : 1)} ${UNITS[i]}`;
  }
  const rate = (v) => (v === null || v === undefined ? "–" : `${bytes(v)}/s`);
  const coresText = (v) => (v === null || v === undefined ? "–" : v < 0.1 ? `${(v * 1000).toFixed(1)}m` : v.toFixed(2));
  function age(startS) {
    if (!startS) return "–";
    const s = Math.max(0, Date.now() / 1000 - startS);
    if (s < 120) return `${Math.floor(s)}s`;
    if (s < 7200) return `${Math.floor(s / 60)}m`;
    if (s < 172800) return `${Math.floor(s / 3600)}h`;
    return `${Math.floor(s / 86400)}d`;
  }
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function card(label, value, sub, id) {
    return el("div", { class: "card", id }, el("span", { class: "label", text: label }),
      el("span", { class: "value", text: value }), sub ? el("span", { class: "sub", text: sub }) : null);
  }

  // --- data ------------------------------------------------------------------------------------
  async function getJSON(path) {
    const response = await fetch(url(path), { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  }
  function stamp(time) {
    document.getElementById("updated").textContent = time ? `stats of ${new Date(time * 1000).toLocaleTimeString()}` : "";
  }

  // --- charts ----------------------------------------------------------------------------------
  const COLORS = ["#0a4fb8", "#b35900", "#116329", "#8250df", "#a40e26", "#4b5563"];
  // One layout for all the charts of a box (asking each figure's width would lay the page out again
  // per chart, the 110-row table with it).
  function chartWidth(parent) {
    // style.css: .charts columns of at least 420px, 15px apart; a figure's border 1px, padding 6px.
    const box = parent.clientWidth || 600;
    const columns = Math.max(1, Math.floor((box + 15) / (420 + 15)));
    return Math.max(300, Math.floor((box - 15 * (columns - 1)) / columns) - 2 - 12);
  }
  function chart(key, parent, title, labels, format, data, width) {
    const figure = el("figure", { class: "chart", "data-chart": key }, el("figcaption", { text: title }));
    parent.append(figure);
    const opts = {
      width, height: 180,
      series: [{}, ...labels.map((label, i) => ({
        label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: false,
        dash: label.match(/capacity|allocatable|limit|request/) ? [6, 4] : undefined,
        value: (u, v) => (v === null ? "–" : format(v)),
      }))],
      axes: [{}, { values: (u, ticks) => ticks.map(format), size: 70 }],
      scales: { x: { time: true } },
      legend: { live: true },
    };
    charts[key] = new uPlot(opts, data, figure);
    return charts[key];
  }
  // A chart with no sample yet (a pod just started, a crash-looper between runs) is a caption and
  // "no samples yet", not an empty frame; it becomes a chart once a poll brings a sample.
  const pending = {};
  const sampled = (data) => data[1].some((v) => v !== null && v !== undefined);
  function chartOrEmpty(key, parent, title, labels, format, data, width) {
    if (sampled(data)) return chart(key, parent, title, labels, format, data, width);
    const figure = el("figure", { class: "chart chart-empty", "data-chart": key, "data-empty": "true" },
      el("figcaption", { text: title }), el("p", { class: "muted", text: "no samples yet" }));
    parent.append(figure);
    pending[key] = { figure, args: [title, labels, format, width] };
    return null;
  }
  function update(key, data) {
    if (charts[key]) charts[key].setData(data);
    else if (pending[key] && sampled(data)) {
      const { figure, args: [title, labels, format, width] } = pending[key];
      delete pending[key];
      const box = el("div");
      figure.replaceWith(box);
      chart(key, box, title, labels, format, data, width);
      box.replaceWith(box.firstChild);
    }
  }
  const flat = (t, v) => t.map(() => (v === null || v === undefined ? null : v));
  function clearCharts() {
    for (const key of Object.keys(charts)) { charts[key].destroy(); delete charts[key]; }
    for (const key of Object.keys(pending)) delete pending[key];
  }

  // --- node page -------------------------------------------------------------------------------
  const sortState = { key: "name", dir: 1 };
  let pods = [];
  let filterText = "";
  const COLUMNS = [
    ["namespace", "Namespace"], ["name", "Name"], ["phase", "Phase"], ["ready", "Ready"],
    ["restarts", "Restarts", true], ["cpu", "CPU (cores)", true], ["memory", "Memory", true],
    ["startTime", "Age", true], ["qos", "QoS"],
  ];

  function nodeData(n) {
    const s = n.series || { t: [], cpu: [], memory: [], rx: [], tx: [], fs: [], imagefs: [] };
    return {
      cpu: [s.t, s.cpu, flat(s.t, n.cpu.capacity), flat(s.t, n.cpu.allocatable)],
      memory: [s.t, s.memory, flat(s.t, n.memory.capacity), flat(s.t, n.memory.allocatable)],
      network: [s.t, s.rx, s.tx],
      fs: [s.t, s.fs, s.imagefs],
    };
  }
  function nodeCards(n) {
    const fs = n.fs || {};
    const ifs = n.imageFs || {};
    const pct = (a, b) => (a !== null && b ? ` (${((100 * a) / b).toFixed(0)} %)` : "");
    return el("div", { class: "cards", id: "node-cards" },
      card("CPU in use", `${coresText(n.cpu.cores)} cores`, `of ${n.cpu.capacity ?? "–"} (allocatable ${n.cpu.allocatable ?? "–"})`, "card-cpu"),
      card("Memory working set", bytes(n.memory.workingSet) + pct(n.memory.workingSet, n.memory.capacity),
        `capacity ${bytes(n.memory.capacity)}, allocatable ${bytes(n.memory.allocatable)}`, "card-memory"),
      card("Network", `↓ ${rate(n.network.rx)}`, `↑ ${rate(n.network.tx)}`, "card-network"),
      card("nodefs", `${bytes(fs.used)} used` + pct(fs.used, fs.capacity), `capacity ${bytes(fs.capacity)}`, "card-fs"),
      card("imagefs", `${bytes(ifs.used)} used` + pct(ifs.used, ifs.capacity), `capacity ${bytes(ifs.capacity)}`, "card-imagefs"),
      card("Load", n.load ? n.load.map((l) => l.toFixed(2)).join(" ") : "–", "1, 5, 15 min", "card-load"),
      card("Pods", String(n.pods), `${n.runningContainers} of ${n.containers} containers running`, "card-pods"));
  }
  function conditionList(conditions) {
    return el("ul", { class: "conditions", id: "conditions" }, conditions.map((c) => {
      const healthy = c.type === "Ready" ? c.status === "True" : c.status === "False";
      return el("li", { title: c.message || "" }, el("span", { class: healthy ? "good" : "bad", text: `${c.type}: ${c.status}` }));
    }));
  }
  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (v) => String(v).replace(/[&<>"']/g, (c) => ESC[c]);
  function podsTable() {
    const head = el("tr", {}, COLUMNS.map(([key, label, num]) => el("th", {
      scope: "col", class: num ? "num" : null,
      "aria-sort": sortState.key === key ? (sortState.dir > 0 ? "ascending" : "descending") : "none",
    }, el("button", { type: "button", "data-sort": key, text: label, onclick: () => sortBy(key) }))));
    return el("table", { id: "pods-table", "aria-describedby": "pods-count" }, el("thead", {}, head), el("tbody", {}));
  }
  function sortBy(key) {
    sortState.dir = sortState.key === key ? -sortState.dir : 1;
    sortState.key = key;
    const table = document.getElementById("pods-table");
    const fresh = podsTable();
    table.replaceWith(fresh);
    renderRows();
    fresh.querySelector(`button[data-sort="${key}"]`).focus();
  }
  function renderRows() {
    const body = document.querySelector("#pods-table tbody");
    if (!body) return;
    const needle = filterText.toLowerCase();
    const shown = pods.filter((p) => !needle || `${p.namespace}/${p.name} ${p.phase} ${p.qos}`.toLowerCase().includes(needle));
    const { key, dir } = sortState;
    shown.sort((a, b) => {
      const x = a[key] ?? -Infinity;
      const y = b[key] ?? -Infinity;
      if (x < y) return -dir;
      if (x > y) return dir;
      return a.name < b.name ? -1 : 1;
    });
    // One string, parsed once: 110 rows built node by node cost several times more.
    body.innerHTML = shown.map((p) => `<tr data-pod="${esc(`${p.namespace}/${p.name}`)}">`
      + `<td>${esc(p.namespace)}</td>`
      + `<td><a href="${esc(url(`pods/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}`))}">${esc(p.name)}</a></td>`
      + `<td${p.phase === "Failed" ? ' class="bad"' : ""}>${esc(p.phase + (p.reason ? ` (${p.reason})` : ""))}</td>`
      + `<td>${p.ready}/${p.containers}</td>`
      + `<td class="${p.restarts > 0 ? "num warn" : "num"}">${p.restarts}</td>`
      + `<td class="num" data-value="${esc(p.cpu ?? "")}">${esc(coresText(p.cpu))}</td>`
      + `<td class="num" data-value="${esc(p.memory ?? "")}">${esc(bytes(p.memory))}</td>`
      + `<td class="num">${esc(age(p.startTime))}</td>`
      + `<td>${esc(p.qos)}</td></tr>`).join("");
    document.getElementById("pods-count").textContent = `${shown.length} of ${pods.length} pods`;
  }

  async function nodePage(inline) {
    const [n, table] = inline ? [inline.node, inline.pods] : await Promise.all([getJSON("api/node"), getJSON("api/pods")]);
    document.title = `${n.node} – kubeletapi`;
    document.getElementById("node-name").textContent = n.node;
    pods = table.pods;
    const chartsBox = el("div", { class: "charts" });
    const filter = el("input", { type: "search", id: "pod-filter", placeholder: "namespace/name, phase, QoS",
      oninput: (e) => { filterText = e.target.value; renderRows(); } });
    main.replaceChildren(
      el("h1", { text: `Node ${n.node}` }), nodeCards(n),
      el("h2", { text: "Conditions" }), conditionList(n.conditions),
      el("h2", { text: "Last 15 minutes" }), chartsBox,
      el("h2", { id: "pods-heading", text: "Pods" }),
      el("div", { class: "toolbar" }, el("label", { for: "pod-filter", text: "Filter pods" }), filter,
        el("span", { id: "pods-count", class: "muted", "aria-live": "polite" })),
      podsTable());
    renderRows();
    performance.mark("ui:table");
    const d = nodeData(n);
    const width = chartWidth(chartsBox);
    chartOrEmpty("node-cpu", chartsBox, "CPU (cores)", ["in use", "capacity", "allocatable"], coresText, d.cpu, width);
    chartOrEmpty("node-memory", chartsBox, "Memory working set", ["working set", "capacity", "allocatable"], bytes, d.memory, width);
    chartOrEmpty("node-network", chartsBox, "Network", ["receive", "transmit"], rate, d.network, width);
    chartOrEmpty("node-fs", chartsBox, "Filesystems used", ["nodefs", "imagefs"], bytes, d.fs, width);
    performance.mark("ui:charts");
    stamp(n.time);
    return async () => {
      const [fresh, freshTable] = await Promise.all([getJSON("api/node"), getJSON("api/pods")]);
      document.getElementById("node-cards").replaceWith(nodeCards(fresh));
      document.getElementById("conditions").replaceWith(conditionList(fresh.conditions));
      const data = nodeData(fresh);
      for (const name of Object.keys(data)) update(`node-${name}`, data[name]);
      pods = freshTable.pods;
      renderRows();
      stamp(fresh.time);
    };
  }

  // --- pod page --------------------------------------------------------------------------------
  function stateText(c) {
    const s = c.state || {};
    if (s.running) return "running";
    if (s.waiting) return `waiting: ${s.waiting.reason || ""}`;
    if (s.terminated) return `terminated: ${s.terminated.reason || ""} (exit ${s.terminated.exitCode})`;
    return "unknown";
  }
  function probeText(probes) {
    const out = [];
    for (const [kind, p] of Object.entries(probes)) {
      if (p) out.push(`${kind.replace("Probe", "")}: ${p.handler} every ${p.periodSeconds}s`);
    }
    return out.join("; ") || "none";
  }
  function containerRows(containers) {
    return el("tbody", { id: "containers-body" }, containers.map((c) => el("tr", { "data-container": c.name },
      el("td", { text: c.name + (c.init ? " (init)" : "") }), el("td", { text: c.image }),
      el("td", { class: c.state && c.state.running ? "good" : "warn", text: stateText(c) }),
      el("td", { text: c.ready ? "yes" : "no" }),
      el("td", { class: c.restarts > 0 ? "num warn" : "num", text: String(c.restarts) }),
      el("td", { class: "num", text: coresText(c.cpu) }), el("td", { class: "num", text: bytes(c.memory) }),
      el("td", { text: probeText(c.probes) }))));
  }
  function containerData(c) {
    const s = c.series || { t: [], cpu: [], memory: [] };
    return {
      cpu: [s.t, s.cpu, flat(s.t, c.requests.cpu), flat(s.t, c.limits.cpu)],
      memory: [s.t, s.memory, flat(s.t, c.requests.memory), flat(s.t, c.limits.memory)],
    };
  }
  // Events: the agent's record of the pod's recent events (reason, type, message, count, first and
  // last time), the one seen last first. A container's events name it (its fieldPath's name).
  const objectName = (path) => { const m = /\{(.*)\}$/.exec(path || ""); return m ? m[1] : path ? path : "pod"; };
  const since = (wire) => age(Date.parse(wire) / 1000);
  function eventsBlock(events) {
    if (!events || !events.length) return el("p", { class: "muted", id: "events" }, "No events.");
    const head = el("tr", {}, ["Type", "Reason", "Object", "Message", "Count", "First seen", "Last seen"]
      .map((h, i) => el("th", { scope: "col", class: i >= 4 ? "num" : null, text: h })));
    return el("table", { id: "events" }, el("thead", {}, head), el("tbody", {}, events.map((e) => el("tr", { "data-reason": e.reason },
      el("td", { class: e.type === "Warning" ? "warn" : null, text: e.type }), el("td", { text: e.reason }),
      el("td", { text: objectName(e.object) }), el("td", { class: "message", text: e.message }),
      el("td", { class: "num", text: String(e.count) }),
      el("td", { class: "num", title: e.firstTimestamp, text: since(e.firstTimestamp) }),
      el("td", { class: "num", title: e.lastTimestamp, text: since(e.lastTimestamp) })))));
  }
  const podNetwork = (v) => { const s = v.series || { t: [], rx: [], tx: [] }; return [s.t, s.rx, s.tx]; };

  async function podPage(namespace, name, selected, inline) {
    const base = `api/pods/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
    const view = inline ? inline.pod : await getJSON(base);
    document.title = `${namespace}/${name} – kubeletapi`;
    document.getElementById("node-name").textContent = view.node;
    const p = view.pod;
    const chartsBox = el("div", { class: "charts" });
    const head = el("tr", {}, ["Container", "Image", "State", "Ready", "Restarts", "CPU (cores)", "Memory", "Probes"]
      .map((h, i) => el("th", { scope: "col", class: i >= 4 && i <= 6 ? "num" : null, text: h })));
    main.replaceChildren(
      el("p", {}, el("a", { href: url("./"), text: "← Node" })),
      el("h1", { text: `Pod ${namespace}/${name}` }),
      el("div", { class: "cards", id: "pod-cards" }, podCards(view)),
      el("h2", { text: "Conditions" }),
      el("ul", { class: "conditions" }, view.conditions.map((c) => el("li", { title: c.message || "" },
        el("span", { class: c.status === "True" ? "good" : "warn", text: `${c.type}: ${c.status}` })))),
      el("h2", { text: "Containers" }),
      el("table", { id: "containers-table" }, el("thead", {}, head), containerRows(view.containers)),
      el("h2", { text: "Events" }), eventsBlock(view.events),
      el("h2", { text: "Last 15 minutes" }), chartsBox,
      logsPanel(namespace, name, view.containers, view.logs, selected));
    const width = chartWidth(chartsBox);
    chartOrEmpty("pod-network", chartsBox, "Pod network", ["receive", "transmit"], rate, podNetwork(view), width);
    for (const c of view.containers) {
      const d = containerData(c);
      chartOrEmpty(`container-${c.name}-cpu`, chartsBox, `${c.name}: CPU (cores)`, ["in use", "request", "limit"], coresText, d.cpu, width);
      chartOrEmpty(`container-${c.name}-memory`, chartsBox, `${c.name}: memory`, ["working set", "request", "limit"], bytes, d.memory, width);
    }
    performance.mark("ui:charts");
    stamp(view.time);
    return async () => {
      const fresh = await getJSON(base);
      document.getElementById("pod-cards").replaceChildren(podCards(fresh));
      document.getElementById("containers-body").replaceWith(containerRows(fresh.containers));
      document.getElementById("events").replaceWith(eventsBlock(fresh.events));
      update("pod-network", podNetwork(fresh));
      for (const c of fresh.containers) {
        const d = containerData(c);
        update(`container-${c.name}-cpu`, d.cpu);
        update(`container-${c.name}-memory`, d.memory);
      }
    };
  }
  function podCards(view) {
    const p = view.pod;
    return [
      card("Phase", p.phase, p.reason || view.message || null, "card-phase"), card("QoS", p.qos || "–"),
      card("Ready", `${p.ready}/${p.containers}`), card("Restarts", String(p.restarts), null, "card-restarts"),
      card("CPU", `${coresText(p.cpu)} cores`), card("Memory", bytes(p.memory)), card("Age", age(p.startTime)),
      card("Network", `↓ ${rate(view.network && view.network.rx)}`, `↑ ${rate(view.network && view.network.tx)}`),
    ];
  }

  // --- logs ------------------------------------------------------------------------------------
  let logAbort = null;
  let logLines = [];
  function logsPanel(namespace, name, containers, enabled, selected) {
    const section = el("section", { "aria-labelledby": "logs-heading" }, el("h2", { id: "logs-heading", text: "Logs" }));
    if (!enabled) {
      section.append(el("p", { class: "muted", id: "logs-disabled",
        text: "Container logs are served on the secure port only (a debugging handler): open this page there to read them." }));
      return section;
    }
    const names = containers.map((c) => c.name);
    const pick = el("select", { id: "log-container" }, names.map((c) => el("option", { value: c, selected: c === selected, text: c })));
    const tail = el("input", { type: "number", id: "log-tail", min: "0", value: "200" });
    const follow = el("input", { type: "checkbox", id: "log-follow" });
    const search = el("input", { type: "search", id: "log-search", placeholder: "text to find" });
    const out = el("pre", { class: "logs", id: "log-output", tabindex: "0", "aria-label": "Log lines" });
    const count = el("span", { id: "log-count", class: "muted", "aria-live": "polite" });
    const load = () => startLogs(namespace, name, pick.value, tail.value, follow.checked);
    pick.addEventListener("change", load);
    tail.addEventListener("change", load);
    follow.addEventListener("change", load);
    search.addEventListener("input", renderLogs);
    section.append(el("div", { class: "toolbar" },
      el("label", { for: "log-container", text: "Container" }), pick,
      el("label", { for: "log-tail", text: "Last lines" }), tail,
      el("label", {}, follow, " Follow"),
      el("label", { for: "log-search", text: "Search" }), search, count), out);
    queueMicrotask(load);
    return section;
  }
  async function startLogs(namespace, name, container, tail, follow) {
    if (logAbort) logAbort.abort();
    logAbort = new AbortController();
    logLines = [];
    renderLogs();
    const query = new URLSearchParams({ tailLines: String(Math.max(0, Number(tail) || 0)) });
    if (follow) query.set("follow", "true");
    const path = up(`containerLogs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/${encodeURIComponent(container)}?${query}`);
    try {
      const response = await fetch(path, { signal: logAbort.signal });
      if (!response.ok) { logLines = [`(${response.status}) ${await response.text()}`]; renderLogs(); return; }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let rest = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += decoder.decode(value, { stream: true });
        const parts = rest.split("\n");
        rest = parts.pop();
        logLines.push(...parts);
        if (logLines.length > LOG_LINES_MAX) logLines.splice(0, logLines.length - LOG_LINES_MAX);
        renderLogs();
      }
      if (rest) { logLines.push(rest); renderLogs(); }
    } catch (err) {
      if (err.name !== "AbortError") { logLines.push(`(error) ${err.message}`); renderLogs(); }
    }
  }
  function renderLogs() {
    const out = document.getElementById("log-output");
    if (!out) return;
    const needle = (document.getElementById("log-search").value || "").toLowerCase();
    const shown = needle ? logLines.filter((l) => l.toLowerCase().includes(needle)) : logLines;
    const atBottom = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
    out.replaceChildren(...shown.map((line) => {
      const row = el("div", { class: "log-line" });
      const at = needle ? line.toLowerCase().indexOf(needle) : -1;
      if (at < 0) row.textContent = line;
      else row.append(line.slice(0, at), el("mark", { text: line.slice(at, at + needle.length) }), line.slice(at + needle.length));
      return row;
    }));
    if (atBottom) out.scrollTop = out.scrollHeight;
    document.getElementById("log-count").textContent = needle ? `${shown.length} of ${logLines.length} lines match` : `${logLines.length} lines`;
  }

  // --- routing and polling ---------------------------------------------------------------------
  function inlined() {
    const data = document.getElementById("ui-data");
    try { return data ? JSON.parse(data.textContent) : null; } catch { return null; } // not filled in: fetch
  }
  async function start() {
    const rest = location.pathname.startsWith(ROOT.pathname) ? location.pathname.slice(ROOT.pathname.length) : "";
    const parts = rest.split("/").filter(Boolean).map(decodeURIComponent);
    const inline = inlined();
    performance.mark("ui:data");
    let refresh;
    try {
      clearCharts();
      if (parts[0] === "pods" && parts.length >= 3) refresh = await podPage(parts[1], parts[2], parts[3], inline && inline.pod ? inline : null);
      else refresh = await nodePage(inline && inline.node ? inline : null);
    } catch (err) {
      main.replaceChildren(el("p", { role: "alert", class: "bad", text: `Cannot load this page: ${err.message}` }));
      return;
    }
    window.kubeletapiReadyAt = performance.now(); // first render with data (bench/ui_bench.py)
    document.body.dataset.ready = "true";
    window.kubeletapiRefresh = refresh; // the browser test refreshes on demand (no waiting for the poll)
    const tick = async () => {
      if (!document.hidden) {
        window.kubeletapiPolls = (window.kubeletapiPolls || 0) + 1;
        try { await refresh(); } catch (err) { stamp(null); document.getElementById("updated").textContent = `update failed: ${err.message}`; }
      }
      timer = setTimeout(tick, POLL_MS);
    };
    timer = setTimeout(tick, POLL_MS);
  }
  window.addEventListener("pagehide", () => { if (timer) clearTimeout(timer); if (logAbort) logAbort.abort(); });
  start();
})();
