package play

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"ringlab/engine/view"
	"ringlab/engine/vocab"
)

// The live view: what the canvas draws of a real backend (or the
// server's sim source) while the page follows /ws/metrics. The page
// holds the socket and passes on the server's hello and snapshots
// (LiveHello, LiveSnapshot) and whether it is connected (LiveStatus);
// the controller keeps ten minutes of history and says what to draw:
// rate charts with a time axis, one lane per receive queue, the page
// pools netlink reports, the flow diagram with the rates the counters
// give, and the source's notes. A twin's predictions are drawn on the
// charts of what they predict.

// The live inputs.
type (
	// LiveHello is the server's hello for the subscription the page is
	// on: the source, its counters, its notes and what it reads.
	LiveHello struct {
		Source      string
		Description string
		Counters    []string
		Notes       []string
		Sources     []string
		Labels      LiveLabels
		RateHz      int
	}
	// LiveSnapshot is one of the source's snapshots: TMs is its time in
	// ms since the Unix epoch, Counters the totals by name, Queues the
	// per-queue numbers.
	LiveSnapshot struct {
		Seq      uint64
		TMs      float64
		Counters map[string]float64
		Queues   []map[string]float64
	}
	// LiveStatus says whether the page's socket is connected, and why
	// not (the text is shown as it is); the values drawn are stale while
	// it is not.
	LiveStatus struct {
		Connected bool
		Text      string
	}
	// LiveOff goes back to the playground's own views.
	LiveOff struct{}
)

// LiveLabels are what a source's numbers are of (the hello's labels).
type LiveLabels struct {
	Kind, Device, Program, Preset, Follows string
}

func (LiveHello) isIn()    {}
func (LiveSnapshot) isIn() {}
func (LiveStatus) isIn()   {}
func (LiveOff) isIn()      {}

// Limits of the live view.
const (
	// LiveHistoryS is how far back the charts reach, in seconds.
	LiveHistoryS = 600
	// LiveStepMs is the least time between two points of history: the
	// charts' rates are averaged over a second or more.
	LiveStepMs = 1000
	// LiveStaleMs is how long without a snapshot before the view says
	// so, while connected, in ms of wall time.
	LiveStaleMs = 3000
	// MaxLiveNames bounds the counters of a hello or a snapshot, and
	// MaxLiveQueues its queues (a NIC with 1000s of ethtool statistics
	// fits).
	MaxLiveNames  = 8192
	MaxLiveQueues = 1024
	// MaxLiveNameLen bounds one counter's name, MaxLiveText a source's
	// name, its description or a note, MaxLiveNotes its notes.
	MaxLiveNameLen = 128
	MaxLiveText    = 1024
	MaxLiveNotes   = 64
)

// liveSpans are the widths the charts' time axis takes, in seconds: the
// smallest that holds the history.
var liveSpans = []float64{60, 120, 300, 600}

// A lineDef is one line of a chart: its label, its colour's name (the
// shell's palette) and the counters it can be drawn from, the first the
// source has. Each is a canonical engine/vocab name (the sources emit
// no alias: vocab.Canonical); where a line has more than one they are
// different numbers, the closer first: a lab's verdicts on its own flow
// (xdp_drop) before the driver's count (rx_xdp_drops), the lab
// namespace's UDP counters where the engine's stack counters are
// absent.
type lineDef struct {
	label string
	color string
	names []string
}

type chartDef struct {
	title string
	unit  string // packets, bytes, pages
	lines []lineDef
}

// liveCharts are the rate charts, top to bottom.
var liveCharts = []chartDef{
	{"packets/s", "packets", []lineDef{
		{"rx", "rx", []string{"rx_packets"}},
		{"tx", "tx", []string{"tx_packets"}},
		{"lab sent", "sent", []string{"lab_sent_packets"}},
	}},
	{"bytes/s", "bytes", []lineDef{
		{"rx", "rx", []string{"rx_bytes"}},
		{"tx", "tx", []string{"tx_bytes"}},
	}},
	{"drops/s", "packets", []lineDef{
		{"driver rx_drops", "drop", []string{"rx_drops"}},
		{"rx_dropped", "drop2", []string{"rx_dropped"}},
		{"softnet dropped", "drop3", []string{"softnet.dropped"}},
		{"host drops", "host", []string{"host_drops"}},
		{"socket", "socket", []string{"socket_drops", "UdpRcvbufErrors"}},
		{"sender", "sent", []string{"lab_a_tx_dropped"}},
	}},
	{"XDP verdicts/s", "packets", []lineDef{
		{"ran", "xdp", []string{"rx_xdp_packets"}},
		{"PASS", "pass", []string{"xdp_pass"}},
		{"DROP", "xdp_drop", []string{"xdp_drop", "rx_xdp_drops"}},
		{"TX", "xdp_tx", []string{"xdp_tx", "rx_xdp_tx"}},
		{"REDIRECT", "redirect", []string{"xdp_redirect", "rx_xdp_redirects"}},
	}},
	{"page_pool/s", "pages", []lineDef{
		{"alloc fast", "fast", []string{"rx_pp_alloc_fast"}},
		{"alloc slow", "slow", []string{"rx_pp_alloc_slow"}},
		{"recycle cached", "cache", []string{"rx_pp_recycle_cached"}},
		{"recycle ring", "ring", []string{"rx_pp_recycle_ring"}},
		{"ring full", "release", []string{"rx_pp_recycle_ring_full"}},
	}},
}

// laneDef is one number of a queue's lane.
type laneDef struct {
	label string
	unit  string
	name  string
}

// liveLane are the numbers a queue's lane may show, in order: the first
// maxLaneNumbers the queue has; the first of them is the lane's trace.
var liveLane = []laneDef{
	{"rx", "packets", "rx_packets"},
	{"XDP", "packets", "rx_xdp_packets"},
	{"bytes", "bytes", "rx_bytes"},
	{"XDP bytes", "bytes", "rx_xdp_bytes"},
	{"drops", "packets", "rx_drops"},
	{"XDP drop", "packets", "rx_xdp_drops"},
	{"kicks", "kicks", "rx_kicks"},
	{"tx", "packets", "tx_packets"},
	{"tx kicks", "kicks", "tx_kicks"},
}

// maxLaneNumbers is how many numbers a lane shows.
const maxLaneNumbers = 4

// liveFlow are the counters each series of the flow diagram can be
// read from, the first the source has: canonical names, different
// numbers in order of preference, as a chart line's (lineDef). The series that
// are differences or sums are worked out as the world's (view.Derive).
var liveFlow = map[view.Series][]string{
	view.RxPPS:        {"rx_packets"},
	view.HostDrops:    {"host_drops"},
	view.RxDrops:      {"rx_drops", "rx_dropped"},
	view.XDPDrop:      {"xdp_drop", "rx_xdp_drops"},
	view.XDPTx:        {"xdp_tx", "rx_xdp_tx"},
	view.XDPRedirect:  {"xdp_redirect", "rx_xdp_redirects"},
	view.XDPPass:      {"xdp_pass"},
	view.CpumapPass:   {"cpumap_passed"},
	view.Delivered:    {"stack_delivered", "UdpInDatagrams"},
	view.SockDrops:    {"socket_drops", "UdpRcvbufErrors"},
	view.RecycleCache: {"rx_pp_recycle_cached"},
	view.RecycleRing:  {"rx_pp_recycle_ring"},
	view.AllocFast:    {"rx_pp_alloc_fast"},
	view.AllocSlow:    {"rx_pp_alloc_slow"},
	view.PageAllocs:   {"page_allocs"},
	view.PageFrees:    {"page_frees"},
}

// livePoint is one point of history: its time and the value of every
// tracked name (NaN where the snapshot had none), totals and per queue.
type livePoint struct {
	t      float64 // ms since the epoch
	v      []float64
	queues [][]float64
}

// liveView is the controller's live state, while the canvas shows the
// live source.
type liveView struct {
	hello     LiveHello
	have      map[string]bool   // the source's counters, by canonical name
	from      map[string]string // the name the source sends each under
	tracked   []string          // the names history keeps, in their index order
	index     map[string]int
	laneNames []string // the per-queue names history keeps
	laneIndex map[string]int

	hist      []livePoint // oldest first, at least LiveStepMs apart
	recent    []livePoint // the snapshots of about the last second, for the rates now
	last      *livePoint  // the newest snapshot
	queues    int
	seq       uint64
	snapshots uint64

	connected  bool
	statusText string
	sinceSnap  int64 // wall ns since the last snapshot (Tick)

	// resume is whether the simulation plays again when the live view
	// goes: it steps aside (paused, its controls hidden by the page)
	// while the canvas shows the source, and Play, Pause and Toggle
	// change what it comes back to.
	resume bool
}

// resetHistory forgets the points: a new source.
func (l *liveView) resetHistory() {
	l.hist, l.recent, l.last, l.queues, l.snapshots = nil, nil, nil, 0, 0
}

// newLiveView starts the live view on a hello.
func newLiveView(h LiveHello) *liveView {
	l := &liveView{}
	l.begin(h)
	return l
}

// step takes the inputs the live view changes: while it is on, the
// canvas has nothing to inspect and the page passes the source's
// messages on.
func (l *liveView) step(c *Controller, in In) ([]Out, bool, error) {
	switch m := in.(type) {
	case Click:
		return nil, true, nil
	case Play:
		l.resume = true
		return nil, true, nil
	case Pause:
		l.resume = false
		return nil, true, nil
	case Toggle:
		l.resume = !l.resume
		return nil, true, nil
	case LiveHello:
		l.start(m)
		return []Out{l.liveOut()}, true, nil
	case LiveSnapshot:
		return nil, true, l.snapshot(m)
	case LiveStatus:
		l.connected, l.statusText = m.Connected, m.Text
		return nil, true, nil
	case LiveOff:
		c.live = nil
		c.playing = l.resume
		c.force = true
		return nil, true, nil
	}
	return nil, false, nil
}

// start takes another hello: a new source starts a new history; the
// same one (a reconnect, a new rate) keeps it.
func (l *liveView) start(h LiveHello) {
	if l.hello.Source == h.Source && slices.Equal(l.hello.Counters, h.Counters) {
		l.hello, l.connected, l.statusText = h, true, ""
		return
	}
	l.begin(h)
}

// begin starts the history of the source a hello describes.
func (l *liveView) begin(h LiveHello) {
	l.hello, l.connected, l.statusText = h, true, ""
	l.resetHistory()
	// The view reads every number under its canonical name; a source
	// that still sends an alias (engine/vocab's: page_pool.alloc_fast,
	// rx_xdp_redirect) is read under the canonical name it stands for.
	l.have, l.from = map[string]bool{}, map[string]string{}
	for _, n := range h.Counters {
		c := vocab.Canonical(n)
		l.have[c] = true
		if _, dup := l.from[c]; !dup || c == n {
			l.from[c] = n
		}
	}
	l.index, l.tracked = map[string]int{}, nil
	track := func(n string) {
		if _, ok := l.index[n]; !ok && l.have[n] {
			l.index[n] = len(l.tracked)
			l.tracked = append(l.tracked, n)
		}
	}
	for _, c := range liveCharts {
		for _, ln := range c.lines {
			for _, n := range ln.names {
				track(n)
				track(vocab.Predicted(n))
			}
		}
	}
	for _, names := range liveFlow {
		for _, n := range names {
			track(n)
		}
	}
	for _, n := range []string{"rx_xdp_packets", "cpumap_drops", "devmap_drops"} {
		track(n)
	}
	l.laneIndex, l.laneNames = map[string]int{}, nil
	for _, d := range liveLane {
		l.laneIndex[d.name] = len(l.laneNames)
		l.laneNames = append(l.laneNames, d.name)
	}
}

// snapshot takes one snapshot. A snapshot older than the newest is left
// out (it would run the time axis backwards).
func (l *liveView) snapshot(s LiveSnapshot) error {
	if l.last != nil && s.TMs <= l.last.t {
		return nil
	}
	p := livePoint{t: s.TMs, v: make([]float64, len(l.tracked))}
	for i, n := range l.tracked {
		v, ok := s.Counters[l.from[n]]
		if !ok {
			v = math.NaN()
		}
		p.v[i] = v
	}
	p.queues = make([][]float64, len(s.Queues))
	for q, m := range s.Queues {
		p.queues[q] = make([]float64, len(l.laneNames))
		for i, n := range l.laneNames {
			v, ok := m[n]
			if !ok {
				v = math.NaN()
			}
			p.queues[q][i] = v
		}
	}
	l.last, l.queues, l.seq, l.sinceSnap = &p, len(s.Queues), s.Seq, 0
	l.snapshots++
	if len(l.hist) == 0 || p.t-l.hist[len(l.hist)-1].t >= LiveStepMs {
		l.hist = append(l.hist, p)
		// Ten minutes, and the point before them (the first rate).
		for len(l.hist) > 2 && p.t-l.hist[1].t > LiveHistoryS*1000 {
			l.hist = l.hist[1:]
		}
	}
	l.recent = append(l.recent, p)
	for len(l.recent) > 2 && p.t-l.recent[1].t >= LiveStepMs {
		l.recent = l.recent[1:]
	}
	return nil
}

// value returns point p's value of name (NaN when it has none).
func (l *liveView) value(p *livePoint, name string) float64 {
	i, ok := l.index[name]
	if !ok || i >= len(p.v) {
		return math.NaN()
	}
	return p.v[i]
}

// rate is name's growth per second from a to b; NaN when either has no
// value, time did not advance, or the counter went back (a reset).
func rate(va, vb, ta, tb float64) float64 {
	if math.IsNaN(va) || math.IsNaN(vb) || tb <= ta || vb < va {
		return math.NaN()
	}
	return (vb - va) / ((tb - ta) / 1000)
}

// rateNow is name's rate over about the last second.
func (l *liveView) rateNow(name string) float64 {
	if len(l.recent) < 2 {
		return math.NaN()
	}
	a, b := &l.recent[0], &l.recent[len(l.recent)-1]
	return rate(l.value(a, name), l.value(b, name), a.t, b.t)
}

// pick returns the first of names the source has, or "".
func (l *liveView) pick(names []string) string {
	for _, n := range names {
		if l.have[n] {
			return n
		}
	}
	return ""
}

// LiveDraw is what the canvas draws of the live source.
type LiveDraw struct {
	Layout LiveLayout
	Header string
	// Stale says the values are old: the socket is closed or no
	// snapshot came for LiveStaleMs; StaleText says why.
	Stale     bool
	StaleText string
	// Span is the time axis's width in seconds (the charts run from
	// -Span to 0, the newest snapshot).
	Span   float64
	Charts []LiveChart
	// Flow holds the flow diagram's rates; FlowKnown which the counters
	// give (the others are drawn without a rate).
	Flow      [view.NumSeries]float64
	FlowKnown [view.NumSeries]bool
	XDP       bool // the counters show an XDP program
	Lanes     []LiveLane
	Pools     LivePools
	Notes     []string
}

// LiveChart is one rate chart.
type LiveChart struct {
	Title string
	Unit  string
	Lines []LiveLine
	Max   float64 // the largest rate drawn, 0 when none
	Empty string  // why the chart has no line
}

// LiveLine is one line: points at T (seconds before the newest
// snapshot, negative) with rates V (NaN: a gap), and its rate now.
type LiveLine struct {
	Label     string
	Color     string
	Name      string // the counter it is drawn from
	Predicted bool   // a twin's prediction of the line before it
	T, V      []float64
	Now       float64
}

// LiveLane is one receive queue.
type LiveLane struct {
	Queue   int
	Numbers []LaneNumber
	// Trace is the history of one number's rate (the first that moved,
	// else the first), at TraceT; TraceLabel says which.
	Trace      []float64
	TraceT     []float64
	TraceLabel string
}

// LaneNumber is one rate of a lane.
type LaneNumber struct {
	Label string
	Unit  string
	Rate  float64
}

// LivePools is what the source says of its page pools.
type LivePools struct {
	// Listed is true when the source has netlink's page-pool-get view.
	Listed                       bool
	Pools, Inflight, InflightMem float64
	// Stats is true when it has page_pool statistics; StatsText says
	// what there is, or plainly why there is nothing.
	Stats     bool
	StatsText string
	// Notes are the source's notes about page pools.
	Notes []string
}

// LiveLayout places the live views on the canvas. WantH is the height
// they need at the canvas's width (the page gives the canvas at least
// that); FlowTitle is the flow's title, as long as its width holds.
type LiveLayout struct {
	Charts    []view.Rect
	Flow      view.Rect
	Lanes     view.Rect
	Pools     view.Rect
	Notes     view.Rect
	WantH     float64
	FlowTitle string
}

// Least sizes of the live views: a chart's plot, the sections under the
// flow (queues, page pools, notes), each at least a title and a few lines.
const (
	liveMinChartW = 360
	liveMinChartH = 90
	liveMinLanesH = 70
	liveMinPoolsH = 60
	liveMinNotesH = 60
)

// The flow's titles, the long one where it fits.
const (
	liveFlowTitle      = "FLOW  (per second over the last second; n/a: no counter says)"
	liveFlowTitleShort = "FLOW  (per second; n/a: no counter)"
)

// NewLiveLayout lays the live views out on a w by h canvas: the charts
// stacked on the left, the flow (never narrower or lower than
// view.FlowMinW by view.FlowMinH, so every box shows), the queues, the
// page pools and the notes on the right; on a canvas too narrow for both
// columns, the charts over the rest, each the canvas's width. WantH says
// how tall the canvas must be for every view to keep its least size.
func NewLiveLayout(w, h float64, charts int) LiveLayout {
	const gap = 8
	top := float64(view.HeaderH) + 4
	charts = max(charts, 1)
	var l LiveLayout
	right := math.Max(view.FlowMinW, math.Round(w*0.44)-gap)
	left := w - right - 2*gap // the charts' column, gap included on its left
	underFlow := float64(liveMinLanesH + liveMinPoolsH + liveMinNotesH)
	// column lays the flow, the queues, the page pools and the notes out
	// from y in a column at x, rw wide and hh high (at least their least).
	column := func(x, y, rw, hh float64) float64 {
		flowH := math.Max(math.Ceil(view.FlowMinH)+gap, math.Round(hh*0.40))
		rest := math.Max(hh-flowH, underFlow)
		lanesH := math.Max(liveMinLanesH, math.Round(rest*0.36))
		poolsH := math.Max(liveMinPoolsH, math.Round(rest*0.30))
		notesH := math.Max(liveMinNotesH, rest-lanesH-poolsH)
		l.Flow = view.Rect{X: x, Y: y, W: rw, H: flowH - gap}
		l.Lanes = view.Rect{X: x, Y: y + flowH, W: rw, H: lanesH - gap}
		l.Pools = view.Rect{X: x, Y: y + flowH + lanesH, W: rw, H: poolsH - gap}
		l.Notes = view.Rect{X: x, Y: y + flowH + lanesH + poolsH, W: rw, H: notesH}
		return y + flowH + lanesH + poolsH + notesH
	}
	if left >= liveMinChartW {
		// Side by side: the body is the taller of what the canvas has and
		// what the columns need.
		need := math.Max(float64(charts)*liveMinChartH, math.Ceil(view.FlowMinH)+gap+underFlow)
		body := math.Max(h-top-gap, need)
		ch := body / float64(charts)
		for i := 0; i < charts; i++ {
			l.Charts = append(l.Charts, view.Rect{X: gap, Y: top + float64(i)*ch, W: left - gap, H: ch - gap})
		}
		column(left+gap, top, right, body)
		l.WantH = top + need + gap
	} else {
		// Stacked: the charts share what the canvas has above the other
		// views, each at least its least height.
		rw := math.Max(0, w-2*gap)
		below := math.Ceil(view.FlowMinH) + gap + underFlow
		ch := math.Max(liveMinChartH, (h-top-gap-below)/float64(charts))
		for i := 0; i < charts; i++ {
			l.Charts = append(l.Charts, view.Rect{X: gap, Y: top + float64(i)*ch, W: rw, H: ch - gap})
		}
		end := column(gap, top+float64(charts)*ch, rw, below)
		l.WantH = end + gap
	}
	l.FlowTitle = liveFlowTitle
	if view.TextWidth(liveFlowTitle) > l.Flow.W {
		l.FlowTitle = liveFlowTitleShort
	}
	return l
}

// header says what is drawn: "live: host eth0", "live: lab xdp_drop",
// "live: sim default", "twin: host eth0".
func (l *liveView) header() string {
	lb := l.hello.Labels
	words := func(lb LiveLabels) string {
		switch lb.Kind {
		case "host":
			return strings.TrimSpace("host " + lb.Device)
		case "lab":
			return strings.TrimSpace("lab " + lb.Program)
		case "sim":
			s := strings.TrimSpace("sim " + lb.Preset)
			if lb.Program != "" {
				s += " (" + lb.Program + ")"
			}
			return s
		}
		return l.hello.Source
	}
	if lb.Kind == "twin" {
		return "twin: " + words(LiveLabels{Kind: lb.Follows, Device: lb.Device, Program: lb.Program})
	}
	return "live: " + words(lb)
}

// draw is the live view for a w by h canvas.
func (l *liveView) draw(w, h float64) *LiveDraw {
	d := &LiveDraw{Layout: NewLiveLayout(w, h, len(liveCharts)), Header: l.header()}
	switch {
	case !l.connected:
		d.Stale, d.StaleText = true, l.statusText
		if d.StaleText == "" {
			d.StaleText = "not connected to the server"
		}
	case l.last == nil:
		d.Stale, d.StaleText = true, "waiting for the first snapshot"
	case l.sinceSnap > LiveStaleMs*1e6:
		d.Stale, d.StaleText = true, fmt.Sprintf("no snapshot for %.0f s", float64(l.sinceSnap)/1e9)
	}
	if l.statusText != "" && l.connected {
		d.StaleText = l.statusText
	}
	d.Span = liveSpans[len(liveSpans)-1]
	if n := len(l.hist); n > 0 && l.last != nil {
		held := (l.last.t - l.hist[0].t) / 1000
		for _, s := range liveSpans {
			if held <= s {
				d.Span = s
				break
			}
		}
	}
	for _, c := range liveCharts {
		d.Charts = append(d.Charts, l.chart(c, d.Span))
	}
	l.flow(d)
	l.lanes(d)
	l.pools(d)
	d.Notes = slices.Clone(l.hello.Notes)
	return d
}

// chart draws one chart's lines from history.
func (l *liveView) chart(c chartDef, span float64) LiveChart {
	out := LiveChart{Title: c.title, Unit: c.unit}
	add := func(label, color, name string, predicted bool) {
		ln := LiveLine{Label: label, Color: color, Name: name, Predicted: predicted, Now: l.rateNow(name)}
		moved := ln.Now > 0
		for i := 1; i < len(l.hist); i++ {
			a, b := &l.hist[i-1], &l.hist[i]
			t := (b.t - l.last.t) / 1000
			if t < -span {
				continue
			}
			v := rate(l.value(a, name), l.value(b, name), a.t, b.t)
			ln.T, ln.V = append(ln.T, t), append(ln.V, v)
			moved = moved || v > 0
		}
		// A prediction that never moved is left out: the engine does not
		// model what it would predict (a twin's tx), and a line at 0
		// beside the measured one says nothing.
		if predicted && !moved {
			return
		}
		for _, v := range ln.V {
			if !math.IsNaN(v) {
				out.Max = max(out.Max, v)
			}
		}
		if !math.IsNaN(ln.Now) {
			out.Max = max(out.Max, ln.Now)
		}
		out.Lines = append(out.Lines, ln)
	}
	for _, d := range c.lines {
		name := l.pick(d.names)
		if name == "" {
			continue
		}
		add(d.label, d.color, name, false)
		if p := vocab.Predicted(name); l.have[p] {
			add(d.label+" predicted", d.color, p, true)
		}
	}
	if len(out.Lines) == 0 {
		out.Empty = "this source has no such counters"
		if c.unit == "pages" {
			out.Empty = l.poolStatsMissing()
		}
	}
	return out
}

// poolStatsMissing says plainly why there are no page_pool statistics.
func (l *liveView) poolStatsMissing() string {
	for _, n := range l.hello.Notes {
		if strings.Contains(n, "CONFIG_PAGE_POOL_STATS") {
			return "page_pool stats: not supported on this kernel (built without CONFIG_PAGE_POOL_STATS)"
		}
	}
	return "this source has no page_pool statistics"
}

// flow fills the flow diagram's rates from the counters now, the
// series worked out from others as the world's are (view.Derive): the
// packets XDP ran on are the driver's count (the same counters as
// rx_packets), else a lab's verdict map, which counts every verdict.
func (l *liveView) flow(d *LiveDraw) {
	var v [view.NumSeries]float64 // NaN: no counter says
	for s := range v {
		v[s] = math.NaN()
		if n := l.pick(liveFlow[view.Series(s)]); n != "" {
			v[s] = l.rateNow(n)
		}
	}
	// What reached the ring: the received packets and, for the engine,
	// the frames the host dropped with the ring empty.
	v[view.HostPPS] = v[view.RxPPS]
	xdpRan := view.Derive(&v, l.rateNow("rx_xdp_packets"), l.rateNow("cpumap_drops"), l.rateNow("devmap_drops"))
	d.XDP = !math.IsNaN(xdpRan) && xdpRan > 0
	for s, r := range v {
		if !math.IsNaN(r) {
			d.Flow[s], d.FlowKnown[s] = r, true
		}
	}
}

// lanes fills one lane per receive queue.
func (l *liveView) lanes(d *LiveDraw) {
	if l.last == nil {
		return
	}
	qrate := func(q int, name string, a, b *livePoint) float64 {
		i := l.laneIndex[name]
		if q >= len(a.queues) || q >= len(b.queues) {
			return math.NaN()
		}
		return rate(a.queues[q][i], b.queues[q][i], a.t, b.t)
	}
	history := func(q int, name string) (ts, vs []float64, moved bool) {
		for i := 1; i < len(l.hist); i++ {
			a, b := &l.hist[i-1], &l.hist[i]
			t := (b.t - l.last.t) / 1000
			if t < -d.Span {
				continue
			}
			v := qrate(q, name, a, b)
			ts, vs = append(ts, t), append(vs, v)
			moved = moved || v > 0
		}
		return ts, vs, moved
	}
	for q := 0; q < l.queues; q++ {
		lane := LiveLane{Queue: q}
		var shown []laneDef
		for _, def := range liveLane {
			name := def.name
			if math.IsNaN(l.last.queues[q][l.laneIndex[name]]) || len(lane.Numbers) == maxLaneNumbers {
				continue
			}
			shown = append(shown, def)
			r := math.NaN()
			if len(l.recent) >= 2 {
				r = qrate(q, name, &l.recent[0], &l.recent[len(l.recent)-1])
			}
			lane.Numbers = append(lane.Numbers, LaneNumber{def.label, def.unit, r})
		}
		for i, def := range shown {
			ts, vs, moved := history(q, def.name)
			if moved || i == 0 {
				lane.TraceT, lane.Trace, lane.TraceLabel = ts, vs, def.label
			}
			if moved {
				break
			}
		}
		d.Lanes = append(d.Lanes, lane)
	}
}

// pools fills what the source says of its page pools.
func (l *liveView) pools(d *LiveDraw) {
	p := &d.Pools
	if l.have["page_pools"] && l.last != nil {
		p.Listed = true
		p.Pools = l.gauge("page_pools")
		p.Inflight = l.gauge("page_pool.inflight")
		p.InflightMem = l.gauge("page_pool.inflight_mem")
	}
	for _, c := range d.Charts {
		if c.Unit == "pages" && len(c.Lines) > 0 {
			p.Stats = true
			var parts []string
			for _, ln := range c.Lines {
				if !ln.Predicted {
					parts = append(parts, ln.Label+" ("+ln.Name+")")
				}
			}
			p.StatsText = "page_pool stats: " + strings.Join(parts, ", ") + " per second in the chart"
		}
	}
	if !p.Stats {
		p.StatsText = l.poolStatsMissing()
	}
	for _, n := range l.hello.Notes {
		if strings.HasPrefix(n, "page_pool") && !strings.Contains(n, "CONFIG_PAGE_POOL_STATS") {
			p.Notes = append(p.Notes, n)
		}
	}
}

// gauge is name's value in the newest snapshot (0 when it has none).
func (l *liveView) gauge(name string) float64 {
	if i, ok := l.index[name]; ok && l.last != nil {
		if v := l.last.v[i]; !math.IsNaN(v) {
			return v
		}
		return 0
	}
	return 0
}

// LiveOut tells the page about the live source it passed the hello of:
// the header the canvas shows, and every counter's unit, kind and
// meaning (engine/vocab's, or a generic one for names it does not
// know), for the live table.
type LiveOut struct {
	Source  string                `json:"source"`
	Header  string                `json:"header"`
	Numbers map[string]LiveNumber `json:"numbers"`
}

// LiveNumber describes one counter of the live table.
type LiveNumber struct {
	Unit  string     `json:"unit"`
	Kind  vocab.Kind `json:"kind"`
	Help  string     `json:"help"`
	Known bool       `json:"known"` // engine/vocab has it
}

func (LiveOut) isOut() {}

// liveOut describes the hello's counters.
func (l *liveView) liveOut() LiveOut {
	out := LiveOut{Source: l.hello.Source, Header: l.header(), Numbers: map[string]LiveNumber{}}
	for _, n := range l.hello.Counters {
		d, known := vocab.Describe(n)
		out.Numbers[n] = LiveNumber{Unit: d.Unit, Kind: d.Kind, Help: d.Help, Known: known}
	}
	return out
}

// LiveState is the live view in the page's state: what the canvas
// shows, in numbers (the page's tests read it).
type LiveState struct {
	Source      string  `json:"source"`
	Header      string  `json:"header"`
	Description string  `json:"description"`
	Stale       bool    `json:"stale"`
	StaleText   string  `json:"stale_text,omitempty"`
	Snapshots   uint64  `json:"snapshots"`
	Points      int     `json:"points"` // points of history
	Span        float64 `json:"span"`   // the time axis, in seconds
	// WantH is the canvas height the live views need at its width
	// (LiveLayout.WantH): the page gives the canvas at least that.
	WantH float64 `json:"want_h"`
	// Resume says whether the simulation plays again when the live view
	// goes (it is paused meanwhile).
	Resume bool             `json:"resume"`
	Charts []LiveChartState `json:"charts"`
	Queues int              `json:"queues"`
}

// LiveChartState is one chart: its lines' rates now and how many points
// each has.
type LiveChartState struct {
	Title string          `json:"title"`
	Lines []LiveLineState `json:"lines"`
	Empty string          `json:"empty,omitempty"`
}

// LiveLineState is one line of a chart.
type LiveLineState struct {
	Label     string  `json:"label"`
	Name      string  `json:"name"`
	Predicted bool    `json:"predicted,omitempty"`
	Now       float64 `json:"now"`    // its rate now (0 when unknown)
	Points    int     `json:"points"` // points with a rate
	Max       float64 `json:"max"`    // the largest rate drawn
}

// state summarises d for the page.
func (l *liveView) state(d *LiveDraw) *LiveState {
	s := &LiveState{Source: l.hello.Source, Header: d.Header, Description: l.hello.Description, Stale: d.Stale, StaleText: d.StaleText,
		Snapshots: l.snapshots, Points: len(l.hist), Span: d.Span, Queues: len(d.Lanes), WantH: d.Layout.WantH, Resume: l.resume}
	for _, c := range d.Charts {
		cs := LiveChartState{Title: c.Title, Empty: c.Empty, Lines: []LiveLineState{}}
		for _, ln := range c.Lines {
			ls := LiveLineState{Label: ln.Label, Name: ln.Name, Predicted: ln.Predicted}
			if !math.IsNaN(ln.Now) {
				ls.Now = ln.Now
			}
			for _, v := range ln.V {
				if !math.IsNaN(v) {
					ls.Points++
					ls.Max = max(ls.Max, v)
				}
			}
			cs.Lines = append(cs.Lines, ls)
		}
		s.Charts = append(s.Charts, cs)
	}
	return s
}
