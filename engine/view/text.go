package view

import (
	"strconv"
)

// The canvas's text: every line of text a view draws is a Text placed
// by this package, so its rectangle is known before it is drawn (no two
// overlap: view_test.go checks every layout), a hover finds what is
// under the pointer, and a number carries its engine/vocab name.

// Font metrics of the canvas's text: basicfont's 7x13, which the shell
// draws.
const (
	GlyphAdv = 7  // pixels a character advances
	LineH    = 13 // a line of text
	SwatchW  = 12 // a legend row's colour square and its space
)

// TextWidth is the width s takes on the canvas: the shell draws '→' as
// "->" and other runes as one glyph.
func TextWidth(s string) float64 {
	n := 0
	for _, r := range s {
		if r == '→' {
			n += 2
		} else {
			n++
		}
	}
	return float64(n) * GlyphAdv
}

// Fit cuts s to at most w pixels, marking the cut with "..".
func Fit(s string, w float64) string {
	n := int(w / GlyphAdv)
	if len(s) <= n {
		return s
	}
	if n <= 2 {
		return ""
	}
	return s[:n-2] + ".."
}

// Tone is a text's colour role; the shell maps it to its palette.
type Tone uint8

const (
	ToneText   Tone = iota
	ToneDim         // a name beside its value, a caption
	ToneFaint       // what does not apply now
	ToneAccent      // a section's title
	ToneWarn        // something is wrong
	ToneOnSlot      // a number written on a coloured slot
)

// SwatchKind says what a legend row's colour square stands for; Index
// picks which one.
type SwatchKind uint8

const (
	SwatchNone  SwatchKind = iota
	SwatchSlot             // a descriptor's state (virtq.SlotState)
	SwatchLoc              // a page's location (mem.Loc)
	SwatchMark             // a ring index's marker: MarkDriver, MarkDevice, MarkEvent
	SwatchChart            // a chart's line: chart*8 + line
	SwatchEmpty            // an empty slot
)

// The ring index markers' colours (SwatchMark's Index).
const (
	MarkDriver = iota // avail idx, last_used: what the driver moves
	MarkDevice        // last_avail, used idx: what the device moves
	MarkEvent         // used_event, avail_event
)

// Swatch is a legend row's colour square.
type Swatch struct {
	Kind  SwatchKind
	Index int
}

// Text is one line of text on the canvas.
type Text struct {
	X, Y   float64 // the text's top-left corner (a swatch goes in the SwatchW before X)
	S      string
	Tone   Tone
	Swatch Swatch
	Name   string // the engine/vocab name of the number it shows, for hovering
	Help   string // what it is, when Name does not say it
	View   string // the view it belongs to: ring, flow, cpus, pages, rates, title
}

// Rect is the text's rectangle, its swatch included.
func (t *Text) Rect() Rect {
	x, w := t.X, TextWidth(t.S)
	if t.Swatch.Kind != SwatchNone {
		x -= SwatchW
		w += SwatchW
	}
	return Rect{x, t.Y, w, LineH}
}

// Overlaps reports whether r and o share any pixel.
func (r Rect) Overlaps(o Rect) bool {
	return r.X < o.X+o.W && o.X < r.X+r.W && r.Y < o.Y+o.H && o.Y < r.Y+r.H
}

// Within reports whether r lies inside o.
func (r Rect) Within(o Rect) bool {
	const eps = 1e-6
	return r.X >= o.X-eps && r.Y >= o.Y-eps && r.X+r.W <= o.X+o.W+eps && r.Y+r.H <= o.Y+o.H+eps
}

// FormatRate writes a rate per second in at most 7 characters, with 3
// significant digits: 0/s, 840/s, 50.4k/s, 890k/s, 2.56M/s.
func FormatRate(v float64) string {
	if v <= 0 {
		return "0/s"
	}
	return FormatCount(v) + "/s"
}

// FormatCount writes a number in at most 5 characters with 3
// significant digits: 840, 50.4k, 890k, 2.56M, 1.20G.
func FormatCount(v float64) string {
	switch {
	case v < 999.5:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 1e9*999.5:
		for _, u := range []struct {
			div float64
			s   string
		}{{1e3, "k"}, {1e6, "M"}, {1e9, "G"}} {
			x := v / u.div
			if x < 999.5 {
				return sig3(x) + u.s
			}
		}
	}
	return strconv.FormatFloat(v/1e12, 'f', 0, 64) + "T"
}

// sig3 writes x (1 <= x < 999.5) with 3 significant digits.
func sig3(x float64) string {
	switch {
	case x < 9.995:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case x < 99.95:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// texts collects a view's lines within its rectangle: a line that would
// leave it is not drawn.
type texts struct {
	out  []Text
	clip Rect
	view string
}

func (b *texts) add(t Text) bool {
	t.View = b.view
	if t.S == "" {
		return false
	}
	if !t.Rect().Within(b.clip) {
		return false
	}
	b.out = append(b.out, t)
	return true
}

// title adds a section's title: its first line.
func (b *texts) title(r Rect, s string) {
	b.add(Text{X: r.X, Y: r.Y + 1, S: Fit(s, r.W), Tone: ToneAccent})
}
