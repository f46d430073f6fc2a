"use strict";
// The perf top panel: where each CPU's simulated time goes, by kernel
// function, from the cost table's charges (the state's panes[i].perf,
// package play's perf.go). Per CPU, the symbols by share of the last
// window, each beside its share since the start; each kernel function
// links its source at the scenario's kernel, as the Events panel does.
(() => {
  const $ = (id) => document.getElementById(id);
  const box = $("perf-cpus");
  if (!box || !window.ringlab) return;
  let key = "";

  const pct = (x) => (100 * x).toFixed(2) + "%";
  const us = (ns) => ns >= 1e6 ? (ns / 1e6).toFixed(2) + " ms" : (ns / 1e3).toFixed(1) + " µs";

  function fill(st) {
    const panes = (st.panes || []).filter((p) => p.perf);
    // The configuration is in the key: a rebuilt world at the same
    // position must still be redrawn (its functions linked at its kernel).
    const k = panes.map((p) => p.name + "@" + p.perf.at_ns + "/" + p.perf.window_ns + "|" + (p.config || "")).join(",");
    if (k === key) return;
    key = k;
    box.textContent = "";
    // No time passed (time 0, a world just rebuilt): no busy share; the
    // rows are what that instant charged (the setup's refill).
    const noTime = panes.length && panes[0].perf.no_time;
    $("perf-window").textContent = !panes.length ? "" : noTime ?
      `No simulated time has passed yet (t = ${us(panes[0].perf.at_ns)}): no CPU is busy or idle; the rows are what this instant charged.` :
      `Over the last ${us(panes[0].perf.window_ns)} of simulated time (to ${us(panes[0].perf.at_ns)}), beside the share since the start.`;
    // What limits the run over the same window (engine.LimitOf, the rule
    // of ringlab reproduce): one line a pane.
    const lim = $("perf-limit");
    lim.textContent = "";
    panes.forEach((p, i) => {
      if (!p.perf.limit) return;
      const line = document.createElement("span");
      line.className = "perf-limit-line";
      line.dataset.pane = String(i);
      line.dataset.kind = p.perf.limit.kind;
      line.textContent = (panes.length > 1 ? "ABCD"[i] + " " : "") + "limited by: " + p.perf.limit.why;
      lim.append(line);
    });
    panes.forEach((p, i) => {
      for (const c of p.perf.cpus) {
        const t = document.createElement("table");
        t.className = "perf";
        t.dataset.cpu = c.name;
        t.dataset.pane = String(i);
        const cap = document.createElement("caption");
        cap.textContent = (panes.length > 1 ? "ABCD"[i] + " " : "") + c.name + (p.perf.no_time ?
          " · no time elapsed yet" : ` · busy ${pct(c.busy)} (${pct(c.total_busy)} since the start)`);
        t.append(cap);
        const head = t.createTHead().insertRow();
        for (const h of ["window", "run", "symbol"]) {
          const th = document.createElement("th");
          th.scope = "col";
          th.textContent = h;
          head.append(th);
        }
        const body = t.createTBody();
        for (const r of c.rows || []) {
          const tr = body.insertRow();
          tr.dataset.sym = r.sym;
          tr.insertCell().textContent = pct(r.window);
          tr.insertCell().textContent = pct(r.total);
          const td = tr.insertCell();
          if (r.url) {
            const a = document.createElement("a");
            a.href = r.url;
            a.target = "_blank";
            a.rel = "noopener";
            a.textContent = r.as || r.sym; // as the scenario's kernel names it
            a.title = r.file + ": " + r.does;
            td.append(a);
          } else {
            td.textContent = r.sym;
            if (r.does) td.title = r.does;
            td.className = "pseudo";
          }
        }
        box.append(t);
      }
    });
    xdpPerRun = panes.length ? panes[0].perf.xdp_ns_per_run || 0 : 0;
    fillReal();
  }

  // The real program beside the model's: while the live view follows a
  // lab (or a twin of one), its program's BPF run-time stats
  // (xdp_prog_run_count, xdp_prog_run_time_ns) over about the last second
  // of snapshots, else since it was attached, in a row under each
  // bpf_prog_run_xdp row and in a line above the tables.
  let xdpPerRun = 0; // the model's ns a run over its window (pane A)
  const nsFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
  const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  function fillReal() {
    const line = $("perf-real");
    for (const tr of box.querySelectorAll("tr.perf-real")) tr.remove();
    const live = window.ringlab.live;
    const last = live && live.on && live.last && live.last.counters;
    const shown = !!last && typeof last.xdp_prog_run_count === "number";
    document.body.classList.toggle("live-xdp", shown);
    if (!shown) {
      line.hidden = true;
      line.textContent = "";
      return;
    }
    let perRun = last.xdp_prog_time_per_run_ns, rate = -1, over = "since it was attached";
    const rs = live.recent || [];
    if (rs.length >= 2) {
      const a = rs[0].counters, b = rs[rs.length - 1].counters;
      const runs = b.xdp_prog_run_count - a.xdp_prog_run_count, ns = b.xdp_prog_run_time_ns - a.xdp_prog_run_time_ns;
      const secs = (rs[rs.length - 1].t - rs[0].t) / 1000;
      if (runs > 0 && ns >= 0 && secs > 0) {
        perRun = ns / runs;
        rate = runs / secs;
        over = `over the last ${nsFmt.format(secs)} s`;
      }
    }
    // The program by name ("lab xdp_drop", "twin of lab xdp_drop"), not
    // the whole spec: the row is narrow.
    const lb = live.labels || {};
    const src = lb.program ? (lb.kind === "twin" ? "twin of lab " : "lab ") + lb.program : live.source || "the live source";
    const real = `${nsFmt.format(perRun || 0)} ns a run ${over}` + (rate >= 0 ? `, ${intFmt.format(rate)} runs/s` : "") +
      `; ${intFmt.format(last.xdp_prog_run_count)} runs in all`;
    line.textContent = `The real program (${src}, the kernel's BPF run-time stats): ${real}. ` +
      (xdpPerRun > 0 ? `The model's bpf_prog_run_xdp: ${nsFmt.format(xdpPerRun)} ns a run over its window.` :
        "The simulation runs no XDP program to set beside it.");
    line.hidden = false;
    for (const tr of box.querySelectorAll('tr[data-sym="bpf_prog_run_xdp"]')) {
      const row = document.createElement("tr");
      row.className = "perf-real";
      const td = document.createElement("td");
      td.colSpan = 3;
      td.textContent = `↳ model ${nsFmt.format(xdpPerRun)} ns a run · real ${nsFmt.format(perRun || 0)} ns a run (${src})`;
      row.append(td);
      tr.after(row);
    }
  }
  window.ringlab.perfReal = fillReal; // live.js calls it on each snapshot

  window.ringlab.listen((m) => { if (m.type === "state") fill(m); });
})();
