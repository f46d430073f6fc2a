// ringlab's host page: the controls, the counters table, inspect and
// compare. The engine and the playground's controller (package play) run
// in the game (game.html, an iframe); the two talk with postMessage, with
// the messages of web/README.md. This page only renders what the
// controller says and sends it what the person does.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const game = $("game");
  const SPEEDS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 1000000, 0];
  const params0 = new URLSearchParams(location.search);
  const benchMode = params0.get("bench");
  const embedMode = params0.get("embed") === "1";

  const ui = {
    playing: false,
    speed: 10,
    compare: false,
    state: null,       // the last state message
    params: [],        // parameter descriptions from the game
    presets: [],
    keyMetrics: [],    // the rows a compare pane shows first (ready)
    numbers: new Map(), // row name -> {unit, kind, help} (engine/vocab, from states)
    rows: new Map(),   // counter name -> {tr, a, b, r}
    listeners: [],     // other parts of the page (tutorial.js, workshop.js) hearing the game
    readyAt: 0,        // ms after navigation: the engine's first message
    frameAt: 0,        // ms after navigation: the game's first frame
    nextID: 1,
    urlAt: 0,
    pending: new Map(), // request id -> resolve
    // The address the page was opened at. The address follows the run
    // once the game's first state comes, which may be before the later
    // scripts (tutorial.js, workshop.js) run when their fetch is slow:
    // they read the room, the invitation, the tutorial and the tokens
    // from here, never from the bar.
    opened: { search: location.search, hash: location.hash },
  };
  window.ringlab = ui; // for tests and the curious

  // ---- messages ----

  function send(msg) {
    if (game.contentWindow) game.contentWindow.postMessage(msg, location.origin);
  }
  // request sends a message with an id and resolves with the reply.
  ui.request = function (msg) {
    const id = ui.nextID++;
    return new Promise((resolve) => {
      ui.pending.set(id, resolve);
      send(Object.assign({ id }, msg));
    });
  };
  ui.send = send;
  // listen adds a function that hears every message of the game.
  ui.listen = (fn) => ui.listeners.push(fn);

  window.addEventListener("message", (e) => {
    if (e.origin !== location.origin || e.source !== game.contentWindow) return;
    const m = e.data;
    if (!m || typeof m.type !== "string") return;
    if (m.id && ui.pending.has(m.id)) {
      ui.pending.get(m.id)(m);
      ui.pending.delete(m.id);
    }
    switch (m.type) {
      case "ready": onReady(m); break;
      case "state": onState(m); break;
      case "inspect": showRecord(m.record, m.source); break;
      // A lesson the game refused is said in the tutorial panel, beside
      // the file or URL it came from (tutorial.js).
      case "error": if (m.source !== "lesson_load") showStatus(m.message, "error"); break;
      case "note": if (m.source !== "room") showStatus(m.text, "info"); break;
      case "key": onKey(m); break;
      case "bench": window.ringlabBench = m.bench; break;
      case "frame": if (!ui.frameAt) ui.frameAt = performance.now(); break;
    }
    for (const fn of ui.listeners) fn(m);
  });

  // ---- status ----

  let statusTimer = 0;
  function showStatus(text, kind) {
    const el = $("status");
    el.textContent = text;
    el.className = kind || "";
    clearTimeout(statusTimer);
    if (kind === "info") statusTimer = setTimeout(() => { el.textContent = ""; el.className = ""; }, 4000);
  }

  // ---- ready: presets and parameters ----

  function onReady(m) {
    if (!ui.readyAt) ui.readyAt = performance.now();
    ui.presets = m.presets || [];
    ui.params = m.params || [];
    ui.keyMetrics = m.key_metrics || [];
    const sel = $("preset");
    sel.textContent = "";
    for (const p of ui.presets) {
      const o = document.createElement("option");
      o.value = p.name;
      o.textContent = p.seed ? `${p.name} (${p.seed})` : p.name;
      o.title = p.description;
      sel.appendChild(o);
    }
    buildParams();
  }

  function buildParams() {
    const box = $("params");
    box.textContent = "";
    box.className = ui.compare ? "" : "single";
    if (ui.compare) {
      for (const h of ["", "A", "B"]) {
        const d = document.createElement("div");
        d.className = "head";
        d.textContent = h;
        box.appendChild(d);
      }
    }
    for (const p of ui.params) {
      const lab = document.createElement("label");
      lab.textContent = p.label;
      lab.htmlFor = "param-0-" + p.key;
      box.appendChild(lab);
      for (let pane = 0; pane < (ui.compare ? 2 : 1); pane++) {
        let el;
        if (p.options && p.options.length) {
          el = document.createElement("select");
          for (const v of p.options) {
            const o = document.createElement("option");
            o.value = o.textContent = v;
            el.appendChild(o);
          }
        } else {
          el = document.createElement("input");
          el.type = "number";
          el.min = "0";
          el.step = "any";
        }
        el.id = `param-${pane}-${p.key}`;
        el.dataset.key = p.key;
        el.dataset.pane = String(pane);
        if (p.hint) el.title = p.hint;
        if (ui.compare) el.setAttribute("aria-label", `${p.label}, configuration ${pane ? "B" : "A"}`);
        el.addEventListener("change", () => {
          send({ type: "set", pane, key: p.key, value: String(el.value) });
        });
        box.appendChild(el);
      }
    }
    if (ui.state) fillParams(ui.state);
  }

  function fillParams(st) {
    for (let pane = 0; pane < st.panes.length; pane++) {
      const vals = st.panes[pane].params || {};
      for (const p of ui.params) {
        const el = $(`param-${pane}-${p.key}`);
        if (!el || el === document.activeElement) continue;
        const v = vals[p.key];
        if (v === undefined) continue;
        if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === v)) {
          const o = document.createElement("option");
          o.value = o.textContent = v;
          el.appendChild(o);
        }
        if (el.value !== v) el.value = v;
      }
    }
  }

  // ---- state ----

  function onState(st) {
    if (!ui.readyAt) ui.readyAt = performance.now();
    const first = !ui.state;
    ui.state = st;
    // While the canvas draws a live source the simulation steps aside
    // (paused by the game): its controls and panels are hidden.
    document.body.classList.toggle("live", !!st.live);
    ui.playing = st.playing;
    ui.speed = st.speed;
    const playBtn = $("play");
    playBtn.textContent = st.playing ? "Pause" : "Play";
    playBtn.setAttribute("aria-pressed", String(st.playing));
    const si = SPEEDS.indexOf(st.speed);
    if (si >= 0 && $("speed") !== document.activeElement) $("speed").value = String(si);
    $("speed-out").textContent = speedText(st.speed);
    if (st.compare !== ui.compare) {
      ui.compare = st.compare;
      $("compare").checked = st.compare;
      document.body.classList.toggle("comparing", st.compare);
      $("compare-panel").hidden = !st.compare;
      $("col-a").textContent = st.compare ? "A" : "value";
      buildParams();
    }
    for (const [name, d] of Object.entries(st.numbers || {})) ui.numbers.set(name, d);
    const a = st.panes[0];
    const ps = $("preset");
    if (ps !== document.activeElement) {
      // A whole scenario (a tutorial step's, a file's) is no preset: the
      // picker says so rather than name the last preset.
      let own = ps.querySelector("option[data-scenario]");
      if (!a.preset && !own) {
        own = document.createElement("option");
        own.dataset.scenario = "1";
        own.value = "";
        own.disabled = true;
        ps.insertBefore(own, ps.firstChild);
      }
      if (own) {
        own.hidden = !!a.preset;
        own.textContent = "scenario: " + a.name;
      }
      const want = a.preset || "";
      if (ps.value !== want) ps.value = want;
    }
    $("description").textContent = st.live ? `The views draw ${st.live.header.replace(/^live: /, "")}: ${st.live.description}` :
      a.description + (a.changed ? "  Changed: " + a.changed.join(", ") + "." : "");
    // A new world (a preset, a parameter, a tutorial step) forgets the
    // selection: the record on show is the old world's.
    if (!st.selected && $("inspect").dataset.kind) clearRecord();
    fillQueues(st);
    fillParams(st);
    fillCounters(st);
    fillEvents(st);
    fillEventsMore(st);
    fillCapture(st);
    fillTimeline(st);
    if (st.compare) fillCompare(st);
    // The address follows the run (at most twice a second while playing:
    // browsers throttle frequent history changes).
    const now = performance.now();
    // A room's page keeps its room there (workshop.js sets ui.room, and
    // ui.roomInvite, the invitation its join link carried), so a reload
    // comes back to it.
    // A tutorial's step (tutorial.js sets ui.tutorial) is named by its
    // tutorial and step, not by the scenario it built: a reload opens the
    // step again (a room's page is the room's, which restores it).
    // A lesson's step is named by its URL, or by its text packed in the
    // fragment (tutorial.js's address).
    const base = ui.tutorial && !ui.room ? ui.tutorial.query : st.query;
    const hash = ui.tutorial && !ui.room ? ui.tutorial.hash : null;
    const q = base + (embedMode ? "&embed=1" : "") + (ui.room ? "&room=" + encodeURIComponent(ui.room) +
      (ui.roomInvite ? "&invite=" + encodeURIComponent(ui.roomInvite) : "") : "");
    if (!benchMode && st.query !== undefined && ("?" + q !== location.search || hash !== null && hash !== location.hash) &&
        (!st.playing || now - ui.urlAt > 500)) {
      history.replaceState(null, "", location.pathname + "?" + q + (hash || ""));
      ui.urlAt = now;
    }
    if (embedMode) $("embed-open").href = location.pathname + "?" + st.query;
    const err = st.panes.map((p) => p.error).filter(Boolean)[0];
    if (err) showStatus("The world stopped: " + err, "error");
    if (first) document.body.dataset.ready = "1";
  }

  // fillTimeline sets the scrubber over the time the run has been through
  // and says where pane A stands.
  function fillTimeline(st) {
    const p = st.position;
    if (!p) return;
    const sc = $("scrub");
    const max = Math.max(p.horizon_ns, p.at_ns);
    if (Number(sc.max) !== max) sc.max = String(max);
    if (!ui.scrubbing) sc.value = String(p.at_ns);
    let text = "event " + intFmt.format(p.events) + " · " + simTime(p.at_ns);
    if (p.rewinding) text += " · going back…";
    $("scrub-out").textContent = text;
    sc.setAttribute("aria-valuetext", text);
  }

  // simTime writes simulated ns in the unit that suits them.
  function simTime(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(6) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    return fracFmt.format(ns / 1000) + " µs";
  }

  function speedText(s) {
    if (s === 0) return "as fast as it goes";
    return (s >= 1000 ? (s / 1000) + "k" : String(s)) + " events/s";
  }

  function fillQueues(st) {
    const sel = $("queue");
    const n = st.num_queues || 1;
    sel.hidden = $("queue-label").hidden = n < 2;
    if (sel.options.length !== n) {
      sel.textContent = "";
      for (let i = 0; i < n; i++) {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = "rx" + i;
        sel.appendChild(o);
      }
    }
    sel.value = String(st.queue || 0);
  }

  // ---- counters ----

  // Number formats, made once: toLocaleString builds one per call, which
  // costs the whole table several ms per state while the engine starts.
  const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  const fracFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 3 });
  const ratioFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

  // Fractions only where they carry information: 8,643,156 packets/s, not
  // 8,643,156.418 (the exports keep every digit).
  function fmt(v) {
    if (typeof v !== "number") return String(v);
    return (Number.isInteger(v) || Math.abs(v) >= 1000 ? intFmt : fracFmt).format(v);
  }

  // fillEvents lists pane A's event log (oldest first, newest at the
  // bottom), with a line for events that ran unlisted in between.
  function fillEvents(st) {
    const ev = st.panes[0].events || [];
    // A new configuration rebuilds the world: its log may end at the same
    // event as the old one's (a goto to the same position), so the key
    // holds what the configuration and the last event say too, or the
    // old world's lines (their functions linked at the old kernel) would
    // stay when the states in between were not drawn.
    const lastEv = ev.length ? ev[ev.length - 1] : null;
    const key = lastEv ? [ev.length, lastEv.seq, st.panes[0].config || "", lastEv.head,
      (lastEv.funcs && lastEv.funcs.length) ? lastEv.funcs[0].url : ""].join("|") : "";
    if (key === ui.eventsKey) return;
    ui.eventsKey = key;
    const ol = $("events");
    ol.textContent = "";
    let prev = null;
    for (const e of ev) {
      if (prev !== null && e.seq > prev + 1) {
        const gap = document.createElement("li");
        gap.className = "gap";
        gap.textContent = `… ${intFmt.format(e.seq - prev - 1)} events not listed`;
        ol.appendChild(gap);
      }
      const li = document.createElement("li");
      const head = document.createElement("strong");
      head.textContent = e.head + ":";
      li.append(head);
      if (e.say) {
        const say = document.createElement("span");
        say.className = "say";
        say.textContent = e.say;
        li.append(say);
      }
      if (e.funcs && e.funcs.length) {
        // The kernel functions the event stands for: each links its
        // source at the scenario's kernel; ▸ runs to the next event that
        // runs it.
        const fs = document.createElement("span");
        fs.className = "funcs";
        fs.append("in ");
        for (const f of e.funcs) {
          const a = document.createElement("a");
          a.href = f.url;
          a.target = "_blank";
          a.rel = "noopener";
          // Named as the scenario's kernel names it (f.as when it was
          // renamed since); ▸ finds it by the engine's name.
          a.textContent = f.as || f.name;
          // Where it is defined at the scenario's kernel: file:line when
          // that release's source was read, else the file.
          const where = f.line ? f.file + ":" + f.line : f.file;
          a.title = where + ": " + f.does;
          const at = document.createElement("code");
          at.className = "where";
          at.textContent = where;
          const next = document.createElement("button");
          next.type = "button";
          next.textContent = "▸";
          next.dataset.func = f.name;
          next.title = "Run to the next event that runs " + (f.as || f.name);
          next.setAttribute("aria-label", next.title);
          fs.append(a, " ", at, next);
        }
        li.append(fs);
      }
      const what = document.createElement("span");
      what.className = "changes";
      what.textContent = e.changes;
      li.append(what);
      li.dataset.seq = String(e.seq);
      ol.appendChild(li);
      prev = e.seq;
    }
    ol.scrollTop = ol.scrollHeight;
  }
  // fillEventsMore says how many events ran after the last one listed
  // (playing fast lists none).
  function fillEventsMore(st) {
    const ev = st.panes[0].events || [];
    const p = st.position;
    const more = $("events-more");
    const last = ev.length ? ev[ev.length - 1].seq : 0;
    const n = p ? p.events - last : 0;
    more.hidden = n <= 0;
    if (n > 0) more.textContent = `… and ${intFmt.format(n)} events since, not listed (too fast to list: step, or play at 16 events a frame or fewer)`;
  }
  $("events").addEventListener("click", (e) => {
    const b = e.target.closest("button[data-func]");
    if (b) send({ type: "until", func: b.dataset.func });
  });

  function fillCounters(st) {
    const tbody = document.querySelector("#counters tbody");
    const b = st.compare && st.panes[1] ? new Map(st.panes[1].metrics) : null;
    const seen = new Set();
    for (const [name, va] of st.panes[0].metrics) {
      seen.add(name);
      let row = ui.rows.get(name);
      if (!row) {
        const tr = document.createElement("tr");
        tr.dataset.name = name;
        const th = document.createElement("td");
        th.textContent = name;
        const d = ui.numbers.get(name);
        if (d) th.title = d.help + (d.unit ? " (" + d.unit + ", " + d.kind + ")" : " (" + d.kind + ")");
        const a = document.createElement("td");
        const bb = document.createElement("td");
        const r = document.createElement("td");
        bb.className = r.className = "compare-only";
        tr.append(th, a, bb, r);
        tbody.appendChild(tr);
        row = { tr, a, b: bb, r };
        ui.rows.set(name, row);
      }
      setCell(row.a, va);
      if (b) {
        const vb = b.get(name);
        setCell(row.b, vb === undefined ? "" : vb);
        row.r.textContent = vb === undefined ? "" : ratio(va, vb);
      }
    }
    for (const [name, row] of ui.rows) {
      if (!seen.has(name)) { row.tr.remove(); ui.rows.delete(name); }
    }
  }

  function setCell(td, v) {
    const raw = String(v);
    if (td.dataset.value === raw) return;
    td.dataset.value = raw; // the exact value, for tests and copy
    const s = fmt(v);
    if (td.textContent !== s) td.textContent = s;
  }

  function ratio(a, b) {
    if (!a && !b) return "";
    if (!a) return "—";
    return ratioFmt.format(b / a) + "×";
  }

  // ---- compare panes ----

  function fillCompare(st) {
    const ma = new Map(st.panes[0].metrics);
    const mb = new Map(st.panes[1].metrics);
    [["pane-a", st.panes[0], ma, null], ["pane-b", st.panes[1], mb, ma]].forEach(([id, p, m, base]) => {
      const box = $(id);
      const pps = m.get("pps") || 0;
      let html = `<h3>${id === "pane-a" ? "A" : "B"}: ${esc(p.config)}</h3>` +
        `<div class="big">${fmtRate(pps)} packets/s</div>` +
        `<div class="mono">${(m.get("gbps") || 0).toFixed(3)} Gbit/s${base ? ", " + ratio(base.get("pps"), pps) + " of A" : ""}</div>` +
        `<table><tbody>`;
      for (const k of ui.keyMetrics) {
        if (!m.has(k)) continue;
        const d = ui.numbers.get(k);
        html += `<tr><td${d ? ` title="${esc(d.help)}"` : ""}>${k}</td><td>${fmt(m.get(k))}</td>${base ? `<td>${ratio(base.get(k), m.get(k))}</td>` : ""}</tr>`;
      }
      box.innerHTML = html + "</tbody></table>";
    });
  }

  function fmtRate(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(2) + " M";
    if (v >= 1e3) return (v / 1e3).toFixed(1) + " k";
    return v.toFixed(0);
  }

  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }

  // ---- inspect ----

  function showRecord(rec, source) {
    const box = $("inspect");
    // Announce what a person picked, not the updates while it changes.
    box.setAttribute("aria-live", source === "live" ? "off" : "polite");
    box.textContent = "";
    const t = document.createElement("div");
    t.className = "title";
    t.textContent = (ui.compare ? (rec.pane ? "B: " : "A: ") : "") + rec.title;
    box.appendChild(t);
    const dl = document.createElement("dl");
    for (const f of rec.fields) {
      const dt = document.createElement("dt");
      dt.textContent = f.name;
      const dd = document.createElement("dd");
      dd.textContent = f.value;
      dd.dataset.field = f.name;
      dl.append(dt, dd);
    }
    box.appendChild(dl);
    box.dataset.kind = rec.kind;
    box.dataset.index = String(rec.index);
  }

  const inspectHint = $("inspect").textContent;
  function clearRecord() {
    const box = $("inspect");
    box.textContent = inspectHint;
    delete box.dataset.kind;
    delete box.dataset.index;
  }

  $("inspect-form").addEventListener("submit", (e) => {
    e.preventDefault();
    send({ type: "inspect", kind: $("inspect-kind").value, index: Number($("inspect-index").value), pane: 0 });
  });

  // ---- controls ----

  function togglePlay() { send({ type: ui.playing ? "pause" : "play" }); }
  function stepEvent() { send({ type: "step", unit: "event", n: 1 }); }
  function stepPacket() { send({ type: "step", unit: "packet", n: 1 }); }
  function backEvent() { send({ type: "back" }); }
  function backPacket() { send({ type: "back", unit: "packet" }); }
  function setSpeedIndex(i) {
    i = Math.max(0, Math.min(SPEEDS.length - 1, i));
    $("speed").value = String(i);
    $("speed-out").textContent = speedText(SPEEDS[i]);
    send({ type: "speed", eps: SPEEDS[i] });
  }
  function speedIndex() { return Number($("speed").value); }
  function setCompare(on) { send({ type: "compare", on }); }

  async function copyLink() {
    // The run's link, not the room's (the address keeps the room for a
    // reload: workshop.js).
    const u = new URL(location.href);
    u.searchParams.delete("room");
    u.searchParams.delete("invite");
    const link = u.href;
    try {
      await navigator.clipboard.writeText(link);
      showStatus("Link copied: it reproduces this run.", "info");
    } catch (e) {
      window.prompt("Copy this link:", link);
    }
  }

  $("play").addEventListener("click", togglePlay);
  $("step-event").addEventListener("click", stepEvent);
  $("step-packet").addEventListener("click", stepPacket);
  $("back-event").addEventListener("click", backEvent);
  $("back-packet").addEventListener("click", backPacket);
  // The scrubber goes anywhere the run has been, in simulated time: while
  // dragged, at most every 100 ms; where it is let go, exactly.
  let scrubAt = 0;
  $("scrub").addEventListener("input", () => {
    ui.scrubbing = true;
    const now = performance.now();
    if (now - scrubAt < 100) return;
    scrubAt = now;
    send({ type: "goto", unit: "ns", n: Number($("scrub").value) });
  });
  $("scrub").addEventListener("change", () => {
    ui.scrubbing = false;
    send({ type: "goto", unit: "ns", n: Number($("scrub").value) });
  });
  $("goto-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("goto-event").value.trim();
    if (!/^[0-9]+$/.test(v)) { showStatus("Go to event: want a whole number of events, from 0.", "error"); return; }
    send({ type: "goto", unit: "event", n: Number(v) });
  });
  $("reset").addEventListener("click", () => send({ type: "reset" }));
  $("speed").addEventListener("input", () => setSpeedIndex(speedIndex()));
  $("preset").addEventListener("change", () => send({ type: "preset", name: $("preset").value, pane: 0 }));
  $("compare").addEventListener("change", () => setCompare($("compare").checked));
  $("queue").addEventListener("change", () => send({ type: "queue", queue: Number($("queue").value) }));
  $("copy-link").addEventListener("click", copyLink);

  // ---- the canvas as an image and as a clip ----

  // fileName names an export after what runs and where it stands.
  function fileName(ext) {
    const st = ui.state;
    const a = st ? st.panes[0] : null;
    const name = a ? (a.preset || a.name || "run").replace(/[^a-z0-9._-]+/gi, "-") : "run";
    const ev = st && st.position ? "-e" + st.position.events : "";
    return `ringlab-${name}${ev}.${ext}`;
  }
  function saveBlob(name, blob) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  // The game reads its own frame (its WebGL canvas keeps no drawing
  // buffer for the page to read) and answers with a PNG. In it, what the
  // views leave undrawn is transparent (on screen the game's frame shows
  // through: black); the export lays the frame on that colour, so the
  // image is opaque and its labels read on a white slide too.
  ui.capture = async function () {
    const r = await ui.request({ type: "capture" });
    if (r.type !== "capture") throw new Error(r.message || "no capture");
    return ui.opaque(new Blob([r.png], { type: "image/png" }));
  };
  // opaque returns the PNG png laid on the colour the canvas is seen on.
  ui.opaque = async function (png) {
    const doc = game.contentDocument;
    const colour = getComputedStyle(doc && doc.body ? doc.body : $("game-stage")).backgroundColor;
    const img = await createImageBitmap(png);
    const c = document.createElement("canvas");
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext("2d", { alpha: false });
    g.fillStyle = colour;
    g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0);
    img.close();
    return new Promise((resolve, reject) => c.toBlob(
      (b) => (b ? resolve(b) : reject(new Error("the browser could not encode the PNG"))), "image/png"));
  };
  $("export-png").addEventListener("click", async () => {
    try {
      saveBlob(fileName("png"), await ui.capture());
      showStatus("Saved the views as " + fileName("png") + ".", "info");
    } catch (e) {
      showStatus("Could not save the views: " + e.message, "error");
    }
  });
  // A clip: the canvas's own stream through MediaRecorder, as WebM.
  let recorder = null;
  function canvasOfGame() {
    const doc = game.contentDocument;
    return doc && doc.querySelector("canvas");
  }
  function setRecording(on) {
    $("record").textContent = on ? "Stop ●" : "Record";
    $("record").setAttribute("aria-pressed", String(on));
  }
  ui.record = function () {
    if (recorder) { recorder.stop(); return; }
    const canvas = canvasOfGame();
    if (!canvas || !canvas.captureStream || typeof MediaRecorder === "undefined") {
      showStatus("This browser cannot record the canvas (no captureStream or MediaRecorder).", "error");
      return;
    }
    const type = ["video/webm;codecs=vp9", "video/webm;codecs=vp8", "video/webm"].find((t) => MediaRecorder.isTypeSupported(t));
    if (!type) { showStatus("This browser records no WebM.", "error"); return; }
    const chunks = [];
    recorder = new MediaRecorder(canvas.captureStream(30), { mimeType: type });
    // clipBytes: what the recording holds so far (a chunk every 250 ms).
    ui.clipBytes = 0;
    recorder.ondataavailable = (e) => { if (e.data.size) { chunks.push(e.data); ui.clipBytes += e.data.size; } };
    recorder.onstop = () => {
      recorder = null;
      setRecording(false);
      ui.lastClip = new Blob(chunks, { type: "video/webm" });
      saveBlob(fileName("webm"), ui.lastClip);
      showStatus(`Saved a clip of the views (${Math.round(ui.lastClip.size / 1024)} KiB) as ${fileName("webm")}.`, "info");
    };
    recorder.start(250);
    setRecording(true);
    showStatus("Recording the views: press Stop to save the clip.", "info");
  };
  $("record").addEventListener("click", () => ui.record());
  $("help-btn").addEventListener("click", () => $("help").showModal());

  function readFile(input, cb) {
    const f = input.files && input.files[0];
    if (!f) return;
    const r = new FileReader();
    r.onload = () => cb(f, r.result);
    r.onerror = () => showStatus("Cannot read " + f.name + ": " + r.error, "error");
    r.readAsArrayBuffer(f);
    input.value = "";
  }
  $("xdp-file").addEventListener("change", (e) => readFile(e.target, (f, buf) => {
    showStatus("Loading " + f.name + "…", "info");
    send({ type: "xdp_object", name: f.name, pane: 0, bytes: new Uint8Array(buf) });
  }));
  // ---- capture ----

  const maxCapture = 256 * 1024; // play.MaxCapture: a link carries it
  $("pcap-file").addEventListener("change", (e) => {
    const f = e.target.files && e.target.files[0];
    if (f && f.size > maxCapture) {
      showStatus(`${f.name}: ${intFmt.format(f.size)} bytes, at most ${intFmt.format(maxCapture)} (256 KiB) in the page; ringlab run --pcap takes larger captures.`, "error");
      e.target.value = "";
      return;
    }
    readFile(e.target, (f, buf) => {
      const rate = Number($("pcap-rate").value) || 0;
      showStatus("Loading " + f.name + "…", "info");
      ui.request({ type: "pcap", name: f.name, pane: 0, rate_pps: rate, bytes: new Uint8Array(buf) }).then((m) => {
        if (m.type !== "error") showStatus(`Loaded ${f.name}: its frames feed the device.`, "info");
      });
    });
  });
  // fillCapture shows pane A's capture: its frames counted by fate,
  // verdict and reason, and the latest decided.
  function fillCapture(st) {
    const c = st.panes[0].capture;
    $("pcap-export").disabled = !c;
    const key = c ? JSON.stringify(c) : "";
    if (key === ui.captureKey) return;
    ui.captureKey = key;
    const ol = $("capture-frames");
    ol.textContent = "";
    if (!c) {
      $("capture-summary").textContent = "No capture loaded: the scenario's generator sends the traffic.";
      return;
    }
    const counts = (m) => Object.entries(m || {}).sort().map(([k, v]) => `${k} ${intFmt.format(v)}`).join(", ");
    let text = `${c.name} (${c.format}), ${intFmt.format(c.frames)} frames ` +
      (c.rate_pps ? `at ${intFmt.format(c.rate_pps)} packets/s` : "at their captured times") +
      `: ${intFmt.format(c.decided)} decided. Fates: ${counts(c.fates)}.`;
    if (c.verdicts) text += ` Verdicts: ${counts(c.verdicts)}.`;
    if (c.reasons) text += ` Drop reasons: ${counts(c.reasons)}.`;
    $("capture-summary").textContent = text;
    for (const r of c.rows || []) {
      const li = document.createElement("li");
      li.dataset.index = String(r.index);
      li.dataset.verdict = r.verdict || "";
      li.tabIndex = 0;
      li.title = "Inspect this frame";
      const head = document.createElement("strong");
      head.textContent = `#${r.index + 1} ${r.fate}` + (r.verdict ? " " + r.verdict : "") + (r.reason ? ` (${r.reason})` : "");
      const sub = document.createElement("span");
      sub.textContent = `${r.flow}, ${intFmt.format(r.len)} bytes`;
      li.append(head, sub);
      ol.appendChild(li);
    }
  }
  function inspectFrame(e) {
    const li = e.target.closest("li[data-index]");
    if (!li) return;
    send({ type: "inspect", kind: "frame", index: Number(li.dataset.index), pane: 0 });
  }
  $("capture-frames").addEventListener("click", inspectFrame);
  $("capture-frames").addEventListener("keydown", (e) => { if (e.key === "Enter") inspectFrame(e); });
  $("pcap-export").addEventListener("click", () => {
    ui.request({ type: "pcap_export", pane: 0 }).then((m) => {
      if (m.type !== "pcap_export") return; // an error: the status says it
      const bin = atob(m.bytes);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      ui.lastExport = { name: m.name, bytes };
      saveBlob(m.name, new Blob([bytes], { type: "application/octet-stream" }));
      showStatus(`Saved ${intFmt.format(m.frames)} frames with their verdicts as ${m.name}.`, "info");
    });
  });

  $("scenario-file").addEventListener("change", (e) => readFile(e.target, (f, buf) => {
    send({ type: "scenario", pane: 0, json: new TextDecoder().decode(buf) });
  }));

  // ---- export ----

  function download(name, type, text) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([text], { type }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  ui.csv = function () {
    const st = ui.state;
    if (!st) return "";
    const b = st.compare ? new Map(st.panes[1].metrics) : null;
    let out = b ? "counter,A,B\n" : "counter,value\n";
    for (const [name, v] of st.panes[0].metrics) out += b ? `${name},${v},${b.get(name) ?? ""}\n` : `${name},${v}\n`;
    return out;
  };
  ui.json = function () {
    const st = ui.state;
    if (!st) return "{}";
    return JSON.stringify({
      link: location.href,
      panes: st.panes.map((p) => ({ config: p.config, mode: p.mode, counters: Object.fromEntries(p.metrics) })),
    }, null, 2);
  };
  $("export-csv").addEventListener("click", () => download("ringlab-counters.csv", "text/csv", ui.csv()));
  $("export-json").addEventListener("click", () => download("ringlab-counters.json", "application/json", ui.json()));

  // ---- keyboard ----

  function isField(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "SELECT" || el.tagName === "TEXTAREA" || el.isContentEditable);
  }

  // handleKey runs the shortcut for key; it returns whether there was one.
  function handleKey(key, shift) {
    if ($("help").open) {
      if (key === "Escape" || key === "?") { $("help").close(); return true; }
      return false;
    }
    // The simulation's keys do nothing to a live source.
    if (ui.state && ui.state.live && !"?l".includes(key)) return false;
    switch (key) {
      case " ": case "Spacebar": togglePlay(); return true;
      case "ArrowRight": shift ? stepPacket() : stepEvent(); return true;
      case ".": stepPacket(); return true;
      case "ArrowLeft": shift ? backPacket() : backEvent(); return true;
      case ",": backPacket(); return true;
      case "+": case "=": setSpeedIndex(speedIndex() + 1); return true;
      case "-": case "_": setSpeedIndex(speedIndex() - 1); return true;
      case "0": setSpeedIndex(SPEEDS.length - 1); return true;
      case "r": case "R": send({ type: "reset" }); return true;
      case "c": case "C": setCompare(!ui.compare); return true;
      case "l": case "L": copyLink(); return true;
      case "[": case "]": {
        const st = ui.state;
        if (!st || (st.num_queues || 1) < 2) return false;
        const q = (st.queue + (key === "]" ? 1 : -1) + st.num_queues) % st.num_queues;
        send({ type: "queue", queue: q });
        return true;
      }
      case "?": $("help").showModal(); return true;
    }
    return false;
  }
  ui.handleKey = handleKey;

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (isField(e.target) && e.key !== "Escape") return;
    if (handleKey(e.key, e.shiftKey)) e.preventDefault();
  });
  // A focused button must not also be clicked by the space that toggled play.
  document.addEventListener("keyup", (e) => {
    if (e.key === " " && !isField(e.target)) e.preventDefault();
  });
  function onKey(m) {
    if (m.ctrl || m.meta || m.alt) return;
    handleKey(m.key, m.shift);
  }

  // ---- the server, when there is one ----

  // probeServer asks healthz: `ringlab serve` answers "ok"; on a static
  // host the file web/healthz answers "static" (so no request fails and
  // the console stays clean).
  async function probeServer() {
    let on = false;
    const asked = Date.now();
    try {
      const r = await fetch("healthz", { cache: "no-store" });
      on = r.ok && (await r.text()).trim() === "ok";
    } catch (e) { on = false; }
    if (ui.server.seen) { // it was there: watch it
      // An answer to a question asked before the live socket saw the
      // server come or go is older news than that: it does not undo it.
      if (ui.server.changedAt <= asked) ui.serverUp(on);
      setTimeout(probeServer, on ? HEALTH_EVERY_MS : HEALTH_RETRY_MS);
      return;
    }
    const el = $("server");
    el.classList.toggle("on", on);
    if (on) {
      ui.server.seen = true;
      ui.serverUp(true);
      $("live-btn").disabled = false;
      $("live-btn").title = "Show the server's live metrics";
      if (ui.onServer) ui.onServer(); // web/workshop.js enables the Workshop button
      setTimeout(probeServer, HEALTH_EVERY_MS);
    } else {
      $("server-text").innerHTML = "static files: the live backend and workshops need <code>ringlab serve</code>";
      for (const id of ["live-btn", "workshop-btn"]) {
        $(id).title = "needs the ringlab server (make run); this page is served as static files";
      }
    }
  }

  // Once the server was seen, healthz is asked every HEALTH_EVERY_MS, and
  // every HEALTH_RETRY_MS while it does not answer.
  const HEALTH_EVERY_MS = 5000;
  const HEALTH_RETRY_MS = 2000;
  ui.server = { seen: false, up: false, downSince: 0, changedAt: 0 };

  // serverUp says whether the server answers (healthz, or the live
  // socket, web/live.js): the dot is green, or red with since when.
  ui.serverUp = function (up) {
    const s = ui.server;
    if (up === s.up && (up || s.downSince)) return;
    s.up = up;
    s.changedAt = Date.now();
    const el = $("server");
    el.classList.toggle("on", up);
    el.classList.toggle("off", !up);
    if (up) {
      s.downSince = 0;
      $("server-text").textContent = "ringlab serve: connected";
    } else {
      s.downSince = s.downSince || Date.now();
      $("server-text").textContent = `ringlab serve: gone since ${new Date(s.downSince).toLocaleTimeString("en-GB")}; retrying`;
    }
  };

  // revealPanel opens a panel and brings it into view, focusing el (or
  // the panel's heading) for the keyboard and screen readers.
  ui.revealPanel = function (panel, el) {
    panel.hidden = false;
    panel.scrollIntoView({ block: "start" });
    const f = el || panel.querySelector("h2");
    if (f) f.focus({ preventScroll: true });
  };

  // ---- the canvas's views: its height, the ring view's keys, units ----

  // The canvas is at least as tall as its views need at its width
  // (state.view.want_h: stacked at 800 px, two panes in compare mode).
  // v switches the ring view between circle and lines, z / Z zoom the
  // lines in and out, < and > move their window by half of it, f makes
  // it follow the driver again. The counters table says each row's unit
  // and meaning (engine/vocab, the state's numbers).
  function viewKey(key) {
    const v = ui.state && ui.state.view;
    if (ui.state && ui.state.live) return false; // the ring view is the simulation's
    switch (key) {
      case "v": case "V": send({ type: "view", ring: "toggle" }); return true;
      case "z": send({ type: "view", zoom: "in" }); return true;
      case "Z": send({ type: "view", zoom: "out" }); return true;
      case "f": case "F": send({ type: "view", follow: true }); return true;
      case "<": case ">": {
        const half = Math.max(1, Math.floor(((v && v.slots) || 32) / 2));
        send({ type: "view", pan: key === ">" ? half : -half });
        return true;
      }
    }
    return false;
  }
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || isField(e.target) || $("help").open) return;
    if (viewKey(e.key)) e.preventDefault();
  });
  function fillUnits() {
    for (const [name, row] of ui.rows) {
      if (row.unit) continue;
      const d = ui.numbers.get(name);
      row.unit = document.createElement("td");
      row.meaning = document.createElement("td");
      row.unit.className = "unit";
      row.meaning.className = "meaning";
      if (d) {
        row.unit.textContent = d.unit || "";
        row.meaning.textContent = d.help;
        row.meaning.title = d.help;
      }
      row.tr.append(row.unit, row.meaning);
    }
  }
  ui.listen((m) => {
    if (m.type === "key" && !m.ctrl && !m.meta && !m.alt && !$("help").open) viewKey(m.key);
    if (m.type !== "state") return;
    const want = m.live ? m.live.want_h : m.view && m.view.want_h;
    const h = want ? Math.ceil(want) + "px" : "";
    if (game.style.minHeight !== h) game.style.minHeight = h;
    fillUnits();
  });

  // ---- start ----

  // index.html set the frame's address as early as it could.
  if (!game.getAttribute("src")) game.src = "game.html" + location.search;
  probeServer();
})();
