"use strict";
// The Ebitengine game: main.wasm runs the engine and draws into a canvas
// it adds to this document. The host page (index.html) drives it with
// postMessage (see README.md). Keys pressed while the canvas has focus go
// to the host page, so the shortcuts work wherever the focus is.
(function () {
  const inFrame = window.parent !== window;
  function toHost(msg) {
    if (inFrame) window.parent.postMessage(msg, location.origin);
  }
  window.addEventListener("keydown", function (e) {
    if (!inFrame) return;
    toHost({ type: "key", key: e.key, code: e.code, shift: e.shiftKey, ctrl: e.ctrlKey, alt: e.altKey, meta: e.metaKey });
    if (e.key === " " || e.key.startsWith("Arrow")) e.preventDefault();
  });
  function fail(err) {
    const el = document.getElementById("loading");
    el.className = "error";
    el.textContent = "The engine did not start: " + err + ". Build it with `make wasm` (web/main.wasm), and serve web/ over HTTP.";
    toHost({ type: "error", source: "load", message: String(err) });
  }
  // The views are drawn with WebGL2 (Ebitengine): without it the engine
  // would start and stop at once. Say so plainly first.
  function hasWebGL2() {
    try {
      const gl = document.createElement("canvas").getContext("webgl2");
      if (gl) {
        const lose = gl.getExtension("WEBGL_lose_context");
        if (lose) lose.loseContext(); // give the context back at once
      }
      return !!gl;
    } catch (e) {
      return false;
    }
  }
  if (!hasWebGL2()) {
    const el = document.getElementById("loading");
    el.className = "error";
    const msg = "This browser cannot draw the views: WebGL2 is not available (getContext for webgl2 failed). " +
      "Turn on hardware acceleration in the browser's settings, or open the page in a browser with WebGL2.";
    el.textContent = msg;
    toHost({ type: "error", source: "webgl2", message: msg });
    return;
  }
  // What the engine last printed (wasm_exec.js writes its stdout and
  // stderr with console.log and console.error): said when it exits.
  const printed = [];
  for (const k of ["log", "error"]) {
    const orig = console[k].bind(console);
    console[k] = function (...args) {
      printed.push(args.map(String).join(" "));
      if (printed.length > 5) printed.shift();
      orig(...args);
    };
  }
  if (!window.WebAssembly || typeof Go === "undefined") {
    fail(typeof Go === "undefined" ? "wasm_exec.js is missing" : "this browser has no WebAssembly");
    return;
  }
  const go = new Go();
  // The start allocates about 15 MB (Ebitengine's shaders, the world):
  // no collection before the first frame (the first at 40 MB), which sets
  // GOGC back to 100.
  go.env = { GOGC: "1000" };
  const url = "main.wasm";
  const now = () => performance.timeOrigin + performance.now();
  // The stages of the start, in ms since the epoch; the wasm adds its own
  // (main, session, rungame, update, frame).
  const t = window.ringlabLoad = { start: now() };
  // compile returns the compiled engine: compiled while it downloads
  // (streaming), else, from a static host that serves .wasm without
  // application/wasm, from the whole file.
  async function compile() {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch (e) {
      const resp = await fetch(url);
      if (!resp.ok) throw new Error("GET " + url + ": HTTP " + resp.status);
      return await WebAssembly.compile(await resp.arrayBuffer());
    }
  }
  async function start() {
    const mod = await compile();
    t.compiled = now();
    const instance = await WebAssembly.instantiate(mod, go.importObject);
    t.instantiated = now();
    document.getElementById("loading").textContent = "Starting the engine…";
    go.run(instance).then(function () {
      const last = printed.filter((l) => l.trim()).slice(-3).join(" / ");
      const msg = "the engine exited" + (last ? ": " + last : "");
      const el = document.getElementById("loading");
      el.className = "error";
      el.textContent = msg;
      toHost({ type: "error", source: "game", message: msg });
    });
  }
  start().catch(fail);
})();
