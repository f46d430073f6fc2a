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

type flowNode struct {
	label string
	x, y  float64 // fractions of the flow rectangle
	c     rgba
}

const (
	nHost = iota
	nHostDrop
	nRing
	nNAPI
	nXDP
	nSKB
	nDrop
	nTx
	nRedirect
	nStack
	nFree
	nCache
	nPRing
	nAlloc
	numNodes
)

var flowNodes = [numNodes]flowNode{
	nHost:     {"host", 0.03, 0.24, colDim},
	nHostDrop: {"host drop", 0.03, 0.50, colWarn},
	nRing:     {"rx ring", 0.20, 0.24, slotColors[virtq.SlotAvail]},
	nNAPI:     {"NAPI", 0.37, 0.24, colAccent},
	nXDP:      {"XDP", 0.53, 0.24, locColors[mem.XDPFrame]},
	nSKB:      {"skb (PASS)", 0.71, 0.04, locColors[mem.SKB]},
	nDrop:     {"DROP", 0.71, 0.24, colWarn},
	nTx:       {"TX", 0.71, 0.44, locColors[mem.TxQueue]},
	nRedirect: {"REDIRECT", 0.71, 0.64, locColors[mem.CpumapRing]},
	nStack:    {"stack", 0.93, 0.04, locColors[mem.SKB]},
	nFree:     {"free", 0.93, 0.44, colDim},
	nCache:    {"pool cache", 0.20, 0.96, locColors[mem.PoolCache]},
	nPRing:    {"ptr_ring", 0.45, 0.96, locColors[mem.PoolRing]},
	nAlloc:    {"page allocator", 0.71, 0.96, colDim},
}

// busY is the height of the return path's bus, as a fraction.
const busY = 0.82

type flowEdge struct {
	from, to int
	s        []view.Series
	via      [][2]float64 // waypoints between the nodes, as fractions
	pages    bool         // carries pages to the ring, not packets: not in the ring's rate
}

var flowEdges = []flowEdge{
	{nHost, nRing, []view.Series{view.HostPPS}, nil, false},
	{nHost, nHostDrop, []view.Series{view.HostDrops}, nil, false},
	{nRing, nNAPI, []view.Series{view.RxPPS}, nil, false},
	{nNAPI, nXDP, []view.Series{view.XDPPass, view.XDPDrop, view.XDPTx, view.XDPRedirect}, nil, false},
	{nNAPI, nSKB, []view.Series{view.NoXDP}, [][2]float64{{0.37, 0.04}}, false},
	{nXDP, nSKB, []view.Series{view.XDPPass}, [][2]float64{{0.60, 0.04}}, false},
	{nXDP, nDrop, []view.Series{view.XDPDrop}, nil, false},
	{nXDP, nTx, []view.Series{view.XDPTx}, [][2]float64{{0.60, 0.44}}, false},
	{nXDP, nRedirect, []view.Series{view.XDPRedirect}, [][2]float64{{0.60, 0.64}}, false},
	{nSKB, nStack, []view.Series{view.NoXDP, view.XDPPass}, nil, false},
	{nStack, nFree, []view.Series{view.Delivered}, nil, false},
	{nDrop, nFree, []view.Series{view.XDPDrop}, [][2]float64{{0.83, 0.24}, {0.83, 0.44}}, false},
	{nTx, nFree, []view.Series{view.XDPTx}, nil, false},
	{nRedirect, nFree, []view.Series{view.RedirectFree}, [][2]float64{{0.83, 0.64}, {0.83, 0.44}}, false},
	{nRedirect, nStack, []view.Series{view.CpumapPass}, [][2]float64{{0.71, 0.76}, {0.87, 0.76}, {0.87, 0.04}}, false},
	{nFree, nAlloc, []view.Series{view.PageFrees}, [][2]float64{{0.93, busY}, {0.71, busY}}, false},
	{nFree, nPRing, []view.Series{view.RecycleRing}, [][2]float64{{0.93, busY}, {0.45, busY}}, false},
	{nFree, nCache, []view.Series{view.RecycleCache}, [][2]float64{{0.93, busY}, {0.24, busY}, {0.24, 0.96}}, false},
	{nPRing, nCache, []view.Series{view.RecycleRing}, nil, false}, // refilled from the ring: in the long run what went in
	{nCache, nRing, []view.Series{view.AllocFast}, nil, true},
	{nAlloc, nRing, []view.Series{view.PageAllocs}, [][2]float64{{0.71, 0.90}, {0.14, 0.90}, {0.14, 0.30}}, true},
}

// flow draws the simulation's flow: its rates, per simulated second.
func (d *drawer) flow(pl *view.PaneLayout, r *view.Rates, phase float64, xdp bool) {
	v := r.Latest()
	d.flowIn(pl.Flow, "FLOW  (per simulated second, averaged over "+view.FormatNs(view.SmoothNs)+")", &v, nil, phase, xdp)
}

// flowIn draws packets moving from the host to a verdict and pages going
// back, in fr; edges are as thick as their rate v and carry dots at a
// speed that grows with it. With known (a live source's counters), an
// edge whose rates no counter gives is drawn faint and without dots,
// and a node none of whose edges is known says so. phase is the
// animation clock (ticks).
func (d *drawer) flowIn(fr view.Rect, title string, v *[view.NumSeries]float64, known *[view.NumSeries]bool, phase float64, xdp bool) {
	if fr.W <= 0 {
		return
	}
	d.title(fr, title)
	body := view.Rect{X: fr.X + 36, Y: fr.Y + view.SectionTitleH + 12, W: fr.W - 72, H: fr.H - view.SectionTitleH - 34}
	at := func(fx, fy float64) (float64, float64) { return body.X + fx*body.W, body.Y + fy*body.H }
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
	var pts [8][2]float64
	nodeRate := [numNodes]float64{}
	nodeKnown := [numNodes]bool{nHost: true, nXDP: true}
	for _, e := range flowEdges {
		rt, ok := rate(e.s)
		if !e.pages && ok {
			nodeRate[e.to] += rt
			nodeKnown[e.to] = true
		}
		// The polyline: from, the waypoints, to.
		n := 0
		add := func(fx, fy float64) {
			x, y := at(fx, fy)
			pts[n] = [2]float64{x, y}
			n++
		}
		add(flowNodes[e.from].x, flowNodes[e.from].y)
		for _, w := range e.via {
			add(w[0], w[1])
		}
		add(flowNodes[e.to].x, flowNodes[e.to].y)
		w := 1.0
		c := colFaint.alpha(0.7)
		if !ok {
			c = colFaint.alpha(0.35)
		} else if rt > 0 {
			w = 1.5 + math.Min(4, math.Log10(1+rt)/1.6)
			c = flowNodes[e.to].c.alpha(0.6)
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
					d.rect(x-2.5, y-2.5, 5, 5, flowNodes[e.to].c)
					break
				}
				dist -= seg
			}
		}
	}
	nodeRate[nHost] = v[view.HostPPS] + v[view.HostDrops]
	if known != nil && !known[view.HostPPS] {
		nodeKnown[nHost] = false
	}
	for i, n := range flowNodes {
		x, y := at(n.x, n.y)
		w := textWidth(n.label, 1) + 12
		c, tc := n.c, colText
		lbl := fmtRate(nodeRate[i])
		switch {
		case i == nXDP && !xdp:
			c, tc, lbl = colFaint, colFaint, "none"
		case !nodeKnown[i]:
			c, tc, lbl = colFaint, colFaint, "n/a"
		}
		d.rect(x-w/2, y-9, w, 18, colPanel)
		d.b.frame(d.dst, x-w/2, y-9, w, 18, 1, c)
		d.text(x-w/2+6, y-6, n.label, tc)
		d.text(x-textWidth(lbl, 1)/2, y+11, lbl, colDim)
	}
}

// fmtRate writes a rate per second compactly.
func fmtRate(v float64) string {
	switch {
	case v <= 0:
		return "0/s"
	case v >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', 2, 64) + "G/s"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M/s"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k/s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "/s"
}

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
