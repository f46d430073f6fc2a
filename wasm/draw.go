//go:build js && wasm

package main

import (
	"github.com/hajimehoshi/ebiten/v2"

	"ringlab/engine/view"
)

// drawer draws snapshots. It only reads: the session's snapshots and rates
// are filled in Update, and every line of text is placed by engine/view
// (the controller hands the texts over in its Draw).
type drawer struct {
	b   *batch
	dst *ebiten.Image
}

func (d *drawer) text(x, y float64, s string, c rgba) float64 { return d.b.text(d.dst, x, y, s, c, 1) }
func (d *drawer) rect(x, y, w, h float64, c rgba)             { d.b.rect(d.dst, x, y, w, h, c) }

// fit cuts s to at most w pixels of text, marking the cut with "..".
func fit(s string, w float64) string { return view.Fit(s, w) }

// title draws a section title with a rule under it (the live views,
// whose text is not laid out by engine/view).
func (d *drawer) title(r view.Rect, s string) {
	d.text(r.X, r.Y+1, fit(s, r.W), colAccent)
	d.rule(r)
}

// rule draws the line under a section's title.
func (d *drawer) rule(r view.Rect) {
	d.rect(r.X, r.Y+view.SectionTitleH-3, r.W, 1, colBorder)
}

// texts draws laid-out texts, each with its swatch.
func (d *drawer) texts(ts []view.Text) {
	for i := range ts {
		t := &ts[i]
		if t.Swatch.Kind != view.SwatchNone {
			d.rect(t.X-view.SwatchW, t.Y+3, 8, 8, swatchColor(t.Swatch))
		}
		d.text(t.X, t.Y, t.S, toneColor(t.Tone))
	}
}

// tip draws what the pointer hovers, in a box beside it that stays on
// the canvas.
func (d *drawer) tip(t *tipBox, w, h float64) {
	if t == nil || len(t.lines) == 0 {
		return
	}
	tw := 0.0
	for _, l := range t.lines {
		tw = max(tw, view.TextWidth(l))
	}
	bw, bh := tw+12, float64(len(t.lines))*view.LineH+8
	x, y := t.x+14, t.y+18
	if x+bw > w-2 {
		x = max(2, t.x-14-bw)
	}
	if y+bh > h-2 {
		y = max(2, t.y-10-bh)
	}
	d.rect(x, y, bw, bh, colPanel)
	d.b.frame(d.dst, x, y, bw, bh, 1, colDim)
	for i, l := range t.lines {
		c := colDim
		if i == 0 {
			c = colText
		}
		d.text(x+6, y+4+float64(i)*view.LineH, l, c)
	}
}

// tipBox is a tip's lines wrapped to the box's width.
type tipBox struct {
	x, y  float64
	lines []string
}

// maxTipChars is the widest a tip's line goes.
const maxTipChars = 64

func newTipBox(x, y float64, lines []string) *tipBox {
	t := &tipBox{x: x, y: y}
	for _, l := range lines {
		t.lines = append(t.lines, wrap(l, maxTipChars*view.GlyphAdv)...)
	}
	if len(t.lines) > 12 {
		t.lines = append(t.lines[:11], "..")
	}
	return t
}
