// ringlab's workshop client: rooms of `ringlab serve` (docs/protocol.md,
// "Workshop rooms"). Every browser in a room runs its own engine on the
// room's scenario and applies the same numbered command log, in order.
//
// The instructor's actions in the page (preset, parameter, step, play,
// pause) are not applied locally: they go to the room as commands and are
// applied when the server's broadcast of them comes back, exactly as the
// students apply them, so both engines see the same sequence. While the
// instructor plays, a seek to the instructor's simulated time goes out
// about once a second; students do not run a clock of their own, they
// follow those seeks. A student can detach (explore freely; the room's
// commands are still recorded) and snap back (the room's log replayed from
// the scenario). The page hooks are ringlab.intercept, ringlab.post and
// ringlab.onServer (marked in app.js).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ui = window.ringlab;
  if (!ui) return;
  const roomParam = new URLSearchParams(location.search).get("room");
  const base = location.pathname.replace(/[^/]*$/, "");
  const SEEK_EVERY_MS = 1000;

  const ws = {
    room: "",          // the room's id
    role: "",          // "instructor" or "student" once welcomed
    token: "",         // the instructor's token
    joinURL: "",
    scenario: null,    // the room's scenario (null: the page's default)
    log: [],           // [{seq, cmd}] as received, gap-free
    applied: 0,        // seq of the last command applied to the game
    attached: true,    // a detached student explores; the log still grows
    playing: false,    // the room's play/pause
    students: 0,
    instructors: 0,
    conn: null,
    queue: Promise.resolve(), // applies run one after another
    error: "",
    closed: false,
    replaying: false, // a replay is applying the log from the start
  };
  ui.workshop = ws; // for tests and the curious

  // ---- panel ----

  const panel = document.createElement("section");
  panel.id = "workshop-panel";
  panel.className = "panel";
  panel.hidden = true;
  panel.setAttribute("aria-labelledby", "workshop-h");
  panel.innerHTML = `<h2 id="workshop-h">Workshop</h2>
    <div id="ws-start">
      <button id="ws-create" type="button">Create a room (be its instructor)</button>
      <span class="note">or open a join link (<code>?room=ID</code>) to join as a student</span>
    </div>
    <div id="ws-room" hidden>
      <table class="ws-state"><tbody>
        <tr><td>room</td><td id="ws-id" class="mono"></td></tr>
        <tr><td>role</td><td id="ws-role"></td></tr>
        <tr><td>students</td><td id="ws-students"></td></tr>
        <tr><td>last seq</td><td id="ws-seq" class="mono"></td></tr>
        <tr><td>room clock</td><td id="ws-playing"></td></tr>
      </tbody></table>
      <div id="ws-join" hidden>
        <label>Join link <input id="ws-link" type="text" readonly size="48"></label>
        <button id="ws-copy" type="button">Copy</button>
      </div>
      <div id="ws-student" hidden>
        <button id="ws-detach" type="button">Detach (explore freely)</button>
        <button id="ws-snap" type="button" hidden>Snap back to the room</button>
      </div>
      <button id="ws-leave" type="button">Leave the room</button>
    </div>
    <div id="ws-status" role="status" aria-live="polite"></div>`;
  const css = document.createElement("style");
  css.textContent = `#ws-status.error { color: var(--warn); } #ws-status.info { color: var(--ok); }
    #workshop-panel .ws-state td:first-child { color: var(--dim); padding-right: 12px; }
    #workshop-panel button { margin: 6px 6px 0 0; }`;
  document.head.appendChild(css);
  const anchor = $("counters-panel") || document.querySelector("main");
  anchor.parentNode.insertBefore(panel, anchor);

  function status(text, kind) {
    const el = $("ws-status");
    el.textContent = text;
    el.className = kind || "";
    if (kind === "error") ws.error = text;
  }

  function render() {
    const inRoom = !!ws.role;
    $("ws-start").hidden = inRoom;
    $("ws-room").hidden = !inRoom;
    if (!inRoom) return;
    $("ws-id").textContent = ws.room + (ws.closed ? " (disconnected)" : "");
    $("ws-role").textContent = ws.role + (ws.role === "student" ? (ws.attached ? ", following" : ", detached") : "");
    $("ws-students").textContent = String(ws.students);
    $("ws-seq").textContent = String(ws.log.length ? ws.log[ws.log.length - 1].seq : 0);
    $("ws-playing").textContent = ws.playing ? "playing" : "paused";
    $("ws-join").hidden = ws.role !== "instructor";
    $("ws-link").value = ws.joinURL;
    $("ws-student").hidden = ws.role !== "student";
    $("ws-detach").hidden = !ws.attached;
    $("ws-snap").hidden = ws.attached;
    panel.dataset.role = ws.role;
    panel.dataset.seq = $("ws-seq").textContent;
    panel.dataset.applied = String(ws.applied);
  }

  // ---- the server ----

  ui.onServer = function () {
    const btn = $("workshop-btn");
    btn.disabled = false;
    btn.title = "Run or join a workshop room";
    if (roomParam && !ws.conn) {
      panel.hidden = false;
      connect(roomParam, "student", "");
    }
  };
  $("workshop-btn").addEventListener("click", () => {
    if ($("workshop-btn").disabled) return;
    panel.hidden = !panel.hidden;
  });

  $("ws-create").addEventListener("click", createRoom);
  async function createRoom() {
    status("Creating a room…", "info");
    const preset = presetName();
    let r, body;
    try {
      r = await fetch(base + "api/rooms", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(preset ? { scenario: { preset } } : {}),
      });
      body = await r.json().catch(() => ({}));
    } catch (e) {
      status("Cannot reach the server: " + e.message, "error");
      return;
    }
    if (!r.ok) {
      status(`Cannot create a room (${r.status}${body.code ? " " + body.code : ""}): ${body.message || r.statusText}`, "error");
      return;
    }
    ws.joinURL = location.origin + base + "index.html?room=" + encodeURIComponent(body.room);
    connect(body.room, "instructor", body.instructor_token);
  }

  function presetName() {
    const st = ui.state;
    if (st && st.panes && st.panes[0]) {
      const c = st.panes[0].config || "";
      if (c.startsWith("preset ")) return c.slice(7).split(",")[0];
    }
    return $("preset") && $("preset").value || "";
  }

  function connect(room, role, token) {
    if (ws.conn) ws.conn.close();
    Object.assign(ws, { room, token, log: [], applied: 0, attached: true, playing: false, closed: false, error: "" });
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    let conn;
    try {
      conn = new WebSocket(proto + "//" + location.host + base + "ws/room/" + encodeURIComponent(room));
    } catch (e) {
      status("Cannot open the room: " + e.message, "error");
      return;
    }
    ws.conn = conn;
    let opened = false;
    status("Joining room " + room + "…", "info");
    conn.onopen = () => {
      opened = true;
      conn.send(JSON.stringify(role === "instructor" ? { type: "join", role, token } : { type: "join", role }));
    };
    conn.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      onRoomMessage(m);
    };
    conn.onclose = (e) => {
      if (ws.conn !== conn) return;
      ws.closed = true;
      ws.conn = null;
      if (!opened) status(`Room ${room} is gone (expired or never existed): create a new one or ask for a new link.`, "error");
      else status(`Disconnected from room ${room}` + (e.reason ? ": " + e.reason : "") + ` (code ${e.code}).`, "error");
      render();
    };
    conn.onerror = () => {}; // onclose reports
  }

  $("ws-leave").addEventListener("click", () => {
    const c = ws.conn;
    ws.conn = null;
    if (c) c.close();
    Object.assign(ws, { role: "", room: "", token: "", log: [], applied: 0, attached: true, playing: false });
    status("Left the room.", "info");
    render();
  });

  $("ws-copy").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(ws.joinURL);
      status("Join link copied.", "info");
    } catch (e) {
      $("ws-link").select();
      status("Select the link and copy it.", "info");
    }
  });

  function onRoomMessage(m) {
    switch (m.type) {
      case "welcome":
        ws.role = m.you;
        ws.scenario = m.scenario || null;
        ws.log = (m.log || []).slice();
        ws.students = m.students || 0;
        ws.instructors = m.instructors || 0;
        status(`In room ${m.room} as ${m.you}.`, "info");
        render();
        replay();
        break;
      case "command": {
        const last = ws.log.length ? ws.log[ws.log.length - 1].seq : 0;
        if (m.seq <= last) break;
        ws.log.push({ seq: m.seq, cmd: m.cmd });
        render();
        if (ws.attached) enqueue(() => applyUpTo(m.seq));
        break;
      }
      case "presence":
        ws.students = m.students;
        ws.instructors = m.instructors;
        render();
        break;
      case "error": {
        const what = {
          forbidden: "Forbidden: this page has no instructor token for the room",
          rate_limited: "Too fast: the room dropped a command (rate limited); wait a moment",
          limit_exceeded: "The room is full or its log is full: create a new room",
          not_found: "The room is gone",
        }[m.code] || "Room error";
        status(`${what} (${m.code}${m.field ? ", " + m.field : ""}): ${m.message || ""}`, "error");
        break;
      }
    }
  }

  // ---- applying the log ----

  function enqueue(f) {
    ws.queue = ws.queue.then(f).catch((e) => status("Could not apply a room command: " + e, "error"));
    return ws.queue;
  }

  // replay starts again from the room's scenario and applies the whole log.
  function replay() {
    return enqueue(async () => {
      await gameReady();
      ws.replaying = true;
      ws.applied = 0;
      ws.playing = false;
      ui.post({ type: "pause" });
      if (ui.state && ui.state.compare) ui.post({ type: "compare", on: false });
      const sc = ws.scenario;
      if (sc && typeof sc === "object" && Object.keys(sc).length === 1 && typeof sc.preset === "string") {
        ui.post({ type: "preset", name: sc.preset, pane: 0 });
      } else if (sc && typeof sc === "object") {
        ui.post({ type: "scenario", json: JSON.stringify(sc), pane: 0 });
      } else {
        const names = (ui.presets || []).map((p) => p.name);
        ui.post({ type: "preset", name: names.includes("default") || !names.length ? "default" : names[0], pane: 0 });
      }
      try {
        await applyUpTo(Infinity);
      } finally {
        ws.replaying = false;
      }
    });
  }

  // gameReady resolves once the game has sent its first state (messages
  // posted before it runs would be lost).
  function gameReady() {
    return new Promise((resolve) => {
      const check = () => (document.body.dataset.ready === "1" ? resolve() : setTimeout(check, 50));
      check();
    });
  }

  async function applyUpTo(seq) {
    for (const e of ws.log) {
      if (e.seq <= ws.applied || e.seq > seq) continue;
      if (!ws.attached) return;
      await apply(e.cmd);
      ws.applied = e.seq;
    }
    await ui.request({ type: "sync" });
    render();
  }

  function simTime() {
    const st = ui.state;
    if (!st || !st.panes || !st.panes[0]) return 0;
    for (const [k, v] of st.panes[0].metrics) if (k === "sim_time_ns") return v;
    return 0;
  }

  async function apply(c) {
    switch (c.type) {
      case "preset":
        ui.post({ type: "preset", name: c.name, pane: 0 });
        break;
      case "set":
        ui.post({ type: "set", key: c.param, value: String(c.value), pane: 0 });
        break;
      case "step":
        ui.post({ type: "step", unit: "event", n: c.n || 1 });
        break;
      case "play":
        ws.playing = true;
        // The instructor's clock drives the room; students follow its seeks.
        if (ws.role === "instructor") ui.post({ type: "play" });
        break;
      case "pause":
        ws.playing = false;
        ui.post({ type: "pause" });
        if (ws.role === "instructor" && !ws.replaying) {
          await ui.request({ type: "sync" });
          sendCommand({ type: "seek", t_ns: simTime() });
        }
        break;
      case "seek": {
        if (ws.role === "instructor") break; // its own time, already there
        await ui.request({ type: "sync" });
        const d = c.t_ns - simTime();
        if (d > 0) ui.post({ type: "step", unit: "ns", n: d });
        break;
      }
      case "tutorial_step":
        // The instructor ran the step before sending it; everyone else
        // opens the panel there and runs the same step (tutorial.js).
        if (ws.role !== "instructor" && ui.tutorialFromRoom) await ui.tutorialFromRoom(c.tutorial, c.step);
        break;
      case "tutorial_reveal":
        // The instructor revealed a question: every student sees the answer.
        if (ws.role !== "instructor" && ui.tutorialRevealFromRoom) ui.tutorialRevealFromRoom(c.tutorial, c.step, c.question);
        break;
    }
  }

  // The instructor's tutorial panel reports each step it runs.
  ui.onTutorialStep = (name, step) => {
    if (ws.role === "instructor" && !ws.replaying) sendCommand({ type: "tutorial_step", tutorial: name, step });
  };
  ui.onTutorialReveal = (name, step, question) => {
    if (ws.role === "instructor" && !ws.replaying) sendCommand({ type: "tutorial_reveal", tutorial: name, step, question });
  };

  // ---- the instructor's actions ----

  function sendCommand(cmd) {
    if (!ws.conn || ws.conn.readyState !== WebSocket.OPEN) {
      status("Not connected to the room: the command was not sent.", "error");
      return;
    }
    ws.conn.send(JSON.stringify({ type: "command", token: ws.token, cmd }));
  }

  // What a following student may not do to its engine (it would leave the room's state).
  const BLOCKED_FOR_STUDENT = new Set(["preset", "set", "step", "play", "pause", "toggle", "reset",
    "compare", "scenario", "xdp_object", "load"]);
  const LOCAL = new Set(["sync", "hello", "inspect", "click", "where", "layout", "queue", "speed"]);

  // intercept sees every message the page sends the game; it returns true
  // for those the room takes over.
  ui.intercept = function (msg) {
    if (!ws.role || !msg || LOCAL.has(msg.type) || msg.id) return false;
    if (ws.role === "student") {
      if (!ws.attached || !BLOCKED_FOR_STUDENT.has(msg.type)) return false;
      status("You are following the room: detach to explore on your own.", "info");
      return true;
    }
    // The instructor.
    const pane = msg.pane || 0;
    switch (msg.type) {
      case "preset":
        if (pane === 0) sendCommand({ type: "preset", name: msg.name });
        return true;
      case "set":
        if (pane === 0) sendCommand({ type: "set", param: msg.key, value: msg.value });
        return true;
      case "step":
        if (!msg.unit || msg.unit === "event") {
          sendCommand({ type: "step", n: Math.min(1000000, Math.max(1, msg.n || 1)) });
          return true;
        }
        // A packet or time step runs here; the room gets the time it reached.
        ui.post(msg);
        ui.request({ type: "sync" }).then(() => sendCommand({ type: "seek", t_ns: simTime() }));
        return true;
      case "play": case "pause": case "toggle": {
        const play = msg.type === "toggle" ? !(ui.state && ui.state.playing) : msg.type === "play";
        const cmd = { type: play ? "play" : "pause" };
        if (play && ui.speed > 0 && ui.speed <= 1000) cmd.speed = ui.speed;
        if (!play) ws.playing = false; // no periodic seek between this pause and its echo
        sendCommand(cmd);
        return true;
      }
      case "reset": case "compare": case "scenario": case "xdp_object": case "load":
        // These would take the instructor off the room's log.
        status(`"${msg.type}" is not shared with the room; leave the room to use it.`, "info");
        return true;
      default:
        return false;
    }
  };

  // While the instructor plays, the room gets its simulated time.
  setInterval(() => {
    if (ws.role === "instructor" && ws.playing && ui.state && ui.state.playing) {
      sendCommand({ type: "seek", t_ns: simTime() });
    }
  }, SEEK_EVERY_MS);

  // ---- detach and snap back ----

  $("ws-detach").addEventListener("click", () => {
    ws.attached = false;
    status("Detached: explore freely; the room's commands are kept for when you snap back.", "info");
    render();
  });
  $("ws-snap").addEventListener("click", () => {
    ws.attached = true;
    status("Snapping back: replaying the room's log…", "info");
    render();
    replay().then(() => status("Back in step with the room.", "info"));
  });
  ui.workshopDetach = () => $("ws-detach").click();
  ui.workshopSnap = () => { $("ws-snap").click(); return ws.queue; };
  ui.workshopCreate = createRoom;
})();
