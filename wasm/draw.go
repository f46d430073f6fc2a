//go:build js && wasm

package main

import (
	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/engine/view"
)

// drawer draws snapshots. It only reads: the session's snapshots and rates
// are filled in Update.
type drawer struct {
	b   *batch
	dst *ebiten.Image
}

func (d *drawer) text(x, y float64, s string, c rgba) float64 { return d.b.text(d.dst, x, y, s, c, 1) }
func (d *drawer) rect(x, y, w, h float64, c rgba)             { d.b.rect(d.dst, x, y, w, h, c) }

// fit cuts s to at most w pixels of text, marking the cut with "..".
func fit(s string, w float64) string {
	n := int(w / glyphAdv)
	if len(s) <= n {
		return s
	}
	if n <= 2 {
		return ""
	}
	return s[:n-2] + ".."
}

// title draws a section title with a rule under it.
func (d *drawer) title(r view.Rect, s string) {
	d.text(r.X, r.Y+1, fit(s, r.W), colAccent)
	d.rect(r.X, r.Y+view.SectionTitleH-3, r.W, 1, colBorder)
}
