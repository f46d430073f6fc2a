package play

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/engine/view"
)

// TestLiveLayoutKeepsEveryView: at the canvas sizes a student has (the
// whole width at 1280 px in live mode, beside the side panel, 800 px
// wide, a tall narrow window), the live views lie on the canvas within the height
// they ask for, none over another; the flow is never smaller than it
// is readable in, so every box shows, and its title is whole.
func TestLiveLayoutKeepsEveryView(t *testing.T) {
	var v [view.NumSeries]float64
	var known [view.NumSeries]bool
	for _, sz := range [][2]float64{{1250, 560}, {898, 560}, {770, 560}, {640, 900}} {
		w, h := sz[0], sz[1]
		l := NewLiveLayout(w, h, len(liveCharts))
		what := fmt.Sprintf("%gx%g", w, h)
		H := max(h, l.WantH)
		rects := map[string]view.Rect{"flow": l.Flow, "queues": l.Lanes, "pools": l.Pools, "notes": l.Notes}
		for i, c := range l.Charts {
			rects[fmt.Sprintf("chart %d", i)] = c
		}
		for n, r := range rects {
			assert.True(t, r.X >= 0 && r.Y >= 0 && r.X+r.W <= w && r.Y+r.H <= H, "%s: %s %+v leaves the canvas (%g high)", what, n, r, H)
			for m, o := range rects {
				if n < m && r.X < o.X+o.W && o.X < r.X+r.W && r.Y < o.Y+o.H && o.Y < r.Y+r.H {
					t.Errorf("%s: %s %+v overlaps %s %+v", what, n, r, m, o)
				}
			}
		}
		assert.GreaterOrEqual(t, l.Flow.W, view.FlowMinW, "%s: the flow's width", what)
		assert.GreaterOrEqual(t, l.Flow.H, view.FlowMinH, "%s: the flow's height", what)
		g := view.NewFlowGeom(l.Flow)
		for n := view.FlowNode(0); n < view.NumFlowNodes; n++ {
			b := g.Nodes[n]
			assert.True(t, b.X >= l.Flow.X && b.X+b.W <= l.Flow.X+l.Flow.W && b.Y+b.H <= l.Flow.Y+l.Flow.H,
				"%s: the flow's %s box %+v leaves the flow %+v", what, n.Label(), b, l.Flow)
		}
		texts := view.FlowTexts(nil, l.Flow, l.FlowTitle, &v, &known, false)
		assert.Equal(t, l.FlowTitle, texts[0].S, "%s: the flow's title, whole", what)
		for i, a := range texts {
			ra := a.Rect()
			assert.True(t, ra.X >= l.Flow.X && ra.X+ra.W <= l.Flow.X+l.Flow.W+0.5, "%s: %q leaves the flow", what, a.S)
			for _, b := range texts[i+1:] {
				rb := b.Rect()
				if ra.X < rb.X+rb.W && rb.X < ra.X+ra.W && ra.Y < rb.Y+rb.H && rb.Y < ra.Y+ra.H {
					t.Errorf("%s: flow text %q overlaps %q", what, a.S, b.S)
				}
			}
		}
		for i, c := range l.Charts {
			assert.GreaterOrEqual(t, c.H, float64(liveMinChartH-8), "%s: chart %d's height", what, i)
		}
	}
}
