// ringlab's workshop client: rooms of `ringlab serve` (docs/protocol.md,
// "Workshop rooms"). This file is the room's panel and its socket, and
// nothing more: the game's controller (package play, play/room.go) does
// the following. It gets the server's welcome and commands
// (room_welcome, room_command), applies the numbered log in order, takes
// over the instructor's controls, and says what to send to the room
// (room_send) and what to tell the person (note); its state's room part
// is what the panel shows. The page hooks are ringlab.listen and
// ringlab.onServer (app.js).
//
// The instructor's token is presented once, in join; commands carry none
// (the connection that joined with it is the instructor). A connection
// that drops (a restart of the server, a network hiccup) is made again
// with backoff, 0.5 s doubling to 15 s, and the join asks for the log
// after the last command the page has (since): the game catches up with
// what it missed instead of replaying the room from the start.
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
    log: [],           // [{seq, cmd}] as received, gap-free
    applied: 0,        // seq of the last command the game applied (its state)
    attached: true,    // a detached student explores; the log still grows
    playing: false,    // the room's play/pause (the game's state)
    students: 0,
    instructors: 0,
    conn: null,
    error: "",
    closed: false,
    replaying: false,  // the game is applying the log from the start (its state)
    retries: 0,        // reconnections tried since the last welcome
    reconnects: 0,     // welcomes after the first (for tests and the curious)
    gone: false,       // the room no longer exists: no more reconnecting
  };
  const RETRY_FIRST_MS = 500;
  const RETRY_MAX_MS = 15000;
  let retryTimer = 0;
  ui.workshop = ws; // for tests and the curious

  // ---- panel ----

  const panel = document.createElement("section");
  panel.id = "workshop-panel";
  panel.className = "panel";
  panel.hidden = true;
  panel.setAttribute("aria-labelledby", "workshop-h");
  panel.innerHTML = `<h2 id="workshop-h" tabindex="-1">Workshop</h2>
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
    if (panel.hidden) ui.revealPanel(panel);
    else panel.hidden = true;
  });

  $("ws-create").addEventListener("click", createRoom);
  async function createRoom() {
    status("Creating a room…", "info");
    const st = ui.state;
    const preset = (st && st.panes && st.panes[0] && st.panes[0].preset) || ($("preset") && $("preset").value) || "";
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

  function connect(room, role, token, resume) {
    if (ws.conn) { const c = ws.conn; ws.conn = null; c.close(); }
    clearTimeout(retryTimer);
    if (!resume) {
      Object.assign(ws, { room, token, log: [], applied: 0, attached: true, playing: false, error: "", retries: 0, reconnects: 0, gone: false });
      ws.joinRole = role;
    }
    ws.closed = false;
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
      const join = { type: "join", role };
      if (role === "instructor") join.token = token;
      if (resume && ws.log.length) join.since = ws.log[ws.log.length - 1].seq;
      conn.send(JSON.stringify(join));
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
      render();
      // The room said it is over (expired, full): nothing to come back to.
      if (/expired|full/.test(e.reason || "")) {
        ws.gone = true;
        status(`Disconnected from room ${room}: ${e.reason} (code ${e.code}).`, "error");
        return;
      }
      retry(room, role, token, opened, e);
    };
    conn.onerror = () => {}; // onclose reports
  }

  // retry connects again after a backoff, unless the room is gone: an
  // upgrade that never opened is asked about over plain HTTP, which
  // answers 404 for a room that does not exist (any other answer, or
  // none while the server restarts, is worth another try).
  function retry(room, role, token, opened, e) {
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** ws.retries) * (0.75 + Math.random() / 2);
    ws.retries++;
    const what = opened ? `Disconnected from room ${room}` + (e.reason ? ": " + e.reason : "") + ` (code ${e.code})` : `Cannot reach room ${room}`;
    const again = () => {
      status(`${what}: reconnecting in ${(delay / 1000).toFixed(1)} s…`, "error");
      retryTimer = setTimeout(() => { if (ws.room === room && !ws.conn) connect(room, role, token, true); }, delay);
    };
    if (opened) { again(); return; }
    fetch(base + "ws/room/" + encodeURIComponent(room)).then((r) => {
      if (r.status === 404) {
        ws.gone = true;
        status(`Room ${room} is gone (expired or never existed): create a new one or ask for a new link.`, "error");
        render();
        return;
      }
      again();
    }, again);
  }

  $("ws-leave").addEventListener("click", () => {
    clearTimeout(retryTimer);
    const c = ws.conn;
    ws.conn = null;
    if (c) c.close();
    Object.assign(ws, { role: "", room: "", token: "", log: [], applied: 0, attached: true, playing: false });
    ui.send({ type: "room_leave" });
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

  // The server's messages: the room's ones go on to the game, which
  // applies them once it has sent its first state (messages posted
  // before it runs would be lost).
  function onRoomMessage(m) {
    switch (m.type) {
      case "welcome": {
        const back = ws.role === m.you && ws.log.length > 0;
        const last = ws.log.length ? ws.log[ws.log.length - 1].seq : 0;
        if (back && m.since === last) {
          // A reconnect: the log after the last command we have.
          ws.log = ws.log.concat(m.log || []);
          ws.reconnects++;
        } else {
          ws.log = (m.log || []).slice();
          if (back) ws.reconnects++;
        }
        ws.role = m.you;
        ws.retries = 0;
        ws.students = m.students || 0;
        ws.instructors = m.instructors || 0;
        status(back ? `Back in room ${m.room} as ${m.you}: caught up to command ${ws.log.length ? ws.log[ws.log.length - 1].seq : 0}.` : `In room ${m.room} as ${m.you}.`, "info");
        render();
        // The game gets the whole log: one that continues what it has
        // applied is caught up, not replayed (play/room.go).
        toGame({ type: "room_welcome", room: m.room, you: m.you, scenario: m.scenario || null, log: ws.log.slice() });
        break;
      }
      case "command": {
        const last = ws.log.length ? ws.log[ws.log.length - 1].seq : 0;
        if (m.seq <= last) break;
        ws.log.push({ seq: m.seq, cmd: m.cmd });
        render();
        toGame({ type: "room_command", seq: m.seq, cmd: m.cmd });
        break;
      }
      case "presence":
        ws.students = m.students;
        ws.instructors = m.instructors;
        render();
        break;
      case "error": {
        const what = {
          forbidden: "Forbidden: only the instructor's connection commands the room",
          rate_limited: "Too fast: the room dropped a command (rate limited); wait a moment",
          limit_exceeded: "The room is full or its log is full: create a new room",
          not_found: "The room is gone",
        }[m.code] || "Room error";
        status(`${what} (${m.code}${m.field ? ", " + m.field : ""}): ${m.message || ""}`, "error");
        break;
      }
    }
  }

  let ready = Promise.resolve();
  function toGame(msg) {
    ready = ready.then(gameReady).then(() => ui.send(msg));
  }
  function gameReady() {
    return new Promise((resolve) => {
      const check = () => (document.body.dataset.ready === "1" ? resolve() : setTimeout(check, 50));
      check();
    });
  }

  // What the game says: commands for the room, notes for the person, and
  // the room's state as the game applies it.
  ui.listen((m) => {
    switch (m.type) {
      case "room_send":
        if (!ws.conn || ws.conn.readyState !== WebSocket.OPEN) {
          status("Not connected to the room: the command was not sent.", "error");
          return;
        }
        ws.conn.send(JSON.stringify({ type: "command", cmd: m.cmd }));
        break;
      case "note":
        if (m.source === "room") status(m.text, "info");
        break;
      case "state": {
        const r = m.room;
        if (!r || !ws.role) return;
        ws.applied = r.applied;
        ws.replaying = r.replaying;
        ws.attached = r.attached;
        ws.playing = r.playing;
        render();
        break;
      }
    }
  });

  // ---- detach and snap back ----

  $("ws-detach").addEventListener("click", () => {
    ws.attached = false;
    ui.send({ type: "room_detach" });
    status("Detached: explore freely; the room's commands are kept for when you snap back.", "info");
    render();
  });
  $("ws-snap").addEventListener("click", () => {
    ws.attached = true;
    ws.replaying = true;
    status("Snapping back: replaying the room's log…", "info");
    render();
    ui.send({ type: "room_snap" });
    ui.request({ type: "sync" }).then(() => status("Back in step with the room.", "info"));
  });
  ui.workshopDetach = () => $("ws-detach").click();
  ui.workshopSnap = () => { $("ws-snap").click(); return ui.request({ type: "sync" }); };
  ui.workshopCreate = createRoom;
})();
