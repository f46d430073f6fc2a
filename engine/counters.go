package engine

import (
	"fmt"
	"ringlab/engine/transport"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/virtionet"
)

// Counter is one named counter.
type Counter struct {
	Name  string
	Value uint64
}

// rqCounters lists a receive queue's ethtool counters (virtnet_rq_stats_desc
// order, rx%u_ prefix).
func rqCounters(s *virtionet.RQStats) [8]Counter {
	return [8]Counter{
		{"packets", s.Packets}, {"bytes", s.Bytes}, {"drops", s.Drops},
		{"xdp_packets", s.XDPPackets}, {"xdp_tx", s.XDPTx}, {"xdp_redirects", s.XDPRedirects},
		{"xdp_drops", s.XDPDrops}, {"kicks", s.Kicks},
	}
}

// sqCounters lists a send queue's ethtool counters (virtnet_sq_stats_desc
// order, tx%u_ prefix).
func sqCounters(s *virtionet.SQStats) [6]Counter {
	return [6]Counter{
		{"packets", s.Packets}, {"bytes", s.Bytes}, {"xdp_tx", s.XDPTx},
		{"xdp_tx_drops", s.XDPTxDrops}, {"kicks", s.Kicks}, {"tx_timeouts", s.TxTimeouts},
	}
}

// Totals returns the device's counters summed over queues with the
// ethtool names (rx_packets, rx_xdp_drops, tx_kicks, ...), then the
// page_pool stats (rx_pp_*) summed over pools, then engine counters that
// have no ethtool name (prefixed with what they count).
func (w *World) Totals() []Counter {
	var rx [8]Counter
	for _, rq := range w.Driver.RQ {
		for i, c := range rqCounters(&rq.Stats) {
			rx[i].Name = "rx_" + c.Name
			rx[i].Value += c.Value
		}
	}
	var tx [6]Counter
	for _, sq := range w.Driver.SQ {
		for i, c := range sqCounters(&sq.Stats) {
			tx[i].Name = "tx_" + c.Name
			tx[i].Value += c.Value
		}
	}
	out := make([]Counter, 0, 64)
	out = append(out, rx[:]...)
	out = append(out, tx[:]...)
	out = append(out, w.PagePoolStats()...)
	var irqs, polls, lenErr, devDrops, starved, tooBig, kicksDev, aborted, noBuf, publishes, fragList uint64
	for _, rq := range w.Driver.RQ {
		aborted += rq.Stats.XDPAborted
		fragList += rq.Stats.FragList
		irqs += rq.Stats.IRQs
		polls += rq.Stats.NAPIPolls
		lenErr += rq.Stats.LengthErrors
		c := rq.Dev.Counters()
		devDrops += c.Drops
		starved += c.Starved
		tooBig += c.TooBig
		kicksDev += c.Wakeups
		noBuf += c.NoBufferDrops
		publishes += c.UsedPublishes
	}
	out = append(out,
		Counter{"rx_length_errors", lenErr},
		Counter{"xdp_aborted", aborted},
		Counter{"napi_polls", polls},
		Counter{"interrupts", irqs},
		Counter{"host_drops", devDrops},
		Counter{"host_too_big", tooBig},
		Counter{"host_starved", starved},
		Counter{"host_wakeups", kicksDev},
		Counter{"host_no_buffer_drops", noBuf},
		Counter{"host_used_publishes", publishes},
		Counter{"frag_list_skbs", fragList},
		Counter{"refill_work_runs", w.Driver.Refill.Runs},
		Counter{"refill_work_retries", w.Driver.Refill.Retries},
	)
	if w.Cpumap != nil {
		out = append(out, Counter{"cpumap_enqueued", w.Cpumap.C.Enqueued}, Counter{"cpumap_drops", w.Cpumap.C.Drops},
			Counter{"cpumap_passed", w.Cpumap.C.Passed})
	}
	if w.Devmap != nil {
		out = append(out, Counter{"devmap_sent", w.Devmap.C.Sent}, Counter{"devmap_drops", w.Devmap.C.Drops},
			Counter{"devmap_completed", w.Devmap.Next().Completed})
	}
	st := w.Stack.Counters()
	out = append(out, Counter{"stack_delivered", st.Delivered}, Counter{"stack_deferred_frees", st.Deferred},
		Counter{"stack_defer_full", st.DeferFull}, Counter{"stack_defer_ipis", st.DeferIPIs},
		Counter{"socket_drops", st.SockDrops}, Counter{"app_bytes", st.AppBytes})
	sockSKBs, sockMem := w.Stack.SocketMem()
	out = append(out, Counter{"socket_queued", st.SockQueued}, Counter{"tcp_rcv_coalesce", st.Coalesced},
		Counter{"socket_skbs", uint64(sockSKBs)}, Counter{"socket_truesize", sockMem},
		Counter{"packet_socket_clones", st.Cloned})
	if w.streams != nil {
		var tc transport.TCPCounters
		var cwnd float64
		for _, rq := range w.Driver.RQ {
			if t := rq.Dev.Traffic().TCP(); t != nil {
				c := t.Counters()
				tc.Frames += c.Frames
				tc.Retransmits += c.Retransmits
				tc.FastRecovery += c.FastRecovery
				tc.Timeouts += c.Timeouts
				tc.LostFrames += c.LostFrames
				tc.RcvWndLimit += c.RcvWndLimit
				cwnd += t.Cwnd()
			}
		}
		out = append(out, Counter{"tcp_frames_sent", tc.Frames}, Counter{"tcp_lost_frames", tc.LostFrames},
			Counter{"tcp_retransmits", tc.Retransmits}, Counter{"tcp_fast_recovery", tc.FastRecovery},
			Counter{"tcp_timeouts", tc.Timeouts}, Counter{"tcp_rcvwnd_limited", tc.RcvWndLimit},
			Counter{"tcp_cwnd", uint64(cwnd)})
	}
	ms := w.Mem.Stats()
	out = append(out, Counter{"page_allocs", ms.Allocs}, Counter{"page_frees", ms.Frees},
		Counter{"page_remote_frees", ms.RemoteFrees}, Counter{"page_ref_transfers", ms.RefTransfers},
		Counter{"pcp_free_high", ms.FreeHighDrains},
		Counter{"zone_lock_contended", ms.ZoneLock.Contended},
		Counter{"zone_lock_wait_ns", uint64(ms.ZoneLock.Wait)})
	return out
}

// Queues returns each queue pair's ethtool counters (rx%u_*, tx%u_*).
func (w *World) Queues() [][]Counter {
	out := make([][]Counter, len(w.Driver.RQ))
	for i, rq := range w.Driver.RQ {
		q := make([]Counter, 0, 14)
		for _, c := range rqCounters(&rq.Stats) {
			q = append(q, Counter{fmt.Sprintf("rx%d_%s", i, c.Name), c.Value})
		}
		for _, c := range sqCounters(&w.Driver.SQ[i].Stats) {
			q = append(q, Counter{fmt.Sprintf("tx%d_%s", i, c.Name), c.Value})
		}
		out[i] = q
	}
	return out
}

// PagePoolStats sums the 11 page_pool stats over every pool, ethtool
// names, kernel order.
func (w *World) PagePoolStats() []Counter {
	out := make([]Counter, pagepool.NumStats)
	for i, n := range pagepool.StatNames {
		out[i].Name = n
	}
	for _, p := range w.Pools.List(nil) {
		for i, s := range p.Stats() {
			out[i].Value += s.Value
		}
	}
	return out
}

// Pages returns how many pages are in each location.
func (w *World) Pages() map[string]int64 {
	out := make(map[string]int64, int(mem.NumLocs))
	counts := w.Mem.Counts()
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		out[l.String()] = counts[l]
	}
	return out
}

// Counter returns a total by name.
func (w *World) Counter(name string) (uint64, bool) {
	for _, c := range w.Totals() {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}
