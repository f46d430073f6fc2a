package view

import (
	"math"

	"ringlab/engine"
)

// Series are the rates the charts and the flow view show, per second of
// simulated time. Each is a counter of World.Stats, or a sum or
// difference of them, and has one name, its engine/vocab row's (Name):
// the counter it is the rate of (rx_packets), or for a sum or difference
// its row in the vocabulary's flow group (flow.xdp_pass), which says how
// it is derived. What the views draw beside a series is theirs to label
// (Charts, the flow's nodes); the name is what a series travels under.
type Series int

const (
	RxPPS        Series = iota // buffers the driver received
	HostPPS                    // frames the host wrote into the ring
	HostDrops                  // frames dropped with the ring empty
	RxDrops                    // the driver's drops (no memory, bad length)
	XDPPass                    // rx_xdp_packets - the other verdicts
	XDPDrop                    // XDP_DROP and failed XDP_TX, XDP_REDIRECT
	XDPTx                      // XDP_TX verdicts
	XDPRedirect                // XDP_REDIRECT verdicts
	CpumapPass                 // redirected frames a cpumap CPU turned into skbs
	RedirectFree               // rx_xdp_redirects - cpumap_passed: redirected frames freed without an skb
	NoXDP                      // rx_packets - rx_xdp_packets: straight to an skb
	Delivered                  // skbs the stack consumed
	SockDrops                  // socket_drops + cpumap_drops + devmap_drops
	RecycleCache               // back into the alloc cache
	RecycleRing                // back through the ptr_ring
	PoolRelease                // recycle_ring_full + released_ref: the pool lets pages go
	AllocFast                  // from the alloc cache
	AllocSlow                  // rx_pp_alloc_slow + slow_ho: the pool asks the allocator
	PageAllocs                 // blocks the page allocator handed out
	PageFrees                  // blocks freed to the page allocator
	NumSeries
)

// seriesNames are the series' engine/vocab names.
var seriesNames = [NumSeries]string{
	RxPPS:        "rx_packets",
	HostPPS:      "flow.host_packets",
	HostDrops:    "host_drops",
	RxDrops:      "rx_drops",
	XDPPass:      "flow.xdp_pass",
	XDPDrop:      "rx_xdp_drops",
	XDPTx:        "rx_xdp_tx",
	XDPRedirect:  "rx_xdp_redirects",
	CpumapPass:   "cpumap_passed",
	RedirectFree: "flow.redirect_freed",
	NoXDP:        "flow.no_xdp",
	Delivered:    "stack_delivered",
	SockDrops:    "flow.socket_drops",
	RecycleCache: "rx_pp_recycle_cached",
	RecycleRing:  "rx_pp_recycle_ring",
	PoolRelease:  "flow.pool_release",
	AllocFast:    "rx_pp_alloc_fast",
	AllocSlow:    "flow.alloc_slow",
	PageAllocs:   "page_allocs",
	PageFrees:    "page_frees",
}

// Name is the series's engine/vocab name: the key its rate travels
// under (a pane's rates in the page's state).
func (s Series) Name() string {
	if s >= 0 && s < NumSeries {
		return seriesNames[s]
	}
	return "?"
}

// String is the series's Name.
func (s Series) String() string { return s.Name() }

// RatesLen is how many samples Rates keeps.
const RatesLen = 120

// MinSampleNs is the least simulated time between two samples.
const MinSampleNs = 5_000

// SmoothNs is the simulated time a rate is averaged over (when the samples
// held reach back that far): a few packets per sample at the teaching
// presets' rates would make a jumpy chart.
const SmoothNs = 500_000

// MinRateNs is the least simulated time a rate is taken over: a sample
// averaged over less (the first microseconds of a world, or of one just
// restored with nothing read behind it) is no rate, and the views say
// "no rate yet" instead of a throughput of a handful of packets.
const MinRateNs = 200_000

// Rates keeps the last RatesLen samples of every series, oldest first, and
// each CPU's busy share over each sample. A sample's rates are averaged
// over the SmoothNs before it. The zero value is ready.
type Rates struct {
	n    int // samples held
	head int // index of the oldest
	t    [RatesLen]int64
	dt   [RatesLen]int64
	v    [RatesLen][NumSeries]float64
	util [RatesLen][]float64
	span [RatesLen]int64 // the simulated time each sample is averaged over

	// Cumulative readings, one per sample plus the first reading.
	cum   [RatesLen + 1][NumSeries]float64
	busy  [RatesLen + 1][]int64
	ct    [RatesLen + 1]int64
	cn    int // readings held
	chead int

	stats engine.Stats // the last reading, reused
}

// Reset forgets every sample (the world was rebuilt).
func (r *Rates) Reset() {
	r.n, r.head, r.cn, r.chead = 0, 0, 0, 0
}

// Len is the number of samples held.
func (r *Rates) Len() int { return r.n }

// At returns sample i (0 = oldest): its end time, its length and its rates.
func (r *Rates) At(i int) (t, dt int64, v *[NumSeries]float64) {
	j := (r.head + i) % RatesLen
	return r.t[j], r.dt[j], &r.v[j]
}

// Span returns the simulated time sample i's rates are averaged over.
func (r *Rates) Span(i int) int64 { return r.span[(r.head+i)%RatesLen] }

// Valid reports whether sample i is a rate: averaged over MinRateNs or
// more.
func (r *Rates) Valid(i int) bool { return r.Span(i) >= MinRateNs }

// Ready reports whether the newest sample is a rate (Valid).
func (r *Rates) Ready() bool { return r.n > 0 && r.Valid(r.n-1) }

// Held returns the simulated time from the oldest reading held to the
// newest: how far back the rates can see.
func (r *Rates) Held() int64 {
	if r.cn == 0 {
		return 0
	}
	return r.ct[r.reading(r.cn-1)] - r.ct[r.reading(0)]
}

// LastAt returns the time of the newest reading, and false when there is
// none.
func (r *Rates) LastAt() (int64, bool) {
	if r.cn == 0 {
		return 0, false
	}
	return r.ct[r.reading(r.cn-1)], true
}

// Util returns each CPU's busy share over sample i, 0..1.
func (r *Rates) Util(i int) []float64 { return r.util[(r.head+i)%RatesLen] }

// Latest returns the newest rates, or zeros.
func (r *Rates) Latest() [NumSeries]float64 {
	if r.n == 0 {
		return [NumSeries]float64{}
	}
	_, _, v := r.At(r.n - 1)
	return *v
}

// Max returns the largest rate of series s over the samples held.
func (r *Rates) Max(s Series) float64 {
	m := 0.0
	for i := 0; i < r.n; i++ {
		_, _, v := r.At(i)
		m = max(m, v[s])
	}
	return m
}

// reading returns cumulative reading i (0 = oldest).
func (r *Rates) reading(i int) int { return (r.chead + i) % (RatesLen + 1) }

// Sample adds a sample when at least MinSampleNs of simulated time passed
// since the last one; it reports whether it did.
func (r *Rates) Sample(w *engine.World) bool {
	now := int64(w.Now())
	ncpu := w.Sim.NumCPU()
	if r.cn > 0 {
		last := r.reading(r.cn - 1)
		if now < r.ct[last] || len(r.busy[last]) != ncpu {
			r.Reset() // a new world
		} else if now-r.ct[last] < MinSampleNs {
			return false
		}
	}
	// Store the reading.
	var k int
	if r.cn < RatesLen+1 {
		k = r.reading(r.cn)
		r.cn++
	} else {
		k = r.chead
		r.chead = (r.chead + 1) % (RatesLen + 1)
	}
	r.cum[k] = r.read(w)
	r.ct[k] = now
	b := resize(r.busy[k], ncpu)
	for i := range b {
		b[i] = int64(w.Sim.CPU(i).Busy())
	}
	r.busy[k] = b
	if r.cn < 2 {
		return false
	}
	// The sample's rates and CPU shares: from the newest older reading at
	// least SmoothNs back (or the oldest held).
	base := r.reading(0)
	for i := r.cn - 2; i >= 0; i-- {
		if now-r.ct[r.reading(i)] >= SmoothNs {
			base = r.reading(i)
			break
		}
	}
	prev := r.reading(r.cn - 2)
	var j int
	if r.n < RatesLen {
		j = (r.head + r.n) % RatesLen
		r.n++
	} else {
		j = r.head
		r.head = (r.head + 1) % RatesLen
	}
	secs := float64(now-r.ct[base]) / 1e9
	for s := Series(0); s < NumSeries; s++ {
		d := r.cum[k][s] - r.cum[base][s]
		r.v[j][s] = max(0, d) / secs
	}
	dt := now - r.ct[prev]
	span := now - r.ct[base]
	u := resize(r.util[j], ncpu)
	for i := range u {
		u[i] = min(1, max(0, float64(b[i]-r.busy[base][i])/float64(span)))
	}
	r.util[j] = u
	r.t[j], r.dt[j], r.span[j] = now, dt, span
	return true
}

// read returns the cumulative value behind every series, from the
// world's typed counters (exact as float64 up to 2^53).
func (r *Rates) read(w *engine.World) [NumSeries]float64 {
	w.ReadStats(&r.stats)
	st := &r.stats
	var v [NumSeries]float64
	v[RxPPS] = float64(st.RX.Packets)
	v[HostPPS] = float64(st.Host.Packets)
	v[HostDrops] = float64(st.Host.Drops)
	v[RxDrops] = float64(st.RX.Drops)
	v[XDPPass] = math.NaN() // virtio_net counts no XDP_PASS of its own
	v[XDPDrop] = float64(st.RX.XDPDrops)
	v[XDPTx] = float64(st.RX.XDPTx)
	v[XDPRedirect] = float64(st.RX.XDPRedirects)
	v[Delivered] = float64(st.Stack.Delivered)
	v[SockDrops] = float64(st.Stack.SockDrops)
	var cpumapDrops, devmapDrops float64
	if st.Cpumap != nil {
		v[CpumapPass], cpumapDrops = float64(st.Cpumap.Passed), float64(st.Cpumap.Drops)
	}
	if st.Devmap != nil {
		devmapDrops = float64(st.Devmap.Drops)
	}
	Derive(&v, float64(st.RX.XDPPackets), cpumapDrops, devmapDrops)
	pp := &st.PagePool
	v[RecycleCache] = float64(pp[ppRecycleCached])
	v[RecycleRing] = float64(pp[ppRecycleRing])
	v[PoolRelease] = float64(pp[ppRecycleRingFull] + pp[ppRecycleReleasedRef])
	v[AllocFast] = float64(pp[ppAllocFast])
	v[AllocSlow] = float64(pp[ppAllocSlow] + pp[ppAllocSlowHO])
	v[PageAllocs] = float64(st.Mem.Allocs)
	v[PageFrees] = float64(st.Mem.Frees)
	return v
}

// Derive works out the flow's series that are differences or sums of
// counters, engine/vocab's flow.* rows (flow.xdp_pass, flow.no_xdp,
// flow.redirect_freed, flow.socket_drops), from the counters behind
// them: cumulative totals or rates alike, the world's (Rates) or a live
// source's (play's live view). v holds the counters that have a series
// (RxPPS, XDPPass, XDPDrop, XDPTx, XDPRedirect, CpumapPass, SockDrops),
// xdpPackets is rx_xdp_packets, cpumapDrops and devmapDrops the maps'
// drops. NaN is a counter the source does not have: a series worked
// out from one is NaN, an XDP verdict or a map's drops it lacks count
// none. An XDPPass v already holds (a lab counts its program's
// verdicts) is kept, and with no rx_xdp_packets the packets XDP ran on
// are then every verdict counted. Derive returns the packets XDP ran
// on, NaN when unknown.
func Derive(v *[NumSeries]float64, xdpPackets, cpumapDrops, devmapDrops float64) (xdpRan float64) {
	verdicts := orZero(v[XDPDrop]) + orZero(v[XDPTx]) + orZero(v[XDPRedirect])
	if math.IsNaN(xdpPackets) {
		xdpPackets = v[XDPPass] + verdicts
	}
	if math.IsNaN(v[XDPPass]) {
		v[XDPPass] = less(xdpPackets, verdicts)
	}
	v[NoXDP] = less(v[RxPPS], xdpPackets)
	v[RedirectFree] = less(v[XDPRedirect], v[CpumapPass])
	v[SockDrops] += orZero(cpumapDrops) + orZero(devmapDrops)
	return xdpPackets
}

// less is a - b, at least 0; NaN when either is.
func less(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return max(0, a-b)
}

// orZero is x, 0 when it is NaN.
func orZero(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}

// Indices of engine.Stats.PagePool (pagepool.StatNames order).
const (
	ppAllocFast = iota
	ppAllocSlow
	ppAllocSlowHO
	_ // alloc_empty
	_ // alloc_refill
	_ // alloc_waive
	ppRecycleCached
	_ // recycle_cache_full
	ppRecycleRing
	ppRecycleRingFull
	ppRecycleReleasedRef
)
