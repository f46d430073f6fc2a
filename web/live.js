// ringlab's live backend: the /ws/metrics socket of `ringlab serve`
// (docs/protocol.md, "Live metrics"), the source picker and the live
// table. The canvas draws the source: this file passes the server's
// hello and snapshots to the game (live_hello, live_snapshot), says when
// the socket is down (live_status) and when the person goes back to the
// simulation (live_off); the game's controller (package play,
// play/live.go) keeps the history and says what to draw, and answers a
// hello with each counter's unit and meaning (live), which the table
// shows. When the server goes away the page reconnects with backoff and
// marks what it shows as stale.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ui = window.ringlab;
  if (!ui) return;
  const base = location.pathname.replace(/[^/]*$/, "");
  // Reconnecting: the first try after RETRY_MIN_MS, doubling to
  // RETRY_MAX_MS, each with up to a fifth of jitter.
  const RETRY_MIN_MS = 500;
  const RETRY_MAX_MS = 10000;

  const live = {
    on: false,        // the panel is open and the canvas draws the source
    ws: null,
    connected: false,
    source: "",       // the source of the last hello
    wanted: "",       // the source the person picked (kept across reconnects)
    hello: null,
    numbers: new Map(), // name -> {unit, kind, help, known} (the game's live message)
    header: "",
    rows: new Map(),  // name -> {tr, cells}
    last: null,       // the last snapshot
    retries: 0,
    retryTimer: 0,
    retryAt: 0,       // when the next try is due (ms since the epoch)
    staleSince: 0,    // when the socket went down (ms since the epoch), 0 while up
    sort: { key: "rate", dir: -1 },
    filter: "",
    recent: [],       // the snapshots of about the last second: {t, counters}
  };
  // The table's per-second column is each counter's growth over about the
  // last second, as the canvas's charts and flow say theirs (package
  // play, LiveStepMs): the server's rate between two snapshots a tenth of
  // a second apart jumps between 0 and ten times a slow counter's rate.
  const WINDOW_MS = 1000;
  ui.live = live; // for tests and the curious
  live.table = (m) => fillTable(m); // a snapshot into the table alone (tests)

  const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  const fracFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
  function fmt(v) {
    if (typeof v !== "number") return "";
    return (Number.isInteger(v) || Math.abs(v) >= 100 ? intFmt : fracFmt).format(v);
  }
  function clock(ms) { return new Date(ms).toLocaleTimeString("en-GB"); }

  // ---- status ----

  function status(text, kind) {
    const el = $("live-status");
    el.textContent = text;
    el.className = kind || "";
  }

  // ---- the socket ----

  function connect() {
    clearTimeout(live.retryTimer);
    live.retryTimer = 0;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(proto + "//" + location.host + base + "ws/metrics");
    live.ws = ws;
    ws.onopen = () => {
      if (ws !== live.ws) return;
      live.connected = true;
      live.retries = 0;
      if (ui.serverUp) ui.serverUp(true);
    };
    ws.onmessage = (e) => {
      if (ws !== live.ws) return;
      let m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      switch (m.type) {
        case "hello": onHello(ws, m); break;
        case "snapshot": onSnapshot(m); break;
        case "error":
          status("server: " + m.message, "error");
          ui.send({ type: "live_status", connected: true, text: "server: " + String(m.message).slice(0, 1000) });
          break;
      }
    };
    ws.onclose = () => {
      if (ws !== live.ws) return;
      live.ws = null;
      live.connected = false;
      if (!live.on) return;
      if (!live.staleSince) live.staleSince = Date.now();
      markStale(true);
      if (ui.serverUp) ui.serverUp(false);
      retry();
    };
  }

  // retry schedules the next connection with backoff and says so.
  function retry() {
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** live.retries) * (1 + Math.random() / 5);
    live.retries++;
    live.retryAt = Date.now() + delay;
    const text = `the server went away at ${clock(live.staleSince)}; the values are stale; reconnecting in ${(delay / 1000).toFixed(1)} s (try ${live.retries})`;
    status(text, "error");
    ui.send({ type: "live_status", connected: false, text });
    live.retryTimer = setTimeout(connect, delay);
  }

  function onHello(ws, m) {
    // Back on the source the person picked, after a reconnect.
    if (live.wanted && m.source !== live.wanted && (m.sources || []).includes(live.wanted) && m.source !== live.source) {
      ws.send(JSON.stringify({ type: "subscribe", source: live.wanted }));
      return;
    }
    const reconnected = live.staleSince !== 0;
    live.hello = m;
    if (m.source !== live.source) {
      for (const r of live.rows.values()) r.tr.remove();
      live.rows.clear();
      live.last = null;
      live.recent = [];
    }
    live.source = m.source;
    live.labels = pickLabels(m.labels);
    live.staleSince = 0;
    markStale(false);
    fillPicker(m.sources || [], m.source);
    $("live-desc").textContent = m.description || "";
    status(reconnected ? `reconnected to ${m.source}` : `${m.source}: ${m.counters ? m.counters.length : 0} counters, ${m.rate_hz} snapshots a second`, "info");
    ui.send({
      type: "live_hello", source: m.source, description: String(m.description || "").slice(0, 1000),
      counters: m.counters || [], notes: (m.notes || []).slice(0, 64).map((n) => String(n).slice(0, 1000)),
      sources: m.sources || [], labels: pickLabels(m.labels), rate_hz: m.rate_hz || 0,
    });
  }

  function pickLabels(l) {
    const out = {};
    for (const k of ["kind", "device", "program", "preset", "follows"]) if (l && typeof l[k] === "string") out[k] = l[k];
    return out;
  }

  function onSnapshot(m) {
    live.last = m;
    const t = Date.parse(m.time);
    if (t > 0) ui.send({ type: "live_snapshot", seq: m.seq || 0, t_ms: t, counters: m.counters || {}, queues: m.queues || [] });
    fillTable(m);
    if (ui.perfReal) ui.perfReal(); // the real program's cost beside the perf top's XDP row (perf.js)
  }

  // ---- the picker ----

  // Groups of sources, by the kind before the first colon.
  const GROUPS = [
    ["sim", "The engine on the server"],
    ["host", "This machine's interfaces (read-only)"],
    ["lab", "Lab programs (XDP in namespaces of the server's own)"],
    ["twin", "Twins: the engine next to a real source"],
  ];

  function sourceLabel(spec) {
    const [kind, ...rest] = spec.split(":");
    const arg = rest.join(":");
    switch (kind) {
      case "sim": return `sim ${arg || "default"}`;
      case "host": return `${arg} (host)`;
      case "lab": return `${arg.split(",")[0] || "lab"} (lab${arg.includes(",") ? ", " + arg.split(",").slice(1).join(", ") : ""})`;
      case "twin": return `twin of ${arg.replace(":", " ")}`;
    }
    return spec;
  }

  function fillPicker(sources, current) {
    const sel = $("live-source");
    const key = sources.join("\n");
    if (sel.dataset.key !== key) {
      sel.dataset.key = key;
      sel.textContent = "";
      const groups = new Map(GROUPS.map(([k, label]) => {
        const g = document.createElement("optgroup");
        g.label = label;
        return [k, g];
      }));
      const other = document.createElement("optgroup");
      other.label = "Other";
      for (const s of sources) {
        const o = document.createElement("option");
        o.value = s;
        o.textContent = sourceLabel(s);
        (groups.get(s.split(":")[0]) || other).appendChild(o);
      }
      for (const g of [...groups.values(), other]) if (g.children.length) sel.appendChild(g);
    }
    sel.value = current;
  }

  $("live-source").addEventListener("change", () => {
    const s = $("live-source").value;
    live.wanted = s;
    if (live.ws && live.connected) {
      status(`switching to ${s}…`, "info");
      live.ws.send(JSON.stringify({ type: "subscribe", source: s }));
    }
  });

  // ---- the table ----

  function describe(name) {
    return live.numbers.get(name) || { unit: "", kind: "counter", help: "", known: false };
  }

  // windowRates returns each counter's rate over the window of recent
  // snapshots, once it spans most of WINDOW_MS (the names the server
  // gives a rate are its counters; a counter that went back, a reset,
  // has none).
  function windowRates(m) {
    const t = Date.parse(m.time);
    const counters = m.counters || {};
    if (!(t > 0)) return {};
    const rs = live.recent;
    if (rs.length && t <= rs[rs.length - 1].t) rs.length = 0; // time went back: start again
    rs.push({ t, counters });
    while (rs.length > 2 && t - rs[1].t >= WINDOW_MS) rs.shift();
    const a = rs[0];
    const out = {};
    if (rs.length < 2 || t - a.t < 0.9 * WINDOW_MS) return out;
    for (const k of Object.keys(m.rates || {})) {
      const va = a.counters[k], vb = counters[k];
      if (typeof va === "number" && typeof vb === "number" && vb >= va) out[k] = (vb - va) / ((t - a.t) / 1000);
    }
    return out;
  }

  function fillTable(m) {
    const tbody = document.querySelector("#live-table tbody");
    const counters = m.counters || {}, rates = windowRates(m);
    const twin = Object.keys(counters).some((k) => k.startsWith("predicted_"));
    $("live-table").classList.toggle("twin", twin);
    for (const [k, v] of Object.entries(counters)) {
      // A twin's prediction goes beside the counter it predicts.
      if (k.startsWith("predicted_") && (k.slice(10) in counters)) continue;
      let r = live.rows.get(k);
      if (!r) {
        const tr = document.createElement("tr");
        tr.dataset.name = k;
        const cells = [];
        for (let i = 0; i < 7; i++) {
          const td = document.createElement("td");
          if (i === 4 || i === 5) td.className = "twin-only";
          if (i === 6) td.className = "meaning";
          cells.push(td);
          tr.appendChild(td);
        }
        cells[0].textContent = k;
        r = { tr, cells, name: k, value: 0, rate: undefined };
        live.rows.set(k, r);
        describeRow(r);
        tbody.appendChild(tr);
      }
      r.value = v;
      r.rate = rates[k];
      set(r.cells[1], fmt(v));
      set(r.cells[2], r.rate === undefined ? "" : fmt(Math.round(r.rate * 10) / 10));
      const p = counters["predicted_" + k];
      r.predicted = p;
      set(r.cells[4], p === undefined ? "" : fmt(p));
      const pr = rates["predicted_" + k];
      set(r.cells[5], p === undefined || pr === undefined ? "" : fmt(Math.round(pr * 10) / 10));
    }
    arrange();
  }

  function set(td, s) { if (td.textContent !== s) td.textContent = s; }

  function describeRow(r) {
    const d = describe(r.name);
    set(r.cells[3], d.unit || "");
    set(r.cells[6], d.help || "");
    r.cells[6].title = d.help || "";
    r.cells[0].title = `${d.kind}${d.unit ? ", " + d.unit : ""}${d.known ? "" : " (not in ringlab's vocabulary)"}: ${d.help}`;
    r.tr.dataset.kind = d.kind;
  }

  // arrange filters and sorts the rows; it moves only rows out of place.
  function arrange() {
    const q = live.filter.toLowerCase();
    const moving = $("live-moving").checked;
    const rows = [...live.rows.values()];
    let shown = 0;
    for (const r of rows) {
      const d = describe(r.name);
      const match = (!q || r.name.toLowerCase().includes(q) || (d.help || "").toLowerCase().includes(q)) &&
        (!moving || (r.rate !== undefined && r.rate !== 0));
      r.tr.hidden = !match;
      if (match) shown++;
    }
    const { key, dir } = live.sort;
    // By rate, rows are ranked by a step of about a third (eight a
    // decade), and rows of one step keep their order: a rate that
    // wobbles does not move its row at each snapshot.
    const step = (v) => (v === undefined ? -1 : v === 0 ? 0 : 1000 + Math.round(8 * Math.log10(Math.abs(v))));
    const val = (r) => {
      switch (key) {
        case "name": return r.name;
        case "value": return r.value;
        case "rate": return step(r.rate);
        case "unit": return describe(r.name).unit || "";
        case "meaning": return describe(r.name).help || "";
      }
      return r.name;
    };
    const tbody = document.querySelector("#live-table tbody");
    const place = new Map([...tbody.children].map((tr, i) => [tr, i]));
    rows.sort((a, b) => {
      const va = val(a), vb = val(b);
      if (va < vb) return -dir;
      if (va > vb) return dir;
      if (key === "rate") return (place.get(a.tr) ?? 0) - (place.get(b.tr) ?? 0); // stable
      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
    });
    let prev = null;
    for (const r of rows) {
      const want = prev ? prev.nextSibling : tbody.firstChild;
      if (want !== r.tr) tbody.insertBefore(r.tr, want);
      prev = r.tr;
    }
    $("live-count").textContent = `${shown} of ${rows.length} counters`;
    for (const th of document.querySelectorAll("#live-table thead th[data-sort]")) {
      th.setAttribute("aria-sort", th.dataset.sort === key ? (dir > 0 ? "ascending" : "descending") : "none");
    }
  }

  for (const th of document.querySelectorAll("#live-table thead th[data-sort]")) {
    th.querySelector("button").addEventListener("click", () => {
      const k = th.dataset.sort;
      live.sort = live.sort.key === k ? { key: k, dir: -live.sort.dir } : { key: k, dir: k === "rate" || k === "value" ? -1 : 1 };
      arrange();
    });
  }
  $("live-filter").addEventListener("input", () => { live.filter = $("live-filter").value; arrange(); });
  $("live-moving").addEventListener("change", arrange);

  function markStale(on) {
    $("live-table").classList.toggle("stale", on);
    $("live-panel").dataset.stale = on ? "1" : "";
    $("live-stale").hidden = !on;
    if (on) $("live-stale").textContent = `stale: the values are from ${clock(live.staleSince)} or before`;
  }

  // The game's answer to a hello: the header it draws and each
  // counter's unit and meaning.
  ui.listen((m) => {
    if (m.type !== "live") return;
    live.header = m.header;
    live.numbers = new Map(Object.entries(m.numbers || {}));
    for (const r of live.rows.values()) describeRow(r);
    arrange();
  });

  // ---- on and off ----

  function start() {
    live.on = true;
    ui.revealPanel($("live-panel"), $("live-source"));
    $("live-btn").setAttribute("aria-pressed", "true");
    status("connecting…", "info");
    connect();
  }

  function stop() {
    live.on = false;
    clearTimeout(live.retryTimer);
    if (live.ws) { const ws = live.ws; live.ws = null; ws.close(); }
    live.connected = false;
    live.staleSince = 0;
    $("live-panel").hidden = true;
    $("live-btn").setAttribute("aria-pressed", "false");
    ui.send({ type: "live_off" });
    if (ui.perfReal) ui.perfReal(); // the real program's lines go with the source
  }

  $("live-btn").addEventListener("click", () => (live.on ? stop() : start()));
  $("live-off").addEventListener("click", stop);
})();
