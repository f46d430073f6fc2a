"use strict";
(async function () {
  const q = new URLSearchParams(location.search);
  const seconds = Number(q.get("seconds") || 6);
  const warmup = Number(q.get("warmup") || 3);
  const rounds = Number(q.get("rounds") || 2);
  const frame = document.getElementById("frame");
  const status = document.getElementById("status");
  const tbody = document.querySelector("#results tbody");
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // run loads one mode and measures frames and ticks over `seconds`, after
  // the engine has started and warmed up.
  async function run(mode) {
    status.textContent = "running " + mode + "…";
    frame.src = "game.html?bench=" + mode;
    const w = () => frame.contentWindow;
    for (let i = 0; i < 600 && !(w() && w().ringlabBench && w().ringlabBench.mode === mode); i++) await sleep(100);
    await sleep(warmup * 1000);
    const a = Object.assign({}, w().ringlabBench);
    await sleep(seconds * 1000);
    const b = Object.assign({}, w().ringlabBench);
    const dt = b.seconds - a.seconds;
    return {
      mode,
      fps: (b.frames - a.frames) / dt,
      tps: (b.ticks - a.ticks) / dt,
      sim_pps: b.sim_pps,
    };
  }
  const out = { runs: [] };
  const modes = [];
  for (let r = 0; r < rounds; r++) modes.push("empty", "view");
  if (q.get("engine")) modes.push("engine");
  for (const m of modes) {
    const res = await run(m);
    out.runs.push(res);
    const tr = document.createElement("tr");
    tr.innerHTML = `<td>${m}</td><td>${res.fps.toFixed(1)}</td><td>${res.tps.toFixed(1)}</td><td>${m === "engine" ? Math.round(res.sim_pps).toLocaleString("en-US") : ""}</td>`;
    tbody.appendChild(tr);
  }
  frame.src = "about:blank";
  frame.hidden = true;
  const mean = (m, k) => { const xs = out.runs.filter((r) => r.mode === m).map((r) => r[k]); return xs.reduce((s, x) => s + x, 0) / xs.length; };
  out.empty_fps = mean("empty", "fps");
  out.view_fps = mean("view", "fps");
  out.view_tps = mean("view", "tps");
  out.ratio = out.view_fps / out.empty_fps;
  if (q.get("engine")) out.engine_sim_pps = mean("engine", "sim_pps");
  document.getElementById("summary").textContent =
    `view / empty frame rate: ${(100 * out.ratio).toFixed(1)}% (target 85%); view ticks per second: ${out.view_tps.toFixed(1)} (target 58)` +
    (out.engine_sim_pps ? `; engine: ${Math.round(out.engine_sim_pps).toLocaleString("en-US")} simulated packets per wall second` : "");
  status.textContent = "done";
  window.benchResult = out;
})();
