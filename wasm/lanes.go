//go:build js && wasm

package main

import (
	"math"

	"ringlab/engine/mem"
	"ringlab/engine/view"
)

// The CPU lanes and the page view (engine/view writes their texts).

func (d *drawer) cpus(pl *view.PaneLayout, s *view.Snapshot, r *view.Rates, sel view.Target, pane int) {
	d.rule(pl.CPUs)
	legend, nl := pl.CPULegend()
	for _, e := range legend[:nl] {
		sw := e.Swatch
		if e.Kind == view.LaneWait { // either task's colour: a wait is drawn in its task's
			d.rect(sw.X, sw.Y, sw.W/2, sw.H, laneColor(view.LaneKsoftirqd))
			d.rect(sw.X+sw.W/2, sw.Y, sw.W-sw.W/2, sw.H, laneColor(view.LaneTask))
			continue
		}
		d.rect(sw.X, sw.Y, sw.W, sw.H, laneColor(e.Kind))
	}
	n := len(s.CPUs)
	for i := 0; i < n; i++ {
		lane := pl.CPULane(i, n)
		if lane.H < 8 {
			break
		}
		c := &s.CPUs[i]
		util := c.Util
		if r.Ready() { // a share of a few µs is no share
			if u := r.Util(r.Len() - 1); i < len(u) {
				util = u[i]
			}
		}
		g := view.CPULaneGeom(lane)
		bar := g.Bar
		d.rect(bar.X, bar.Y, bar.W, bar.H, colEmpty)
		uc := colAccent
		if util > 0.9 {
			uc = colWarn
		}
		d.rect(bar.X, bar.Y, bar.W*util, bar.H, uc)
		if g.Timeline.W > 0 {
			d.timeline(&g, c)
		}
		if sel.Pane == pane && sel.Kind == view.KindCPU && sel.Index == i {
			d.b.frame(d.dst, lane.X-2, lane.Y, lane.W+2, lane.H, 1, colSelect)
		}
	}
}

// timeline draws who ran when on a CPU over the lane's window: the
// tasks' chunks, the interrupt work over them, the waits in the thin row
// under them, each in its kind's colour (a wait in its task's).
func (d *drawer) timeline(g *view.LaneGeom, c *view.CPUView) {
	run, from := g.Run, c.LaneFrom
	d.rect(run.X, run.Y, run.W, run.H, colEmpty) // idle
	// A faint mark every LaneTickNs back from now, under the slices.
	for t := from + view.LaneWindowNs - view.LaneTickNs; t > from; t -= view.LaneTickNs {
		d.rect(math.Round(g.X(t, from)), run.Y, 1, run.H, colBorder)
	}
	for pass := 0; pass < 2; pass++ { // the tasks, then the interrupt work and the steal over them
		for k := range c.Lane {
			l := &c.Lane[k]
			if l.Kind == view.LaneWait || l.Kind.Over() != (pass == 1) {
				continue
			}
			col := laneColor(l.Kind)
			if l.BH && l.Kind == view.LaneTask {
				col = col.mix(colBG, 0.35) // the cpumap kthread's batch
			}
			x, w := g.Span(l, from)
			d.rect(x, run.Y, w, run.H, col)
		}
	}
	for k := range c.Lane {
		if l := &c.Lane[k]; l.Kind == view.LaneWait {
			x, w := g.Span(l, from)
			d.rect(x, g.Wait.Y, w, g.Wait.H, laneColor(l.Of))
		}
	}
}

// RatesLenF is view.RatesLen as a float.
const RatesLenF = float64(view.RatesLen)

func (d *drawer) pages(pl *view.PaneLayout, s *view.Snapshot, sel view.Target, pane int) {
	d.rule(pl.Pages)
	pv := &s.Pages
	g := pl.PagesGeom(pv)
	if g.Cols == 0 {
		return
	}
	// A tile per page of the touched part of memory.
	t := g.Tile
	inner := t
	if t >= 5 {
		inner = t - 1
	}
	for id := 0; id < g.Shown && id < len(pv.Map); id++ {
		c, r := id%g.Cols, id/g.Cols
		d.rect(g.Tiles.X+float64(c)*t, g.Tiles.Y+float64(r)*t, inner, inner, locColor(pv.Map[id]))
	}
	if sel.Pane == pane && sel.Kind == view.KindPage && sel.Index < g.Shown {
		tr := g.TileRect(sel.Index)
		d.b.frame(d.dst, tr.X-2, tr.Y-2, tr.W+3, tr.H+3, 2, colSelect)
	}
	// The strip: all of memory, one pixel per N/width pages.
	st := g.Strip
	d.rect(st.X, st.Y, st.W, st.H, locColor(mem.Buddy))
	if pv.N > 0 && st.W > 0 {
		per := float64(pv.N) / st.W
		limit := min(pv.Span, len(pv.Map))
		for px := 0; float64(px) < st.W; px++ {
			a := int(float64(px) * per)
			if a >= limit {
				break
			}
			b := min(int(float64(px+1)*per), limit)
			loc := mem.Buddy
			for id := a; id < b; id++ {
				if pv.Map[id] != mem.Buddy {
					loc = pv.Map[id]
					break
				}
			}
			if loc != mem.Buddy {
				d.rect(st.X+float64(px), st.Y, 1, st.H, locColor(loc))
			}
		}
		// Where the tiles end.
		ex := st.X + math.Min(st.W, float64(g.Shown)/float64(pv.N)*st.W)
		d.rect(ex, st.Y-2, 1, st.H+4, colText)
	}
}
