package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtionet"
	"ringlab/engine/vocab"
)

// The readout: a world's numbers, each computed here once and named by
// its engine/vocab row, for every reader (`ringlab run`'s summary, the
// page's counters table, the tutorials' figures, `ringlab reproduce`'s
// metrics). A reader picks the parts it shows; a part's figures are
// always in the same order, and the parts come in Part's order, so a
// readout of fewer parts is a subsequence of a fuller one.

// Part is a set of a readout's parts.
type Part uint16

// The parts, in the order a readout lists them.
const (
	// PartRun: sim_time_ns, events, pps, gbps (the rates over the
	// readout's window).
	PartRun Part = 1 << iota
	// PartCPUUtil: cpuN.util, each CPU's busy share of the window.
	PartCPUUtil
	// PartCPUCounters: each CPU's counters (World.CPUCounters) as
	// cpuN.NAME: cpu0.softnet.time_squeeze.
	PartCPUCounters
	// PartPages: pages.LOC for every location (mem.Loc).
	PartPages
	// PartTotals: every counter of Stats.Totals, under its kernel name.
	PartTotals
	// PartQueues: each queue pair's ethtool counters, rxN_* then txN_*.
	PartQueues
	// PartMeasures: time_us and the rest of the run group's rates and
	// shares over the window (mpps, delivered_gbps, goodput_gbps,
	// tx_mpps, recycle_cached_share, recycle_ring_share,
	// alloc_refill_per_mpkt): what `ringlab reproduce` measures.
	PartMeasures
	// PartRings: the driver's mode, and each virtqueue as virtio_ring.c
	// keeps it with the driver's and the host's counters of its queue
	// (rqN.*, sqN.*).
	PartRings
	// PartPools: each page_pool's state and stats (poolN.*), each cpumap
	// entry's lock (cpumapN.consumer_lock).
	PartPools
	// PartPerf: cpuN.perf.SYM, each CPU's share of the window charged to
	// each kernel function.
	PartPerf
	// PartWorld: the XDP program (xdp.*), the cost table (cost.*) and
	// the scenario's fields (scenario.PATH).
	PartWorld

	// PartsTable are the page's counters table's parts.
	PartsTable = PartRun | PartCPUUtil | PartCPUCounters | PartPages | PartTotals
	// PartsAll are every part.
	PartsAll = PartsTable | PartQueues | PartMeasures | PartRings | PartPools | PartPerf | PartWorld
)

// Figure is one number of a readout: its engine/vocab name, its value,
// or for a text (IsText: vocab.Text's mode, xdp.program, a scenario's
// string field) its words, Value 0. Index is the CPU, queue or pool a
// per-CPU, per-queue or per-pool figure is of, 0 otherwise. Total is,
// for a figure of PartQueues or PartCPUCounters, the name of the total
// it is that queue's or CPU's share of (rx_packets for rx1_packets,
// softnet.processed for cpu1.softnet.processed): what a metrics source
// keys its per-queue and per-CPU numbers by.
type Figure struct {
	Name   string
	Value  float64
	Text   string
	IsText bool
	Part   Part
	Index  int
	Total  string
}

// Readout holds a world's figures (World.Read). Its buffers are reused
// from one Read to the next.
type Readout struct {
	Figures []Figure
	// Stats are the typed counters the figures were read from.
	Stats Stats

	cpu  []Counter
	tot  []Counter
	perf PerfSample
}

// Get returns the figure of name, and whether the readout has it.
func (r *Readout) Get(name string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// ReadoutMark is where a readout's window starts: the world's time and
// counters then (World.MarkReadout). The zero mark is the world's start.
type ReadoutMark struct {
	t     sim.Time
	st    Stats
	busy  []sim.Duration
	perf  PerfSample
	valid bool
}

// MarkReadout marks now as the start of a window (World.ReadSince).
func (w *World) MarkReadout() ReadoutMark {
	m := ReadoutMark{t: w.Now(), valid: true}
	w.ReadStats(&m.st)
	for i := 0; i < w.Sim.NumCPU(); i++ {
		m.busy = append(m.busy, w.Sim.CPU(i).Busy())
	}
	w.SamplePerf(&m.perf)
	return m
}

// Read fills r with the world's figures of parts, its rates and shares
// over the whole run. It reuses r's buffers.
func (w *World) Read(r *Readout, parts Part) { w.ReadSince(r, parts, nil) }

// ReadSince is Read with the rates, shares and utilisations over the
// window from m (nil: from the start) to now; counters, levels and
// settings are now's.
func (w *World) ReadSince(r *Readout, parts Part, m *ReadoutMark) {
	if m != nil && !m.valid {
		m = nil
	}
	w.ReadStats(&r.Stats)
	st := &r.Stats
	out := r.Figures[:0]
	now := w.Now()
	var from sim.Time
	var st0 *Stats
	if m != nil {
		from, st0 = m.t, &m.st
	}
	el := now.Sub(from)
	secs := el.Seconds()
	// delta is a counter's growth over the window.
	delta := func(read func(*Stats) uint64) uint64 {
		if st0 == nil {
			return read(st)
		}
		return read(st) - read(st0)
	}
	perSec := func(n uint64, scale float64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) * scale / secs
	}
	num := func(p Part, i int, name string, v float64) {
		out = append(out, Figure{Name: name, Value: v, Part: p, Index: i})
	}
	text := func(p Part, name, v string) {
		out = append(out, Figure{Name: name, Text: v, IsText: true, Part: p})
	}
	ncpu := w.Sim.NumCPU()

	if parts&PartRun != 0 {
		num(PartRun, 0, "sim_time_ns", float64(now))
		num(PartRun, 0, "events", float64(w.Sim.Queue.Fired()))
		num(PartRun, 0, "pps", perSec(delta(func(s *Stats) uint64 { return s.RX.Packets }), 1))
		num(PartRun, 0, "gbps", perSec(delta(func(s *Stats) uint64 { return s.RX.Bytes }), 8)/1e9)
	}
	if parts&PartCPUUtil != 0 {
		for i := 0; i < ncpu; i++ {
			c := w.Sim.CPU(i)
			u := c.Utilisation(el)
			if m != nil && i < len(m.busy) {
				u = utilisation(c.Busy()-m.busy[i], el)
			}
			num(PartCPUUtil, i, vocab.CPUUtil(i), u)
		}
	}
	// part is one queue's or CPU's figure of the total named total.
	part := func(p Part, i int, name, total string, v uint64) {
		out = append(out, Figure{Name: name, Value: float64(v), Part: p, Index: i, Total: total})
	}
	if parts&PartCPUCounters != 0 {
		for i := 0; i < ncpu; i++ {
			r.cpu = w.CPUCounters(i, r.cpu)
			for _, c := range r.cpu {
				part(PartCPUCounters, i, vocab.CPUCounter(i, c.Name), c.Name, c.Value)
			}
		}
	}
	if parts&PartPages != 0 {
		counts := w.Mem.Counts()
		for l := mem.Loc(0); l < mem.NumLocs; l++ {
			num(PartPages, 0, vocab.Pages(l.String()), float64(counts[l]))
		}
	}
	if parts&PartTotals != 0 {
		r.tot = st.Totals(r.tot)
		for _, c := range r.tot {
			num(PartTotals, 0, c.Name, float64(c.Value))
		}
	}
	if parts&PartQueues != 0 {
		for i := range st.Queues {
			q := &st.Queues[i]
			for _, c := range rqCounters(&q.RX) {
				part(PartQueues, i, vocab.Queue("rx", i, c.Name), vocab.Total("rx", c.Name), c.Value)
			}
			for _, c := range sqCounters(&q.TX) {
				part(PartQueues, i, vocab.Queue("tx", i, c.Name), vocab.Total("tx", c.Name), c.Value)
			}
		}
	}
	if parts&PartMeasures != 0 {
		num(PartMeasures, 0, "time_us", float64(now)/1e3)
		num(PartMeasures, 0, "mpps", perSec(delta(func(s *Stats) uint64 { return s.RX.Packets }), 1)/1e6)
		num(PartMeasures, 0, "delivered_gbps", perSec(delta(func(s *Stats) uint64 { return s.Stack.Bytes }), 8)/1e9)
		num(PartMeasures, 0, "goodput_gbps", perSec(delta(func(s *Stats) uint64 { return s.Stack.AppBytes }), 8)/1e9)
		num(PartMeasures, 0, "tx_mpps", perSec(delta(devmapCompleted), 1)/1e6)
		cached := delta(func(s *Stats) uint64 { return s.PagePool[ppRecycleCached] })
		ring := delta(func(s *Stats) uint64 { return s.PagePool[ppRecycleRing] })
		num(PartMeasures, 0, "recycle_cached_share", share(cached, cached+ring))
		num(PartMeasures, 0, "recycle_ring_share", share(ring, cached+ring))
		refill := delta(func(s *Stats) uint64 { return s.PagePool[ppAllocRefill] })
		num(PartMeasures, 0, "alloc_refill_per_mpkt", share(refill, delta(func(s *Stats) uint64 { return s.RX.Packets }))*1e6)
	}
	if parts&PartRings != 0 {
		out = w.readRings(out)
	}
	if parts&PartPools != 0 {
		out = w.readPools(out)
	}
	if parts&PartPerf != 0 {
		w.SamplePerf(&r.perf)
		var start *PerfSample
		if m != nil {
			start = &m.perf
		} else {
			start = &PerfSample{}
		}
		if top, err := PerfTop(start, &r.perf); err == nil {
			// Every symbol, 0 where nothing was charged to it (the
			// pseudo-rows have no name a reader can spell).
			for i := 0; i < ncpu; i++ {
				for s := sim.Sym(0); s < sim.NumSyms; s++ {
					if !s.Pseudo() {
						num(PartPerf, i, vocab.CPUPerf(i, s.String()), top[i].Share(s.String()))
					}
				}
			}
		}
	}
	if parts&PartWorld != 0 {
		if w.Prog != nil {
			insns := w.Prog.Instructions()
			text(PartWorld, "xdp.program", w.Scenario.XDP.Program)
			num(PartWorld, 0, "xdp.insns", float64(len(insns)))
			num(PartWorld, 0, "xdp.bytes", float64(insns.Size()))
		}
		for _, c := range w.Sim.Costs.Table() {
			num(PartWorld, 0, "cost."+c.Name, float64(c.Value))
		}
		out = appendScenario(out, &w.Scenario)
	}
	r.Figures = out
}

// The page_pool stats the measures read, by their index in
// pagepool.StatNames (TestReadoutStatIndices holds them to it).
const (
	ppAllocRefill   = 4
	ppRecycleCached = 6
	ppRecycleRing   = 8
)

func devmapCompleted(s *Stats) uint64 {
	if s.Devmap == nil {
		return 0
	}
	return s.Devmap.Completed
}

// share is n over total, 0 when total is.
func share(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// utilisation is busy over elapsed, within [0, 1] (sim.CPU.Utilisation's
// rule for a window).
func utilisation(busy, elapsed sim.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return min(1, max(0, float64(busy)/float64(elapsed)))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// A named is one figure of a queue or a pool: its name within it (the
// NAME of rqN.NAME) and its value.
type named struct {
	name string
	v    float64
}

// appendNamed appends figures fs of part p of queue, CPU or pool i, each
// named by name (vocab.Ring, vocab.Pool, ...) from i and its own name.
func appendNamed(out []Figure, p Part, i int, name func(int, string) string, fs ...named) []Figure {
	for _, f := range fs {
		out = append(out, Figure{Name: name(i, f.name), Value: f.v, Part: p, Index: i})
	}
	return out
}

// readRings appends the driver's mode and its virtqueues.
func (w *World) readRings(out []Figure) []Figure {
	out = append(out, Figure{Name: "mode", Text: w.Driver.Mode(), IsText: true, Part: PartRings},
		Figure{Name: "big_packets_num_skbfrags", Value: float64(w.Driver.NumSkbFrags()), Part: PartRings})
	for _, rq := range w.Driver.RQ {
		f := rqFigures(rq)
		out = appendNamed(out, PartRings, rq.Index, vocab.Ring, f[:]...)
	}
	for _, sq := range w.Driver.SQ {
		q := sq.VQ
		out = appendNamed(out, PartRings, sq.Index, vocab.SendRing,
			named{"size", float64(q.Size())}, named{"num_free", float64(q.NumFree())},
			named{"avail_idx", float64(q.AvailIdx())}, named{"used_idx", float64(q.UsedIdx())})
	}
	return out
}

// rqFigures are a receive queue's figures (rqN.*), in the readout's
// order: its virtqueue as virtio_ring.c keeps it, the driver's state
// and counters of the queue, then the host's.
func rqFigures(rq *virtionet.RQ) [38]named {
	q, s, dc := rq.VQ, &rq.Stats, rq.Dev.Counters()
	per, posted := rq.DescPerBuf(), rq.PostedDescriptors()
	return [...]named{
		{"size", float64(q.Size())}, {"num_free", float64(q.NumFree())}, {"avail_idx", float64(q.AvailIdx())},
		{"used_idx", float64(q.UsedIdx())}, {"last_used", float64(q.LastUsed())}, {"used_event", float64(q.UsedEvent())},
		{"avail_event", float64(q.AvailEvent())}, {"avail_flags", float64(q.AvailFlags())}, {"used_flags", float64(q.UsedFlags())},
		{"num_added", float64(q.NumAdded())}, {"free_head", float64(q.FreeHead())},
		{"callbacks_disabled", b2f(q.CallbacksDisabled())}, {"event_idx", b2f(q.EventIdx())}, {"indirect", b2f(rq.Indirect())},
		{"posted_descriptors", float64(posted)}, {"descs_per_buffer", float64(per)}, {"posted_buffers", float64(posted / per)},
		{"ewma", float64(rq.EWMA())}, {"mergeable_buf_len", float64(rq.MergeableBufLen())}, {"min_buf_len", float64(rq.MinBufLen())},
		{"irqs", float64(s.IRQs)}, {"napi_polls", float64(s.NAPIPolls)}, {"refills", float64(s.Refills)},
		{"alloc_fails", float64(s.AllocFails)}, {"linearized", float64(s.Linearized)}, {"copied", float64(s.Copied)},
		{"coalesced", float64(s.Coalesced)}, {"big_built", float64(s.BigBuilt)}, {"frag_list", float64(s.FragList)},
		{"xdp_aborted", float64(s.XDPAborted)}, {"length_errors", float64(s.LengthErrors)},
		{"host_packets", float64(dc.Packets)}, {"host_buffers", float64(dc.Buffers)}, {"host_drops", float64(dc.Drops)},
		{"host_too_big", float64(dc.TooBig)}, {"host_starved", float64(dc.Starved)}, {"host_wakeups", float64(dc.Wakeups)},
		{"host_interrupts", float64(dc.Interrupts)},
	}
}

// readPools appends each page_pool's state and stats, then each cpumap
// entry's consumer lock.
func (w *World) readPools(out []Figure) []Figure {
	for i, pool := range w.Pools.List(nil) {
		r := pool.Ring()
		out = appendNamed(out, PartPools, i, vocab.Pool,
			named{"cache", float64(pool.CacheLen())}, named{"ring", float64(r.Len())}, named{"ring_size", float64(r.Size())},
			named{"pool_size", float64(pool.Params().PoolSize)}, named{"inflight", float64(pool.Inflight())},
			named{"hold_cnt", float64(pool.HoldCnt())}, named{"release_cnt", float64(pool.ReleaseCnt())},
			named{"producer_lock", float64(r.ProducerLock.Stats().Acquisitions)},
			named{"consumer_lock", float64(r.ConsumerLock.Stats().Acquisitions)})
		for j, s := range pool.Stats() {
			out = appendNamed(out, PartPools, i, vocab.Pool, named{vocab.PagePoolStat(pagepool.StatNames[j]), float64(s.Value)})
		}
	}
	if w.Cpumap != nil {
		for i := 0; i < w.Sim.NumCPU(); i++ {
			if w.Cpumap.Has(i) {
				out = appendNamed(out, PartPools, i, vocab.Cpumap, named{"consumer_lock", float64(w.Cpumap.ConsumerLock(i).Acquisitions)})
			}
		}
	}
	return out
}

// appendScenario appends the scenario's JSON form as scenario.PATH
// figures: numbers, strings (texts), and booleans as 1 or 0, in the
// order of its fields.
func appendScenario(out []Figure, s *scenario.Scenario) []Figure {
	raw, err := json.Marshal(s)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(prefix string) bool
	// walk reads one value from dec, in the document's order (a map
	// would lose it).
	walk = func(prefix string) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{':
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return false
					}
					key, _ := k.(string)
					if !walk(prefix + "." + key) {
						return false
					}
				}
			case '[':
				for i := 0; dec.More(); i++ {
					if !walk(prefix + "." + strconv.Itoa(i)) {
						return false
					}
				}
			}
			_, err := dec.Token() // the closing delimiter
			return err == nil
		case json.Number:
			f, _ := x.Float64()
			out = append(out, Figure{Name: prefix, Value: f, Part: PartWorld})
		case string:
			out = append(out, Figure{Name: prefix, Text: x, IsText: true, Part: PartWorld})
		case bool:
			out = append(out, Figure{Name: prefix, Value: b2f(x), Part: PartWorld})
		}
		return true
	}
	walk("scenario")
	return out
}

// ReadoutOf is the figures of parts of the world, over the whole run:
// Read into a new Readout.
func (w *World) ReadoutOf(parts Part) *Readout {
	r := &Readout{}
	w.Read(r, parts)
	return r
}

// String shows a figure as name = value, for messages and tests.
func (f Figure) String() string {
	if f.IsText {
		return fmt.Sprintf("%s = %q", f.Name, f.Text)
	}
	return fmt.Sprintf("%s = %g", f.Name, f.Value)
}
