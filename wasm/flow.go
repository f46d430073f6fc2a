//go:build js && wasm

package main

import (
	"math"
	"strconv"

	"ringlab/engine/mem"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

// The flow view: packets from the host to a verdict and pages back.
// engine/view places the boxes and the edges (FlowGeom) and writes the
// labels (FlowTexts); this draws them.

// nodeColors colour the flow's boxes.
var nodeColors = [view.NumFlowNodes]rgba{
	view.NodeHost:     colDim,
	view.NodeHostDrop: colWarn,
	view.NodeRing:     slotColors[virtq.SlotAvail],
	view.NodeNAPI:     colAccent,
	view.NodeXDP:      locColors[mem.XDPFrame],
	view.NodeSKB:      locColors[mem.SKB],
	view.NodeDrop:     colWarn,
	view.NodeTx:       locColors[mem.TxQueue],
	view.NodeRedirect: locColors[mem.CpumapRing],
	view.NodeStack:    locColors[mem.SKB],
	view.NodeFree:     colDim,
	view.NodeCache:    locColors[mem.PoolCache],
	view.NodePRing:    locColors[mem.PoolRing],
	view.NodeAlloc:    colDim,
}

// flow draws the simulation's flow: its rates, per simulated second (its
// texts come with the pane's).
func (d *drawer) flow(pl *view.PaneLayout, r *view.Rates, phase float64, xdp bool) {
	v, known := view.FlowLatest(r) // no rate yet: drawn as unknown
	d.flowShapes(pl.Flow, &v, known, phase, xdp)
}

// flowIn draws the flow in fr with its texts: the live view's, whose
// rates are the counters'.
func (d *drawer) flowIn(fr view.Rect, title string, v *[view.NumSeries]float64, known *[view.NumSeries]bool, phase float64, xdp bool) {
	if fr.W <= 0 {
		return
	}
	d.flowShapes(fr, v, known, phase, xdp)
	d.texts(view.FlowTexts(nil, fr, title, v, known, xdp))
}

// flowShapes draws packets moving from the host to a verdict and pages
// going back, in fr: edges as thick as their rate v, carrying dots at a
// speed that grows with it, and the boxes. With known (a live source's
// counters), an edge whose rates no counter gives is drawn faint and
// without dots, and so is a box none of whose edges is known. phase is
// the animation clock (ticks).
func (d *drawer) flowShapes(fr view.Rect, v *[view.NumSeries]float64, known *[view.NumSeries]bool, phase float64, xdp bool) {
	if fr.W <= 0 {
		return
	}
	d.rule(fr)
	g := view.NewFlowGeom(fr)
	rate := func(ss []view.Series) (float64, bool) {
		t, ok := 0.0, known == nil
		for _, s := range ss {
			if known == nil || known[s] {
				t += v[s]
				ok = true
			}
		}
		return t, ok
	}
	var pts [][2]float64
	for i := range view.FlowEdges {
		e := &view.FlowEdges[i]
		rt, ok := rate(e.Series)
		pts = g.Edge(e, pts[:0])
		n := len(pts)
		w := 1.0
		c := colFaint.alpha(0.7)
		if !ok {
			c = colFaint.alpha(0.35)
		} else if rt > 0 {
			w = 1.5 + math.Min(4, math.Log10(1+rt)/1.6)
			c = nodeColors[e.To].alpha(0.6)
		}
		total := 0.0
		for i := 1; i < n; i++ {
			d.b.line(d.dst, pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1], w, c)
			total += math.Hypot(pts[i][0]-pts[i-1][0], pts[i][1]-pts[i-1][1])
		}
		if !ok || rt <= 0 || total == 0 {
			continue
		}
		// Dots: more and faster with the rate (log scale), as flow.
		k := 1 + int(math.Min(5, math.Log10(1+rt)))
		speed := 0.6 * (1 + math.Log10(1+rt)) // pixels per tick
		for j := 0; j < k; j++ {
			dist := math.Mod(phase*speed+float64(j)/float64(k)*total, total)
			for i := 1; i < n; i++ {
				seg := math.Hypot(pts[i][0]-pts[i-1][0], pts[i][1]-pts[i-1][1])
				if dist <= seg {
					f := dist / seg
					x := pts[i-1][0] + (pts[i][0]-pts[i-1][0])*f
					y := pts[i-1][1] + (pts[i][1]-pts[i-1][1])*f
					d.rect(x-2.5, y-2.5, 5, 5, nodeColors[e.To])
					break
				}
				dist -= seg
			}
		}
	}
	_, okN := view.FlowRates(v, known)
	for n := view.FlowNode(0); n < view.NumFlowNodes; n++ {
		b := g.Nodes[n]
		c := nodeColors[n]
		if (n == view.NodeXDP && !xdp) || !okN[n] {
			c = colFaint
		}
		d.rect(b.X, b.Y, b.W, b.H, colPanel)
		d.b.frame(d.dst, b.X, b.Y, b.W, b.H, 1, c)
	}
}

// fmtRate writes a rate per second compactly.
func fmtRate(v float64) string { return view.FormatRate(v) }

func fmtCount(v float64) string {
	switch {
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
