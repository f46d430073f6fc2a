//go:build js && wasm

package main

import (
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
)

func (g *game) benchTick(now time.Time) {
	if g.benchT0.IsZero() {
		g.benchT0, g.benchLast = now, now
		g.benchF0, g.benchK = g.frames, g.ticks
		g.benchP0 = g.sess.Panes[0].World.Received()
		g.engineTime = 0
		return
	}
	if now.Sub(g.benchLast) < time.Second {
		return
	}
	g.benchLast = now
	secs := now.Sub(g.benchT0).Seconds()
	pk := g.sess.Panes[0].World.Received() - g.benchP0
	obj := map[string]any{
		"mode":       g.bench,
		"seconds":    secs,
		"frames":     g.frames - g.benchF0,
		"ticks":      g.ticks - g.benchK,
		"fps":        float64(g.frames-g.benchF0) / secs,
		"tps":        float64(g.ticks-g.benchK) / secs,
		"actual_fps": ebiten.ActualFPS(),
		"actual_tps": ebiten.ActualTPS(),
		"draw_calls": g.b.calls,
		"sim_pps":    float64(pk) / secs,
		"engine_pps": float64(pk) / g.engineTime.Seconds(),
		"sim_ns":     int64(g.sess.Panes[0].World.Now()),
	}
	js.Global().Set("ringlabBench", js.ValueOf(obj))
	if g.bench != "" {
		post(map[string]any{"type": "bench", "bench": obj})
	}
}
