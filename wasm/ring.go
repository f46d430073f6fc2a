//go:build js && wasm

package main

import (
	"math"

	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The virtqueue view: the descriptor table, the avail ring and the used
// ring as concentric circles, or as three lines of slots with the whole
// ring under them (engine/view's RingShape says which), with the indices
// of both sides. The texts are engine/view's.

func (d *drawer) ring(pl *view.PaneLayout, s *view.Snapshot, sel view.Target, pane int, rv view.RingView) {
	d.rule(pl.Ring)
	q := &s.Queue
	if q.Size == 0 {
		return
	}
	sh := pl.RingShape(q, rv)
	if sh.Linear {
		d.ringLines(&sh.Line, q, sel, pane)
		return
	}
	g := &sh.Circle
	if g.R < 20 {
		return
	}
	n := q.Size
	gap := 0.0
	if n <= 256 {
		gap = math.Min(0.012, math.Pi/float64(n)*0.12)
	}
	R := g.R
	for i := 0; i < n; i++ {
		a0, a1 := g.Angle(float64(i))+gap, g.Angle(float64(i+1))-gap
		d.b.arc(d.dst, g.CX, g.CY, R*view.DescRing[0], R*view.DescRing[1], a0, a1, slotColor(q.Desc[i].State))
		d.b.arc(d.dst, g.CX, g.CY, R*view.AvailRing[0], R*view.AvailRing[1], a0, a1, availColor(q, i))
		d.b.arc(d.dst, g.CX, g.CY, R*view.UsedRing[0], R*view.UsedRing[1], a0, a1, usedColor(q, i))
	}
	// Chains: a bracket outside the table from each chained descriptor to
	// its next.
	for i := 0; i < n; i++ {
		dv := q.Desc[i]
		if !dv.Chained() || int(dv.Next) >= n {
			continue
		}
		ai := g.Angle(float64(i) + 0.5)
		an := g.Angle(float64(dv.Next) + 0.5)
		c := colText.alpha(0.8)
		if int(dv.Next) == i+1 {
			d.b.arc(d.dst, g.CX, g.CY, R*1.035, R*1.055, ai, an, c)
		} else {
			x0, y0 := g.Point(ai, 1.045)
			x1, y1 := g.Point(an, 1.045)
			d.b.line(d.dst, x0, y0, x1, y1, 1.5, c)
		}
	}
	// Index markers: a tick across the ring at the slot boundary idx mod n.
	tick := func(idx uint16, ring [2]float64, c rgba, out bool) {
		a := g.Angle(float64(int(idx) % n))
		x0, y0 := g.Point(a, ring[0]-0.015)
		x1, y1 := g.Point(a, ring[1]+0.015)
		d.b.line(d.dst, x0, y0, x1, y1, 2.5, c)
		// An arrowhead on the side the index belongs to.
		f := ring[0] - 0.03
		if out {
			f = ring[1] + 0.03
		}
		px, py := g.Point(a, f)
		ax, ay := g.Point(a-0.06, f+sign(out)*0.06)
		bx, by := g.Point(a+0.06, f+sign(out)*0.06)
		d.b.triangle(d.dst, px, py, ax, ay, bx, by, c)
	}
	if q.EventIdx {
		tick(q.AvailEvent, view.AvailRing, colEventIx, false)
		tick(q.UsedEvent, view.UsedRing, colEventIx, false)
	}
	tick(q.LastAvail, view.AvailRing, slotColors[virtq.SlotDevice], false)
	tick(q.AvailIdx, view.AvailRing, colText, true)
	tick(q.LastUsed, view.UsedRing, colText, false)
	tick(q.UsedIdx, view.UsedRing, slotColors[virtq.SlotDevice], true)

	if sel.Pane == pane {
		var ring [2]float64
		switch sel.Kind {
		case view.KindDesc:
			ring = view.DescRing
		case view.KindAvail:
			ring = view.AvailRing
		case view.KindUsed:
			ring = view.UsedRing
		}
		if ring[1] > 0 && sel.Index < n {
			a0, a1 := g.Angle(float64(sel.Index)), g.Angle(float64(sel.Index+1))
			d.b.arc(d.dst, g.CX, g.CY, R*ring[1], R*ring[1]+2, a0, a1, colSelect)
			d.b.arc(d.dst, g.CX, g.CY, R*ring[0]-2, R*ring[0], a0, a1, colSelect)
		}
	}
}

func availColor(q *view.QueueView, i int) rgba {
	if q.AvailLive(i) {
		return slotColors[virtq.SlotAvail]
	}
	return colEmpty
}

func usedColor(q *view.QueueView, i int) rgba {
	if q.UsedLive(i) {
		return slotColors[virtq.SlotUsed]
	}
	return colEmpty
}

// ringLines draws the rings as lines: the window's slots, the chains and
// index markers in it, and the overview of the whole ring.
func (d *drawer) ringLines(g *view.LineGeom, q *view.QueueView, sel view.Target, pane int) {
	n := q.Size
	inner := g.SlotW
	if g.SlotW >= 4 {
		inner = g.SlotW - 1
	}
	for k := 0; k < g.N; k++ {
		s := (g.From + k) % n
		x := g.Rows[0].X + float64(k)*g.SlotW
		cs := [3]rgba{slotColor(q.Desc[s].State), availColor(q, s), usedColor(q, s)}
		for row, c := range cs {
			r := g.Rows[row]
			d.rect(x, r.Y, inner, r.H, c)
		}
		// An index's tick under the rows.
		if s%g.AxisStep == 0 {
			d.rect(x+g.SlotW/2, g.Rows[2].Y+g.Rows[2].H, 1, 3, colDim)
		}
		// A chain to the next slot: a bracket over the table.
		if dv := q.Desc[s]; dv.Chained() && int(dv.Next) < n {
			if pos, in := g.Pos(int(dv.Next)); in {
				x0, x1 := x+g.SlotW/2, g.Rows[0].X+(float64(pos)+0.5)*g.SlotW
				y := g.Rows[0].Y - 3
				d.b.line(d.dst, x0, y, x1, y, 1.2, colText.alpha(0.8))
			}
		}
	}
	// Index markers: a tick across the row at the boundary before idx's
	// slot, its arrowhead above for the driver's, below for the device's.
	tick := func(idx uint16, row int, c rgba, above bool) {
		x, ok := g.BoundaryX(idx)
		if !ok {
			return
		}
		r := g.Rows[row]
		d.b.line(d.dst, x, r.Y-3, x, r.Y+r.H+3, 2.5, c)
		if above {
			d.b.triangle(d.dst, x, r.Y-3, x-4, r.Y-9, x+4, r.Y-9, c)
		} else {
			y := r.Y + r.H + 3
			d.b.triangle(d.dst, x, y, x-4, y+6, x+4, y+6, c)
		}
	}
	if q.EventIdx {
		tick(q.AvailEvent, 1, colEventIx, false)
		tick(q.UsedEvent, 2, colEventIx, false)
	}
	tick(q.LastAvail, 1, slotColors[virtq.SlotDevice], false)
	tick(q.AvailIdx, 1, colText, true)
	tick(q.LastUsed, 2, colText, true)
	tick(q.UsedIdx, 2, slotColors[virtq.SlotDevice], false)
	if sel.Pane == pane {
		kinds := map[view.Kind]bool{view.KindDesc: true, view.KindAvail: true, view.KindUsed: true}
		if kinds[sel.Kind] {
			if r, ok := g.SlotRect(sel.Kind, sel.Index); ok {
				d.b.frame(d.dst, r.X-1, r.Y-1, r.W+1, r.H+2, 1.5, colSelect)
			}
		}
	}
	d.ringOverview(g, q)
}

// ringOverview draws every slot of the three rings across the view's
// width, a pixel column for Size/width slots (a column shows its
// busiest slot), and frames the window.
func (d *drawer) ringOverview(g *view.LineGeom, q *view.QueueView) {
	ov := g.Overview
	n := q.Size
	if ov.W <= 0 || n == 0 {
		return
	}
	rowH := ov.H / 3
	d.rect(ov.X, ov.Y, ov.W, ov.H, colEmpty)
	rank := [...]int{virtq.SlotFree: 0, virtq.SlotAvail: 1, virtq.SlotDevice: 2, virtq.SlotUsed: 3}
	// Runs of one colour are one rectangle.
	type run struct {
		x0 float64
		c  rgba
		on bool
	}
	var runs [3]run
	flush := func(row int, x float64) {
		r := &runs[row]
		if r.on && x > r.x0 {
			d.rect(r.x0, ov.Y+float64(row)*rowH, x-r.x0, rowH-1, r.c)
		}
		r.on = false
	}
	// A column a pixel wide, at most maxOverviewCols of them.
	cols := min(int(math.Ceil(ov.W)), maxOverviewCols)
	colW := ov.W / float64(cols)
	for px := 0; px < cols; px++ {
		a := int(float64(px) / float64(cols) * float64(n))
		b := max(a+1, int(float64(px+1)/float64(cols)*float64(n)))
		best, avail, used := virtq.SlotFree, false, false
		for s := a; s < min(b, n); s++ {
			if st := q.Desc[s].State; int(st) < len(rank) && rank[st] > rank[best] {
				best = st
			}
			avail = avail || q.AvailLive(s)
			used = used || q.UsedLive(s)
		}
		x := ov.X + float64(px)*colW
		cs := [3]rgba{slotColor(best), slotColors[virtq.SlotAvail], slotColors[virtq.SlotUsed]}
		ons := [3]bool{best != virtq.SlotFree, avail, used}
		for row := range runs {
			r := &runs[row]
			if r.on && (!ons[row] || r.c != cs[row]) {
				flush(row, x)
			}
			if ons[row] && !r.on {
				runs[row] = run{x0: x, c: cs[row], on: true}
			}
		}
	}
	for row := range runs {
		flush(row, ov.X+ov.W)
	}
	// The window, framed; it may wrap past the ring's end.
	x0 := g.OverviewX(g.From)
	x1 := g.OverviewX(g.From + g.N)
	end := ov.X + ov.W
	if x1 <= end {
		d.b.frame(d.dst, x0-1, ov.Y-2, max(3, x1-x0+2), ov.H+4, 1, colSelect)
	} else {
		d.b.frame(d.dst, x0-1, ov.Y-2, end-x0+1, ov.H+4, 1, colSelect)
		d.b.frame(d.dst, ov.X, ov.Y-2, max(3, x1-end+1), ov.H+4, 1, colSelect)
	}
	// Where the driver and the device stand.
	for _, m := range []struct {
		idx uint16
		c   rgba
	}{{q.AvailIdx, colText}, {q.UsedIdx, slotColors[virtq.SlotDevice]}} {
		x := g.OverviewX(int(m.idx) % n)
		d.rect(x, ov.Y-3, 1.5, ov.H+6, m.c)
	}
}

// maxOverviewCols bounds the overview's columns whatever the canvas's
// width.
const maxOverviewCols = 2048

func sign(out bool) float64 {
	if out {
		return 1
	}
	return -1
}
