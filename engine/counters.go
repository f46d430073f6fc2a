package engine

import (
	"ringlab/engine/device"
	"ringlab/engine/drop"
	"ringlab/engine/kernel"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
	"ringlab/engine/transport"
	"ringlab/engine/virtionet"
	"ringlab/engine/vocab"
	"ringlab/engine/xdp"
)

// Counter is one named counter.
type Counter struct {
	Name  string
	Value uint64
}

// Stats is every counter of the world, typed: the driver's, the host's,
// the page_pools', the maps', the stack's and the page allocator's.
// Totals and Queues are its named forms; each name is in engine/vocab.
type Stats struct {
	RX       virtionet.RQStats         // summed over receive queues
	TX       virtionet.SQStats         // summed over send queues
	PagePool [pagepool.NumStats]uint64 // summed over pools, in pagepool.StatNames order
	Host     device.Counters           // the host side, summed over receive queues
	Cpumap   *xdp.CpumapCounters       // nil without a cpumap
	Devmap   *DevmapStats              // nil without a devmap
	Stack    skb.StackCounters
	Socket   SocketStats // what the sockets hold now
	Refill   virtionet.RefillStats
	Softnet  softnet.CPUStats // NET_RX's counters, summed over CPUs
	// Switches, IRQPreemptions and TaskPreemptions are the CPUs' context
	// switches and preemptions (sim.CPU.Preemptions), summed.
	Switches, IRQPreemptions, TaskPreemptions uint64
	// Steal is the time the host ran a vhost worker on a vCPU's host CPU
	// (sim.CPU.Stolen), in ns, summed.
	Steal uint64
	GRO   GROStats
	TCP   *TCPStats // the tcp_stream senders, summed; nil for other workloads
	Mem   mem.Stats
	// VIOMMU is the emulated IOMMU's traffic with the VMM; nil without
	// one (driver.viommu).
	VIOMMU *VIOMMUStats
	Queues []QueueStats // per queue pair
	// Drops is every packet the world lost, by reason (engine/drop): the
	// host's, the driver's, the send queues', the maps' and the sockets'
	// Reasons summed. Its sum is DropTotal's.
	Drops drop.Counts
	// Kernel is the scenario's kernel: it names the reasons (drop.Name).
	Kernel kernel.Version
	// Listed marks the reasons Totals lists: those the world's parts can
	// count (a cpumap's with a cpumap, the tap's with vhost-net, ...).
	Listed [drop.NumReasons]bool
}

// VIOMMUStats count what a guest's emulated IOMMU costs in exits: the
// guest's IOTLB invalidations and the host IOTLB's misses.
type VIOMMUStats struct {
	Invalidations uint64 // IOTLB invalidations the guest submitted, each an exit
	HostMisses    uint64 // mappings vhost asked QEMU for (VHOST_IOTLB_MISS)
}

// GROStats are the receive queues' GRO counters, summed.
type GROStats struct {
	Merged  uint64 // frames merged into a held skb
	Flushed uint64 // held skbs passed up
}

// TCPStats are the tcp_stream senders' counters, summed over streams,
// and their congestion windows.
type TCPStats struct {
	transport.TCPCounters
	Cwnd uint64 // segments, summed
}

// SocketStats is what the receiving sockets hold: skbs and their memory
// (sk_rmem_alloc: truesize with the struct sk_buff).
type SocketStats struct {
	SKBs     uint64
	Truesize uint64
}

// QueueStats are one queue pair's counters.
type QueueStats struct {
	RX   virtionet.RQStats
	TX   virtionet.SQStats
	Host device.Counters
}

// DevmapStats are the devmap's counters and its next device's completions.
type DevmapStats struct {
	xdp.DevmapCounters
	Completed uint64
}

// Stats returns the world's counters.
func (w *World) Stats() Stats {
	var s Stats
	w.ReadStats(&s)
	return s
}

// ReadStats fills s, reusing s.Queues (it allocates only when the world
// has more queues than s held).
func (w *World) ReadStats(s *Stats) {
	qs := s.Queues[:0]
	*s = Stats{}
	for i, rq := range w.Driver.RQ {
		q := QueueStats{RX: rq.Stats, Host: rq.Dev.Counters()}
		if i < len(w.Driver.SQ) {
			q.TX = w.Driver.SQ[i].Stats
		}
		qs = append(qs, q)
		addRQ(&s.RX, &q.RX)
		addHost(&s.Host, &q.Host)
	}
	for _, sq := range w.Driver.SQ {
		addSQ(&s.TX, &sq.Stats)
	}
	s.Queues = qs
	for _, p := range w.Pools.List(nil) {
		for i, st := range p.Stats() {
			s.PagePool[i] += st.Value
		}
	}
	if w.Cpumap != nil {
		c := w.Cpumap.C
		s.Cpumap = &c
	}
	if w.Devmap != nil {
		s.Devmap = &DevmapStats{w.Devmap.C, w.Devmap.Next().Completed}
	}
	s.Stack = w.Stack.Counters()
	n, mem := w.Stack.SocketMem()
	s.Socket = SocketStats{uint64(n), mem}
	s.Refill = w.Driver.Refill
	for i := 0; i < w.Sim.NumCPU(); i++ {
		c := w.Net.Stats(i)
		addSoftnet(&s.Softnet, &c)
		cpu := w.Sim.CPU(i)
		s.Switches += cpu.Switches()
		irq, task := cpu.Preemptions()
		s.IRQPreemptions += irq
		s.TaskPreemptions += task
		s.Steal += uint64(cpu.Stolen())
	}
	for _, rq := range w.Driver.RQ {
		g := rq.GRO()
		s.GRO.Merged += g.Merged
		s.GRO.Flushed += g.Flushed
	}
	if w.Cpumap != nil {
		m, f := w.Cpumap.GROStats()
		s.GRO.Merged += m
		s.GRO.Flushed += f
	}
	if w.streams != nil {
		var ts TCPStats
		for _, rq := range w.Driver.RQ {
			if t := rq.Dev.Traffic().TCP(); t != nil {
				c := t.Counters()
				ts.Frames += c.Frames
				ts.Segments += c.Segments
				ts.Retransmits += c.Retransmits
				ts.Acked += c.Acked
				ts.LostFrames += c.LostFrames
				ts.FastRecovery += c.FastRecovery
				ts.Timeouts += c.Timeouts
				ts.Probes += c.Probes
				ts.RcvWndLimit += c.RcvWndLimit
				ts.HyStartTrain += c.HyStartTrain
				ts.HyStartDelay += c.HyStartDelay
				ts.Autocorked += c.Autocorked
				ts.NagleHeld += c.NagleHeld
				ts.Short += c.Short
				ts.Cwnd += uint64(t.Cwnd())
			}
		}
		s.TCP = &ts
	}
	s.Mem = w.Mem.Stats()
	w.readDrops(s)
	if w.Scenario.Driver.VIOMMU {
		d := w.DMA.Stats()
		s.VIOMMU = &VIOMMUStats{Invalidations: d.Invalidations, HostMisses: d.HostMisses}
	}
}

// readDrops sums the parts' drops by reason into s.Drops and marks the
// reasons the world can count.
func (w *World) readDrops(s *Stats) {
	s.Drops.Merge(&s.RX.Reasons)
	s.Drops.Merge(&s.TX.Reasons)
	s.Drops.Merge(&s.Host.Reasons)
	s.Drops.Merge(&s.Stack.Reasons)
	if s.Cpumap != nil {
		s.Drops.Merge(&s.Cpumap.Reasons)
	}
	if s.Devmap != nil {
		s.Drops.Merge(&s.Devmap.Reasons)
	}
	s.Kernel = w.kernel
	l := &s.Listed
	l[drop.RxLength], l[drop.RxNoSKB], l[drop.SocketQueue] = true, true, true
	if w.Prog != nil {
		for _, r := range [...]drop.Reason{drop.XDPDrop, drop.XDPAbort, drop.XDPBuff, drop.XDPFrame, drop.XDPRedir, drop.XDPTxFull} {
			l[r] = true
		}
	}
	switch w.Scenario.Device.Kind {
	case scenario.DeviceVhost:
		l[drop.TapFull], l[drop.TooBig] = true, true
	case scenario.DeviceVDPA:
		l[drop.NoBuffer] = true
	default:
		l[drop.NICFull] = true
	}
	l[drop.CpumapFull], l[drop.CpumapNoSKB] = s.Cpumap != nil, s.Cpumap != nil
	l[drop.DevmapFull] = s.Devmap != nil
	if w.streams != nil {
		l[drop.TCPRmem], l[drop.ACKTxFull] = true, true
	} else {
		l[drop.UDPRcvbuf] = true
	}
	// Which are listed depends on how the world was built, never on an
	// event (a trace lines up its figures by position); Check finds a
	// reason counted and not listed.
}

// DropTotal is every drop the world's parts count under their own names:
// the host's (host_drops, host_no_buffer_drops, and host_too_big where
// vhost-net drops it: a hardware device returns the buffer empty and the
// driver's rx_drops counts it), the driver's rx_drops (its XDP drops
// included), the send queues' tx_xdp_tx_drops and tcp_ack_drops, the
// maps' (a cpumap's full ring and the skbs its kthread could not build,
// a devmap's) and the sockets'. Drops by reason add up to it.
func (s *Stats) DropTotal() uint64 {
	t := s.Host.Drops + s.Host.NoBufferDrops + s.RX.Drops + s.TX.XDPTxDrops + s.TX.ACKDrops + s.Stack.SockDrops
	if s.Listed[drop.TooBig] {
		t += s.Host.TooBig
	}
	if c := s.Cpumap; c != nil {
		t += c.Drops + c.SKBFails
	}
	if d := s.Devmap; d != nil {
		t += d.Drops
	}
	return t
}

func addRQ(d, s *virtionet.RQStats) {
	d.Packets += s.Packets
	d.Bytes += s.Bytes
	d.Drops += s.Drops
	d.XDPPackets += s.XDPPackets
	d.XDPTx += s.XDPTx
	d.XDPRedirects += s.XDPRedirects
	d.XDPDrops += s.XDPDrops
	d.Kicks += s.Kicks
	d.LengthErrors += s.LengthErrors
	d.NAPIPolls += s.NAPIPolls
	d.IRQs += s.IRQs
	d.Refills += s.Refills
	d.AllocFails += s.AllocFails
	d.XDPAborted += s.XDPAborted
	d.Linearized += s.Linearized
	d.Copied += s.Copied
	d.Coalesced += s.Coalesced
	d.BigBuilt += s.BigBuilt
	d.FragList += s.FragList
	d.Reasons.Merge(&s.Reasons)
}

func addSQ(d, s *virtionet.SQStats) {
	d.Packets += s.Packets
	d.Bytes += s.Bytes
	d.XDPTx += s.XDPTx
	d.XDPTxDrops += s.XDPTxDrops
	d.Kicks += s.Kicks
	d.TxTimeouts += s.TxTimeouts
	d.ACKs += s.ACKs
	d.ACKDrops += s.ACKDrops
	d.Reasons.Merge(&s.Reasons)
}

// addSoftnet sums one CPU's softnet counters into d.
func addSoftnet(d, s *softnet.CPUStats) {
	d.Processed += s.Processed
	d.Dropped += s.Dropped
	d.TimeSqueeze += s.TimeSqueeze
	d.Polls += s.Polls
	d.InKsoftirqd += s.InKsoftirqd
	d.Restarts += s.Restarts
	d.Deferred += s.Deferred
	d.Gated += s.Gated
}

func addHost(d, s *device.Counters) {
	d.Packets += s.Packets
	d.Bytes += s.Bytes
	d.Buffers += s.Buffers
	d.Drops += s.Drops
	d.TooBig += s.TooBig
	d.Starved += s.Starved
	d.Wakeups += s.Wakeups
	d.Interrupts += s.Interrupts
	d.RingErrors += s.RingErrors
	d.Busy += s.Busy
	d.StarvedTime += s.StarvedTime
	d.NoBufferDrops += s.NoBufferDrops
	d.UsedPublishes += s.UsedPublishes
	d.Runs += s.Runs
	d.PublishWaitNs += s.PublishWaitNs
	d.Reasons.Merge(&s.Reasons)
}

// rqCounters lists a receive queue's ethtool counters (virtnet_rq_stats_desc
// order), without the rx_ or rx%u_ prefix.
func rqCounters(s *virtionet.RQStats) [8]Counter {
	return [8]Counter{
		{"packets", s.Packets}, {"bytes", s.Bytes}, {"drops", s.Drops},
		{"xdp_packets", s.XDPPackets}, {"xdp_tx", s.XDPTx}, {"xdp_redirects", s.XDPRedirects},
		{"xdp_drops", s.XDPDrops}, {"kicks", s.Kicks},
	}
}

// sqCounters lists a send queue's ethtool counters (virtnet_sq_stats_desc
// order), without the tx_ or tx%u_ prefix.
func sqCounters(s *virtionet.SQStats) [6]Counter {
	return [6]Counter{
		{"packets", s.Packets}, {"bytes", s.Bytes}, {"xdp_tx", s.XDPTx},
		{"xdp_tx_drops", s.XDPTxDrops}, {"kicks", s.Kicks}, {"tx_timeouts", s.TxTimeouts},
	}
}

// Totals names the counters: the device's summed over queues with the
// ethtool names (rx_packets, rx_xdp_drops, tx_kicks, ...), then the
// page_pool stats (rx_pp_*) summed over pools, then engine counters that
// have no ethtool name (prefixed with what they count). It appends to
// dst[:0].
func (s *Stats) Totals(dst []Counter) []Counter {
	out := dst[:0]
	for _, c := range rqCounters(&s.RX) {
		out = append(out, Counter{vocab.Total("rx", c.Name), c.Value})
	}
	for _, c := range sqCounters(&s.TX) {
		out = append(out, Counter{vocab.Total("tx", c.Name), c.Value})
	}
	for i, n := range pagepool.StatNames {
		out = append(out, Counter{n, s.PagePool[i]})
	}
	out = append(out,
		Counter{"rx_length_errors", s.RX.LengthErrors},
		Counter{"xdp_aborted", s.RX.XDPAborted},
		Counter{"napi_polls", s.RX.NAPIPolls},
		Counter{"interrupts", s.RX.IRQs},
		Counter{"host_drops", s.Host.Drops},
		Counter{"host_too_big", s.Host.TooBig},
		Counter{"host_starved", s.Host.Starved},
		Counter{"host_wakeups", s.Host.Wakeups},
		Counter{"host_no_buffer_drops", s.Host.NoBufferDrops},
		Counter{"host_used_publishes", s.Host.UsedPublishes},
		Counter{"frag_list_skbs", s.RX.FragList},
		Counter{"refill_work_runs", s.Refill.Runs},
		Counter{"refill_work_retries", s.Refill.Retries},
		Counter{"softnet.processed", s.Softnet.Processed},
		Counter{"softnet.dropped", s.Softnet.Dropped},
		Counter{"softnet.time_squeeze", s.Softnet.TimeSqueeze},
		Counter{"softirq_restarts", s.Softnet.Restarts},
		Counter{"ksoftirqd_wakeups", s.Softnet.Deferred},
		Counter{"ksoftirqd_polls", s.Softnet.InKsoftirqd},
		Counter{"ksoftirqd_waits", s.Softnet.Gated},
		Counter{"gro_merged", s.GRO.Merged},
		Counter{"gro_skbs", s.GRO.Flushed},
		Counter{"context_switches", s.Switches},
		Counter{"irq_preemptions", s.IRQPreemptions},
		Counter{"task_preemptions", s.TaskPreemptions},
		Counter{"steal_ns", s.Steal},
		Counter{"tcp_acks", s.TX.ACKs},
		Counter{"tcp_ack_drops", s.TX.ACKDrops},
	)
	if c := s.Cpumap; c != nil {
		out = append(out, Counter{"cpumap_enqueued", c.Enqueued}, Counter{"cpumap_drops", c.Drops},
			Counter{"cpumap_passed", c.Passed})
	}
	if d := s.Devmap; d != nil {
		out = append(out, Counter{"devmap_sent", d.Sent}, Counter{"devmap_drops", d.Drops},
			Counter{"devmap_completed", d.Completed})
	}
	out = append(out, Counter{"stack_delivered", s.Stack.Delivered}, Counter{"stack_deferred_frees", s.Stack.Deferred},
		Counter{"stack_defer_full", s.Stack.DeferFull}, Counter{"stack_defer_ipis", s.Stack.DeferIPIs},
		Counter{"socket_drops", s.Stack.SockDrops}, Counter{"app_bytes", s.Stack.AppBytes},
		Counter{"csum_bytes", s.Stack.CsumBytes})
	out = append(out, Counter{"socket_queued", s.Stack.SockQueued}, Counter{"tcp_rcv_coalesce", s.Stack.Coalesced},
		Counter{"socket_skbs", s.Socket.SKBs}, Counter{"socket_truesize", s.Socket.Truesize},
		Counter{"packet_socket_clones", s.Stack.Cloned})
	if c := s.TCP; c != nil {
		out = append(out, Counter{"tcp_frames_sent", c.Frames}, Counter{"tcp_lost_frames", c.LostFrames},
			Counter{"tcp_retransmits", c.Retransmits}, Counter{"tcp_fast_recovery", c.FastRecovery},
			Counter{"tcp_probes", c.Probes}, Counter{"tcp_timeouts", c.Timeouts},
			Counter{"tcp_rcvwnd_limited", c.RcvWndLimit}, Counter{"tcp_cwnd", c.Cwnd},
			Counter{"tcp_hystart_train", c.HyStartTrain}, Counter{"tcp_hystart_delay", c.HyStartDelay},
			Counter{"tcp_autocorked", c.Autocorked},
			Counter{"tcp_nagle_held", c.NagleHeld}, Counter{"tcp_short_segments", c.Short})
	}
	out = append(out, Counter{"page_allocs", s.Mem.Allocs}, Counter{"page_frees", s.Mem.Frees},
		Counter{"page_remote_frees", s.Mem.RemoteFrees}, Counter{"page_ref_transfers", s.Mem.RefTransfers},
		Counter{"pcp_free_high", s.Mem.FreeHighDrains},
		Counter{"zone_lock_contended", s.Mem.ZoneLock.Contended},
		Counter{"zone_lock_wait_ns", uint64(s.Mem.ZoneLock.Wait)})
	if v := s.VIOMMU; v != nil {
		out = append(out, Counter{"iommu_invalidations", v.Invalidations}, Counter{"vhost_iotlb_misses", v.HostMisses})
	}
	for r := drop.Reason(1); r < drop.NumReasons; r++ {
		if s.Listed[r] {
			out = append(out, Counter{drop.Counter(r, s.Kernel), s.Drops[r]})
		}
	}
	return out
}

// Totals returns the world's counters by name (Stats.Totals).
func (w *World) Totals() []Counter {
	s := w.Stats()
	return s.Totals(make([]Counter, 0, 48))
}

// Pages returns how many pages are in each location, by location name.
func (w *World) Pages() map[string]int64 {
	out := make(map[string]int64, int(mem.NumLocs))
	counts := w.Mem.Counts()
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		out[l.String()] = counts[l]
	}
	return out
}

// CPUCounters names CPU i's counters as Totals names their sums: the
// columns of its /proc/net/softnet_stat line the engine keeps
// (softnet.processed, softnet.dropped, softnet.time_squeeze), then the
// model's own of NET_RX and the scheduler on that CPU. It appends to
// dst[:0].
func (w *World) CPUCounters(i int, dst []Counter) []Counter {
	st := w.Net.Stats(i)
	c := w.Sim.CPU(i)
	irq, task := c.Preemptions()
	return append(dst[:0],
		Counter{"softnet.processed", st.Processed},
		Counter{"softnet.dropped", st.Dropped},
		Counter{"softnet.time_squeeze", st.TimeSqueeze},
		Counter{"softirq_restarts", st.Restarts},
		Counter{"ksoftirqd_wakeups", st.Deferred},
		Counter{"ksoftirqd_polls", st.InKsoftirqd},
		Counter{"ksoftirqd_waits", st.Gated},
		Counter{"context_switches", c.Switches()},
		Counter{"irq_preemptions", irq},
		Counter{"task_preemptions", task},
		Counter{"steal_ns", uint64(c.Stolen())},
	)
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
