package tutorials

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"ringlab/engine"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// Figures are the names a check can read from a world, with their values.
// Every name is engine/vocab's, the one table the page, the traces and
// /metrics read too: counters keep the kernel's names (rx_packets,
// rx_xdp_drops, rx_pp_recycle_cached ...); the rest are namespaced by what
// they belong to (rq0.num_free, pool0.cache, pages.buddy, cpu1.util,
// scenario.mtu).
type Figures map[string]Value

// FigureDocs lists the kinds of names a check can read, each with what it
// is: the table of README.md, for a browser's help panel.
func FigureDocs() [][2]string { return append([][2]string(nil), figureDocs...) }

var figureDocs = [][2]string{
	{"rx_*, tx_*, rx_pp_*", "the device's ethtool counters summed over queues, and the 11 page_pool stats summed over pools"},
	{"rxN_*, txN_*", "one queue pair's ethtool counters (rx0_kicks)"},
	{"interrupts, napi_polls, host_*, page_*, pcp_*, zone_lock_*, stack_*, socket_*, tcp_rcv_coalesce, packet_socket_clones, frag_list_skbs, refill_work_*, cpumap_*, devmap_*", "engine counters without an ethtool name (engine.World.Totals)"},
	{"time_ns, time_us, packets, pps, mpps, gbps, delivered_gbps, events", "simulated time, rx_packets, rates over the whole run (gbps from rx_bytes, delivered_gbps from what the stack consumed)"},
	{"mode, big_packets_num_skbfrags", "the receive mode the driver picked (\"small\", \"big\", \"mergeable\") and big mode's pages per buffer"},
	{"rqN.size, .num_free, .avail_idx, .used_idx, .last_used, .used_event, .avail_event, .avail_flags, .used_flags, .num_added, .free_head, .callbacks_disabled, .event_idx", "receive virtqueue N, as virtio_ring.c keeps it"},
	{"rqN.posted_buffers, .posted_descriptors, .descs_per_buffer, .indirect, .ewma, .mergeable_buf_len, .min_buf_len", "what the driver has posted (descriptors of the ring; indirect is 1 when each buffer takes one slot, its entries in a table of their own); the mergeable EWMA, the next buffer's length and its floor (mergeable_min_buf_len)"},
	{"rqN.irqs, .napi_polls, .refills, .alloc_fails, .linearized, .copied, .coalesced, .big_built, .frag_list, .xdp_aborted, .length_errors", "driver-side counters of queue N (big_built: big-mode skbs built around the first page)"},
	{"rqN.host_packets, .host_buffers, .host_drops, .host_too_big, .host_starved, .host_wakeups, .host_interrupts", "the host (device) side of queue N"},
	{"sqN.size, .num_free, .avail_idx, .used_idx", "send virtqueue N (XDP_TX)"},
	{"poolN.cache, .ring, .ring_size, .pool_size, .inflight, .hold_cnt, .release_cnt, .producer_lock, .consumer_lock, .alloc_fast ... .recycle_released_ref", "page_pool N: alloc cache depth, ptr_ring entries, pages in flight, how many times its ptr_ring's producer_lock and consumer_lock were taken, its 11 stats"},
	{"cpumapN.consumer_lock", "how many times the kthread of cpumap entry N (the target CPU) took its ptr_ring's consumer_lock"},
	{"pages.LOC", "pages in a location: buddy, pcp, pool_cache, pool_ring, virtqueue, skb, xdp_frame, cpumap_ring, tx_queue, page_frag, big_chain, driver"},
	{"cpuN.util", "CPU N's utilisation over the run, 0 to 1"},
	{"cpuN.perf.FUNC", "CPU N's share of the run's time charged to kernel function FUNC (the perf top pane's \"run\" column), 0 to 1: cpu0.perf._raw_spin_lock"},
	{"xdp.program, xdp.insns, xdp.bytes", "the attached XDP program, its instruction count and size in bytes (8 an instruction, 16 for a 64-bit load such as a map pointer)"},
	{"cost.NAME", "an entry of the world's cost table in ns (cost.vhost_desc, cost.dma_map_iommu); `ringlab run` scenarios override them with costs"},
	{"scenario.PATH", "a field of the world's scenario by its JSON path (scenario.ring_size, scenario.traffic.size)"},
}

// worldFigures reads every figure of a world.
func worldFigures(w *engine.World) Figures {
	f := Figures{}
	num := func(name string, v float64) { f[name] = Num(v) }
	u := func(name string, v uint64) { f[name] = Num(float64(v)) }
	for _, c := range w.Totals() {
		u(c.Name, c.Value)
	}
	for _, q := range w.Queues() {
		for _, c := range q {
			u(c.Name, c.Value)
		}
	}
	for loc, n := range w.Pages() {
		num(vocab.Pages(loc), float64(n))
	}
	now := w.Now()
	el := now.Sub(0)
	u("sim_time_ns", uint64(now))
	u("time_ns", uint64(now)) // the older name tutorials use
	num("time_us", float64(now)/1e3)
	u("events", w.Sim.Queue.Fired())
	u("packets", w.Received())
	var rxBytes uint64
	for _, rq := range w.Driver.RQ {
		rxBytes += rq.Stats.Bytes
	}
	delivered := w.Stack.Counters().Bytes
	if secs := el.Seconds(); secs > 0 {
		num("pps", float64(w.Received())/secs)
		num("mpps", float64(w.Received())/secs/1e6)
		num("gbps", float64(rxBytes)*8/secs/1e9)
		num("delivered_gbps", float64(delivered)*8/secs/1e9)
	} else {
		num("pps", 0)
		num("mpps", 0)
		num("gbps", 0)
		num("delivered_gbps", 0)
	}
	for i := 0; i < w.Sim.NumCPU(); i++ {
		num(vocab.CPUUtil(i), w.Sim.CPU(i).Utilisation(el))
	}
	// The perf top since the start: every symbol, 0 where nothing was
	// charged to it (the pseudo-rows have no name a check can spell).
	var ps engine.PerfSample
	w.SamplePerf(&ps)
	if top, err := engine.PerfTop(&engine.PerfSample{}, &ps); err == nil {
		for i := 0; i < w.Sim.NumCPU(); i++ {
			for s := sim.Sym(0); s < sim.NumSyms; s++ {
				if !s.Pseudo() {
					num(vocab.CPUPerf(i, s.String()), top[i].Share(s.String()))
				}
			}
		}
	}
	f["mode"] = Str(w.Driver.Mode())
	num("big_packets_num_skbfrags", float64(w.Driver.NumSkbFrags()))
	for _, rq := range w.Driver.RQ {
		p := vocab.Ring(rq.Index, "")
		q := rq.VQ
		num(p+"size", float64(q.Size()))
		num(p+"num_free", float64(q.NumFree()))
		num(p+"avail_idx", float64(q.AvailIdx()))
		num(p+"used_idx", float64(q.UsedIdx()))
		num(p+"last_used", float64(q.LastUsed()))
		num(p+"used_event", float64(q.UsedEvent()))
		num(p+"avail_event", float64(q.AvailEvent()))
		num(p+"avail_flags", float64(q.AvailFlags()))
		num(p+"used_flags", float64(q.UsedFlags()))
		num(p+"num_added", float64(q.NumAdded()))
		num(p+"free_head", float64(q.FreeHead()))
		num(p+"callbacks_disabled", b2f(q.CallbacksDisabled()))
		num(p+"event_idx", b2f(q.EventIdx()))
		num(p+"indirect", b2f(rq.Indirect()))
		per := rq.DescPerBuf()
		posted := rq.PostedDescriptors()
		num(p+"posted_descriptors", float64(posted))
		num(p+"descs_per_buffer", float64(per))
		num(p+"posted_buffers", float64(posted/per))
		num(p+"ewma", float64(rq.EWMA()))
		num(p+"mergeable_buf_len", float64(rq.MergeableBufLen()))
		num(p+"min_buf_len", float64(rq.MinBufLen()))
		s := &rq.Stats
		u(p+"irqs", s.IRQs)
		u(p+"napi_polls", s.NAPIPolls)
		u(p+"refills", s.Refills)
		u(p+"alloc_fails", s.AllocFails)
		u(p+"linearized", s.Linearized)
		u(p+"copied", s.Copied)
		u(p+"coalesced", s.Coalesced)
		u(p+"big_built", s.BigBuilt)
		u(p+"frag_list", s.FragList)
		u(p+"xdp_aborted", s.XDPAborted)
		u(p+"length_errors", s.LengthErrors)
		dc := rq.Dev.Counters()
		u(p+"host_packets", dc.Packets)
		u(p+"host_buffers", dc.Buffers)
		u(p+"host_drops", dc.Drops)
		u(p+"host_too_big", dc.TooBig)
		u(p+"host_starved", dc.Starved)
		u(p+"host_wakeups", dc.Wakeups)
		u(p+"host_interrupts", dc.Interrupts)
	}
	for _, sq := range w.Driver.SQ {
		p := vocab.SendRing(sq.Index, "")
		num(p+"size", float64(sq.VQ.Size()))
		num(p+"num_free", float64(sq.VQ.NumFree()))
		num(p+"avail_idx", float64(sq.VQ.AvailIdx()))
		num(p+"used_idx", float64(sq.VQ.UsedIdx()))
	}
	for i, pool := range w.Pools.List(nil) {
		p := vocab.Pool(i, "")
		num(p+"cache", float64(pool.CacheLen()))
		num(p+"ring", float64(pool.Ring().Len()))
		num(p+"ring_size", float64(pool.Ring().Size()))
		num(p+"pool_size", float64(pool.Params().PoolSize))
		num(p+"inflight", float64(pool.Inflight()))
		u(p+"hold_cnt", pool.HoldCnt())
		u(p+"release_cnt", pool.ReleaseCnt())
		u(p+"producer_lock", pool.Ring().ProducerLock.Stats().Acquisitions)
		u(p+"consumer_lock", pool.Ring().ConsumerLock.Stats().Acquisitions)
		for j, st := range pool.Stats() {
			u(p+vocab.PagePoolStat(pagepool.StatNames[j]), st.Value)
		}
	}
	if w.Cpumap != nil {
		for i := 0; i < w.Sim.NumCPU(); i++ {
			if w.Cpumap.Has(i) {
				u(fmt.Sprintf("cpumap%d.consumer_lock", i), w.Cpumap.ConsumerLock(i).Acquisitions)
			}
		}
	}
	if w.Prog != nil {
		insns := w.Prog.Instructions()
		f["xdp.program"] = Str(w.Scenario.XDP.Program)
		num("xdp.insns", float64(len(insns)))
		num("xdp.bytes", float64(insns.Size()))
	}
	for _, c := range w.Sim.Costs.Table() {
		num("cost."+c.Name, float64(c.Value))
	}
	for k, v := range scenarioFigures(&w.Scenario) {
		f[k] = v
	}
	return f
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// scenarioFigures flattens a scenario's JSON form into scenario.PATH
// figures: numbers, strings, and booleans as 1 or 0.
func scenarioFigures(s *scenario.Scenario) Figures {
	out := Figures{}
	raw, err := json.Marshal(s)
	if err != nil {
		return out
	}
	var root any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&root) != nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(prefix+"."+k, e)
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s.%d", prefix, i), e)
			}
		case json.Number:
			f, _ := x.Float64()
			out[prefix] = Num(f)
		case string:
			out[prefix] = Str(x)
		case bool:
			out[prefix] = Num(b2f(x))
		}
	}
	walk("scenario", root)
	return out
}

// sortedNames returns the figure names in order.
func (f Figures) sortedNames() []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// suggest returns the known name closest to name, or "" when none is
// close.
func suggest(name string, names []string) string {
	best, bestD := "", 4
	for _, n := range names {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if a == b {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
