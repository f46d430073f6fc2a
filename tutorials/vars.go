package tutorials

import (
	"sort"
	"strings"

	"ringlab/engine"
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
	{"sim_time_ns, time_us, events, pps, mpps, gbps, delivered_gbps, goodput_gbps, tx_mpps, recycle_cached_share, recycle_ring_share, alloc_refill_per_mpkt", "simulated time, rates and shares over the whole run (gbps from rx_bytes, delivered_gbps from what the stack consumed, goodput_gbps from what the applications read): `ringlab reproduce`'s metrics; time_ns and packets are aliases of sim_time_ns and rx_packets"},
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

// worldFigures are every figure of a world: its readout (engine.World.Read,
// every part), computed there once for every reader.
func worldFigures(w *engine.World) Figures {
	var r engine.Readout
	w.Read(&r, engine.PartsAll)
	f := make(Figures, len(r.Figures))
	for _, fig := range r.Figures {
		if fig.IsText {
			f[fig.Name] = Str(fig.Text)
		} else {
			f[fig.Name] = Num(fig.Value)
		}
	}
	return f
}

// canonical is the name a figure is read under: name itself, or the
// number an alias of engine/vocab stands for (time_ns is sim_time_ns),
// behind a mark's prefix too (off.time_ns is off.sim_time_ns).
func canonical(name string) string {
	if c := vocab.Canonical(name); c != name {
		return c
	}
	if prefix, rest, ok := strings.Cut(name, "."); ok {
		if c := vocab.Canonical(rest); c != rest {
			return prefix + "." + c
		}
	}
	return name
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
