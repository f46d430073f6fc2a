// ringlab's workshop client: rooms of `ringlab serve` (docs/protocol.md,
// "Workshop rooms"). This file is the room's panel and its socket, and
// nothing more: the game's controller (package play, play/room.go,
// join.go, class.go) does the rest. The room's frames cross this file
// verbatim both ways: what the server says (welcome, command, beacon,
// presence, roster, predictions, class) goes to the game as it came
// (one protocol, package proto), and what the game writes for the room
// (join, command, beacon, a student's status and prediction, the
// instructor's share_predictions and remove) goes to the room as it is.
// The controller keeps the room's log (once per seq), applies it in
// order, takes over the instructor's controls, says what to tell the
// person (note, error: matched here by their code, never their words);
// its state's room part is what the panel draws (role, place in the log,
// following or detached, who is there, the roster, the class's
// predictions with the engine's answer and each answer's verdict where
// this page may show them). The page keeps only what the socket and the
// server's HTTP tell it (connected or not, the join links). A welcome of
// a newer protocol than the game's is refused by the game (error code
// "version"): the page says so and stays out of the room. The page
// hooks are ringlab.listen and ringlab.onServer (app.js).
//
// The instructor's token is presented once, in the join the game writes
// (room_join: the page says the socket opened); commands carry none
// (the connection that joined with it is the instructor). A connection
// that drops (a restart of the server, a network hiccup) is made again
// when the game says (room_dropped, answered by room_retry: the policy,
// play.RetryDelayMs and play.JoinFinal), and its join asks for the log
// after the last command the game holds: the game catches up with what
// it missed instead of replaying the room from the start. A join the
// room refuses for good (no such room, a full one, a student the
// instructor removed, a token it does not take) ends the reconnecting.
//
// The instructor keeps the room: its token is kept in sessionStorage by
// room (a reload, a tab closed and reopened), and the instructor link
// (?room=ID&invite=INVITE#instructor=TOKEN) opens it on another device,
// for a co-instructor too. A join link carries the room's invitation
// (invite=), which the page's socket presents (/ws/room/ID?invite=) and
// its address keeps for a reload; the room's creation gives it, and
// instructors learn it in their welcome too: no join link nor QR code is
// shown before it is known. Notices are toasts at the top, where they
// are seen.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ui = window.ringlab;
  if (!ui) return;
  // The room and its invitation (which its join link and QR code carry:
  // the room admits the students whose connection carries it), from the
  // address the page was opened at (app.js: the bar may have followed
  // the run already).
  const opened = new URLSearchParams(ui.opened.search);
  const roomParam = opened.get("room");
  const inviteParam = opened.get("invite") || "";
  const base = location.pathname.replace(/[^/]*$/, "");

  const ws = {
    room: "",          // the room's id
    token: "",         // the instructor's token
    invite: "",        // the room's invitation (join links, the socket's invite=)
    joinURL: "",       // the preferred join link (the server's LAN address)
    joinURLs: [],
    game: null,        // the game's state's room part, as it last arrived: what the panel draws
    aways: 0,          // times the instructor went away (for tests)
    conn: null,
    error: "",
    closed: false,
    reconnects: 0,     // welcomes after the first (for tests and the curious)
    gone: false,       // the room no longer exists: no more reconnecting
    toasts: 0,         // toasts shown (for tests)
    seen: {},          // every state the panel has shown (for tests)
  };
  const TOKENS = "ringlab.rooms";   // sessionStorage: {room: token}
  let retryTimer = 0;
  // The game's word on the room, read where the panel draws it (and by
  // tests and the curious as ws.seq, ws.applied...): nothing of it is
  // kept here.
  const fromGame = { seq: 0, applied: 0, attached: true, playing: false, status: "", checked: 0, resyncs: 0, replaying: false,
    students: 0, instructors: 0, roster: [], predictions: [], shared: null };
  for (const [k, none] of Object.entries(fromGame)) {
    Object.defineProperty(ws, k, { get: () => (ws.game && ws.game[k] !== undefined ? ws.game[k] : none), enumerable: true });
  }
  // A page the game did not follow into the room (a newer server's
  // welcome) still shows the room it was asked to join.
  Object.defineProperty(ws, "role", { get: () => (ws.game ? ws.game.role : ws.newer ? ws.joinRole : ""), enumerable: true });
  // A student sees no instructor connected.
  Object.defineProperty(ws, "away", { get: () => !!ws.game && ws.game.role === "student" && ws.game.instructors === 0, enumerable: true });
  ui.workshop = ws; // for tests and the curious

  // ---- the instructor's token, kept by room ----

  function tokens() {
    try { return JSON.parse(sessionStorage.getItem(TOKENS) || "{}") || {}; } catch (e) { return {}; }
  }
  function keepToken(room, token) {
    const t = tokens();
    if (token) t[room] = token; else delete t[room];
    try { sessionStorage.setItem(TOKENS, JSON.stringify(t)); } catch (e) { /* private mode: the link still works */ }
  }
  // The instructor link's token, taken out of the address bar at once
  // (it is not for the projector).
  const hashToken = (/^#instructor=([A-Za-z0-9]+)$/.exec(ui.opened.hash) || [])[1] || "";
  if (roomParam && hashToken) {
    keepToken(roomParam, hashToken);
    if (location.hash === ui.opened.hash) history.replaceState(null, "", location.pathname + location.search);
  }
  // A student's own id across reconnects (its roster entry) and name.
  let clientID = "";
  try {
    clientID = sessionStorage.getItem("ringlab.client") || "";
    if (!clientID) {
      clientID = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
      sessionStorage.setItem("ringlab.client", clientID);
    }
  } catch (e) { clientID = ""; }

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
      <div class="ws-cols">
      <div>
      <table class="ws-state"><tbody>
        <tr><td>room</td><td id="ws-id" class="mono"></td></tr>
        <tr><td>role</td><td id="ws-role"></td></tr>
        <tr><td>state</td><td id="ws-follow"></td></tr>
        <tr><td>instructor</td><td id="ws-instructor"></td></tr>
        <tr><td>students</td><td id="ws-students"></td></tr>
        <tr><td>last seq</td><td id="ws-seq" class="mono"></td></tr>
        <tr><td>room clock</td><td id="ws-playing"></td></tr>
      </tbody></table>
      <div id="ws-student" hidden>
        <button id="ws-detach" type="button">Detach (explore freely)</button>
        <button id="ws-snap" type="button" hidden>Snap back to the room</button>
        <label class="ws-name">Your name for the roster <input id="ws-name" type="text" maxlength="40" size="16" placeholder="student"></label>
      </div>
      <div id="ws-lead" hidden>
        <button id="ws-reset" type="button" title="Every page starts the room's world again from time zero">Reset the room</button>
      </div>
      <button id="ws-leave" type="button">Leave the room</button>
      </div>
      <div id="ws-join" hidden>
        <label>Join link <select id="ws-links" hidden></select> <input id="ws-link" type="text" readonly size="40"></label>
        <p id="ws-loopback" class="ws-warn" role="alert" hidden></p>
        <button id="ws-copy" type="button">Copy</button>
        <button id="ws-qr-big" type="button">Show the QR code</button>
        <div><img id="ws-qr" alt="QR code of the join link" width="160" height="160"></div>
        <details><summary>Instructor link (reopen the room on another device, or add a co-instructor)</summary>
          <input id="ws-ilink" type="text" readonly size="48"> <button id="ws-icopy" type="button">Copy</button>
          <p class="note">Whoever opens it commands the room: do not show it on the projector.</p>
        </details>
      </div>
      </div>
      <div id="ws-roster-box" hidden>
        <h3>Roster: <span id="ws-roster-sum" class="note">no students yet</span></h3>
        <table id="ws-roster" hidden><thead><tr><th>student</th><th>state</th><th>command</th><th>tutorial step</th><th>revealed</th><th></th></tr></thead><tbody></tbody></table>
      </div>
      <div id="ws-predictions" hidden></div>
    </div>
    <div id="ws-status" role="status" aria-live="polite"></div>`;
  const css = document.createElement("style");
  css.textContent = `#ws-status.error { color: var(--warn); } #ws-status.info { color: var(--ok); }
    #ws-banner { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 14px; padding: 6px 14px; font-size: 14px;
      background: #1f2a3a; border-bottom: 1px solid var(--accent); position: sticky; top: 0; z-index: 900; }
    #ws-banner[hidden] { display: none; }
    body[data-room="student"] #ws-toast, body[data-room="instructor"] #ws-toast { top: 96px; }
    body[data-room="student"] aside > *, body[data-room="instructor"] aside > * { scroll-margin-top: 48px; }
    #ws-banner .ws-b-room { font-weight: 600; } #ws-banner .mono { font-family: ui-monospace, monospace; }
    #ws-banner .ws-b-ok { color: var(--ok); } #ws-banner .ws-b-away, #ws-banner .ws-b-warn { color: #d29922; }
    #ws-banner button { padding: 2px 8px; }
    #workshop-panel .ws-warn, #ws-qr-full .ws-warn { border-left: 4px solid #d29922; padding: 4px 8px; margin: 6px 0; background: rgba(210, 153, 34, 0.15); max-width: 52ch; }
    #ws-qr-full .ws-warn { color: #000; font: 20px system-ui, sans-serif; max-width: 80vw; }
    aside #workshop-panel #ws-link { width: 100%; box-sizing: border-box; }
    aside #workshop-panel .ws-cols { gap: 8px; }
    #tutorial-panel #ws-predictions { border-top: 1px solid var(--border); margin-top: 8px; position: sticky; bottom: -10px;
      background: var(--panel); max-height: 45%; overflow: auto; padding-bottom: 6px; }
    #tutorial-panel .ws-hist .lab { width: 90px; }
    #workshop-panel .ws-state td:first-child { color: var(--dim); padding-right: 12px; }
    #workshop-panel button { margin: 6px 6px 0 0; }
    #workshop-panel .ws-cols { display: flex; gap: 24px; flex-wrap: wrap; }
    #workshop-panel h3 { font-size: 14px; margin: 12px 0 4px; }
    #ws-roster { border-collapse: collapse; font-size: 13px; }
    #ws-roster td, #ws-roster th { padding: 2px 10px 2px 0; text-align: left; }
    #ws-roster td.st-following { color: var(--ok); } #ws-roster td.st-lagging, #ws-roster td.st-resyncing { color: #d29922; }
    #ws-roster td.st-gone, #ws-roster td.st-detached { color: var(--dim); }
    #ws-follow.st-resyncing, #ws-follow.st-disconnected { color: var(--warn); } #ws-follow.st-following { color: var(--ok); }
    .ws-hist { font-size: 13px; margin: 4px 0 10px; }
    .ws-hist .row { display: flex; align-items: center; gap: 8px; margin: 2px 0; }
    .ws-hist .lab { width: 110px; text-align: right; color: var(--dim); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .ws-hist .bar { height: 14px; background: var(--accent); border-radius: 2px; min-width: 2px; }
    .ws-hist .bar.right { background: var(--ok); } .ws-hist .bar.close { background: #d29922; } .ws-hist .bar.wrong { background: var(--warn); }
    #ws-toast { position: fixed; top: 10px; left: 50%; transform: translateX(-50%); z-index: 1000; max-width: min(720px, 90vw);
      background: var(--panel2); border: 1px solid var(--border); border-left: 4px solid var(--ok); border-radius: 6px;
      padding: 8px 12px; box-shadow: 0 4px 16px rgba(0,0,0,.5); font-size: 14px; }
    #ws-toast.error { border-left-color: var(--warn); }
    #ws-toast button { margin-left: 10px; }
    #ws-qr-full { position: fixed; inset: 0; z-index: 1001; background: #fff; display: flex; flex-direction: column; align-items: center; justify-content: center; cursor: pointer; }
    #ws-qr-full img { width: min(80vh, 80vw); height: min(80vh, 80vw); image-rendering: pixelated; }
    #ws-qr-full p { color: #000; font: 28px system-ui, sans-serif; margin: 12px; }`;
  document.head.appendChild(css);
  // Beside the canvas, not below it: in the aside after the tutorial
  // panel (at the top of the aside while no tutorial is open); the
  // class's predictions go into the tutorial panel, under the question
  // they are about. Without the aside (a page of its own), before the
  // counters.
  const tutPanel = $("tutorial-panel");
  if (tutPanel && tutPanel.parentNode) {
    tutPanel.parentNode.insertBefore(panel, tutPanel.nextSibling);
  } else {
    const anchor = $("counters-panel") || document.querySelector("main");
    anchor.parentNode.insertBefore(panel, anchor);
  }

  // The banner: a room's state at the top of the window, for everyone in
  // it: which room, the instructor here or not, following or detached.
  const banner = document.createElement("div");
  banner.id = "ws-banner";
  banner.hidden = true;
  banner.setAttribute("role", "status");
  banner.setAttribute("aria-label", "workshop room");
  banner.innerHTML = `<span class="ws-b-room">Workshop room <span id="ws-b-id" class="mono"></span></span>
    <span id="ws-b-role"></span><span id="ws-b-instructor"></span><span id="ws-b-follow"></span><span id="ws-b-warn" class="ws-b-warn" hidden></span>
    <button id="ws-b-snap" type="button" hidden>Snap back to the room</button>
    <button id="ws-b-panel" type="button">Workshop panel</button>`;
  const header = document.querySelector("header.top");
  if (header) header.parentNode.insertBefore(banner, header.nextSibling);
  else document.body.insertBefore(banner, document.body.firstChild);

  // The toast: the room's notices at the top of the window, where a
  // refused click is seen (the panel may be below the fold).
  const toast = document.createElement("div");
  toast.id = "ws-toast";
  toast.hidden = true;
  toast.setAttribute("role", "alert");
  toast.innerHTML = '<span id="ws-toast-text"></span><span id="ws-toast-act"></span><button id="ws-toast-x" type="button" aria-label="Dismiss">×</button>';
  document.body.appendChild(toast);
  let toastTimer = 0;
  function showToast(text, kind, action) {
    $("ws-toast-text").textContent = text.charAt(0).toUpperCase() + text.slice(1);
    const act = $("ws-toast-act");
    act.textContent = "";
    if (action) {
      const b = document.createElement("button");
      b.type = "button";
      b.id = "ws-toast-do";
      b.textContent = action.label;
      b.addEventListener("click", () => { hideToast(); action.run(); });
      act.appendChild(b);
    }
    toast.className = kind === "error" ? "error" : "";
    toast.hidden = false;
    ws.toasts++;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(hideToast, kind === "error" ? 10000 : 6000);
  }
  function hideToast() { toast.hidden = true; }
  $("ws-toast-x").addEventListener("click", hideToast);
  ui.workshopToast = showToast;

  function status(text, kind, loud) {
    const el = $("ws-status");
    el.textContent = text;
    el.className = kind || "";
    if (kind === "error") ws.error = text;
    if (loud || kind === "error") showToast(text, kind);
  }

  function followState() {
    if (ws.closed) return "disconnected";
    if (ws.role === "instructor") return "leading";
    return ws.status || (ws.attached ? "following" : "detached");
  }

  // loopbackOnly reports whether no join link reaches this machine from
  // another: the server listens on loopback (make run's default).
  function loopbackOnly() {
    const urls = ws.joinURLs.length ? ws.joinURLs : [ws.joinURL];
    return urls.filter(Boolean).length > 0 && urls.filter(Boolean).every((u) => {
      let h = "";
      try { h = new URL(u).hostname.replace(/^\[|\]$/g, "").toLowerCase(); } catch (e) { return false; }
      return h === "localhost" || h.endsWith(".localhost") || /^127\./.test(h) || h === "::1";
    });
  }
  const loopbackText = () => {
    let host = "127.0.0.1";
    try { host = new URL(ws.joinURL).host; } catch (e) { /* the default */ }
    return `Students on other machines cannot reach ${host}: the server listens on this machine only. ` +
      "Restart it on the network, ringlab serve --addr :8080 (or make run ADDR=:8080), and the join link and QR code carry this machine's LAN address; " +
      "add --public-host NAME if the class opens it by a host name.";
  };

  function renderBanner(fs) {
    const inRoom = !!ws.role;
    banner.hidden = !inRoom;
    document.body.dataset.room = inRoom ? ws.role : "";
    if (!inRoom) return;
    $("ws-b-id").textContent = ws.room;
    $("ws-b-role").textContent = ws.role === "instructor" ? "you lead it" : "you are a student";
    const here = ws.instructors > 0;
    const inst = $("ws-b-instructor");
    inst.textContent = ws.closed ? "disconnected from the room" : here ? "instructor connected" : "instructor away: the room waits";
    inst.className = ws.closed ? "ws-b-away" : here ? "ws-b-ok" : "ws-b-away";
    const f = $("ws-b-follow");
    if (ws.role === "student") {
      f.textContent = fs === "following" ? "following the room" : fs === "detached" ? "detached: exploring on your own" : fs;
      f.className = fs === "following" ? "ws-b-ok" : "ws-b-away";
    } else {
      f.textContent = `${ws.students} student${ws.students === 1 ? "" : "s"}`;
      f.className = "";
    }
    $("ws-b-snap").hidden = ws.role !== "student" || ws.attached;
    const warn = ws.role === "instructor" && loopbackOnly();
    $("ws-b-warn").hidden = !warn;
    $("ws-b-warn").textContent = warn ? "join link is this machine only (see the Workshop panel)" : "";
    banner.dataset.role = ws.role;
    banner.dataset.instructor = here ? "here" : "away";
    banner.dataset.follow = fs;
  }
  $("ws-b-snap").addEventListener("click", () => $("ws-snap").click());
  $("ws-b-panel").addEventListener("click", () => ui.revealPanel(panel));

  function render() {
    const inRoom = !!ws.role;
    $("ws-start").hidden = inRoom;
    $("ws-room").hidden = !inRoom;
    ui.room = inRoom && !ws.gone ? ws.room : ""; // app.js keeps it in the address
    renderBanner(followState());
    if (!inRoom) return;
    const fs = followState();
    ws.seen[fs] = true;
    $("ws-id").textContent = ws.room + (ws.closed ? " (disconnected)" : "");
    $("ws-role").textContent = ws.role + (ws.role === "student" ? (ws.attached ? ", following" : ", detached") : "");
    $("ws-follow").textContent = fs + (ws.role === "student" && ws.checked ? ` (checked at command ${ws.checked})` : "");
    $("ws-follow").className = "st-" + fs;
    $("ws-instructor").textContent = ws.instructors > 0 ? (ws.instructors > 1 ? `here (${ws.instructors} connections)` : "here") : "away (the room waits for them)";
    $("ws-students").textContent = String(ws.students);
    $("ws-seq").textContent = String(ws.seq);
    $("ws-playing").textContent = ws.playing ? "playing" : "paused";
    const lead = ws.role === "instructor";
    $("ws-join").hidden = !lead;
    $("ws-lead").hidden = !lead;
    $("ws-roster-box").hidden = !lead;
    $("ws-link").value = invited() ? withInvite(ws.joinURL) : "";
    const lo = lead && loopbackOnly();
    $("ws-loopback").hidden = !lo;
    $("ws-loopback").textContent = lo ? loopbackText() : "";
    $("ws-student").hidden = ws.role !== "student";
    $("ws-detach").hidden = !ws.attached;
    $("ws-snap").hidden = ws.attached;
    panel.dataset.role = ws.role;
    panel.dataset.seq = $("ws-seq").textContent;
    panel.dataset.applied = String(ws.applied);
    panel.dataset.follow = fs;
  }

  // invited reports whether the page knows what a join link needs: the
  // room's invitation, or that the room admits anyone (no join link nor
  // QR code is shown before: one copied early would be refused).
  const invited = () => !!ws.invite || !!(ws.game && ws.game.class && !ws.game.class.invitation_only);
  // withInvite is a join link with the room's invitation in it (the
  // server's GET /api/rooms/ID gives the links without it).
  function withInvite(u) {
    if (!u || !ws.invite) return u;
    try {
      const x = new URL(u);
      x.searchParams.set("invite", ws.invite);
      return x.href;
    } catch (e) { return u; }
  }

  function renderLinks() {
    const sel = $("ws-links");
    sel.textContent = "";
    ws.joinURLs.forEach((u, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = u.replace(/\/\?room=.*$/, "");
      sel.appendChild(o);
    });
    sel.hidden = ws.joinURLs.length < 2;
    const i = Math.max(0, ws.joinURLs.indexOf(ws.joinURL));
    sel.value = String(i);
    if (invited()) {
      $("ws-qr").src = base + "api/rooms/" + encodeURIComponent(ws.room) + "/qr.png?i=" + i + (ws.invite ? "&invite=" + encodeURIComponent(ws.invite) : "");
      $("ws-ilink").value = withInvite(ws.joinURL || location.origin + base + "?room=" + ws.room) + "#instructor=" + ws.token;
    }
    if (loopbackOnly() && !ws.warnedLoopback && !ws.newer) { // not over why it follows no room
      ws.warnedLoopback = true;
      showToast(loopbackText(), "error");
    }
    render();
  }
  $("ws-links").addEventListener("change", (e) => {
    ws.joinURL = ws.joinURLs[Number(e.target.value)] || ws.joinURL;
    renderLinks();
  });
  async function fetchLinks() {
    try {
      const r = await fetch(base + "api/rooms/" + encodeURIComponent(ws.room));
      if (!r.ok) return;
      const b = await r.json();
      ws.joinURLs = b.join_urls || [b.join_url];
      if (!ws.joinURLs.includes(ws.joinURL)) ws.joinURL = b.join_url;
      renderLinks();
    } catch (e) { /* the panel keeps what it has */ }
  }

  // ---- the server ----

  ui.onServer = function () {
    const btn = $("workshop-btn");
    btn.disabled = false;
    btn.title = "Run or join a workshop room";
    if (roomParam && !ws.conn) {
      panel.hidden = false;
      const token = tokens()[roomParam] || "";
      ws.invite = inviteParam;
      connect(roomParam, token ? "instructor" : "student", token);
    }
  };
  // app.js asked healthz before this script ran: when its fetch was
  // slow, the answer came first, and found no ui.onServer to call.
  if (ui.server.seen) ui.onServer();
  $("workshop-btn").addEventListener("click", () => {
    if ($("workshop-btn").disabled) return;
    if (panel.hidden) ui.revealPanel(panel);
    else panel.hidden = true;
  });

  $("ws-create").addEventListener("click", createRoom);
  async function createRoom() {
    status("Creating a room…", "info");
    const st = ui.state;
    // The room starts from pane A's world: the recipe its link carries
    // (a preset or scenario, then the parameters changed), forwarded as
    // it is; the server reads and checks it.
    const recipe = (st && st.query && new URLSearchParams(st.query).get("recipe")) || ($("preset") && $("preset").value) || "";
    let r, body;
    try {
      r = await fetch(base + "api/rooms", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(recipe ? { recipe } : {}),
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
    ws.joinURLs = body.join_urls || [body.join_url];
    ws.joinURL = body.join_url || location.origin + base + "?room=" + encodeURIComponent(body.room);
    ws.invite = body.invite || "";
    keepToken(body.room, body.instructor_token);
    connect(body.room, "instructor", body.instructor_token);
  }

  // connect opens the room's socket and has the game write the join;
  // resume marks a reconnect (the game's join asks for what it missed).
  function connect(room, role, token, resume) {
    if (ws.conn) { const c = ws.conn; ws.conn = null; c.close(); }
    clearTimeout(retryTimer);
    if (!resume) {
      Object.assign(ws, { room, token, error: "", reconnects: 0, gone: false });
      ws.joinRole = role;
    }
    ws.welcomed = false;
    ws.refused = "";
    ws.closed = false;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    let conn;
    try {
      conn = new WebSocket(proto + "//" + location.host + base + "ws/room/" + encodeURIComponent(room) +
        (ws.invite ? "?invite=" + encodeURIComponent(ws.invite) : ""));
    } catch (e) {
      status("Cannot open the room: " + e.message, "error");
      return;
    }
    ws.conn = conn;
    let opened = false;
    status("Joining room " + room + "…", "info");
    conn.onopen = () => {
      opened = true;
      const join = { type: "room_join", room, role, resume: !!resume };
      if (role === "instructor") join.token = token;
      else {
        if (clientID) join.client = clientID;
        const name = $("ws-name").value || storedName();
        if (name) join.name = name;
      }
      toGame(join);
    };
    conn.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch (err) { return; }
      if (m && typeof m.type === "string") onRoomMessage(e.data, m);
    };
    conn.onclose = (e) => {
      if (ws.conn !== conn) return;
      ws.closed = true;
      ws.conn = null;
      render();
      if (ws.gone) return;
      retry(room, role, token, opened, e);
    };
    conn.onerror = () => {}; // onclose reports
  }

  // retry asks the game when to connect again (its room_retry: the
  // policy's delay, or to stop when the room refused the join for good),
  // unless the room is gone: an upgrade that never opened is asked about
  // over plain HTTP, which answers 404 for a room that does not exist
  // (any other answer, or none while the server restarts, is worth
  // another try).
  function retry(room, role, token, opened, e) {
    const what = opened ? `Disconnected from room ${room}` + (e.reason ? ": " + e.reason : "") + ` (code ${e.code})` : `Cannot reach room ${room}`;
    const again = () => {
      ws.dropped = { room, role, token, what };
      toGame({ type: "room_dropped", room, refused: ws.refused || "" });
    };
    if (opened) { again(); return; }
    fetch(base + "ws/room/" + encodeURIComponent(room)).then((r) => {
      if (r.status === 404) {
        ws.gone = true;
        keepToken(room, "");
        status(`Room ${room} is gone (expired or never existed): create a new one or ask for a new link.`, "error");
        render();
        return;
      }
      again();
    }, again);
  }
  function retryAfter(m) {
    const d = ws.dropped;
    if (!d || d.room !== m.room || ws.room !== m.room || ws.conn) return;
    if (m.stop) {
      // The room refused the join for good (its error's code said so):
      // nothing to come back to.
      ws.gone = true;
      if (m.code === "not_found") keepToken(m.room, "");
      render();
      return;
    }
    const delay = m.min_ms + Math.random() * (m.max_ms - m.min_ms);
    status(`${d.what}: reconnecting in ${(delay / 1000).toFixed(1)} s…`, "error", m.retry === 1);
    retryTimer = setTimeout(() => { if (ws.room === d.room && !ws.conn) connect(d.room, d.role, d.token, true); }, delay);
  }

  $("ws-leave").addEventListener("click", () => {
    clearTimeout(retryTimer);
    const c = ws.conn;
    ws.conn = null;
    if (c) c.close();
    keepToken(ws.room, "");
    Object.assign(ws, { room: "", token: "", invite: "", game: null });
    ui.roomInvite = "";
    ui.send({ type: "room_leave" });
    status("Left the room.", "info");
    render();
  });

  async function copy(text, what) {
    try {
      await navigator.clipboard.writeText(text);
      status(what + " copied.", "info");
    } catch (e) {
      status("Select the link and copy it.", "info");
    }
  }
  $("ws-copy").addEventListener("click", () => copy(withInvite(ws.joinURL), "Join link"));
  $("ws-icopy").addEventListener("click", () => copy($("ws-ilink").value, "Instructor link"));
  $("ws-qr-big").addEventListener("click", () => {
    const full = document.createElement("div");
    full.id = "ws-qr-full";
    full.title = "Click to close";
    const img = document.createElement("img");
    img.src = $("ws-qr").src;
    img.alt = "QR code of the join link";
    const p = document.createElement("p");
    p.textContent = withInvite(ws.joinURL);
    full.append(img, p);
    if (loopbackOnly()) {
      const w = document.createElement("p");
      w.className = "ws-warn";
      w.textContent = loopbackText();
      full.appendChild(w);
    }
    full.addEventListener("click", () => full.remove());
    document.body.appendChild(full);
  });
  $("ws-reset").addEventListener("click", () => ui.send({ type: "reset" }));

  function storedName() { try { return localStorage.getItem("ringlab.name") || ""; } catch (e) { return ""; } }
  $("ws-name").value = storedName();
  $("ws-name").addEventListener("change", (e) => {
    try { localStorage.setItem("ringlab.name", e.target.value.trim()); } catch (err) { /* kept for this page only */ }
    // The name goes with a join: join again (the log continues).
    if (ws.role === "student" && ws.conn) connect(ws.room, "student", "", true);
  });

  // The server's messages: the room's frames (welcome, command, beacon)
  // go on to the game as they came, once it has sent its first state
  // (messages posted before it runs would be lost); the game keeps the
  // log, drops what it has already and knows where a reconnect resumes.
  // The rest (presence, roster, predictions, error) is the panel's.
  function onRoomMessage(raw, m) {
    switch (m.type) {
      case "welcome": {
        const back = ws.welcomedAs === m.you && (ws.joins || 0) > 0;
        if (back) ws.reconnects++;
        ws.welcomed = true;
        ws.welcomedAs = m.you;
        ws.joins = (ws.joins || 0) + 1;
        const where = m.you === "instructor" ? " (this tab keeps the role: a reload comes back as instructor)" : "";
        status(back ? `Back in room ${m.room} as ${m.you}: catching up from command ${m.since}.` : `In room ${m.room} as ${m.you}${where}.`, "info", back);
        if (m.you === "student" && !m.instructors) showToast("The instructor is away: the room waits for them.", "info");
        if (m.you === "instructor") fetchLinks();
        toGame(raw);
        break;
      }
      // The room's log and what it says of its class: the game's, drawn
      // from its state.
      case "command":
      case "beacon":
      case "presence":
      case "class":
      case "roster":
      case "predictions":
        toGame(raw);
        break;
      case "error": {
        // A join refused: the game says whether it stands (room_retry).
        if (!ws.welcomed) ws.refused = m.code;
        const what = m.field === "invite" ? "Not invited" : {
          forbidden: "Forbidden: only the instructor's connection commands the room",
          rate_limited: "Too fast: the room dropped a command (rate limited); wait a moment",
          limit_exceeded: "The room refused: over a limit",
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
  function sendRoom(msg) {
    if (ws.conn && ws.conn.readyState === WebSocket.OPEN) ws.conn.send(JSON.stringify(msg));
  }

  // What the game says: the room's frames (command, beacon, a student's
  // status), sent on as they are; notes and errors for the person, by
  // their code; and the room's state as the game applies it.
  const offerDetach = (text) => showToast(text, "info", { label: "Detach", run: () => ui.workshopDetach() });
  ui.listen((m) => {
    switch (m.type) {
      case "command":
        if (!ws.conn || ws.conn.readyState !== WebSocket.OPEN) {
          status("Not connected to the room: the command was not sent.", "error");
          return;
        }
        sendRoom(m);
        break;
      case "beacon":
      case "status":
      case "predict":
      case "share_predictions":
      case "remove":
        sendRoom(m);
        break;
      case "join":
        // Once on the socket that opened (a late one waits for its own).
        if (ws.conn && ws.conn.readyState === WebSocket.OPEN && !ws.conn.joined) {
          ws.conn.joined = true;
          sendRoom(m);
        }
        break;
      case "room_retry":
        retryAfter(m);
        break;
      case "note":
        if (m.source === "room") {
          status(m.text, "info", true);
          if (m.code === "following" && ws.role === "student") offerDetach(m.text);
        }
        break;
      case "error":
        if (m.source === "welcome" && m.code === "bad_state" && ws.conn) {
          // The game holds no log the welcome continues: join again for
          // the whole of it.
          connect(ws.room, ws.joinRole, ws.token, true);
          break;
        }
        if (m.code === "version") {
          // A server newer than this page: the game did not follow its
          // room, and the page stops talking to it and says why (the
          // address and the token stay for the reload it asks for).
          clearTimeout(retryTimer);
          const c = ws.conn;
          ws.conn = null;
          if (c) c.close();
          ws.closed = true;
          ws.newer = true;
          status(m.message, "error");
          render();
          break;
        }
        if (m.code === "following") offerDetach(m.message);
        break;
      case "state": {
        if (!m.room && !ws.game) return;
        const was = ws.game;
        ws.game = m.room || null;
        changed(was, ws.game);
        render();
        break;
      }
      case "tutorial_step":
      case "tutorial_reveal":
        setTimeout(renderPredictions, 0);
        break;
    }
  });

  // changed tells the person what the game's new state says happened
  // (the instructor away or back, a distribution shown) and redraws
  // what changed.
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  function changed(was, now) {
    if (!now) return;
    const sameRoom = was && was.room === now.room;
    if (now.role === "student" && sameRoom) {
      const wasAway = was.instructors === 0, away = now.instructors === 0;
      if (away && !wasAway) {
        ws.aways++;
        showToast("The instructor is away: the room waits for them (their commands continue when they are back).", "info");
      }
      if (wasAway && !away) showToast("The instructor is back.", "info");
      if (now.shared && !same(now.shared && [now.shared.tutorial, now.shared.step, now.shared.question], was.shared && [was.shared.tutorial, was.shared.step, was.shared.question])) {
        showToast("The instructor shows the class's predictions.", "info");
      }
    }
    const invite = now.class && now.class.invite;
    if (invite && invite !== ws.invite || !was || (was.class && was.class.size) !== (now.class && now.class.size)) {
      if (invite) ws.invite = invite;
      ui.roomInvite = ws.invite; // app.js keeps it in the address
      if (now.role === "instructor") renderLinks();
    }
    if (!sameRoom || !same(was.roster, now.roster)) renderRoster();
    if (!sameRoom || !same(was.predictions, now.predictions) || !same(was.shared, now.shared)) renderPredictions();
  }

  function renderRoster() {
    const tb = $("ws-roster").tBodies[0];
    tb.textContent = "";
    const counts = {};
    const roster = ws.roster || [];
    for (const s of roster) {
      counts[s.state] = (counts[s.state] || 0) + 1;
      const tr = document.createElement("tr");
      tr.dataset.name = s.name;
      tr.dataset.state = s.state;
      const cells = [s.name, s.state, String(s.applied), s.tutorial ? `${s.tutorial} ${s.step}` : "–", s.tutorial ? (s.revealed ? "yes" : "no") : "–"];
      cells.forEach((c, i) => {
        const td = document.createElement("td");
        td.textContent = c;
        if (i === 1) td.className = "st-" + s.state;
        tr.appendChild(td);
      });
      // Remove: the student leaves the room and may not join again under
      // this id (a page that put fake names on the roster, say).
      const td = document.createElement("td");
      if (s.client) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "ws-remove";
        b.textContent = "remove";
        b.title = `take ${s.name} out of the room`;
        b.addEventListener("click", () => ui.send({ type: "remove", client: s.client }));
        td.appendChild(b);
      }
      tr.appendChild(td);
      tb.appendChild(tr);
    }
    $("ws-roster").hidden = roster.length === 0;
    $("ws-roster-sum").textContent = roster.length ? Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") : "no students yet";
  }

  // ---- predictions ----

  // A student's prediction goes to the room as it is made (the last one
  // counts): the game writes the room's message; the instructor sees
  // only how many gave each answer.
  document.addEventListener("ringlab:predict", (e) => {
    const p = e.detail;
    if (!ws.game || ws.game.role !== "student" || !p || !p.step) return;
    ui.send({ type: "predict", tutorial: p.tutorial, step: p.step, question: p.question, answer: String(p.answer) });
  });

  const numeric = (a) => {
    const m = /^\s*(-?[0-9][0-9,_ ]*(?:\.[0-9]+)?|-?\.[0-9]+)\s*(%?)\s*$/.exec(a);
    return m ? Number(m[1].replace(/[,_ ]/g, "")) : NaN;
  };
  // histogram draws a question's distribution as the game's state gives
  // it: a bar per answer, or for numeric answers one per range; each
  // answer's verdict (the game's grade, once this page may show the
  // engine's answer) colours the bars.
  function histogram(q) {
    const box = document.createElement("div");
    box.className = "ws-hist";
    box.dataset.question = String(q.question);
    box.dataset.count = String(q.count);
    const head = document.createElement("div");
    const unit = q.unit;
    head.textContent = `Question ${q.question + 1} of step ${q.step}: ${q.count} prediction${q.count === 1 ? "" : "s"}` + (unit ? ` (in ${unit})` : "");
    box.appendChild(head);
    const answers = q.answers.filter((a) => a.answer !== "(other answers)");
    const nums = answers.map((a) => numeric(a.answer));
    let rows;
    // The question's kind (the game's, from the step it ran): yes/no
    // and a choice are categories, each option a bar even when nobody
    // gave it; numbers are binned.
    if (q.kind === "yesno" || q.kind === "choice") {
      const cats = q.kind === "yesno" ? ["yes", "no"] : q.options || [];
      rows = cats.map((c) => {
        const a = q.answers.find((x) => x.answer.toLowerCase() === c.toLowerCase());
        return { label: c, count: a ? a.count : 0, answers: a ? [a.answer] : [] };
      });
      const other = q.answers.filter((x) => !cats.some((c) => c.toLowerCase() === x.answer.toLowerCase())).reduce((n, x) => n + x.count, 0);
      if (other) rows.push({ label: "(other answers)", count: other, answers: [] });
    } else if (answers.length >= 4 && nums.every((n) => !Number.isNaN(n))) {
      const lo = Math.min(...nums), hi = Math.max(...nums);
      const bins = 8, w = (hi - lo) / bins || 1;
      // Half-open ranges, the last one closed: "[8, 11)" holds 8 and not
      // 11, which the next range holds.
      rows = Array.from({ length: bins }, (_, i) => ({ label: `[${fmt(lo + i * w)}, ${fmt(lo + (i + 1) * w)}${i === bins - 1 ? "]" : ")"}`, count: 0, answers: [] }));
      answers.forEach((a, i) => {
        const b = rows[Math.min(bins - 1, Math.floor((nums[i] - lo) / w))];
        b.count += a.count;
        b.answers.push(a.answer);
      });
    } else {
      rows = q.answers.slice(0, 12).map((a) => ({ label: a.answer, count: a.count, answers: [a.answer] }));
    }
    const most = Math.max(1, ...rows.map((r) => r.count));
    // The engine's answer: the game gives it where this page may show
    // it (a student's once revealed).
    const key = q.key || null;
    const verdict = new Map(q.answers.map((a) => [a.answer, a.verdict]));
    for (const r of rows) {
      const row = document.createElement("div");
      row.className = "row";
      const lab = document.createElement("span");
      lab.className = "lab";
      lab.textContent = r.label;
      lab.title = r.label;
      const bar = document.createElement("span");
      bar.className = "bar";
      bar.style.width = Math.round(240 * r.count / most) + "px";
      const verdicts = r.answers.map((a) => verdict.get(a)).filter(Boolean);
      if (verdicts.length) bar.classList.add(verdicts.includes("right") ? "right" : verdicts.includes("close") ? "close" : "wrong");
      const n = document.createElement("span");
      n.textContent = String(r.count);
      row.append(lab, bar, n);
      box.appendChild(row);
    }
    if (key) {
      const truth = document.createElement("div");
      truth.className = "note";
      truth.textContent = (key.kind === "yesno" || key.kind === "choice" ? `The engine says ${key.truth_text}: ${key.subject}`
        : `The engine's ${key.subject}: ${key.truth_text}${key.unit && key.unit !== "%" ? " " + key.unit : ""}`) + (q.revealed ? "" : " (hidden from the students until you reveal it)");
      box.appendChild(truth);
    }
    if (ws.role === "instructor") {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "ws-share";
      b.textContent = "Show the class's predictions to the room";
      b.addEventListener("click", () => ui.send({ type: "share_predictions", tutorial: q.tutorial, step: q.step, question: q.question }));
      box.appendChild(b);
    }
    return box;
  }
  const fmt = (x) => (Math.abs(x) >= 100 || Number.isInteger(x) ? String(Math.round(x)) : x.toPrecision(3));
  function renderPredictions() {
    const box = $("ws-predictions");
    // Under the question, in the tutorial panel while it is open; in the
    // Workshop panel when it is closed.
    const home = tutPanel && !tutPanel.hidden ? tutPanel : $("ws-room");
    if (box.parentNode !== home) home.appendChild(box);
    box.textContent = "";
    let qs = [];
    let title = "";
    const predictions = ws.predictions || [];
    if (ws.role === "instructor") {
      const t = window.ringlabTutorial;
      qs = predictions.filter((q) => t && t.t && q.tutorial === t.t.name && q.step === t.step);
      if (!qs.length && predictions.length) qs = [predictions[predictions.length - 1]];
      title = "Class predictions (anonymous: students see them only when you show them)";
    } else if (ws.shared) {
      qs = [ws.shared];
      title = "The class predicted";
    }
    box.hidden = qs.length === 0;
    if (!qs.length) return;
    const h = document.createElement("h3");
    h.textContent = title;
    box.appendChild(h);
    for (const q of qs) box.appendChild(histogram(q));
  }

  // ---- detach and snap back ----

  // The panel shows the student detached, or back, when the game's
  // state says so.
  $("ws-detach").addEventListener("click", () => {
    ui.send({ type: "room_detach" });
    status("Detached: explore freely; the room's commands are kept for when you snap back.", "info", true);
  });
  $("ws-snap").addEventListener("click", () => {
    status("Snapping back: replaying the room's log…", "info");
    ui.send({ type: "room_snap" });
    ui.request({ type: "sync" }).then(() => status("Back in step with the room.", "info"));
  });
  // workshopDetach resolves once the game has taken the detach (its
  // state, which says so, comes before the sync's answer).
  ui.workshopDetach = () => {
    if (!ws.attached) return Promise.resolve();
    $("ws-detach").click();
    return ui.request({ type: "sync" });
  };
  ui.workshopSnap = () => { $("ws-snap").click(); return ui.request({ type: "sync" }); };
  ui.workshopCreate = createRoom;
})();
