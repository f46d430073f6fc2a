//go:build js && wasm

package main

import (
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/internal/loadmark"
)

// loadmarkFrame marks the first frame presented and tells the page.
func loadmarkFrame() {
	loadmark.Mark("frame")
	post(map[string]any{"type": "frame"})
}

// benchTick sets window.ringlabBench once a second (and posts it to the
// page in a ?bench= mode): frames and ticks per second, simulated packets
// per second of wall time and of engine time.
func (g *game) benchTick(now time.Time) {
	var packets uint64
	var simNs int64
	if len(g.frame.Panes) > 0 {
		packets, simNs = g.frame.Panes[0].Snap.Packets, g.frame.Panes[0].Snap.Now
	}
	if g.benchT0.IsZero() {
		g.benchT0, g.benchLast = now, now
		g.benchF0, g.benchK = g.frames, g.ticks
		g.benchP0 = packets
		g.engineTime = 0
		return
	}
	if now.Sub(g.benchLast) < time.Second {
		return
	}
	g.benchLast = now
	secs := now.Sub(g.benchT0).Seconds()
	pk := packets - g.benchP0
	obj := map[string]any{
		"mode":       g.ctl.Bench(),
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
		"sim_ns":     simNs,
	}
	js.Global().Set("ringlabBench", js.ValueOf(obj))
	if g.ctl.Bench() != "" {
		post(map[string]any{"type": "bench", "bench": obj})
	}
}
