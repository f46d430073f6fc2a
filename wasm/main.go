//go:build js && wasm

// Command wasm is the browser build of ringlab: the engine compiled to
// WebAssembly and drawn with Ebitengine, inside web/game.html. The host
// page (web/index.html) drives it with postMessage; web/README.md lists
// the messages. Build it with `make wasm`.
//
// Update advances the engine by the chosen speed and refreshes the
// snapshots (engine/view); Draw only reads them. With ?bench=empty Draw
// draws nothing, with ?bench=view it draws the default view, and
// window.ringlabBench holds frames and ticks per second, so the cost of
// drawing is a ratio of two runs; ?bench=engine runs the xdp-drop preset
// flat out and reports simulated packets per wall second.
package main

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/engine/view"
	"ringlab/internal/loadmark"
)

// Time budgets of one tick (ebiten runs 60 ticks a second).
const (
	minBudget    = 4 * time.Millisecond  // engine work per tick while viewing, at least
	maxBudget    = 40 * time.Millisecond // and at most (when frames are slow)
	maxTickGap   = 250 * time.Millisecond
	benchBudget  = 400 * time.Millisecond // engine work per tick in ?bench=engine: flat out, a few frames a second
	workChunk    = 256                    // events between two looks at the clock
	statePeriod  = 125 * time.Millisecond
	recordPeriod = 250 * time.Millisecond
)

type game struct {
	sess    *view.Session
	playing bool
	acc     float64 // fractional events owed to the speed
	in      inbox
	bench   string

	w, h   int     // canvas size in CSS pixels: the layout's units
	dsf    float64 // device scale factor: screen pixels per CSS pixel
	ncpu   int
	layout view.Layout
	snaps  []*view.Snapshot
	b      *batch
	phase  float64

	lastTick time.Time
	tickGap  time.Duration // wall time since the previous tick

	sel        view.Target
	selChanged bool
	lastState  time.Time
	lastRecord time.Time
	force      bool
	err        string
	syncs      []int // ids of sync requests waiting for the work to end

	// Benchmark counters.
	frames, ticks   uint64
	benchT0         time.Time
	benchF0, benchK uint64
	benchP0         uint64
	benchLast       time.Time
	engineTime      time.Duration // wall time spent running the engine
}

func main() {
	loadmark.Mark("main")
	g := &game{b: newBatch(), lastState: time.Now()}
	q := js.Global().Get("location").Get("search").String()
	vals, _ := url.ParseQuery(strings.TrimPrefix(q, "?"))
	g.bench = vals.Get("bench")
	switch g.bench {
	case "", "empty", "view", "engine":
	default:
		g.err = fmt.Sprintf("unknown bench mode %q (empty, view, engine)", g.bench)
		g.bench = ""
	}
	st, err := view.DecodeState(q)
	if err != nil {
		g.err = "this link does not describe a run: " + err.Error()
		st = view.State{A: view.DefaultConfig(), Speed: -1}
	}
	if g.bench == "engine" {
		st = view.State{A: view.Config{Preset: "xdp-drop"}, Speed: 0}
	}
	if g.sess, err = view.NewSession(st); err != nil {
		g.err = "cannot start this run: " + err.Error()
		g.sess, _ = view.NewSession(view.State{A: view.DefaultConfig(), Speed: -1})
	}
	loadmark.Mark("session")
	// A bare link starts playing; a link with a log shows exactly where
	// the sender stopped.
	g.playing = len(st.Log) == 0
	g.in.listen()
	g.postReady()
	if g.err != "" {
		post(map[string]any{"type": "error", "source": "url", "message": g.err})
	}

	// Let the page take the first messages before Ebitengine's start
	// (WebGL, shaders) holds the thread the two documents share.
	g.sess.Refresh()
	g.postState()
	time.Sleep(10 * time.Millisecond)

	ebiten.SetWindowTitle("ringlab")
	ebiten.SetRunnableOnUnfocused(true)
	loadmark.Mark("rungame")
	if err := ebiten.RunGame(g); err != nil {
		post(map[string]any{"type": "error", "source": "game", "message": err.Error()})
	}
}

func (g *game) Update() error {
	g.ticks++
	if g.ticks == 1 {
		loadmark.Mark("update")
	}
	g.handleMessages()
	now0 := time.Now()
	if !g.lastTick.IsZero() {
		g.tickGap = min(now0.Sub(g.lastTick), maxTickGap)
	}
	g.lastTick = now0
	// The engine may use a third of the time between ticks: 5.5 ms at 60
	// ticks a second, more when slow frames (software WebGL) space the
	// ticks out, so "as fast as it goes" keeps its meaning.
	deadline := now0.Add(min(max(minBudget, g.tickGap/3), maxBudget))
	if g.bench == "engine" {
		deadline = time.Now().Add(benchBudget)
	}
	t0 := time.Now()
	defer func() { g.engineTime += time.Since(t0) }()
	// Queued commands first (steps, a replay, the second world catching up).
	for g.sess.Busy() && time.Now().Before(deadline) {
		if g.sess.Work(workChunk) == 0 && !g.sess.Busy() {
			break
		}
		g.force = g.force || !g.sess.Busy()
	}
	if g.playing && !g.sess.Busy() {
		g.play(deadline)
	}
	if g.sess.Refresh() {
		g.selChanged = true
	}
	g.snaps = g.snaps[:0]
	for _, p := range g.sess.Panes {
		g.snaps = append(g.snaps, &p.Snap)
	}
	if g.sess.Panes[0].World.Err() != nil && g.playing {
		g.playing = false
		g.force = true
	}
	g.phase++
	now := time.Now()
	if g.force || now.Sub(g.lastState) >= statePeriod || (len(g.syncs) > 0 && !g.sess.Busy()) {
		g.postState()
		g.lastState, g.force = now, false
	}
	if len(g.syncs) > 0 && !g.sess.Busy() {
		for _, id := range g.syncs {
			post(map[string]any{"type": "synced", "id": id})
		}
		g.syncs = g.syncs[:0]
	}
	if g.sel.Kind != view.KindNone && g.selChanged && now.Sub(g.lastRecord) >= recordPeriod {
		g.postRecord(g.sel, "live", 0)
		g.lastRecord, g.selChanged = now, false
	}
	g.benchTick(now)
	return nil
}

// play runs the events the speed owes this tick (all it can before the
// deadline at speed 0).
func (g *game) play(deadline time.Time) {
	var want uint64
	if g.sess.Speed <= 0 {
		want = math.MaxUint64
	} else {
		// Events owed for the wall time since the last tick: the speed holds
		// whatever the tick rate.
		g.acc += g.sess.Speed * g.tickGap.Seconds()
		want = uint64(g.acc)
		g.acc -= float64(want)
	}
	for want > 0 && time.Now().Before(deadline) {
		n := g.sess.Play(min(want, workChunk), workChunk)
		if n == 0 {
			if g.sess.Stopped() != nil || !g.sess.Pending() {
				break
			}
		}
		want -= uint64(n)
		if g.sess.Busy() { // the second world follows
			g.sess.Work(workChunk)
		}
	}
	if want > 0 && g.sess.Speed > 0 {
		g.acc = 0 // too slow to keep up: do not pile up a debt
	}
}

// click inspects what is drawn at (x, y), in canvas pixels.
func (g *game) Layout(w, h int) (int, int) {
	n := len(g.sess.Panes)
	ncpu := 1
	for _, p := range g.sess.Panes {
		ncpu = max(ncpu, p.Scenario.CPUs)
	}
	if w != g.w || h != g.h || len(g.layout.Panes) != n || ncpu != g.ncpu {
		g.w, g.h, g.ncpu = w, h, ncpu
		g.layout = view.NewLayout(float64(w), float64(h), n, ncpu)
	}
	// The screen has a pixel per device pixel; Draw scales the layout.
	g.dsf = ebiten.Monitor().DeviceScaleFactor()
	if g.dsf < 1 {
		g.dsf = 1
	}
	return int(math.Ceil(float64(w) * g.dsf)), int(math.Ceil(float64(h) * g.dsf))
}
