//go:build js && wasm

// Command wasm is the browser build of ringlab: the engine compiled to
// WebAssembly and drawn with Ebitengine. Build it with `make wasm`.
package main

import (
	"image/color"
	"log"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"
)

type game struct{ ticks int }

func (g *game) Update() error { g.ticks++; return nil }

func (g *game) Draw(screen *ebiten.Image) {
	screen.Fill(color.RGBA{0x10, 0x14, 0x1c, 0xff})
	ebitenutil.DebugPrint(screen, "ringlab: the engine views arrive with the browser playground")
}

func (g *game) Layout(w, h int) (int, int) { return w, h }

func main() {
	ebiten.SetWindowTitle("ringlab")
	if err := ebiten.RunGame(&game{}); err != nil {
		log.Fatal(err)
	}
}
