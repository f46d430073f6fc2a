package view

// The flow view's geometry: packets from the host to a verdict in the
// upper rows, pages going back to the ring on the bus below. Nodes sit
// on a grid of six columns and five rows; each column is as wide as its
// widest box and the spare width goes between columns, so no two boxes
// overlap at any width from FlowMinW up.

// FlowNode is one box of the flow view.
type FlowNode int

const (
	NodeHost FlowNode = iota
	NodeHostDrop
	NodeRing
	NodeNAPI
	NodeXDP
	NodeSKB
	NodeDrop
	NodeTx
	NodeRedirect
	NodeStack
	NodeFree
	NodeCache
	NodePRing
	NodeAlloc
	NumFlowNodes
)

// flowNodeDef is a box: its label, its place on the grid (a column from
// 0 to 5, 2.5 between two; a row from 0 to 4, 4 the bottom row under the
// bus) and what it is.
type flowNodeDef struct {
	label    string
	col, row float64
	help     string
}

var flowNodes = [NumFlowNodes]flowNodeDef{
	NodeHost:     {"host", 0, 1, "the host (vhost-net or the NIC) writing frames into the ring: frames per second it delivered or dropped"},
	NodeHostDrop: {"host drop", 0, 2, "frames the host dropped because the ring had no buffer (host_drops), per second"},
	NodeRing:     {"rx ring", 1, 1, "the receive virtqueue: frames per second the host wrote into posted buffers"},
	NodeNAPI:     {"NAPI", 2, 1, "virtnet_poll: buffers per second the driver took from the used ring (rx_packets)"},
	NodeXDP:      {"XDP", 3, 1, "the attached XDP program: packets per second it ran on, split by verdict"},
	NodeSKB:      {"skb (PASS)", 4, 0, "packets per second built into an sk_buff: no program, or XDP_PASS"},
	NodeDrop:     {"DROP", 4, 1, "XDP_DROP verdicts per second (rx_xdp_drops): the page goes back at once"},
	NodeTx:       {"TX", 4, 2, "XDP_TX verdicts per second (rx_xdp_tx): the frame leaves on the same device"},
	NodeRedirect: {"REDIRECT", 4, 3, "XDP_REDIRECT verdicts per second (rx_xdp_redirects): to a cpumap or a devmap"},
	NodeStack:    {"stack", 5, 0, "skbs per second the stack received, from the driver or a cpumap CPU"},
	NodeFree:     {"free", 5, 2, "packets per second whose pages were freed (stack_delivered, drops, TX completions)"},
	NodeCache:    {"pool cache", 1, 4, "page_pool's alloc cache: pages per second recycled into it (rx_pp_recycle_cached) and from the ptr_ring"},
	NodePRing:    {"ptr_ring", 2.5, 4, "page_pool's ptr_ring: pages per second recycled through it (rx_pp_recycle_ring)"},
	NodeAlloc:    {"page allocator", 4, 4, "the page allocator: blocks per second freed to it (page_frees); it hands pages to the ring when the pool cannot"},
}

// Label returns the node's label.
func (n FlowNode) Label() string { return flowNodes[n].label }

// Help says what the node is and what its rate counts.
func (n FlowNode) Help() string { return flowNodes[n].help }

// FlowEdge is one arrow of the flow view: the rates it carries (summed)
// and the waypoints between its nodes on the grid. Pages marks an edge
// that carries pages to the ring, not packets: it is not in a node's
// rate.
type FlowEdge struct {
	From, To FlowNode
	Series   []Series
	Via      [][2]float64 // (column, row) on the grid
	Pages    bool
}

// FlowEdges are the flow view's arrows.
var FlowEdges = []FlowEdge{
	{NodeHost, NodeRing, []Series{HostPPS}, nil, false},
	{NodeHost, NodeHostDrop, []Series{HostDrops}, nil, false},
	{NodeRing, NodeNAPI, []Series{RxPPS}, nil, false},
	{NodeNAPI, NodeXDP, []Series{XDPPass, XDPDrop, XDPTx, XDPRedirect}, nil, false},
	{NodeNAPI, NodeSKB, []Series{NoXDP}, [][2]float64{{2, 0}}, false},
	{NodeXDP, NodeSKB, []Series{XDPPass}, [][2]float64{{3.5, 1}, {3.5, 0}}, false},
	{NodeXDP, NodeDrop, []Series{XDPDrop}, nil, false},
	{NodeXDP, NodeTx, []Series{XDPTx}, [][2]float64{{3.5, 1}, {3.5, 2}}, false},
	{NodeXDP, NodeRedirect, []Series{XDPRedirect}, [][2]float64{{3.5, 1}, {3.5, 3}}, false},
	{NodeSKB, NodeStack, []Series{NoXDP, XDPPass}, nil, false},
	{NodeStack, NodeFree, []Series{Delivered}, nil, false},
	{NodeDrop, NodeFree, []Series{XDPDrop}, [][2]float64{{4.5, 1}, {4.5, 2}}, false},
	{NodeTx, NodeFree, []Series{XDPTx}, nil, false},
	{NodeRedirect, NodeFree, []Series{RedirectFree}, [][2]float64{{4.5, 3}, {4.5, 2}}, false},
	{NodeRedirect, NodeStack, []Series{CpumapPass}, [][2]float64{{4, 3.3}, {5.5, 3.3}, {5.5, 0}}, false},
	{NodeFree, NodeAlloc, []Series{PageFrees}, [][2]float64{{5, 3.5}, {4, 3.5}}, false},
	{NodeFree, NodePRing, []Series{RecycleRing}, [][2]float64{{5, 3.5}, {2.5, 3.5}}, false},
	{NodeFree, NodeCache, []Series{RecycleCache}, [][2]float64{{5, 3.5}, {1.25, 3.5}, {1.25, 4}}, false},
	{NodePRing, NodeCache, []Series{RecycleRing}, nil, false}, // refilled from the ring: in the long run what went in
	{NodeCache, NodeRing, []Series{AllocFast}, [][2]float64{{0.8, 4}, {0.8, 1}}, true},
	{NodeAlloc, NodeRing, []Series{PageAllocs}, [][2]float64{{4, 3.7}, {0.5, 3.7}, {0.5, 1.35}}, true},
}

// Flow grid metrics, in pixels.
const (
	FlowBoxH     = 30 // a box: its label, then its rate
	flowPad      = 4  // inside the view's rectangle
	flowMinGap   = 8  // between two columns
	flowGutter   = 10 // right of the last column, for the route around it
	flowMinPitch = 38 // between two rows' centres
	flowMaxPitch = 56
	flowBottom   = 1.7 // the bus row's height, in pitches
	flowRateLen  = 7   // characters of the longest rate ("50.4k/s")
)

// flowBoxW is a node's box width: its label or a rate, whichever is wider.
func flowBoxW(n FlowNode) float64 {
	return float64(max(len(flowNodes[n].label), flowRateLen))*GlyphAdv + 6
}

// flowCols returns each column's width: its widest box's.
func flowCols() (w [6]float64) {
	for n := FlowNode(0); n < NumFlowNodes; n++ {
		d := flowNodes[n]
		if d.col == float64(int(d.col)) && d.row < 4 {
			w[int(d.col)] = max(w[int(d.col)], flowBoxW(n))
		}
	}
	return w
}

// FlowMinW and FlowMinH are the least rectangle the flow view is
// readable in: every box apart, every row apart.
var FlowMinW, FlowMinH = flowMin()

func flowMin() (float64, float64) {
	w := 0.0
	for _, c := range flowCols() {
		w += c
	}
	w += 5*flowMinGap + flowGutter + 2*flowPad
	h := SectionTitleH + 2*flowPad + FlowBoxH + (3+flowBottom)*flowMinPitch
	return w, h
}

// FlowGeom is where the flow view draws in a rectangle: each node's box
// and the grid that places the edges.
type FlowGeom struct {
	Body  Rect
	Nodes [NumFlowNodes]Rect
	colX  [6]float64 // column centres
	colW  [6]float64
	gap   float64
	y0    float64 // row 0's centre
	pitch float64
}

// NewFlowGeom lays the flow view out in r (its title included).
func NewFlowGeom(r Rect) FlowGeom {
	g := FlowGeom{Body: Rect{r.X + flowPad, r.Y + SectionTitleH + flowPad, max(0, r.W-2*flowPad), max(0, r.H-SectionTitleH-2*flowPad)}}
	g.colW = flowCols()
	sum := 0.0
	for _, c := range g.colW {
		sum += c
	}
	spare := max(0, g.Body.W-sum-5*flowMinGap-flowGutter)
	g.gap = flowMinGap + spare/6
	x := g.Body.X + spare/12
	for c := range g.colX {
		g.colX[c] = x + g.colW[c]/2
		x += g.colW[c] + g.gap
	}
	g.pitch = min(max((g.Body.H-FlowBoxH)/(3+flowBottom), flowMinPitch), flowMaxPitch)
	used := FlowBoxH + (3+flowBottom)*g.pitch
	g.y0 = g.Body.Y + FlowBoxH/2 + max(0, g.Body.H-used)/2
	for n := FlowNode(0); n < NumFlowNodes; n++ {
		d := flowNodes[n]
		x, y := g.At(d.col, d.row)
		w := flowBoxW(n)
		g.Nodes[n] = Rect{x - w/2, y - FlowBoxH/2, w, FlowBoxH}
	}
	return g
}

// At returns the point of grid position (col, row): a whole column is
// its centre, a half one the middle of the gap after the column before
// (5.5: right of the last), and rows 0 to 3 are a pitch apart, row 4 (the
// bottom row) flowBottom pitches under row 3. Between those it
// interpolates.
func (g *FlowGeom) At(col, row float64) (x, y float64) {
	return g.x(col), g.y(row)
}

func (g *FlowGeom) x(col float64) float64 {
	// The half-steps: each column's centre and the middle of the gap after it.
	half := func(k int) float64 { // k = 2*col
		c := k / 2
		if c >= len(g.colX) {
			c = len(g.colX) - 1
		}
		if k%2 == 0 {
			return g.colX[c]
		}
		return g.colX[c] + g.colW[c]/2 + g.gap/2
	}
	k := int(col * 2)
	if k < 0 {
		return g.colX[0]
	}
	f := col*2 - float64(k)
	if f == 0 || k >= 2*len(g.colX)-1 {
		return half(k)
	}
	return half(k) + (half(k+1)-half(k))*f
}

func (g *FlowGeom) y(row float64) float64 {
	if row <= 3 {
		return g.y0 + row*g.pitch
	}
	return g.y0 + 3*g.pitch + (row-3)*flowBottom*g.pitch
}

// Edge returns edge e's polyline: from its node's centre through its
// waypoints to the other's, appended to dst.
func (g *FlowGeom) Edge(e *FlowEdge, dst [][2]float64) [][2]float64 {
	add := func(col, row float64) {
		x, y := g.At(col, row)
		dst = append(dst, [2]float64{x, y})
	}
	add(flowNodes[e.From].col, flowNodes[e.From].row)
	for _, w := range e.Via {
		add(w[0], w[1])
	}
	add(flowNodes[e.To].col, flowNodes[e.To].row)
	return dst
}

// Hit returns the node whose box holds (x, y).
func (g *FlowGeom) Hit(x, y float64) (FlowNode, bool) {
	for n := FlowNode(0); n < NumFlowNodes; n++ {
		if g.Nodes[n].Contains(x, y) {
			return n, true
		}
	}
	return 0, false
}

// FlowRates returns each node's rate (what its packet edges bring in,
// per second; the host's, what it delivered and dropped) from the latest
// rates v, and whether any counter gives it (known: a live source's
// counters; nil, the simulation's, which has them all).
func FlowRates(v *[NumSeries]float64, known *[NumSeries]bool) (rate [NumFlowNodes]float64, ok [NumFlowNodes]bool) {
	ok[NodeHost], ok[NodeXDP] = true, true
	for i := range FlowEdges {
		e := &FlowEdges[i]
		if e.Pages {
			continue
		}
		for _, s := range e.Series {
			if known == nil || known[s] {
				rate[e.To] += v[s]
				ok[e.To] = true
			}
		}
	}
	rate[NodeHost] = v[HostPPS] + v[HostDrops]
	if known != nil && !known[HostPPS] {
		ok[NodeHost] = false
	}
	return rate, ok
}
