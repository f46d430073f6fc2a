//go:build js && wasm

// Command emptygame is an Ebitengine program that draws nothing, built as
// the playground's wasm is. TestLoadPhases runs it in the page in place of
// the engine: its start is what Ebitengine and the browser cost before any
// of ringlab runs. It keeps the playground's marks (window.ringlabLoad) and
// its "frame" message.
package main

import (
	"syscall/js"

	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/internal/loadmark"
)

type game struct{ ticks, frames int }

func (g *game) Update() error {
	g.ticks++
	if g.ticks == 1 {
		loadmark.Mark("update")
	}
	return nil
}

func (g *game) Draw(*ebiten.Image) {
	g.frames++
	if g.frames == 2 { // the first frame was presented
		loadmark.Mark("frame")
		win := js.Global()
		if p := win.Get("parent"); !p.Equal(win) {
			msg := win.Get("Object").New()
			msg.Set("type", "frame")
			p.Call("postMessage", msg, win.Get("location").Get("origin"))
		}
	}
}

func (g *game) Layout(w, h int) (int, int) { return w, h }

func main() {
	loadmark.Mark("main")
	ebiten.SetRunnableOnUnfocused(true)
	loadmark.Mark("rungame")
	if err := ebiten.RunGame(&game{}); err != nil {
		panic(err)
	}
}
