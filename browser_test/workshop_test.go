package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
	"ringlab/server/rooms"
)

// workshopServer serves web/ with the rooms of `ringlab serve` in-process
// (the same rooms.Registry serve registers) and a healthz that answers
// "ok", so the page finds the server.
func workshopServer(t *testing.T) string {
	t.Helper()
	return workshopServerWith(t, nil)
}

// workshopServerWith is workshopServer with more handlers (added before
// the rooms' and the files).
func workshopServerWith(t *testing.T, more func(*http.ServeMux)) string {
	t.Helper()
	reg, err := rooms.New(rooms.Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reg.Close(ctx)
	})
	ts := serverWith(t, func(mux *http.ServeMux) {
		if more != nil {
			more(mux)
		}
		reg.Register(mux)
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("ok\n"))
		})
	})
	return ts.URL
}

// createdRoom is the server's answer to POST /api/rooms.
type createdRoom struct {
	Room   string `json:"room"`
	Token  string `json:"instructor_token"`
	Invite string `json:"invite"`
	Join   string `json:"join_url"`
}

// postRoom creates a room on the server at base over HTTP, as the
// workshop panel does, with body the request's JSON.
func postRoom(t *testing.T, base, body string) createdRoom {
	t.Helper()
	resp, err := http.Post(base+"/api/rooms", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var cr createdRoom
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&cr))
	require.NotEmpty(t, cr.Room, "a room was created (status %d)", resp.StatusCode)
	return cr
}

// waitApplied waits until the page has applied the room's log up to seq
// and the game has done the work.
func (p *page) waitApplied(seq int) {
	p.t.Helper()
	p.waitJS(fmt.Sprintf(`window.ringlab.workshop.applied >= %d && !window.ringlab.workshop.replaying`, seq), 30*time.Second)
	p.settle()
}

// roomEntry is one command of a room's log.
type roomEntry struct {
	Seq int            `json:"seq"`
	Cmd map[string]any `json:"cmd"`
}

// roomLog is the room's log as the page's game holds it (its room_log
// answer: the page keeps none of its own).
func (p *page) roomLog() []roomEntry {
	p.t.Helper()
	return eval[[]roomEntry](p, `window.ringlab.request({type: "room_log"}).then((r) => r.log || [])`)
}

// waitPausedAtSeek waits until the instructor's page has paused the room
// and applied the seek that pins where (after the pause command when
// afterPause), and returns that seek's seq.
func (p *page) waitPausedAtSeek(afterPause bool, d time.Duration) int {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if eval[bool](p, `!window.ringlab.state.playing`) {
			l := p.roomLog()
			n := len(l)
			if n >= 2 && l[n-1].Cmd["type"] == "seek" && (!afterPause || l[n-2].Cmd["type"] == "pause") &&
				eval[int](p, `window.ringlab.workshop.applied`) == l[n-1].Seq {
				return l[n-1].Seq
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for the room to pause at a seek", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkshopRoom: an instructor creates a room in the page, a student
// opens the join link; the instructor's preset, parameter and steps reach
// the student's engine through the room, so both counters tables agree;
// a late joiner (a go student) replaying the welcome log agrees too; a
// detached student snaps back to the room's state.
func TestWorkshopRoom(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)

	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)

	stu := openURL(t, browser(t), link)
	stu.waitJS(`window.ringlab.workshop.role === "student"`, 10*time.Second)
	stu.waitApplied(0)
	inst.waitJS(`document.getElementById("ws-students").textContent === "1"`, 10*time.Second)

	// The instructor acts in the page as a person would.
	eval[chromedp.Void](inst, `(() => { const s = document.getElementById("preset"); s.value = "cpumap"; s.dispatchEvent(new Event("change")); })()`)
	inst.send(map[string]any{"type": "set", "key": "ring_size", "value": "256", "pane": 0})
	inst.send(map[string]any{"type": "step", "unit": "event", "n": 700})
	inst.send(map[string]any{"type": "step", "unit": "event", "n": 1})

	inst.waitApplied(4)
	stu.waitApplied(4)
	assert.Equal(t, "4", eval[string](stu, `document.getElementById("ws-seq").textContent`))

	want := inst.counters()
	require.Greater(t, inst.counter("rx_packets", 0), 0.0)
	require.Greater(t, inst.counter("sim_time_ns", 0), 0.0)
	assert.Equal(t, inst.counter("sim_time_ns", 0), stu.counter("sim_time_ns", 0), "simulated time")
	assert.Equal(t, inst.counter("rx_packets", 0), stu.counter("rx_packets", 0), "rx_packets")
	assert.Equal(t, want, stu.counters(), "the whole counters table")
	assert.Equal(t, "cpumap", eval[string](stu, `window.ringlab.state.panes[0].config.slice(7).split(",")[0]`))

	// A detached student explores; snapping back replays the room's log.
	eval[chromedp.Void](stu, `window.ringlab.workshopDetach()`)
	stu.send(map[string]any{"type": "step", "unit": "event", "n": 50})
	stu.settle()
	assert.NotEqual(t, want["events"], stu.counters()["events"], "a detached student runs on its own")
	eval[chromedp.Void](stu, `window.ringlab.workshopSnap()`)
	stu.waitApplied(4)
	assert.Equal(t, want, stu.counters(), "snapped back")

	// A late joiner (a student without a page: the same game) replays the
	// welcome log.
	late := joinGoStudent(t, link, "late")
	late.waitApplied(4)
	assert.Equal(t, inst.digest(), late.digest(), "late joiner")

	// Playing: the room follows the instructor's clock with seeks; after
	// the pause both students are at the same simulated time.
	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	inst.waitJS(`window.ringlab.state.playing === true`, 10*time.Second)
	// Until the first seek of the play (command 6) is applied, not for a
	// wall-clock while.
	inst.waitJS(`window.ringlab.workshop.applied >= 6`, 20*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("play").click()`)
	last := inst.waitPausedAtSeek(true, 20*time.Second)
	require.Greater(t, last, 7, "play, seeks, pause, seek")
	inst.settle()
	stu.waitApplied(last)
	assert.Equal(t, inst.counter("sim_time_ns", 0), stu.counter("sim_time_ns", 0), "simulated time after play")
	assert.Equal(t, inst.counter("rx_packets", 0), stu.counter("rx_packets", 0), "rx_packets after play")
	goInStep(t, last, inst, late)

	// Commands carry no token: the instructor's connection is the
	// authority, and a student's connection sending one (a tampered page)
	// is refused, the refusal shown, not thrown.
	eval[chromedp.Void](stu, `window.ringlab.workshop.conn.send(JSON.stringify({type: "command", cmd: {type: "step"}}))`)
	stu.waitJS(`document.getElementById("ws-status").className === "error" && /forbidden/.test(document.getElementById("ws-status").textContent)`, 10*time.Second)
}

// TestWorkshopTutorial: an instructor steps through a tutorial in the
// panel; every student's panel follows to the same step and their engines
// agree, also on the commands that come after it.
func TestWorkshopTutorial(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	link := createRoom(t, inst)
	stu := openURL(t, browser(t), link)
	stu.waitJS(`window.ringlab.workshop.role === "student"`, 10*time.Second)
	stu.waitApplied(0)

	eval[bool](inst, `window.ringlabTutorial.open("descriptor-journey", 1).then(() => true)`)
	eval[bool](inst, `window.ringlabTutorial.go(2).then(() => true)`)
	inst.waitApplied(2)
	stu.waitApplied(2)
	stu.waitJS(`document.getElementById("tut-step-title").textContent.startsWith("Step 2:")`, 30*time.Second)
	assert.Equal(t, eval[string](inst, `document.getElementById("tut-step-title").textContent`),
		eval[string](stu, `document.getElementById("tut-step-title").textContent`))
	inst.settle()
	stu.settle()
	assert.Equal(t, inst.counters(), stu.counters(), "the tutorial step's world")

	// Step 2 asks a question: both predict with the views hidden, and the
	// instructor's Reveal reveals it in the student's panel too.
	predicting := `document.body.dataset.predicting === "1" && document.querySelector(".tut-question .tut-block").hidden`
	require.True(t, eval[bool](inst, predicting))
	require.True(t, eval[bool](stu, predicting))
	eval[chromedp.Void](inst, `document.querySelector(".tut-reveal").click()`)
	inst.waitApplied(3)
	stu.waitApplied(3)
	stu.waitJS(`!document.querySelector(".tut-question .tut-block").hidden && !document.body.dataset.predicting`, 10*time.Second)
	assert.True(t, eval[bool](stu, `document.querySelector(".tut-reveal").disabled`), "revealed for the student too")

	inst.send(map[string]any{"type": "step", "unit": "event", "n": 25})
	inst.waitApplied(4)
	stu.waitApplied(4)
	assert.Equal(t, inst.counters(), stu.counters(), "after a step in the tutorial's world")
	require.Greater(t, inst.counter("events", 0), 2.0)
}

// TestWorkshopNewerServer: a page that meets a room's server speaking a
// newer protocol than its game says so plainly, follows nothing and
// stops talking to the room, instead of applying a log it may misread.
func TestWorkshopNewerServer(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	inst.waitJS(`!document.getElementById("workshop-btn").disabled`, 10*time.Second)
	// The server this page meets is of the next version: its welcome
	// says so (the page's socket is wrapped to make it say it).
	newer := proto.Version + 1
	eval[chromedp.Void](inst, fmt.Sprintf(`(() => {
		const W = window.WebSocket;
		const on = Object.getOwnPropertyDescriptor(W.prototype, "onmessage");
		window.WebSocket = class extends W {
			set onmessage(f) {
				on.set.call(this, (e) => {
					const m = JSON.parse(e.data);
					if (m.type === "welcome") m.version = %d;
					f({ data: JSON.stringify(m) });
				});
			}
			get onmessage() { return on.get.call(this); }
		};
	})()`, newer))
	eval[chromedp.Void](inst, `document.getElementById("workshop-btn").click()`)
	inst.waitJS(`!document.getElementById("workshop-panel").hidden`, 5*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("ws-create").click()`)
	inst.waitJS(`window.ringlab.workshop.newer === true`, 15*time.Second)

	said := eval[string](inst, `document.getElementById("ws-status").textContent`)
	assert.Contains(t, said, fmt.Sprintf("version %d of the room protocol and this page version %d", newer, proto.Version))
	assert.Contains(t, said, "reload the page")
	assert.False(t, eval[bool](inst, `document.getElementById("ws-toast").hidden`), "said where it is seen")
	assert.Contains(t, eval[string](inst, `document.getElementById("ws-toast-text").textContent`), "reload the page")
	inst.settle()
	assert.True(t, eval[bool](inst, `!window.ringlab.state.room`), "the game follows no room")
	assert.True(t, eval[bool](inst, `window.ringlab.workshop.conn === null && window.ringlab.workshop.closed`), "the page stopped talking to the room")
	assert.Equal(t, "disconnected", eval[string](inst, `document.getElementById("workshop-panel").dataset.follow`))
}

// TestWorkshopFirstJoinLinkCarriesTheInvite: the first join link, QR code
// and instructor link the instructor's panel ever shows carry the room's
// invitation, so a link copied at once admits its student to an
// invitation-only room.
func TestWorkshopFirstJoinLinkCarriesTheInvite(t *testing.T) {
	t.Parallel()
	base := workshopServer(t)
	inst := open(t, browser(t), base, "")
	inst.waitJS(`!document.getElementById("workshop-btn").disabled`, 10*time.Second)
	// Every value the panel gives its links is recorded, from the first.
	eval[chromedp.Void](inst, `(() => {
		window.shown = {link: [], ilink: [], qr: []};
		const record = (el, prop, key, proto) => {
			const d = Object.getOwnPropertyDescriptor(proto, prop);
			Object.defineProperty(el, prop, {
				get() { return d.get.call(this); },
				set(v) { if (v) window.shown[key].push(String(v)); d.set.call(this, v); },
			});
		};
		record(document.getElementById("ws-link"), "value", "link", HTMLInputElement.prototype);
		record(document.getElementById("ws-ilink"), "value", "ilink", HTMLInputElement.prototype);
		record(document.getElementById("ws-qr"), "src", "qr", HTMLImageElement.prototype);
	})()`)
	eval[chromedp.Void](inst, `document.getElementById("workshop-btn").click()`)
	inst.waitJS(`!document.getElementById("workshop-panel").hidden`, 5*time.Second)
	eval[chromedp.Void](inst, `document.getElementById("ws-create").click()`)
	inst.waitJS(`window.ringlab.workshop.role === "instructor" && window.shown.link.length > 0 && window.shown.qr.length > 0`, 10*time.Second)
	inst.waitApplied(0)

	shown := eval[map[string][]string](inst, `window.shown`)
	require.NotEmpty(t, shown["link"])
	for what, vs := range shown {
		for i, v := range vs {
			assert.Contains(t, v, "invite=", "%s number %d the panel showed", what, i+1)
		}
	}
	// The first link admits a student.
	stu := openURL(t, browser(t), shown["link"][0])
	stu.waitJS(`window.ringlab.workshop.role === "student"`, 30*time.Second)
}

// TestJoinLinkBeforeASlowScript: a student's page whose workshop.js
// arrives after the game's first state (a slow fetch on a loaded
// machine) still joins the room of its link. The address follows the
// run from that first state on, so by then the bar holds the run's
// recipe, no longer ?room=...&invite=...: the page reads the address it
// was opened at (once, under two make tests at once, such a page never
// joined).
func TestJoinLinkBeforeASlowScript(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	base := workshopServerWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("GET /workshop.js", func(w http.ResponseWriter, r *http.Request) {
			<-release
			http.ServeFile(w, r, filepath.Join(repoRoot(t), "web", "workshop.js"))
		})
	})
	cr := postRoom(t, base, `{"recipe":"default"}`)
	link := base + "/index.html?room=" + url.QueryEscape(cr.Room) + "&invite=" + url.QueryEscape(cr.Invite)

	ctx := browser(t)
	p := &page{t: t, ctx: ctx, url: link}
	navigated := make(chan error, 1)
	go func() { navigated <- chromedp.Do(timeout(t, ctx, 10*time.Minute), chromedp.Navigate(link)) }()
	// The game's first state, workshop.js still held: the bar has
	// followed the run.
	p.waitJS(`!!document.body && document.body.dataset.ready === "1" && !location.search.includes("room=")`, 2*time.Minute)
	free()
	require.NoError(t, <-navigated)
	p.waitJS(`window.ringlab.workshop && window.ringlab.workshop.role === "student"`, 2*time.Minute)
	p.waitJS(`location.search.includes("room=")`, time.Minute) // and the room is back in the bar
}
