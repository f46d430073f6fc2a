package play

import (
	"fmt"
	"strings"
)

// The transcripts' lines for the view (view.go): the ring view when it is
// not the default circle, the tip, and the layout reply's form and texts.

// printViewState writes the state's view when the ring is drawn as lines
// or the person chose a mode.
func printViewState(b *strings.Builder, v *ViewOut) {
	if v == nil || (v.Ring == "circle" && v.Mode == "auto") {
		return
	}
	fmt.Fprintf(b, "  view: ring %s (asked %s)", v.Ring, v.Mode)
	if v.Ring == "linear" {
		follow := "fixed"
		if v.Following {
			follow = "following"
		}
		fmt.Fprintf(b, ", %d slots from %d of %d, %s", v.Slots, v.From, v.Size, follow)
	}
	fmt.Fprintf(b, "; canvas %s, wants %.0f high\n", v.Form, v.WantH)
}

// printViewDraw writes how pane A's ring is drawn when it is lines, and
// the tip.
func printViewDraw(b *strings.Builder, d *Draw) {
	if d.Layout != nil && d.W > 0 && len(d.Panes) > 0 && len(d.Layout.Panes) > 0 {
		sh := d.Layout.Panes[0].RingShape(&d.Panes[0].Snap.Queue, d.Layout.Ring)
		if sh.Linear {
			g := &sh.Line
			fmt.Fprintf(b, "ring lines: slots %d..%d of %d, %.1f px a slot, an index every %d\n", g.From, (g.From+g.N-1)%g.Size, g.Size, g.SlotW, g.AxisStep)
		}
	}
	if t := d.Tip; t != nil {
		fmt.Fprintf(b, "tip at (%.0f, %.0f):\n", t.X, t.Y)
		for _, l := range t.Lines {
			fmt.Fprintf(b, "  %s\n", l)
		}
	}
}

// printLayoutTexts writes the layout reply's form and how many texts
// each view draws.
func printLayoutTexts(b *strings.Builder, m *LayoutOut) {
	per := map[string]int{}
	var names []string
	for _, t := range m.Texts {
		k := fmt.Sprintf("%c.%s", 'A'+t.Pane, t.View)
		if per[k] == 0 {
			names = append(names, k)
		}
		per[k]++
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, per[n]))
	}
	fmt.Fprintf(b, "  form %s, wants %.0f high; texts: %s\n", m.Form, m.WantH, strings.Join(parts, ", "))
}
