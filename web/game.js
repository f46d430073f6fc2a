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
    go.run(instance).then(function () { toHost({ type: "error", source: "game", message: "the engine exited" }); });
  }
  start().catch(fail);
})();
