//go:build js && wasm

package main

import (
	"math"

	"ringlab/engine/mem"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The rates charts: packets, recycling paths and drops per second.

type chartLine struct {
	s     []view.Series
	label string
	c     rgba
}

var charts = []struct {
	title string
	lines []chartLine
}{
	{"packets/s", []chartLine{
		{[]view.Series{view.RxPPS}, "rx", slotColors[virtq.SlotAvail]},
		{[]view.Series{view.Delivered}, "delivered", locColors[mem.SKB]},
		{[]view.Series{view.HostDrops}, "host drop", colWarn},
	}},
	{"recycling/s", []chartLine{
		{[]view.Series{view.RecycleCache}, "cache", locColors[mem.PoolCache]},
		{[]view.Series{view.RecycleRing}, "ptr_ring", locColors[mem.PoolRing]},
		{[]view.Series{view.PageFrees}, "page free", colDim},
		{[]view.Series{view.AllocSlow, view.PageAllocs}, "alloc slow", locColors[mem.CpumapRing]},
	}},
	{"drops/s", []chartLine{
		{[]view.Series{view.XDPDrop}, "XDP_DROP", locColors[mem.XDPFrame]},
		{[]view.Series{view.RxDrops, view.HostDrops}, "rx+host", colWarn},
		{[]view.Series{view.SockDrops}, "socket/map", locColors[mem.TxQueue]},
	}},
}

func (d *drawer) rates(pl *view.PaneLayout, r *view.Rates) {
	rr := pl.Rates
	span := int64(0)
	for i := 0; i < r.Len(); i++ {
		_, dt, _ := r.At(i)
		span += dt
	}
	d.title(rr, "RATES  (last "+view.FormatNs(span)+" of simulated time)")
	body := view.Rect{X: rr.X, Y: rr.Y + view.SectionTitleH, W: rr.W, H: rr.H - view.SectionTitleH}
	ch := body.H / float64(len(charts))
	for ci, cdef := range charts {
		box := view.Rect{X: body.X, Y: body.Y + float64(ci)*ch, W: body.W, H: ch - 4}
		if box.H < 24 {
			break
		}
		plot := view.Rect{X: box.X + 2, Y: box.Y + 14, W: box.W - 4, H: box.H - 16}
		// Axes only: a filled plot area would cost a pass over its pixels.
		d.rect(plot.X, plot.Y+plot.H-1, plot.W, 1, colBorder)
		d.rect(plot.X, plot.Y, 1, plot.H, colBorder)
		vals := func(i int, l chartLine) float64 {
			_, _, v := r.At(i)
			t := 0.0
			for _, s := range l.s {
				t += v[s]
			}
			return t
		}
		top := 0.0
		for i := 0; i < r.Len(); i++ {
			for _, l := range cdef.lines {
				top = math.Max(top, vals(i, l))
			}
		}
		top = niceCeil(top)
		x := box.X
		x += d.text(x, box.Y, cdef.title+" ", colText)
		latest := r.Len() - 1
		for _, l := range cdef.lines {
			v := 0.0
			if latest >= 0 {
				v = vals(latest, l)
			}
			d.rect(x+2, box.Y+4, 8, 3, l.c)
			x += 12
			x += d.text(x, box.Y, l.label+" "+fmtRate(v)+"  ", colDim)
		}
		if top > 0 {
			lbl := "max " + fmtRate(top)
			d.text(plot.X+plot.W-textWidth(lbl, 1)-2, plot.Y+1, lbl, colFaint)
		}
		if r.Len() < 2 || top <= 0 {
			continue
		}
		step := plot.W / (RatesLenF - 1)
		for _, l := range cdef.lines {
			px, py := 0.0, 0.0
			for i := 0; i < r.Len(); i++ {
				xx := plot.X + plot.W - float64(r.Len()-1-i)*step
				yy := plot.Y + plot.H - 1 - vals(i, l)/top*(plot.H-2)
				if i > 0 {
					d.b.line(d.dst, px, py, xx, yy, 1.5, l.c)
				}
				px, py = xx, yy
			}
		}
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
