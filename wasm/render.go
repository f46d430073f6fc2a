//go:build js && wasm

package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/engine/view"
	"ringlab/internal/loadmark"
)

func (g *game) Draw(screen *ebiten.Image) {
	g.frames++
	if g.frames == 2 { // the first frame was presented
		loadmark.Mark("frame")
		post(map[string]any{"type": "frame"})
		debug.SetGCPercent(100) // game.html started the runtime with GOGC=1000
		if el := js.Global().Get("document").Call("getElementById", "loading"); el.Truthy() {
			el.Call("remove") // game.html's note, under the canvas
		}
	}
	if g.bench == "empty" {
		return
	}
	// No Fill: Ebitengine clears the screen to black every frame and the
	// views are drawn on black; a coloured background would cost a
	// full-screen pass per frame (software WebGL pays for every pixel).
	g.b.calls = 0
	g.b.scale = float32(max(g.dsf, 1))
	d := &drawer{b: g.b, dst: screen}
	if g.bench == "engine" {
		p := g.sess.Panes[0]
		secs := time.Since(g.benchT0).Seconds()
		d.text(10, 10, fmt.Sprintf("engine bench: xdp-drop flat out, %s simulated in %.1f s of wall time, %s packets/s",
			view.FormatNs(p.Snap.Now), secs, fmtRate(float64(p.World.Received()-g.benchP0)/math.Max(secs, 1e-9))), colText)
		g.b.flush(screen)
		return
	}
	g.header(d)
	for i := range g.layout.Panes {
		if i >= len(g.sess.Panes) {
			break
		}
		p := g.sess.Panes[i]
		pl := &g.layout.Panes[i]
		if pl.Title.W > 0 {
			lbl := []string{"A: ", "B: "}[i] + describe(&p.Config)
			d.rect(pl.Title.X, pl.Title.Y, pl.Title.W, pl.Title.H-2, colPanel)
			d.text(pl.Title.X+4, pl.Title.Y+2, fit(lbl, pl.Title.W-8), colText)
		}
		d.ring(pl, &p.Snap, g.sel, i)
		d.flow(pl, &p.Rates, g.phase, p.Scenario.XDP != nil)
		d.cpus(pl, &p.Snap, &p.Rates, g.sel, i)
		d.pages(pl, &p.Snap, g.sel, i)
		d.rates(pl, &p.Rates)
	}
	g.b.flush(screen)
}

func (g *game) header(d *drawer) {
	p := g.sess.Panes[0]
	s := &p.Snap
	st := "paused"
	if g.playing {
		if g.sess.Speed <= 0 {
			st = "playing, as fast as it goes"
		} else {
			st = fmt.Sprintf("playing, %g events/s", g.sess.Speed)
		}
	}
	if g.sess.Busy() {
		st = "working through commands..."
	}
	line := fmt.Sprintf("ringlab  %s  %s mode   t = %s   %d events   %d packets   %s",
		s.Name, s.Mode, view.FormatNs(s.Now), s.Events, s.Packets, st)
	d.rect(0, 0, float64(g.w), view.HeaderH-4, colPanel)
	d.text(8, 4, fit(line, float64(g.w)-16), colText)
	if s.Err != "" {
		d.text(8, view.HeaderH, "stopped: "+s.Err, colWarn)
	}
}
