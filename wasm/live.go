//go:build js && wasm

package main

import (
	"math"
	"strconv"
	"strings"

	"ringlab/engine/mem"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
	"ringlab/play"
)

// The live views: a real backend's (or the server's sim source's) rates
// as play.LiveDraw says them. Everything here only reads the frame.

// liveColors are the lines' colours by their play name.
var liveColors = map[string]rgba{
	"rx":       slotColors[virtq.SlotAvail],
	"tx":       hex(0xd29922),
	"sent":     colDim,
	"drop":     colWarn,
	"drop2":    hex(0xdb6d28),
	"drop3":    hex(0xf778ba),
	"host":     hex(0xa371f7),
	"socket":   hex(0xd29922),
	"xdp":      colAccent,
	"pass":     locColors[mem.SKB],
	"xdp_drop": colWarn,
	"xdp_tx":   hex(0xd29922),
	"redirect": locColors[mem.CpumapRing],
	"fast":     locColors[mem.PoolCache],
	"slow":     hex(0xdb6d28),
	"cache":    hex(0x56d4dd),
	"ring":     locColors[mem.PoolRing],
	"release":  colWarn,
}

func liveColor(name string) rgba {
	if c, ok := liveColors[name]; ok {
		return c
	}
	return colText
}

// live draws the live views.
func (d *drawer) live(f *play.Draw) {
	l := f.Live
	d.rect(0, 0, f.W, view.HeaderH-4, colPanel)
	hx := 8 + d.text(8, 4, fit(l.Header, f.W*0.4), colSelect)
	if l.StaleText != "" {
		c := colDim
		if l.Stale {
			c = colWarn
		}
		msg := l.StaleText
		if l.Stale {
			msg = "STALE: " + msg
		}
		d.text(hx+16, 4, fit(msg, f.W-hx-24), c)
	}
	for i, c := range l.Charts {
		if i < len(l.Layout.Charts) {
			d.liveChart(l.Layout.Charts[i], &c, l.Span, l.Stale)
		}
	}
	d.flowIn(l.Layout.Flow, l.Layout.FlowTitle, &l.Flow, &l.FlowKnown, f.Phase, l.XDP)
	d.liveLanes(l.Layout.Lanes, l.Lanes, l.Span)
	d.livePools(l.Layout.Pools, &l.Pools)
	d.liveNotes(l.Layout.Notes, l.Notes)
}

// fmtUnitRate writes a rate in its unit: bytes as B/s, kB/s, MB/s; the
// others as counts per second.
func fmtUnitRate(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	if unit != "bytes" {
		return fmtRate(v)
	}
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + " GB/s"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " MB/s"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " kB/s"
	case v <= 0:
		return "0 B/s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " B/s"
}

// axisTick is the spacing of the time axis's ticks for a span, seconds.
func axisTick(span float64) float64 {
	switch {
	case span <= 60:
		return 10
	case span <= 120:
		return 20
	case span <= 300:
		return 60
	}
	return 120
}

// fmtAgo writes a time before now: "-30s", "-2m", "now".
func fmtAgo(s float64) string {
	switch {
	case s == 0:
		return "now"
	case math.Mod(s, 60) == 0:
		return "-" + strconv.Itoa(int(s/60)) + "m"
	}
	return "-" + strconv.Itoa(int(s)) + "s"
}

// liveChart draws one chart: its title and legend (each line's rate
// now), the plot with its y scale and time axis, and the lines; a twin's
// predictions dashed in their line's colour.
func (d *drawer) liveChart(box view.Rect, c *play.LiveChart, span float64, stale bool) {
	if box.H < 40 || box.W < 80 {
		return
	}
	// The legend: each line's entry, on a second row when the first is
	// full; a line with no room for its entry is not drawn (a line
	// without a label says nothing).
	x, y := box.X, box.Y
	x += d.text(x, y, c.Title+"  ", colText)
	shown := 0
	for _, ln := range c.Lines {
		lbl := ln.Label + " " + fmtUnitRate(ln.Now, c.Unit) + "  "
		if x+16+textWidth(lbl, 1) > box.X+box.W {
			if y > box.Y || box.H < 80 {
				break
			}
			x, y = box.X+8, y+13
		}
		col := liveColor(ln.Color)
		if ln.Predicted {
			d.rect(x+2, y+4, 3, 3, col)
			d.rect(x+7, y+4, 3, 3, col)
		} else {
			d.rect(x+2, y+4, 8, 3, col)
		}
		x += 12
		x += d.text(x, y, lbl, colDim)
		shown++
	}
	lines := c.Lines[:shown]
	box.H -= y - box.Y
	box.Y = y
	const axisH = 13
	plot := view.Rect{X: box.X + 2, Y: box.Y + 15, W: box.W - 4, H: box.H - 15 - axisH}
	if plot.H < 10 {
		return
	}
	d.rect(plot.X, plot.Y+plot.H-1, plot.W, 1, colBorder)
	d.rect(plot.X, plot.Y, 1, plot.H, colBorder)
	// The time axis: a tick and a label every axisTick seconds.
	step := axisTick(span)
	for s := 0.0; s <= span+1e-9; s += step {
		tx := plot.X + plot.W - s/span*plot.W
		d.rect(tx, plot.Y+plot.H-1, 1, 4, colBorder)
		lbl := fmtAgo(s)
		lx := math.Max(plot.X, math.Min(tx-textWidth(lbl, 1)/2, plot.X+plot.W-textWidth(lbl, 1)))
		d.text(lx, plot.Y+plot.H+1, lbl, colFaint)
	}
	if c.Empty != "" {
		y := plot.Y + 8
		for _, l := range wrap(c.Empty, plot.W-16) {
			d.text(plot.X+8, y, l, colDim)
			y += 13
		}
		return
	}
	top := scaleCeil(c.Max)
	if top <= 0 {
		d.text(plot.X+8, plot.Y+plot.H/2-6, "0 so far", colFaint)
		return
	}
	lbl := "max " + fmtUnitRate(top, c.Unit)
	d.text(plot.X+plot.W-textWidth(lbl, 1)-2, plot.Y+1, lbl, colFaint)
	d.rect(plot.X, plot.Y+plot.H/2, plot.W, 1, colEmpty)
	alpha := float32(1)
	if stale {
		alpha = 0.45
	}
	for _, ln := range lines {
		col := liveColor(ln.Color).alpha(alpha)
		if ln.Predicted {
			col = col.mix(colText, 0.25)
		}
		d.liveLine(plot, ln.T, ln.V, span, top, col, ln.Predicted)
	}
}

// scaleCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten: a
// chart's scale, so a steady line sits high in it.
func scaleCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p*1.0001 {
			return m * p
		}
	}
	return 10 * p
}

// liveLine draws points (t seconds before now, rate v) in plot, scaled
// to top; a NaN is a gap. Points closer than a pixel are drawn once.
func (d *drawer) liveLine(plot view.Rect, t, v []float64, span, top float64, c rgba, dashed bool) {
	px, py, have := 0.0, 0.0, false
	seg := 0
	if len(v) == 1 && !math.IsNaN(v[0]) { // one point: a mark where the line will start
		x := plot.X + plot.W + t[0]/span*plot.W
		y := plot.Y + plot.H - 1 - math.Min(v[0], top)/top*(plot.H-2)
		d.rect(x-3, y-1, 3, 3, c)
		return
	}
	for i := range v {
		if math.IsNaN(v[i]) {
			have = false
			continue
		}
		x := plot.X + plot.W + t[i]/span*plot.W
		y := plot.Y + plot.H - 1 - math.Min(v[i], top)/top*(plot.H-2)
		if have && x-px < 1 && i < len(v)-1 {
			continue
		}
		if have {
			if !dashed || seg%2 == 0 {
				d.b.line(d.dst, px, py, x, y, 1.5, c)
			}
			seg++
		}
		px, py, have = x, y, true
	}
}

// liveLanes draws one lane per receive queue: its numbers and a trace of
// the first one over the time axis.
func (d *drawer) liveLanes(r view.Rect, lanes []play.LiveLane, span float64) {
	if r.H < view.SectionTitleH+12 {
		return
	}
	d.title(r, "QUEUES  ("+strconv.Itoa(len(lanes))+" with per-queue counters; per second)")
	if len(lanes) == 0 {
		d.text(r.X, r.Y+view.SectionTitleH+2, "this source has no per-queue counters", colDim)
		return
	}
	y := r.Y + view.SectionTitleH + 2
	laneH := math.Max(16, math.Min(40, (r.H-view.SectionTitleH-4)/float64(len(lanes))))
	for i, ln := range lanes {
		if y+laneH > r.Y+r.H+2 {
			d.text(r.X, y, "+ "+strconv.Itoa(len(lanes)-i)+" more queues", colFaint)
			break
		}
		x := r.X
		x += d.text(x, y+1, "rx"+strconv.Itoa(ln.Queue)+" ", colText)
		for _, n := range ln.Numbers {
			s := n.Label + " " + fmtUnitRate(n.Rate, n.Unit) + "  "
			if x+textWidth(s, 1) > r.X+r.W {
				break
			}
			x += d.text(x, y+1, s, colDim)
		}
		// The trace: under the numbers when the lane is tall enough,
		// else what is left of the line.
		lw := textWidth(ln.TraceLabel, 1) + 8
		tr := view.Rect{X: r.X + lw, Y: y + 14, W: r.W - lw, H: laneH - 16}
		if tr.H < 8 {
			tr = view.Rect{X: x + 8 + lw, Y: y, W: r.X + r.W - x - 8 - lw, H: laneH - 3}
		}
		if tr.W > 40 && len(ln.Trace) > 1 {
			top := 0.0
			for _, v := range ln.Trace {
				if !math.IsNaN(v) {
					top = math.Max(top, v)
				}
			}
			d.rect(tr.X, tr.Y+tr.H-1, tr.W, 1, colBorder)
			d.text(tr.X-textWidth(ln.TraceLabel, 1)-4, tr.Y+tr.H-12, ln.TraceLabel, colFaint)
			if top > 0 {
				d.liveLine(tr, ln.TraceT, ln.Trace, span, scaleCeil(top), colAccent, false)
			}
		}
		y += laneH
	}
}

// livePools draws what the source says of its page pools.
func (d *drawer) livePools(r view.Rect, p *play.LivePools) {
	if r.H < view.SectionTitleH+12 {
		return
	}
	d.title(r, "PAGE POOLS  (netlink page-pool-get)")
	y := r.Y + view.SectionTitleH + 2
	line := func(s string, c rgba) {
		for _, l := range wrap(s, r.W) {
			if y+13 > r.Y+r.H {
				return
			}
			d.text(r.X, y, l, c)
			y += 13
		}
	}
	if p.Listed {
		line(strconv.FormatFloat(p.Pools, 'f', 0, 64)+" pools, "+fmtCount(p.Inflight)+" pages in flight, "+fmtBytes(p.InflightMem)+" in flight", colText)
	} else {
		line("this source lists no page pools", colDim)
	}
	c := colText
	if !p.Stats {
		c = colWarn
	}
	line(p.StatsText, c)
	for _, n := range p.Notes {
		line(n, colDim)
	}
}

// fmtBytes writes a size: 12 KiB, 3.5 MiB.
func fmtBytes(v float64) string {
	switch {
	case v >= 1<<30:
		return strconv.FormatFloat(v/(1<<30), 'f', 2, 64) + " GiB"
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 2, 64) + " MiB"
	case v >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " bytes"
}

// liveNotes draws the source's notes, wrapped: what its numbers mean and
// do not (a twin's, why prediction and measurement differ).
func (d *drawer) liveNotes(r view.Rect, notes []string) {
	if r.H < view.SectionTitleH+12 {
		return
	}
	d.title(r, "NOTES  (from the source)")
	y := r.Y + view.SectionTitleH + 2
	for _, n := range notes {
		for i, l := range wrap(n, r.W-10) {
			if y+13 > r.Y+r.H {
				return
			}
			x := r.X + 10
			if i == 0 {
				d.text(r.X, y, "-", colFaint)
			}
			d.text(x, y, l, colDim)
			y += 13
		}
		y += 3
	}
}

// wrap cuts s into lines of at most w pixels of text, at spaces.
func wrap(s string, w float64) []string {
	n := max(8, int(w/glyphAdv))
	var out []string
	for len(s) > n {
		cut := strings.LastIndexByte(s[:n+1], ' ')
		if cut <= 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = strings.TrimLeft(s[cut:], " ")
	}
	return append(out, s)
}
