//go:build js && wasm

// Command wasm is the browser build of ringlab, inside web/game.html: the
// Ebitengine shell around the playground's controller (package play) and
// the postMessage bridge to the host page (web/index.html; web/README.md
// lists the messages). It holds no logic of the playground: it passes the
// page's messages to the controller undecoded, tells it the wall time of
// each tick, runs its work until the tick's time budget is spent, posts
// what its Ready says to send (and nothing else of the controller's) and
// draws what it says to draw (the engine/view snapshots, or the live
// views of play.LiveDraw, in batches: one DrawTriangles per layer,
// batch.go). Build it with `make wasm`; Go optimises it with the
// default.pgo beside this file, a CPU profile of the engine's preset
// benchmarks that `make pgo` remakes.
//
// With ?bench=empty Draw draws nothing, with ?bench=view it draws the
// default view, and window.ringlabBench holds frames and ticks per second,
// so the cost of drawing is a ratio of two runs; ?bench=engine runs the
// xdp-drop preset flat out and reports simulated packets per wall second.
package main

import (
	"math"
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/internal/loadmark"
	"ringlab/play"
)

type game struct {
	ctl   *play.Controller
	in    inbox
	frame play.Draw // what the last tick said to draw
	b     *batch
	dsf   float64 // device scale factor: screen pixels per CSS pixel

	lastTick time.Time

	// drawn counts the frames drawn (not kept: play.Draw.Same), and
	// atRest says the last tick kept its picture; both are on the game's
	// window (ringlabDrawn, ringlabAtRest) for tests that wait until the
	// canvas shows what the page says.
	drawn  int
	atRest bool
	// shown says frame is on the screen already: Ebitengine may call
	// Draw again before the next Update (its frames and ticks are not
	// one to one), and the picture it holds is still right.
	shown bool

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
	g := &game{b: newBatch()}
	g.ctl = play.New(js.Global().Get("location").Get("search").String())
	loadmark.Mark("session")
	g.in.listen()
	// Let the page take the first messages (the controller's greeting)
	// before Ebitengine's start (WebGL, shaders) holds the thread the two
	// documents share.
	postAll(g.ctl.Ready().Send)
	time.Sleep(10 * time.Millisecond)

	ebiten.SetWindowTitle("ringlab")
	ebiten.SetRunnableOnUnfocused(true)
	// Draw clears the screen itself when it draws, and leaves the last
	// picture when the controller says nothing changed (play.Draw.Same).
	ebiten.SetScreenClearedEveryFrame(false)
	loadmark.Mark("rungame")
	if err := ebiten.RunGame(g); err != nil {
		postAll([]play.Out{play.ErrorOut{Source: "game", Message: err.Error()}})
	}
}

// Update hands the page's messages to the controller, runs its work for
// at most a third of the time between ticks, and posts what its Ready
// has for the page.
func (g *game) Update() error {
	g.ticks++
	if g.ticks == 1 {
		loadmark.Mark("update")
	}
	for _, q := range g.in.take() {
		q.step(g.ctl)
	}
	now0 := time.Now()
	var gap time.Duration
	if !g.lastTick.IsZero() {
		gap = min(now0.Sub(g.lastTick), play.MaxTickGapNS)
	}
	g.lastTick = now0
	g.ctl.Tick(gap.Nanoseconds())
	deadline := now0.Add(time.Duration(g.ctl.WorkBudget(gap.Nanoseconds())))
	for time.Now().Before(deadline) && g.ctl.Work(play.WorkChunk) {
	}
	g.engineTime += time.Since(now0)
	f := g.ctl.Ready()
	g.frame, g.shown = f.Draw, false
	postAll(f.Send)
	g.benchTick(time.Now())
	return nil
}

// Layout tells the controller the canvas's size in CSS pixels; the screen
// has a pixel per device pixel and Draw scales the layout.
func (g *game) Layout(w, h int) (int, int) {
	g.ctl.Step(play.Resize{W: float64(w), H: float64(h)})
	g.dsf = max(ebiten.Monitor().DeviceScaleFactor(), 1)
	return int(math.Ceil(float64(w) * g.dsf)), int(math.Ceil(float64(h) * g.dsf))
}
