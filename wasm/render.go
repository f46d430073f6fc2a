//go:build js && wasm

package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"runtime/debug"
	"syscall/js"
	"time"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/engine/view"
	"ringlab/play"
)

// Draw draws what the last tick's play.Draw holds, and nothing else.
func (g *game) Draw(screen *ebiten.Image) {
	defer g.answerCaptures(screen)
	g.frames++
	if g.frames == 2 { // the first frame was presented
		loadmarkFrame()
		debug.SetGCPercent(100) // game.html started the runtime with GOGC=1000
		if el := js.Global().Get("document").Call("getElementById", "loading"); el.Truthy() {
			el.Call("remove") // game.html's note, under the canvas
		}
	}
	bench := g.ctl.Bench()
	if bench == "empty" {
		screen.Clear() // Ebitengine's own cost of a frame, presented
		return
	}
	f := &g.frame
	if f.Same != g.atRest {
		g.atRest = f.Same
		js.Global().Set("ringlabAtRest", f.Same)
	}
	if f.Same || g.shown {
		// Nothing changed since the last picture, which the screen still
		// holds (main turns Ebitengine's clearing off): after a few such
		// frames Ebitengine stops presenting, and a page at rest costs
		// next to no CPU.
		return
	}
	g.shown = true
	// Clear, no Fill: the views are drawn on black; a coloured background
	// would cost another full-screen pass per frame (software WebGL pays
	// for every pixel).
	screen.Clear()
	g.drawn++
	js.Global().Set("ringlabDrawn", g.drawn)
	g.b.calls = 0
	g.b.scale = float32(max(g.dsf, 1))
	d := &drawer{b: g.b, dst: screen}
	if f.Layout == nil || len(f.Panes) == 0 {
		return
	}
	if bench == "engine" {
		s := f.Panes[0].Snap
		secs := time.Since(g.benchT0).Seconds()
		d.text(10, 10, fmt.Sprintf("engine bench: xdp-drop flat out, %s simulated in %.1f s of wall time, %s packets/s",
			view.FormatNs(s.Now), secs, fmtRate(float64(s.Packets-g.benchP0)/math.Max(secs, 1e-9))), colText)
		g.b.flush(screen)
		return
	}
	if f.Live != nil {
		d.live(f)
		g.b.flush(screen)
		return
	}
	header(d, f)
	for i := range f.Layout.Panes {
		if i >= len(f.Panes) {
			break
		}
		p := &f.Panes[i]
		pl := &f.Layout.Panes[i]
		if pl.Title.W > 0 {
			d.rect(pl.Title.X, pl.Title.Y, pl.Title.W, pl.Title.H-2, colPanel)
			d.text(pl.Title.X+4, pl.Title.Y+2, fit(p.Label, pl.Title.W-8), colText)
		}
		d.ring(pl, p.Snap, f.Sel, i, f.Layout.Ring)
		d.flow(pl, p.Rates, f.Phase, p.XDP)
		d.cpus(pl, p.Snap, p.Rates, f.Sel, i)
		d.pages(pl, p.Snap, f.Sel, i)
		d.rates(pl, p.Rates)
		d.texts(p.Texts)
	}
	if t := f.Tip; t != nil {
		d.tip(newTipBox(t.X, t.Y, t.Lines), f.W, f.H)
	}
	g.b.flush(screen)
}

func header(d *drawer, f *play.Draw) {
	d.rect(0, 0, f.W, view.HeaderH-4, colPanel)
	if f.Stopped != "" {
		// In the header's line, not over the first view's title: a
		// stopped world's header has nothing more urgent to say.
		d.text(8, 4, fit("stopped: "+f.Stopped, f.W-16), colWarn)
		return
	}
	d.text(8, 4, fit(f.Header, f.W-16), colText)
}

// answerCaptures posts the frame just drawn as a PNG to each capture
// request waiting (web/README.md, "capture"): the canvas is WebGL without
// preserveDrawingBuffer, so the page cannot read it after the frame.
func (g *game) answerCaptures(screen *ebiten.Image) {
	ids := g.in.takeCaptures()
	if len(ids) == 0 {
		return
	}
	b := screen.Bounds()
	img := image.NewRGBA(b)
	screen.ReadPixels(img.Pix)
	var buf bytes.Buffer
	msg := map[string]any{"type": "capture"}
	if err := png.Encode(&buf, img); err != nil {
		msg["type"], msg["source"], msg["message"] = "error", "capture", err.Error()
	} else {
		arr := js.Global().Get("Uint8Array").New(buf.Len())
		js.CopyBytesToJS(arr, buf.Bytes())
		msg["png"], msg["w"], msg["h"] = arr, b.Dx(), b.Dy()
	}
	win := js.Global()
	parent := win.Get("parent")
	if parent.IsUndefined() || parent.Equal(win) {
		return
	}
	for _, id := range ids {
		obj := js.Global().Get("Object").New()
		for k, v := range msg {
			obj.Set(k, v)
		}
		if id != 0 {
			obj.Set("id", id)
		}
		parent.Call("postMessage", obj, win.Get("location").Get("origin"))
	}
}
