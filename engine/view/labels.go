package view

import (
	"math"
	"strconv"
	"strings"

	"ringlab/engine/mem"
	"ringlab/engine/virtq"
	"ringlab/engine/vocab"
)

// Texts returns every line of text pane i's views draw, for its snapshot
// s and rates r (xdp: a program is attached). Each lies inside its view's
// rectangle and none overlaps another (view_test.go checks it at every
// form); a number carries its engine/vocab name.
func (l *Layout) Texts(i int, s *Snapshot, r *Rates, xdp bool) []Text {
	if i < 0 || i >= len(l.Panes) || s == nil || r == nil {
		return nil
	}
	p := &l.Panes[i]
	var out []Text
	out = p.ringTexts(out, &s.Queue, s.NumQueues, l.Ring)
	v, known := FlowLatest(r)
	title := "FLOW  per simulated second: packets above, pages on the bus"
	if known != nil {
		title = "FLOW  " + NoRateYet(r)
	}
	out = FlowTexts(out, p.Flow, title, &v, known, xdp)
	out = p.cpuTexts(out, s, r)
	out = p.pagesTexts(out, &s.Pages)
	out = p.ratesTexts(out, r)
	return out
}

// noneKnown says no series is known: a world with no rate yet.
var noneKnown [NumSeries]bool

// FlowLatest returns the rates the flow view shows: the newest, and nil
// for known when they are rates; when no rate is ready yet (too little
// simulated time behind the newest sample), zeros and a known of none,
// so the boxes say n/a instead of a rate over a few microseconds.
func FlowLatest(r *Rates) ([NumSeries]float64, *[NumSeries]bool) {
	if !r.Ready() {
		return [NumSeries]float64{}, &noneKnown
	}
	return r.Latest(), nil
}

// NoRateYet says why there is no rate: how much simulated time the rates
// have behind them, and how much a rate needs.
func NoRateYet(r *Rates) string {
	return "no rate yet: " + FormatNs(r.Held()) + " of the " + FormatNs(MinRateNs) + " a rate needs"
}

// ringTexts adds the ring view's lines: its title, the caption naming
// the rings, the slot numbers when they fit, and the legend.
func (p *PaneLayout) ringTexts(out []Text, q *QueueView, nq int, rv RingView) []Text {
	b := texts{out: out, clip: p.Ring, view: "ring"}
	title := "VIRTQUEUE rx" + strconv.Itoa(q.Index) + "  (" + strconv.Itoa(q.Size) + " entries"
	if nq > 1 {
		title += ", 1 of " + strconv.Itoa(nq) + " queues: [ ] to switch"
	}
	b.title(p.Ring, title+")")
	sh := p.RingShape(q, rv)
	if sh.Linear {
		g := &sh.Line
		b.lineTexts(g, q, rv)
		legendTexts(&b, g.Legend, q)
		return b.out
	}
	g := &sh.Circle
	b.add(Text{X: g.Caption.X, Y: g.Caption.Y + 1, S: Fit("outside in: descriptors, avail ring, used ring;  v: lines", g.Caption.W), Tone: ToneDim,
		Help: "the descriptor table (outer ring), the avail ring the driver fills (middle) and the used ring the device fills (inner); v draws them as lines"})
	if g.R >= 20 && q.Size > 0 {
		// Slot numbers where they have room: apart along the ring, and
		// apart from the next ring's.
		for ri, ring := range [][2]float64{DescRing, AvailRing, UsedRing} {
			w := TextWidth(strconv.Itoa(q.Size - 1))
			room := math.Hypot(w, LineH) + 1
			if g.SlotArc(ring) < room || (ri > 0 && g.R*(DescRing[0]-AvailRing[0]) < room) {
				continue
			}
			for i := 0; i < q.Size; i++ {
				lbl := ""
				switch ri {
				case 0:
					lbl = strconv.Itoa(i)
				case 1:
					if q.AvailLive(i) {
						lbl = strconv.Itoa(int(q.Avail[i]))
					}
				case 2:
					if q.UsedLive(i) {
						lbl = strconv.Itoa(int(q.Used[i].ID))
					}
				}
				if lbl == "" {
					continue
				}
				x, y := g.SlotCenter(ring, i)
				help := []string{"descriptor " + strconv.Itoa(i), "avail ring slot " + strconv.Itoa(i) + ": the head the driver posted",
					"used ring slot " + strconv.Itoa(i) + ": the head the device returned"}[ri]
				b.add(Text{X: math.Round(x - TextWidth(lbl)/2), Y: math.Round(y - 6), S: lbl, Tone: ToneOnSlot, Help: help})
			}
		}
	}
	legendTexts(&b, g.Legend, q)
	return b.out
}

// lineTexts adds the linear view's lines: what the window shows, the
// rows' names, the indices under them, slot numbers where they fit, and
// the overview's caption.
func (b *texts) lineTexts(g *LineGeom, q *QueueView, rv RingView) {
	how := ", following"
	if rv.Fixed {
		how = "; f: follow"
	}
	b.add(Text{X: g.Caption.X, Y: g.Caption.Y + 1, S: Fit(strconv.Itoa(g.N)+" of "+strconv.Itoa(g.Size)+" slots"+
		how+"; z/Z zoom, </> pan, v circle", g.Caption.W), Tone: ToneDim,
		Help: "the window of the ring drawn as lines: z zooms in, Z out, < and > move it by half a window, f follows the driver again, v draws the circle"})
	names := []struct{ s, help string }{
		{"desc", "the descriptor table: one entry per buffer the driver posted (address, length, flags)"},
		{"avail", "the avail ring: the heads of the chains the driver made available to the device"},
		{"used", "the used ring: the heads the device returned, with the length it wrote"},
	}
	for i, n := range names {
		r := g.Rows[i]
		b.add(Text{X: g.Names.X, Y: r.Y + (r.H-LineH)/2, S: n.s, Tone: ToneDim, Help: n.help})
	}
	// Indices under the rows, every AxisStep slots.
	for k := 0; k < g.N; k++ {
		s := (g.From + k) % g.Size
		if s%g.AxisStep != 0 {
			continue
		}
		lbl := strconv.Itoa(s)
		x := g.Axis.X + (float64(k)+0.5)*g.SlotW - TextWidth(lbl)/2
		b.add(Text{X: math.Round(min(max(x, g.Axis.X), g.Axis.X+g.Axis.W-TextWidth(lbl))), Y: g.Axis.Y, S: lbl, Tone: ToneDim,
			Help: "slot index: the same slot of the three rings"})
	}
	// Slot numbers on the rows, each where its slot is wide enough.
	if g.SlotW >= GlyphAdv+3 {
		for k := 0; k < g.N; k++ {
			s := (g.From + k) % g.Size
			for row := 1; row < 3; row++ {
				lbl := ""
				if row == 1 && q.AvailLive(s) {
					lbl = strconv.Itoa(int(q.Avail[s]))
				} else if row == 2 && q.UsedLive(s) {
					lbl = strconv.Itoa(int(q.Used[s].ID))
				}
				if lbl == "" || TextWidth(lbl)+3 > g.SlotW {
					continue
				}
				r := g.Rows[row]
				x := r.X + (float64(k)+0.5)*g.SlotW - TextWidth(lbl)/2
				b.add(Text{X: math.Round(x), Y: r.Y + (r.H-LineH)/2, S: lbl, Tone: ToneOnSlot,
					Help: []string{"", "the head the driver posted in this avail slot", "the head the device returned in this used slot"}[row]})
			}
		}
	}
	b.add(Text{X: g.OvCap.X, Y: g.OvCap.Y, S: Fit("above: the whole ring; click it to move the window", g.OvCap.W), Tone: ToneFaint,
		Help: "every slot of the three rings across the view's width; a click moves the window there"})
}

// legendTexts adds the ring legend: the indices of both sides, num_free,
// the slot states, the host's state and the queue's counters.
func legendTexts(b *texts, lg Rect, q *QueueView) {
	n := max(q.Size, 1)
	x, y := lg.X+SwatchW, lg.Y+2
	valX := x + TextWidth("avail_event ")
	// Two columns when the legend is under the lines: the indices, then
	// the states beside them.
	twoCols := lg.W >= 2*RingLegendW+16
	col2 := lg.X + math.Round(lg.W/2) + SwatchW
	end := lg.X + lg.W
	if twoCols {
		end = col2 - SwatchW - 8
	}
	row := func(sw Swatch, name, val, vname string) {
		b.add(Text{X: x, Y: y, S: name, Tone: ToneDim, Swatch: sw, Name: vname})
		b.add(Text{X: valX, Y: y, S: Fit(val, end-valX), Tone: ToneText, Name: vname})
		y += LineH
	}
	slot := func(idx uint16) string {
		return strconv.Itoa(int(idx)) + " (" + strconv.Itoa(int(idx)%n) + ")"
	}
	rq := func(f string) string { return vocab.Ring(q.Index, f) }
	row(Swatch{SwatchMark, MarkDriver}, "avail idx", slot(q.AvailIdx), rq("avail_idx"))
	row(Swatch{SwatchMark, MarkDevice}, "last_avail", slot(q.LastAvail), rq("last_avail"))
	row(Swatch{SwatchMark, MarkDevice}, "used idx", slot(q.UsedIdx), rq("used_idx"))
	row(Swatch{SwatchMark, MarkDriver}, "last_used", slot(q.LastUsed), rq("last_used"))
	if q.EventIdx {
		row(Swatch{SwatchMark, MarkEvent}, "used_event", slot(q.UsedEvent), rq("used_event"))
		row(Swatch{SwatchMark, MarkEvent}, "avail_event", slot(q.AvailEvent), rq("avail_event"))
	}
	row(Swatch{SwatchEmpty, 0}, "num_free", strconv.Itoa(q.NumFree)+" of "+strconv.Itoa(n), rq("num_free"))
	b.add(Text{X: x - SwatchW, Y: y, S: Fit("(n): the slot, idx mod "+strconv.Itoa(n), end-x+SwatchW), Tone: ToneFaint,
		Help: "indices run free over 16 bits; the slot they point at is the index modulo the ring's size"})
	y += LineH + 4
	if twoCols { // the rest beside
		x, y = col2, lg.Y+2
	}
	for st := virtq.SlotFree; st <= virtq.SlotUsed; st++ {
		b.add(Text{X: x, Y: y, S: SlotStateNames[st], Tone: ToneDim, Swatch: Swatch{SwatchSlot, int(st)}, Help: slotStateHelp[st]})
		y += LineH
	}
	y += 4
	lw := lg.X + lg.W - (x - SwatchW)
	state, help := "host running", "the host takes buffers as frames arrive"
	if q.Starved {
		state, help = "host starved: waits for a kick", "the ring was empty with a frame waiting: the host sleeps until the driver kicks it (host_starved)"
	}
	b.add(Text{X: x - SwatchW, Y: y, S: Fit(state, lw), Tone: ToneDim, Help: help})
	y += LineH
	irq, help := "interrupts on", "the driver wants an interrupt for the next used buffer"
	if q.CallbacksOff {
		irq, help = "interrupts off (NAPI polls)", "NAPI is scheduled: the driver suppressed interrupts (virtqueue_disable_cb) and polls"
	}
	b.add(Text{X: x - SwatchW, Y: y, S: Fit(irq, lw), Tone: ToneDim, Help: help, Name: rq("callbacks_disabled")})
	y += LineH
	k := "kicks " + strconv.FormatUint(q.Counters.Kicks, 10)
	b.add(Text{X: x - SwatchW, Y: y, S: Fit(k, lw), Tone: ToneDim, Name: vocab.Queue("rx", q.Index, "kicks")})
	irqs := "irqs " + strconv.FormatUint(q.Counters.Interrupts, 10)
	if ix := x - SwatchW + TextWidth(k+"  "); ix+TextWidth(irqs) <= lg.X+lg.W {
		b.add(Text{X: ix, Y: y, S: irqs, Tone: ToneDim, Name: rq("irqs")})
	}
	if q.Broken != "" {
		b.add(Text{X: x - SwatchW, Y: y + LineH, S: Fit("BROKEN: "+q.Broken, lw), Tone: ToneWarn,
			Help: "the device wrote something the driver refused: the queue is marked broken (BAD_RING)"})
	}
}

// SlotStateNames name a descriptor's states for people.
var SlotStateNames = [...]string{
	virtq.SlotFree:   "free",
	virtq.SlotAvail:  "avail (posted)",
	virtq.SlotDevice: "device (taken)",
	virtq.SlotUsed:   "used (returned)",
}

var slotStateHelp = [...]string{
	virtq.SlotFree:   "a descriptor on the free list: no buffer posted",
	virtq.SlotAvail:  "a buffer the driver posted; the device has not taken it",
	virtq.SlotDevice: "a buffer the device took and is filling",
	virtq.SlotUsed:   "a buffer the device returned; the driver has not read it",
}

// FlowTexts adds the flow view's lines in fr: its title, each node's
// label and rate (n/a when known says no counter gives it; the XDP node
// says none without a program).
func FlowTexts(out []Text, fr Rect, title string, v *[NumSeries]float64, known *[NumSeries]bool, xdp bool) []Text {
	b := texts{out: out, clip: fr, view: "flow"}
	if fr.W <= 0 {
		return out
	}
	b.title(fr, title)
	g := NewFlowGeom(fr)
	rate, ok := FlowRates(v, known)
	for n := FlowNode(0); n < NumFlowNodes; n++ {
		box := g.Nodes[n]
		lbl := n.Label()
		tone := ToneText
		val := FormatRate(rate[n])
		switch {
		case n == NodeXDP && !xdp:
			tone, val = ToneFaint, "none"
		case !ok[n]:
			tone, val = ToneFaint, "n/a"
		}
		cx := box.X + box.W/2
		help := lbl + ": " + n.Help()
		b.add(Text{X: math.Round(cx - TextWidth(lbl)/2), Y: box.Y + 2, S: lbl, Tone: tone, Help: help})
		b.add(Text{X: math.Round(cx - TextWidth(val)/2), Y: box.Y + 15, S: val, Tone: ToneDim, Help: help})
	}
	return b.out
}

// cpuTexts adds the CPU view's lines: its title with the legend of the
// lanes' colours, and a lane per CPU with its name, its busy share and
// the work it began last (the timeline beside them has no text;
// Layout.SliceAt finds the slice under the pointer).
func (p *PaneLayout) cpuTexts(out []Text, s *Snapshot, r *Rates) []Text {
	b := texts{out: out, clip: p.CPUs, view: "cpus"}
	b.add(Text{X: p.CPUs.X, Y: p.CPUs.Y + 1, S: Fit(cpuTitle, p.CPUs.W), Tone: ToneAccent, Help: cpuTitleHelp})
	n := len(s.CPUs)
	for i := 0; i < n; i++ {
		lane := p.CPULane(i, n)
		if lane.H < LineH {
			break
		}
		c := s.CPUs[i]
		util := c.Util
		if r.Ready() {
			if u := r.Util(r.Len() - 1); i < len(u) {
				util = u[i]
			}
		}
		g := CPULaneGeom(lane)
		y := lane.Y + math.Floor((lane.H-LineH)/2)
		b.add(Text{X: lane.X, Y: y, S: "CPU" + strconv.Itoa(i), Tone: ToneText,
			Help: "CPU " + strconv.Itoa(i) + ": click to inspect what it did; its timeline is who ran when over the last " + FormatNs(LaneWindowNs)})
		b.add(Text{X: g.Bar.X + 4, Y: y, S: strconv.Itoa(int(math.Round(util*100))) + "%", Tone: ToneText, Name: vocab.CPUUtil(i),
			Help: "busy share over the last sample (the counters table's cpuN.util is over the whole run)"})
		act := c.Activity
		if !c.Working || act == "" {
			act = "idle"
		}
		b.add(Text{X: g.Activity.X, Y: y, S: Fit(act, g.Activity.W), Tone: ToneDim, Help: "the work the CPU began last"})
	}
	return b.out
}

// pagesTexts adds the page view's lines: its title, the legend of
// locations with their counts, and the caption under the tiles.
func (p *PaneLayout) pagesTexts(out []Text, pv *PagesView) []Text {
	b := texts{out: out, clip: p.Pages, view: "pages"}
	b.title(p.Pages, "PAGES  ("+strconv.Itoa(pv.N)+" x 4 KiB; "+strconv.Itoa(pv.Working)+" outside the page allocator)")
	g := p.PagesGeom(pv)
	x, y := g.Legend.X+SwatchW, g.Legend.Y+2
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		if y+LineH > g.Legend.Y+g.Legend.H {
			break
		}
		c := pv.Counts[l]
		tone := ToneDim
		if c > 0 {
			tone = ToneText
		}
		name := vocab.Pages(l.String())
		cs := FormatCount(float64(c))
		cx := g.Legend.X + g.Legend.W - TextWidth(cs) - 4
		b.add(Text{X: x, Y: y, S: Fit(LocLabels[l], cx-x-4), Tone: tone, Swatch: Swatch{SwatchLoc, int(l)}, Name: name})
		b.add(Text{X: cx, Y: y, S: cs, Tone: tone, Name: name})
		y += LineH
	}
	if g.Cols > 0 {
		b.add(Text{X: g.Caption.X, Y: g.Caption.Y, S: Fit("tiles 0.."+strconv.Itoa(max(0, g.Shown-1))+", strip: all "+strconv.Itoa(pv.N), g.Caption.W),
			Tone: ToneDim, Help: "a tile per page of the part of memory the receive path touched, coloured by where the page is; the strip is all of memory"})
	}
	return b.out
}

// LocLabels name the page locations for people.
var LocLabels = [mem.NumLocs]string{
	mem.Buddy:      "page allocator",
	mem.PCP:        "per-CPU lists",
	mem.PoolCache:  "pool cache",
	mem.PoolRing:   "pool ptr_ring",
	mem.Virtqueue:  "posted in ring",
	mem.SKB:        "in an skb",
	mem.XDPFrame:   "xdp_frame",
	mem.CpumapRing: "cpumap ring",
	mem.TxQueue:    "TX queue",
	mem.PageFrag:   "page_frag",
	mem.BigChain:   "big-mode chain",
	mem.Driver:     "driver (in flight)",
}

// ChartLine is one line of a rates chart: the series it sums and its
// label, the only place the label is.
type ChartLine struct {
	Series []Series
	Label  string
}

// Name is the engine/vocab name of what the line draws, for its
// tooltip: its first series's (the others fill in where that one has
// nothing to count: page_allocs without a page_pool).
func (l *ChartLine) Name() string { return l.Series[0].Name() }

// Help is the line's tooltip besides its first series's meaning: what
// it is a rate of, and for a line that sums several series, each of
// them by name.
func (l *ChartLine) Help() string {
	const rate = "per second of simulated time"
	if len(l.Series) == 1 {
		return rate
	}
	names := make([]string, len(l.Series))
	for i, s := range l.Series {
		names[i] = s.Name()
	}
	return rate + ", the sum of " + strings.Join(names, " and ")
}

// Chart is one chart of the rates view; its title says the unit.
type Chart struct {
	Title string
	Lines []ChartLine
}

// Charts are the rates view's charts.
var Charts = []Chart{
	{"packets/s", []ChartLine{
		{[]Series{RxPPS}, "rx"},
		{[]Series{Delivered}, "delivered"},
		{[]Series{HostDrops}, "host drop"},
	}},
	{"pages/s", []ChartLine{
		{[]Series{RecycleCache}, "cache"},
		{[]Series{RecycleRing}, "ptr_ring"},
		{[]Series{PageFrees}, "page free"},
		{[]Series{AllocSlow, PageAllocs}, "alloc slow"},
	}},
	{"drops/s", []ChartLine{
		{[]Series{XDPDrop}, "XDP_DROP"},
		{[]Series{RxDrops, HostDrops}, "rx+host"},
		{[]Series{SockDrops}, "socket/map"},
	}},
}

// ChartGeom is one chart's place: its box, where each legend entry goes
// (a swatch, the label and the rate), and the plot under them.
type ChartGeom struct {
	Box     Rect
	Title   [2]float64   // x, y
	Entries [][2]float64 // x, y of each line's entry (its swatch before)
	Plot    Rect
}

// chartEntry is a legend entry's text: its label and its rate, the rate
// padded so the entry's width does not change as it does.
func chartEntry(l *ChartLine, v float64) string {
	r := "-"
	if !math.IsNaN(v) {
		r = FormatRate(v)
	}
	for len(r) < flowRateLen {
		r += " "
	}
	return l.Label + " " + r
}

// RatesGeom returns where each chart goes: the charts share the view's
// height; each legend wraps to the lines its width needs, and the plot
// takes the rest. A chart with no room for a plot is left out.
func (p *PaneLayout) RatesGeom() []ChartGeom {
	rr := p.Rates
	body := Rect{rr.X, rr.Y + SectionTitleH, rr.W, max(0, rr.H-SectionTitleH)}
	ch := math.Floor(body.H / float64(len(Charts)))
	var out []ChartGeom
	for ci, c := range Charts {
		box := Rect{body.X, body.Y + float64(ci)*ch, body.W, ch - 4}
		g := ChartGeom{Box: box, Title: [2]float64{box.X, box.Y}}
		x, y := box.X+TextWidth(c.Title+"  "), box.Y
		for i := range c.Lines {
			w := SwatchW + TextWidth(chartEntry(&c.Lines[i], 0)+" ")
			if x+w > box.X+box.W && x > box.X {
				x, y = box.X+8, y+LineH
			}
			g.Entries = append(g.Entries, [2]float64{x + SwatchW, y})
			x += w
		}
		g.Plot = Rect{box.X + 2, y + LineH + 2, box.W - 4, box.Y + box.H - (y + LineH + 2)}
		if g.Plot.H < 16 {
			break
		}
		out = append(out, g)
	}
	return out
}

// ratesTexts adds the rates view's lines: its title, each chart's title
// and legend with the latest rates, and the top of each plot's scale.
func (p *PaneLayout) ratesTexts(out []Text, r *Rates) []Text {
	b := texts{out: out, clip: p.Rates, view: "rates"}
	span := int64(0)
	for i := 0; i < r.Len(); i++ {
		if _, dt, _ := r.At(i); r.Valid(i) {
			span += dt
		}
	}
	if r.Ready() {
		b.title(p.Rates, "RATES  (last "+FormatNs(span)+" of simulated time)")
	} else {
		b.title(p.Rates, "RATES  ("+NoRateYet(r)+")")
	}
	for ci, g := range p.RatesGeom() {
		c := &Charts[ci]
		b.add(Text{X: g.Title[0], Y: g.Title[1], S: c.Title, Tone: ToneText, Help: "per second of simulated time, each sample averaged over " + FormatNs(SmoothNs)})
		top := ChartTop(r, c)
		for li := range c.Lines {
			l := &c.Lines[li]
			v := math.NaN() // no rate yet: the entry says "-"
			if r.Ready() {
				v = ChartValue(r, r.Len()-1, l)
			}
			e := g.Entries[li]
			b.add(Text{X: e[0], Y: e[1], S: chartEntry(l, v), Tone: ToneDim, Swatch: Swatch{SwatchChart, ci*8 + li}, Name: l.Name(),
				Help: l.Help()})
		}
		if top = NiceCeil(top); top > 0 && g.Plot.H >= LineH+4 {
			lbl := "max " + FormatRate(top)
			b.add(Text{X: g.Plot.X + g.Plot.W - TextWidth(lbl) - 2, Y: g.Plot.Y + 1, S: lbl, Tone: ToneFaint, Help: "the top of the chart's scale"})
		}
	}
	return b.out
}

// ChartTop is the largest value of chart c's lines over the samples
// that are rates (Valid), unrounded.
func ChartTop(r *Rates, c *Chart) float64 {
	top := 0.0
	for li := range c.Lines {
		for i := 0; i < r.Len(); i++ {
			if r.Valid(i) {
				top = max(top, ChartValue(r, i, &c.Lines[li]))
			}
		}
	}
	return top
}

// ChartValue is line l's value in sample i: the sum of its series.
func ChartValue(r *Rates, i int, l *ChartLine) float64 {
	_, _, v := r.At(i)
	t := 0.0
	for _, s := range l.Series {
		t += v[s]
	}
	return t
}

// NiceCeil rounds v up to 1, 2 or 5 times a power of ten.
func NiceCeil(v float64) float64 {
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
