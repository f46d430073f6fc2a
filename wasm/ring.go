//go:build js && wasm

package main

import (
	"math"
	"strconv"

	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The virtqueue view: the descriptor table, the avail ring and the used
// ring as concentric rings, with the indices of both sides.

func (d *drawer) ring(pl *view.PaneLayout, s *view.Snapshot, sel view.Target, pane int) {
	q := &s.Queue
	title := "VIRTQUEUE rx" + strconv.Itoa(q.Index) + "  (" + strconv.Itoa(q.Size) + " entries"
	if s.NumQueues > 1 {
		title += ", 1 of " + strconv.Itoa(s.NumQueues) + " queues: [ ] to switch"
	}
	d.title(pl.Ring, title+")")
	g := pl.RingGeom(q.Size)
	if g.R < 20 || q.Size == 0 {
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
		dv := q.Desc[i]
		d.b.arc(d.dst, g.CX, g.CY, R*view.DescRing[0], R*view.DescRing[1], a0, a1, slotColor(dv.State))
		ac := colEmpty
		if q.AvailLive(i) {
			ac = slotColors[virtq.SlotAvail]
		}
		d.b.arc(d.dst, g.CX, g.CY, R*view.AvailRing[0], R*view.AvailRing[1], a0, a1, ac)
		uc := colEmpty
		if q.UsedLive(i) {
			uc = slotColors[virtq.SlotUsed]
		}
		d.b.arc(d.dst, g.CX, g.CY, R*view.UsedRing[0], R*view.UsedRing[1], a0, a1, uc)
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
	// Slot numbers when there is room.
	if n <= 32 {
		for i := 0; i < n; i++ {
			x, y := g.SlotCenter(view.DescRing, i)
			lbl := strconv.Itoa(i)
			d.text(x-textWidth(lbl, 1)/2, y-6, lbl, colBG)
			if q.AvailLive(i) {
				x, y = g.SlotCenter(view.AvailRing, i)
				lbl = strconv.Itoa(int(q.Avail[i]))
				d.text(x-textWidth(lbl, 1)/2, y-6, lbl, colBG)
			}
			if q.UsedLive(i) {
				x, y = g.SlotCenter(view.UsedRing, i)
				lbl = strconv.Itoa(int(q.Used[i].ID))
				d.text(x-textWidth(lbl, 1)/2, y-6, lbl, colBG)
			}
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

	// Centre: the ring names.
	cy := g.CY - 20
	for _, l := range []struct {
		s string
		c rgba
	}{{"desc (outer)", colDim}, {"avail (mid)", colDim}, {"used (inner)", colDim}} {
		if g.R*view.UsedRing[0] > 48 {
			d.text(g.CX-textWidth(l.s, 1)/2, cy, l.s, l.c)
		}
		cy += 13
	}
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

	// The legend: indices, then the state colours.
	lg := g.Legend
	x, y := lg.X, lg.Y+2
	row := func(c rgba, name string, v string) {
		d.rect(x, y+3, 8, 8, c)
		d.text(x+12, y, name, colDim)
		d.text(x+12+textWidth("avail_event ", 1), y, v, colText)
		y += 13
	}
	slot := func(idx uint16) string {
		return strconv.Itoa(int(idx)) + " (" + strconv.Itoa(int(idx)%n) + ")"
	}
	row(colText, "avail idx", slot(q.AvailIdx))
	row(slotColors[virtq.SlotDevice], "last_avail", slot(q.LastAvail))
	row(slotColors[virtq.SlotDevice], "used idx", slot(q.UsedIdx))
	row(colText, "last_used", slot(q.LastUsed))
	if q.EventIdx {
		row(colEventIx, "used_event", slot(q.UsedEvent))
		row(colEventIx, "avail_event", slot(q.AvailEvent))
	}
	row(colEmpty, "num_free", strconv.Itoa(q.NumFree)+" / "+strconv.Itoa(n))
	d.text(x, y, "(n) = slot idx mod "+strconv.Itoa(n), colFaint)
	y += 17
	for st := virtq.SlotFree; st <= virtq.SlotUsed; st++ {
		d.rect(x, y+3, 8, 8, slotColor(st))
		d.text(x+12, y, slotNames[st], colDim)
		y += 13
	}
	y += 4
	state := "host running"
	if q.Starved {
		state = "host starved: waits for a kick"
	}
	lw := lg.W
	d.text(x, y, fit(state, lw), colDim)
	y += 13
	if q.CallbacksOff {
		d.text(x, y, fit("interrupts off (NAPI polls)", lw), colDim)
	} else {
		d.text(x, y, "interrupts on", colDim)
	}
	y += 13
	d.text(x, y, fit("kicks "+strconv.FormatUint(q.Counters.Kicks, 10)+"  irqs "+strconv.FormatUint(q.Counters.Interrupts, 10), lw), colDim)
	if q.Broken != "" {
		d.text(x, y+13, fit("BROKEN: "+q.Broken, lw), colWarn)
	}
}

func sign(out bool) float64 {
	if out {
		return 1
	}
	return -1
}
