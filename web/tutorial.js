// ringlab's tutorial panel: the nine walkthroughs of tutorials/, read step
// by step beside the views. The game holds the tutorials (the tutorials
// package is embedded in main.wasm) and answers `tutorials`, `tutorial`
// and `tutorial_step` (web/README.md). A step's world is shown in pane A;
// its checks and the answer to its question come back from the game. In
// a workshop room the game also says which step the room is at
// (`tutorial_step` with `room`) and which question its instructor
// revealed (`tutorial_reveal`); the panel follows.
// Progress is kept in localStorage; ?tutorial=NAME&step=N opens a step.
// A lesson (a tutorial that does not ship) is loaded from a file or a
// URL: the game checks it with the tutorials' parser (lesson_load) and
// the panel runs it as it runs the others; ?lesson=URL&step=N, or
// #lesson=PACKED for a file's text, opens one from a link.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const STORE = "ringlab.tutorials";
  const opened = window.ringlab.opened; // the address the page was opened at (app.js)
  const q0 = new URLSearchParams(opened.search);

  const tut = {
    list: [],        // from the game: number, name, title, level, minutes, steps
    t: null,         // the tutorial being read
    step: 0,         // 1-based; 0: the introduction
    result: null,    // the game's result of the current step
    busy: false,
    unrevealed: 0,   // questions of this step not yet revealed
    lessons: {},     // the lessons loaded, by name: {url} or {link} (its packed text, "" when too long)
  };
  window.ringlabTutorial = tut; // for tests

  // ---- progress ----

  function load() {
    try { return JSON.parse(localStorage.getItem(STORE)) || {}; } catch (e) { return {}; }
  }
  function save(p) {
    try { localStorage.setItem(STORE, JSON.stringify(p)); } catch (e) { /* private mode */ }
  }
  function remember(name, step, passed) {
    const p = load();
    p.last = name;
    const e = p[name] || (p[name] = { step: 0, done: [] });
    e.step = step;
    if (passed && !e.done.includes(step)) e.done.push(step);
    save(p);
  }

  // ---- Markdown, minimally: paragraphs, fenced code, lists, pipe tables,
  // `code`, **bold**, *em*, [links](https://...) ----
  // Every piece of a tutorial's text is escaped before any markup is put
  // around it, so the text adds no element or attribute of its own.

  function esc(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  // inline marks up one block's text: code spans first, so that nothing
  // in them is read as emphasis or a link.
  function inline(s) {
    return s.split(/(`[^`]+`)/).map((part, i) => (i % 2 ? "<code>" + esc(part.slice(1, -1)) + "</code>" : prose(part))).join("");
  }
  // A link goes only to a web address or a place in the page; any other
  // (javascript:, data:, a quote that would leave the attribute) stays text.
  const safeHref = /^(?:https?:\/\/|#)[^\s"'<>`\\]*$/;
  function prose(s) {
    return s.split(/(\[[^\]]+\]\([^)\s]+\))/).map((part, i) => {
      const link = i % 2 ? /^\[(.+)\]\((.+)\)$/.exec(part) : null;
      return link && safeHref.test(link[2])
        ? `<a href="${esc(link[2])}" target="_blank" rel="noopener noreferrer">${emphasis(link[1])}</a>`
        : emphasis(part);
    }).join("");
  }
  function emphasis(s) {
    return esc(s).replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
      .replace(/(^|[\s(])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
  }

  // Pipe tables as GitHub writes them: a header row, a delimiter row with
  // as many cells (`---`, `:--` left, `:-:` centre, `--:` right), then
  // body rows down to a blank line or another block; outer pipes are
  // optional, `\|` is a pipe inside a cell, a body row's missing cells
  // are empty and its extra ones dropped.
  const hasPipe = (line) => /(?:^|[^\\])\|/.test(line);
  function cells(line) {
    let s = line.trim();
    if (s.startsWith("|")) s = s.slice(1);
    if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
    return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }
  // aligns reads a delimiter row: one alignment per cell ("" when none),
  // or null when the line is not one.
  function aligns(line) {
    if (!hasPipe(line)) return null;
    const cs = cells(line);
    if (!cs.every((c) => /^:?-+:?$/.test(c))) return null;
    return cs.map((c) => (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : c.startsWith(":") ? "left" : ""));
  }
  // startsBlock: a line that ends a table (a fence, a heading, a list item).
  const startsBlock = (line) => /^\s*(?:```|#{1,6}\s|[-*]\s|\d+\.\s)/.test(line);
  function table(head, al, rows) {
    const row = (tag, cs) => "<tr>" + al.map((a, i) =>
      `<${tag}${a ? ` class="al-${a}"` : ""}>${inline(cs[i] || "")}</${tag}>`).join("") + "</tr>";
    // The wrapper scrolls sideways when the table is wider than the panel.
    return '<div class="tut-table"><table><thead>' + row("th", head) + "</thead>" +
      (rows.length ? "<tbody>" + rows.map((r) => row("td", r)).join("") + "</tbody>" : "") + "</table></div>";
  }

  function markdown(md) {
    const out = [];
    const lines = (md || "").split("\n");
    let para = [], list = null, fence = null;
    const flushPara = () => { if (para.length) out.push("<p>" + inline(para.join(" ")) + "</p>"); para = []; };
    const flushList = () => {
      if (list) out.push("<" + list.tag + ">" + list.items.map((i) => "<li>" + inline(i) + "</li>").join("") + "</" + list.tag + ">");
      list = null;
    };
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n];
      if (fence !== null) {
        if (/^\s*```/.test(line)) { out.push("<pre><code>" + esc(fence.join("\n")) + "</code></pre>"); fence = null; }
        else fence.push(line);
        continue;
      }
      if (/^\s*```/.test(line)) { flushPara(); flushList(); fence = []; continue; }
      const li = /^\s*(?:([-*])|(\d+)\.)\s+(.*)$/.exec(line);
      if (li) {
        flushPara();
        const tag = li[1] ? "ul" : "ol";
        if (!list || list.tag !== tag) { flushList(); list = { tag, items: [] }; }
        list.items.push(li[3]);
        continue;
      }
      if (line.trim() === "") { flushPara(); flushList(); continue; }
      if (list && /^\s+\S/.test(line)) { list.items[list.items.length - 1] += " " + line.trim(); continue; }
      flushList();
      const al = hasPipe(line) && n + 1 < lines.length ? aligns(lines[n + 1]) : null;
      if (al && al.length === cells(line).length) {
        flushPara();
        const rows = [];
        for (n += 2; n < lines.length && lines[n].trim() !== "" && !startsBlock(lines[n]); n++) rows.push(cells(lines[n]));
        n--;
        out.push(table(cells(line), al, rows));
        continue;
      }
      const h = /^#{3,6}\s+(.*)$/.exec(line);
      if (h) { flushPara(); out.push("<h4>" + inline(h[1]) + "</h4>"); continue; }
      para.push(line.trim());
    }
    if (fence !== null) out.push("<pre><code>" + esc(fence.join("\n")) + "</code></pre>");
    flushPara(); flushList();
    return out.join("\n");
  }
  tut.markdown = markdown;

  // ---- the panel ----

  const btn = document.createElement("button");
  btn.id = "tutorial-btn";
  btn.type = "button";
  btn.textContent = "Tutorials";
  btn.setAttribute("aria-expanded", "false");
  btn.setAttribute("aria-controls", "tutorial-panel");
  const help = $("help-btn");
  help.parentNode.insertBefore(btn, help);

  const panel = document.createElement("section");
  panel.id = "tutorial-panel";
  panel.hidden = true;
  panel.setAttribute("aria-labelledby", "tut-h");
  panel.innerHTML = `
    <h2 id="tut-h">Tutorial</h2>
    <div class="tut-pick">
      <label for="tut-select" class="sr-only">tutorial</label>
      <select id="tut-select"><option value="">Choose a tutorial…</option></select>
      <button id="tut-lesson-btn" type="button" aria-expanded="false" aria-controls="tut-lesson">Load a lesson…</button>
    </div>
    <div id="tut-lesson" class="tut-lesson" hidden>
      <p class="tut-meta">A lesson is a Markdown file in the tutorials' format (docs/writing-tutorials.md), at most 256 KiB.</p>
      <label>From a file: <input id="tut-lesson-file" type="file" accept=".md,.markdown,.txt,text/markdown,text/plain"></label>
      <form id="tut-lesson-form" class="tut-lesson-url">
        <label for="tut-lesson-url">From a URL:</label>
        <input id="tut-lesson-url" type="url" placeholder="https://example.org/lesson.md" autocomplete="url">
        <button type="submit">Load</button>
      </form>
      <p id="tut-lesson-error" class="tut-lesson-error" role="alert" hidden></p>
    </div>
    <p id="tut-lesson-note" class="tut-meta" hidden></p>
    <div class="tut-nav" role="group" aria-label="Tutorial steps">
      <button id="tut-prev" type="button" aria-keyshortcuts="{" title="Previous step ({)">◀ Prev</button>
      <span id="tut-pos" aria-live="polite"></span>
      <button id="tut-next" type="button" aria-keyshortcuts="}" title="Next step (})">Next ▶</button>
      <a id="tut-link" href="#">link to this step</a>
    </div>
    <h3 id="tut-step-title"></h3>
    <div id="tut-body" class="tut-body"></div>`;
  const aside = document.querySelector("main aside");
  aside.insertBefore(panel, aside.firstChild);

  // Predict, then observe: while a step's question is unrevealed, the
  // views that would answer it (canvas, counters, compare panes, inspect)
  // are blurred and inert, so neither eyes nor a screen reader get the
  // answer first. Reveal, another step or closing the panel brings them back.
  const answering = ["game-stage", "counters-panel", "compare-panel", "inspect"];
  function predicting(on) {
    tut.unrevealed = on ? tut.unrevealed : 0;
    if (on) document.body.dataset.predicting = "1";
    else delete document.body.dataset.predicting;
    for (const id of answering) {
      const el = $(id);
      if (el) el.inert = on;
    }
  }
  const questions = (st) => st.directives.filter((d) => d.op === "question").length;

  function setOpen(open) {
    const was = panel.hidden;
    panel.hidden = !open;
    if (!open) predicting(false);
    // The address names the step on show (app.js writes it), so a reload
    // comes back to it; a closed panel leaves the run's own address.
    window.ringlab.tutorial = open && tut.t ? address(tut.step) : null;
    // Opened, it is brought into view (the page may have been scrolled
    // to a panel below it).
    if (open && was) panel.scrollIntoView({ block: "nearest" });
    btn.setAttribute("aria-expanded", String(open));
    if (open && !tut.list.length) fetchList();
  }
  btn.addEventListener("click", () => setOpen(panel.hidden));

  function request(msg) {
    return window.ringlab.request(msg);
  }

  async function fetchList() {
    const r = await request({ type: "tutorials" });
    if (r.type !== "tutorials") return;
    tut.list = r.tutorials || [];
    const sel = $("tut-select");
    const prog = load();
    for (const t of tut.list) {
      const o = document.createElement("option");
      o.value = t.name;
      const done = prog[t.name] ? prog[t.name].done.length : 0;
      o.textContent = `${t.number}. ${t.title} (${t.level}, ${t.minutes} min, ${done}/${t.steps} steps)`;
      sel.appendChild(o);
    }
    if (tut.t) sel.value = tut.t.name;
  }

  // address is where step n of what is read is (app.js writes it in the
  // address bar, the panel's link carries it): a tutorial by its name, a
  // lesson by its URL or, read from a file, by its packed text in the
  // fragment (which no server sees); a lesson too long for that has none.
  function address(n) {
    const l = tut.lessons[tut.t.name];
    if (l && l.url) return { name: tut.t.name, step: n, query: "lesson=" + encodeURIComponent(l.url) + "&step=" + n, hash: "" };
    if (l) return { name: tut.t.name, step: n, query: "step=" + n, hash: l.link ? "#lesson=" + l.link : "" };
    return { name: tut.t.name, step: n, query: "tutorial=" + encodeURIComponent(tut.t.name) + "&step=" + n, hash: "" };
  }

  // A lesson (tutorials.LessonName) has no number.
  const heading = (t) => (t.number ? "Tutorial: " : "Lesson: ") + t.title;
  // lessonOption puts a lesson in the picker (one the page loaded, or one
  // a workshop room's log carried), so that the picker names it.
  function lessonOption(t) {
    if (t.number) return;
    const sel = $("tut-select");
    let o = [...sel.options].find((x) => x.value === t.name);
    if (!o) {
      o = document.createElement("option");
      o.value = t.name;
      o.dataset.lesson = "1";
      sel.appendChild(o);
    }
    o.textContent = `Lesson: ${t.title} (${t.level}, ${t.minutes} min, ${t.steps.length} steps)`;
  }

  async function openTutorial(name, step) {
    const r = await request({ type: "tutorial", name });
    if (r.type !== "tutorial") { $("tut-body").textContent = r.message || "no such tutorial"; return; }
    tut.t = r.tutorial;
    lessonOption(tut.t);
    $("tut-select").value = tut.t.name;
    $("tut-h").textContent = heading(tut.t);
    await go(step);
  }

  // go shows step n (0: the introduction) and runs it in the game; given
  // is the result when the game ran it already (a room's step).
  async function go(n, given) {
    const t = tut.t;
    if (!t || (tut.busy && !given)) return;
    n = Math.max(0, Math.min(n, t.steps.length));
    tut.step = n;
    predicting(false);
    tut.result = null;
    panel.dataset.step = String(n);
    delete panel.dataset.checks;
    $("tut-prev").disabled = n === 0;
    $("tut-next").disabled = n === t.steps.length;
    $("tut-pos").textContent = n === 0 ? `Introduction (${t.steps.length} steps)` : `Step ${n} of ${t.steps.length}`;
    const addr = address(n);
    if (!panel.hidden) window.ringlab.tutorial = addr;
    $("tut-link").href = location.pathname + "?" + addr.query + addr.hash;
    if (n === 0) {
      $("tut-step-title").textContent = t.title;
      $("tut-body").innerHTML = `<p class="tut-meta">${esc(t.level)}, ${esc(t.duration)}</p>` +
        "<p><strong>You will learn</strong></p><ul>" + t.learn.map((l) => "<li>" + inline(l) + "</li>").join("") + "</ul>" +
        markdown(t.intro);
      remember(t.name, 0, false);
      return;
    }
    const st = t.steps[n - 1];
    // Hidden before the step runs, so its result never flashes by.
    tut.unrevealed = questions(st);
    predicting(tut.unrevealed > 0);
    $("tut-step-title").textContent = `Step ${n}: ${st.title}`;
    $("tut-body").innerHTML = '<p class="tut-running">Running the step…</p>';
    let r = given;
    if (!r) {
      tut.busy = true;
      try {
        r = await request({ type: "tutorial_step", tutorial: t.name, step: n });
        await request({ type: "sync" });
      } catch (e) {
        r = { type: "error", message: String(e) };
      } finally {
        tut.busy = false;
      }
    }
    if (tut.step !== n || tut.t !== t) return;
    if (r.type === "error" && r.code === "following") {
      // The game refused: running it would take this page's world off
      // the room's it follows. The room's steps come by themselves;
      // detaching lets the student go.
      predicting(false);
      $("tut-body").innerHTML = '<p class="tut-following" id="tut-following">You are following the room: this step would take your world off the room\'s. ' +
        `<button type="button" id="tut-detach" data-step="${n}">Detach and run this step</button></p>`;
      return;
    }
    if (r.type === "error" && r.code === "replaying") {
      // An instructor's page catching up with its room (just reloaded):
      // the room's own step comes with its log, and when it has come
      // already (showRoomStep) the panel shows it.
      if (tut.result) return;
      predicting(false);
      $("tut-body").innerHTML = '<p class="tut-following" id="tut-replaying">This page is catching up with the room (replaying its log): the room\'s step shows here when it has; take this one again then.</p>';
      return;
    }
    if (r.type !== "tutorial_step") {
      predicting(false); // no question to reveal: give the views back
      $("tut-body").textContent = "The game could not run this step: " + (r.message || r.type);
      return;
    }
    tut.result = r.result;
    if (n === t.steps.length && !tut.list.length) await fetchList(); // the end names the next tutorial
    renderStep(st, r.result);
    const ok = r.result.failed === 0;
    panel.dataset.checks = ok ? "ok" : "fail";
    remember(t.name, n, ok);
  }

  // The room's steps and reveals, in the order the game sent them: the
  // game ran the step already (the room's log goes on from its world);
  // the panel opens there and shows its result.
  let fromRoom = Promise.resolve();
  function follow(f) {
    fromRoom = fromRoom.then(f).catch((e) => { $("tut-body").textContent = "The room's step could not be shown: " + e; });
  }
  async function showRoomStep(m) {
    setOpen(true);
    if (!tut.t || tut.t.name !== m.tutorial) {
      const r = await request({ type: "tutorial", name: m.tutorial });
      if (r.type !== "tutorial") return;
      tut.t = r.tutorial;
      lessonOption(tut.t);
      $("tut-select").value = tut.t.name;
      $("tut-h").textContent = heading(tut.t);
    }
    await go(m.step, m.step > 0 ? m : undefined);
  }

  function itemHTML(it) {
    const mark = it.status === "ok" ? "✓" : it.status === "skip" ? "–" : "✗";
    let h = "";
    if (it.op === "check" || it.op === "answer") {
      h = `<div class="tut-check ${esc(it.status || "")}" data-status="${esc(it.status || "")}"><span class="tut-mark" aria-label="${esc(it.status || "")}">${mark}</span> <code>${esc(it.text)}</code>` +
        (it.detail ? ` <span class="tut-detail">(${esc(it.detail)})</span>` : "") +
        (it.error ? ` <span class="tut-error">${esc(it.error)}</span>` : "") + "</div>";
    } else if (it.op === "preset" || it.op === "set") {
      // The step's configuration, shown: what pane A runs.
      h = `<div class="tut-config"><code>${esc(it.text)}</code>` + (it.error ? ` <span class="tut-error">${esc(it.error)}</span>` : "") + "</div>";
    } else if (it.op !== "question") {
      h = `<div class="tut-dir"><code>${esc(it.text)}</code>` + (it.error ? ` <span class="tut-error">${esc(it.error)}</span>` : "") + "</div>";
      if (it.output && it.output.length) h += "<pre>" + esc(it.output.join("\n")) + "</pre>";
    }
    return h;
  }

  // predictHTML is the input a question's kind asks for (tutorials/README.md):
  // buttons for yes/no and for a choice among named options, a number
  // field with its unit, a text box for words. The prediction is the
  // value of the element #ID-in in every case (the buttons set it).
  function predictHTML(id, q) {
    const picks = (values, labels) => `<div class="tut-opts" role="radiogroup" aria-label="your prediction">` +
      values.map((v, i) => `<button type="button" class="tut-opt" role="radio" aria-checked="false" data-for="${id}" data-value="${esc(v)}">${esc(labels[i])}</button>`).join("") +
      `</div><input id="${id}-in" class="tut-predict" type="hidden" value="">`;
    switch (q.kind) {
      case "yesno":
        return picks(["yes", "no"], ["Yes", "No"]);
      case "choice":
        return picks(q.options || [], q.options || []);
      case "number":
        return `<label class="tut-number"><span class="sr-only">your prediction, in ${esc(q.unit || "")}</span>` +
          `<input id="${id}-in" class="tut-predict" type="text" inputmode="decimal" autocomplete="off" placeholder="a number" size="10">` +
          ` <span class="tut-unit">${esc(q.unit === "x" ? "× (a ratio)" : q.unit || "")}</span></label>`;
    }
    return `<label class="sr-only" for="${id}-in">your prediction, in words</label>` +
      `<textarea id="${id}-in" class="tut-predict" rows="2" placeholder="your prediction, in words (not graded: shown beside the answer)"></textarea>`;
  }

  function renderStep(st, res) {
    const body = $("tut-body");
    const byLine = new Map(res.items.map((it) => [it.line, it]));
    const parts = [];
    let qn = 0;
    // What follows a question (the prose explaining it, later blocks) is
    // the answer too: it stays hidden until that question is revealed.
    let after = null;
    const push = (h) => parts.push(after ? `<div class="tut-after" data-for="${after}" hidden>${h}</div>` : h);
    for (const seg of st.segments) {
      if (seg.prose) { push(markdown(seg.prose)); continue; }
      const dirs = (seg.directives || []).map((i) => st.directives[i]);
      const q = dirs.find((d) => d.op === "question");
      const inner = dirs.map((d) => byLine.get(d.line)).filter(Boolean).map(itemHTML).join("");
      if (q) {
        const id = "tut-q" + (qn++);
        // The answer's key grades the prediction (the game grades it:
        // tutorial_grade), the first answer of the question's block.
        const ans = dirs.map((d) => byLine.get(d.line)).find((it) => it && it.op === "answer" && it.key);
        const key = ans ? ` data-key="${esc(JSON.stringify(ans.key))}"` : "";
        parts.push(`<div class="tut-question" data-kind="${esc(q.kind || "text")}"><p><strong>Predict:</strong> ${inline(q.question)}</p>
          ${predictHTML(id, q)}
          <button type="button" class="tut-reveal" data-target="${id}"${key}>Reveal</button>
          <p id="${id}-grade" class="tut-grade" aria-live="polite" hidden></p>
          <div id="${id}" class="tut-block" hidden>${inner}</div></div>`);
        after = id;
      } else {
        push(`<div class="tut-block">${inner}</div>`);
      }
    }
    const mark = res.failed === 0 ? "✓" : "✗";
    // The checks' tally is an answer too: hidden until every question is
    // revealed.
    parts.push(`<p class="tut-summary" id="tut-summary"${qn ? " hidden" : ""}>${mark} ${res.checks - res.failed} of ${res.checks} checks hold` +
      (res.skipped ? `, ${res.skipped} skipped` : "") + ". Pane A shows this step's world.</p>");
    if (tut.step === tut.t.steps.length) parts.push(endHTML());
    body.innerHTML = parts.join("\n");
  }

  // endHTML closes the last step: done, and the next tutorial.
  function endHTML() {
    const i = tut.list.findIndex((t) => t.name === tut.t.name);
    const next = i >= 0 ? tut.list[i + 1] : null;
    return `<div class="tut-end" id="tut-end"><p><strong>Done:</strong> that was the last step of “${esc(tut.t.title)}”.</p>` +
      (!tut.t.number ? "" : next ? `<p><button type="button" id="tut-next-tutorial" data-name="${esc(next.name)}">Next tutorial: ${next.number}. ${esc(next.title)} ▶</button></p>`
        : "<p>That was the last tutorial.</p>") + "</div>";
  }

  // reveal shows the answer of the current step's question q (0-based):
  // its checks, the prose after it, and the views once no question of the
  // step is left unrevealed. It reports whether there was such a question
  // still hidden.
  function reveal(q) {
    const b = document.querySelector(`#tut-body .tut-reveal[data-target="tut-q${q}"]`);
    if (!b || b.dataset.revealed) return false;
    b.dataset.revealed = "1";
    b.disabled = true;
    const el = $(b.dataset.target);
    el.hidden = false;
    for (const a of document.querySelectorAll(`.tut-after[data-for="${b.dataset.target}"]`)) a.hidden = false;
    tut.unrevealed--;
    if (tut.unrevealed <= 0) predicting(false);
    if (tut.unrevealed <= 0) { const sum = $("tut-summary"); if (sum) sum.hidden = false; }
    const input = $(b.dataset.target + "-in");
    const said = input.value.trim();
    input.disabled = true;
    for (const p of document.querySelectorAll(`.tut-opt[data-for="${b.dataset.target}"]`)) p.disabled = true;
    grade(b, said);
    return true;
  }

  // grade says how the prediction fared against the engine's answer.
  async function grade(b, said) {
    const out = $(b.dataset.target + "-grade");
    if (!out) return;
    if (!b.dataset.key) {
      if (said) { out.textContent = "You predicted: " + said; out.hidden = false; }
      return;
    }
    const key = JSON.parse(b.dataset.key);
    if (!said) {
      out.textContent = key.kind === "yesno" || key.kind === "choice"
        ? `You made no prediction; the engine says ${key.truth_text}: ${key.subject}.`
        : `You made no prediction; the engine's ${key.subject} is ${key.truth_text}${key.unit && key.unit !== "%" ? " " + key.unit : ""}.`;
      out.dataset.verdict = "none";
      out.hidden = false;
      return;
    }
    const r = await request({ type: "tutorial_grade", key, prediction: said });
    if (r.type !== "tutorial_grade") { out.textContent = "You predicted: " + said; out.hidden = false; return; }
    out.textContent = r.grade.say;
    out.dataset.verdict = r.grade.verdict;
    out.hidden = false;
  }


  // A prediction goes to a workshop room (workshop.js) in the one form
  // the game gives every way of saying it (its grade's answer: "yes" for
  // Y, a number without its unit), so that the class's histogram counts
  // one answer once; one that does not read is withdrawn ("").
  const predictTimers = new Map();
  function predicted(input) {
    const id = input.id.replace(/-in$/, "");
    const q = Number(id.slice("tut-q".length));
    const b = document.querySelector(`#tut-body .tut-reveal[data-target="${id}"]`);
    clearTimeout(predictTimers.get(id));
    predictTimers.set(id, setTimeout(async () => {
      let answer = input.value.trim();
      if (answer && b && b.dataset.key) {
        const r = await request({ type: "tutorial_grade", key: JSON.parse(b.dataset.key), prediction: answer });
        answer = r.type === "tutorial_grade" ? r.grade.answer || "" : answer;
      }
      input.dataset.answer = answer;
      if (!tut.t) return;
      document.dispatchEvent(new CustomEvent("ringlab:predict", { detail: { tutorial: tut.t.name, step: tut.step, question: q, answer } }));
    }, input.type === "hidden" ? 0 : 250));
  }
  $("tut-body").addEventListener("input", (e) => {
    if (e.target.classList && e.target.classList.contains("tut-predict")) predicted(e.target);
  });

  $("tut-body").addEventListener("click", (e) => {
    const pick = e.target.closest(".tut-opt");
    if (pick && !pick.disabled) {
      for (const p of document.querySelectorAll(`.tut-opt[data-for="${pick.dataset.for}"]`)) {
        p.setAttribute("aria-checked", String(p === pick));
      }
      const input = $(pick.dataset.for + "-in");
      input.value = pick.dataset.value;
      predicted(input);
      return;
    }
    const nt = e.target.closest("#tut-next-tutorial");
    if (nt) { openTutorial(nt.dataset.name, 1); return; }
    const dt = e.target.closest("#tut-detach");
    if (dt) { window.ringlab.workshopDetach().then(() => go(Number(dt.dataset.step))); return; }
    const b = e.target.closest(".tut-reveal");
    if (!b) return;
    const q = Number(b.dataset.target.slice("tut-q".length));
    if (!reveal(q)) return;
    const el = $(b.dataset.target);
    el.tabIndex = -1;
    el.focus(); // a screen reader reads the answer next
    // In a room the instructor's reveal goes to every student (the game
    // decides: play/room.go).
    window.ringlab.send({ type: "tutorial_reveal", tutorial: tut.t.name, step: tut.step, question: q });
  });

  window.ringlab.listen((m) => {
    if (m.type === "tutorial_step" && m.room) follow(() => showRoomStep(m));
    if (m.type === "tutorial_reveal") {
      follow(() => { if (tut.t && tut.t.name === m.tutorial && tut.step === m.step) reveal(m.question); });
    }
  });

  $("tut-select").addEventListener("change", (e) => {
    if (!e.target.value) return;
    const p = load()[e.target.value];
    openTutorial(e.target.value, p ? p.step : 0);
  });
  $("tut-prev").addEventListener("click", () => go(tut.step - 1));
  $("tut-next").addEventListener("click", () => go(tut.step + 1));

  // { and } step back and forward while the panel is open ([ and ] pick
  // the receive queue).
  function key(k) {
    if (panel.hidden || !tut.t) return false;
    if (k === "{") { go(tut.step - 1); return true; }
    if (k === "}") { go(tut.step + 1); return true; }
    return false;
  }
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const el = e.target;
    if (el && (el.tagName === "INPUT" || el.tagName === "SELECT" || el.tagName === "TEXTAREA")) return;
    if (key(e.key)) e.preventDefault();
  });
  window.addEventListener("message", (e) => {
    if (e.origin !== location.origin || e.source !== $("game").contentWindow) return;
    const m = e.data;
    if (m && m.type === "key" && !m.ctrl && !m.meta && !m.alt) key(m.key);
  });
  // ---- lessons: a tutorial from a file, a URL or a link ----

  const MAX_LESSON = 256 * 1024; // tutorials.MaxLessonBytes, checked again by the game
  const kib = (n) => (n / 1024).toFixed(n < 10240 ? 1 : 0) + " KiB";

  // lessonError says why a lesson was not loaded; the page stays as it was.
  function lessonError(text) {
    const e = $("tut-lesson-error");
    e.textContent = text;
    e.hidden = !text;
    if (text) { $("tut-lesson").hidden = false; $("tut-lesson-btn").setAttribute("aria-expanded", "true"); }
  }

  // decode reads a lesson's bytes as UTF-8 text, or says why not.
  function decode(bytes, source) {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (e) {
      throw new Error(`${source} is not UTF-8 text (is it a binary file?): a lesson is a Markdown file`);
    }
  }

  async function readFile(file) {
    if (file.size > MAX_LESSON) throw new Error(`${file.name} is ${file.size} bytes: a lesson has at most ${MAX_LESSON} (${kib(MAX_LESSON)})`);
    return decode(new Uint8Array(await file.arrayBuffer()), file.name);
  }

  // fetchLesson reads a lesson at a web address: http or https, of this
  // server or of one that lets this page read it (CORS), at most
  // MAX_LESSON bytes (counted as they arrive, whatever the headers say).
  async function fetchLesson(addr) {
    let u;
    try { u = new URL(addr, location.href); } catch (e) { throw new Error(`${addr} is not a web address`); }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`${addr}: a lesson's address is http:// or https://, not ${u.protocol}`);
    let r;
    try {
      r = await fetch(u.href, { mode: "cors", credentials: "omit", cache: "no-cache" });
    } catch (e) {
      throw new Error(`${u.href} could not be read: the server did not answer, or it does not let this page read it ` +
        "(a lesson's URL is this server's, or one that sends Access-Control-Allow-Origin)");
    }
    if (!r.ok) throw new Error(`${u.href}: the server answered ${r.status} ${r.statusText}`.trim());
    const len = Number(r.headers.get("Content-Length") || 0);
    if (len > MAX_LESSON) throw new Error(`${u.href} is ${len} bytes: a lesson has at most ${MAX_LESSON} (${kib(MAX_LESSON)})`);
    const reader = r.body.getReader();
    const parts = [];
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      n += value.length;
      if (n > MAX_LESSON) { reader.cancel(); throw new Error(`${u.href} is more than ${MAX_LESSON} bytes: a lesson has at most that (${kib(MAX_LESSON)})`); }
      parts.push(value);
    }
    const bytes = new Uint8Array(n);
    let at = 0;
    for (const p of parts) { bytes.set(p, at); at += p.length; }
    return { text: decode(bytes, u.href), url: u.href };
  }

  // useLesson hands a lesson to the game, which checks it; on success the
  // panel opens it at step, otherwise it says why and changes nothing.
  // from is {text, source} or {packed}; url is the lesson's address, if
  // it has one.
  async function useLesson(from, url, step) {
    const r = await request(Object.assign({ type: "lesson_load" }, from));
    if (r.type !== "lesson") throw new Error(r.message || "the game did not take the lesson");
    lessonError("");
    const t = r.tutorial;
    tut.lessons[t.name] = { url: url || "", link: r.link || "", room: r.room, bytes: r.bytes };
    const sel = $("tut-select");
    lessonOption(t);
    const note = $("tut-lesson-note");
    note.textContent = !url && !r.link
      ? `This lesson is too long for a link (${kib(r.bytes)} of text does not pack into 32 KiB): share its file, or put it at a web address and load it from there.`
      : !r.room ? "This lesson is too long for a workshop room: split it into shorter lessons." : "";
    note.hidden = !note.textContent;
    $("tut-lesson").hidden = true;
    $("tut-lesson-btn").setAttribute("aria-expanded", "false");
    tut.t = t;
    sel.value = t.name;
    $("tut-h").textContent = heading(t);
    await go(step || 0);
  }

  async function loadingLesson(what) {
    try {
      await what();
    } catch (e) {
      lessonError(e.message || String(e));
    }
  }

  $("tut-lesson-btn").addEventListener("click", () => {
    const box = $("tut-lesson");
    box.hidden = !box.hidden;
    $("tut-lesson-btn").setAttribute("aria-expanded", String(!box.hidden));
  });
  $("tut-lesson-file").addEventListener("change", (e) => {
    const f = e.target.files && e.target.files[0];
    if (!f) return;
    loadingLesson(async () => useLesson({ text: await readFile(f), source: f.name }, "", 0));
    e.target.value = ""; // the same file again loads again
  });
  $("tut-lesson-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const addr = $("tut-lesson-url").value.trim();
    if (!addr) { lessonError("Type the lesson's web address first."); return; }
    loadingLesson(async () => { const l = await fetchLesson(addr); await useLesson({ text: l.text, source: l.url }, l.url, 0); });
  });
  tut.loadLesson = (addr) => loadingLesson(async () => { const l = await fetchLesson(addr); await useLesson({ text: l.text, source: l.url }, l.url, 0); });

  tut.go = go;
  tut.open = openTutorial;

  // ?tutorial=NAME&step=N, ?lesson=URL&step=N or #lesson=PACKED: open
  // the panel there once the game is up.
  const want = q0.get("tutorial");
  const wantURL = q0.get("lesson");
  const packed = /^#lesson=([A-Za-z0-9_-]+)$/.exec(opened.hash);
  const step0 = parseInt(q0.get("step") || "0", 10) || 0;
  let start = null;
  if (want) start = () => { setOpen(true); openTutorial(want, step0); };
  else if (wantURL) start = () => { setOpen(true); loadingLesson(async () => { const l = await fetchLesson(wantURL); await useLesson({ text: l.text, source: l.url }, l.url, step0); }); };
  else if (packed) start = () => { setOpen(true); loadingLesson(() => useLesson({ packed: packed[1], source: "this link's lesson" }, "", step0)); };
  else if (opened.hash.startsWith("#lesson=")) start = () => { setOpen(true); lessonError("This link's lesson is damaged: its text is not in the form a link carries."); };
  if (start) {
    const wait = () => (document.body.dataset.ready === "1" ? start() : setTimeout(wait, 50));
    wait();
  }
})();
