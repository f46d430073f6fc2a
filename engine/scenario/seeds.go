package scenario

// The published measurements of docs/published.md and the presets that
// reproduce each configuration. The figures below are what was published;
// the engine never reads them while simulating: `ringlab reproduce` runs
// each preset and prints the simulated figure next to the published one.

// Reproduction is one row of a published table.
type Reproduction struct {
	ID        string  // R1..R4
	Config    string  // preset name
	Baseline  string  // the row this one is compared with; "" for a baseline
	Unit      string  // Gbit/s, Mpps, share, count
	Published float64 // the published figure
	Metric    string  // what is measured: goodput_gbps (what the application reads, as iperf reports it), delivered_gbps, tx_mpps, recycle_cached_share, recycle_ring_share, alloc_refill_per_mpkt
	Source    string
	// Mechanism is the resource the published setup is expected to be
	// limited by in this configuration, as a kind of engine.LimitOf
	// (cpu, lock, host, next, ring, wire, window), optionally with the
	// resource's name after a colon (cpu:cpu1, lock:zone->lock). Two
	// values are not resources: MechanismCounters for a result that is
	// counters rather than a rate (the figure is the mechanism), and
	// MechanismUnknown when the source names none. `ringlab reproduce`
	// compares it with what limits the simulated run.
	Mechanism string
	// MechanismNote says where Mechanism comes from: the source's words,
	// or what it is inferred from.
	MechanismNote string
}

// Mechanism values that name no resource.
const (
	MechanismCounters = "counters" // the result is counters, not a rate: no resource is compared
	MechanismUnknown  = "unknown"  // the source names no mechanism: the row cannot be explained
)

// mechanisms is each configuration's published mechanism (Reproduction.
// Mechanism and MechanismNote).
var mechanisms = map[string][2]string{
	"r1-upstream":            {"cpu:cpu1", "the thread names none (nobody explained the 7x); the best-supported mechanism, from the code, loads the cpumap CPU: it frees every skb with page_frag_free, pulling the block's refcount line from CPU 0, and every whole block to the buddy under zone->lock"},
	"r1-page-pool":           {"cpu:cpu1", "the cpumap CPU builds the skbs and runs the stack; its frees go to the pool's ptr_ring (inferred from the code: the thread names none)"},
	"r1-page-pool-frag":      {"cpu:cpu1", "as with the pool (inferred from the code)"},
	"r2-mtu1500-before":      {"cpu", "inferred: the fix does not apply at 1500; on vDPA the host has no thread, so a guest CPU (the source does not say)"},
	"r2-mtu1500-after":       {"cpu", "inferred, as before the fix"},
	"r2-mtu9000-before":      {"ring", "the commit: \"a large waste of buffer space in the queue, which limits the number of packets that can be buffered\""},
	"r2-mtu9000-after":       {"cpu", "inferred: with 6x the buffers the ring no longer limits, and on vDPA the host has no thread, so a guest CPU (the source does not say)"},
	"r3-napi-local-off":      {MechanismCounters, "recycle and alloc counters: where the frees go is the mechanism"},
	"r3-napi-local-on":       {MechanismCounters, "recycle and alloc counters: where the frees go is the mechanism"},
	"r4-page-alloc-1flow":    {"cpu:cpu0", "the RX CPU does the receive, the redirect and the page allocator's work (inferred: one flow, one RX CPU)"},
	"r4-page-alloc-2flows":   {"lock:zone->lock", "the thread: \"the page allocator lock makes it scale negatively\""},
	"r4-page-pool-same-cpu":  {"cpu:cpu0", "the RX CPU, now without the page allocator (inferred)"},
	"r4-page-pool-other-cpu": {"cpu:cpu0", "the RX CPU, with the returns moved off it (inferred; the next device's 13 Mpps is above the figure)"},
}

// Reproductions is the table `ringlab reproduce` prints.
func Reproductions() []Reproduction {
	const r1 = "virtio_net page_pool series (2023), XDP cpumap in a multi-core VM"
	const r2 = "virtio-net: use mtu size as buffer length for big packets (2022), iperf TCP, 1024-entry queue"
	const r3 = "page_pool: allow caching from safely localized NAPI (2023), bnxt TCP stream, page per packet"
	const r4 = "mlx5 XDP_REDIRECT with page_pool (2018), devmap to ixgbe"
	rows := []Reproduction{
		{"R1", "r1-upstream", "", "Gbit/s", 1.38, "goodput_gbps", r1, "", ""},
		{"R1", "r1-page-pool", "r1-upstream", "Gbit/s", 9.74, "goodput_gbps", r1, "", ""},
		{"R1", "r1-page-pool-frag", "r1-upstream", "Gbit/s", 10.3, "goodput_gbps", r1, "", ""},
		{"R2", "r2-mtu1500-before", "", "Gbit/s", 22.5, "goodput_gbps", r2, "", ""},
		{"R2", "r2-mtu1500-after", "r2-mtu1500-before", "Gbit/s", 22.4, "goodput_gbps", r2, "", ""},
		{"R2", "r2-mtu9000-before", "", "Gbit/s", 12.8, "goodput_gbps", r2, "", ""},
		{"R2", "r2-mtu9000-after", "r2-mtu9000-before", "Gbit/s", 25.9, "goodput_gbps", r2, "", ""},
		{"R3", "r3-napi-local-off", "", "share", 0, "recycle_cached_share", r3, "", ""},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "share", 150_197_505.0 / (150_197_505 + 0), "recycle_cached_share", r3, "", ""},
		{"R3", "r3-napi-local-off", "", "share", 149_299_454.0 / (149_299_454 + 0), "recycle_ring_share", r3, "", ""},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "share", 0, "recycle_ring_share", r3, "", ""},
		{"R3", "r3-napi-local-off", "", "per Mpkt", 2_332_880 / 149.299454, "alloc_refill_per_mpkt", r3, "", ""},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "per Mpkt", 2_128 / 150.197505, "alloc_refill_per_mpkt", r3, "", ""},
		{"R4", "r4-page-alloc-1flow", "", "Mpps", 6, "tx_mpps", r4, "", ""},
		{"R4", "r4-page-alloc-2flows", "r4-page-alloc-1flow", "Mpps", 4, "tx_mpps", r4, "", ""},
		{"R4", "r4-page-pool-same-cpu", "r4-page-alloc-1flow", "Mpps", 10, "tx_mpps", r4, "", ""},
		{"R4", "r4-page-pool-other-cpu", "r4-page-alloc-1flow", "Mpps", 12, "tx_mpps", r4, "", ""},
	}
	for i := range rows {
		m := mechanisms[rows[i].Config]
		rows[i].Mechanism, rows[i].MechanismNote = m[0], m[1]
	}
	return rows
}

// vmNotes describes the R2 virtual machine.
const vmNotes = "a KVM guest on a vDPA virtqueue (a Mellanox NIC), no IOMMU: the default cost table"

// R2's link and round trip, which the commit does not give: a 100 Gbit/s
// Mellanox NIC and two hosts on one switch are assumed.
const (
	r2LineGbps = 100
	r2RTTUs    = 30
)

// R1 as the thread describes it: a multi-core VM on vhost-net, XDP
// redirecting every packet to CPU 1 through a cpumap, the throughput in
// Gbit/s (a TCP stream, as iperf reports it). Nothing in it says the VM
// had an IOMMU, so it has none; the 2023 series' pools have no
// PP_FLAG_DMA_MAP, so every buffer is still mapped by the ring. The round
// trip of a stream from the host into its guest is not given: 20 µs is
// assumed.
const (
	r1RTTUs = 20
	r1Notes = "a KVM guest on vhost-net without an IOMMU: the default cost table"
)

// iperfRecvmsgNs is what the presets' TCP reader (iperf3's server) pays
// per skb it takes off its socket, besides the copy: an estimate, since
// no source times tcp_recvmsg's own work (the queue walk,
// tcp_rcv_space_adjust, tcp_eat_recv_skb's free of the sk_buff). The
// protocol's receive and the ACKs are paid in NET_RX (the cost table's
// tcp_rcv and tcp_send_ack); the consumer cost of 300 ns a packet the
// presets had before lumped them in.
const iperfRecvmsgNs = 150

func seedPresets() []Preset {
	// R1 ran a 6.4-era net-next with the 2023 series applied.
	r1 := func(src string, order int) func() Scenario {
		return with(func(s *Scenario) {
			s.Kernel = "6.4"
			s.CPUs = 2
			s.RingSize = 256
			s.TxRingSize = 256
			s.Driver.BufferSource = src
			s.Driver.DMA = DMARing
			s.Driver.PoolOrder = order
			s.XDP = &XDP{Program: "xdp_redirect_cpu", CpumapCPUs: []int{1}, CpumapQsize: 2048}
			s.Traffic = Traffic{Kind: TrafficTCPStream, Proto: "tcp", Flows: 1, RTTUs: r1RTTUs, DstPort: 5201}
			s.Consumer = Consumer{CPU: 1, Context: FreeProcess, CostNs: iperfRecvmsgNs}
			s.CostNotes = r1Notes
		})
	}
	// R2's "before" is 6.0, the last release that posted MAX_SKB_FRAGS
	// pages per big buffer whatever the MTU; "after" is 6.1, which has the
	// fix (virtnet_set_big_packets).
	r2 := func(mtu int, kernel string) func() Scenario {
		return with(func(s *Scenario) {
			s.Kernel = kernel
			s.CPUs = 2
			s.RingSize = 1024
			s.TxRingSize = 256
			s.MTU = mtu
			// What the 2022 mlx5 vDPA device offered
			// (drivers/vdpa/mlx5/net/mlx5_vnet.c,
			// get_supported_features: CSUM, GUEST_CSUM, HOST_TSO4/6,
			// MTU, STATUS, CTRL_VQ, CTRL_VLAN, MQ, CTRL_MAC_ADDR,
			// VERSION_1, ACCESS_PLATFORM): no MRG_RXBUF and no guest
			// GSO, so big buffers at 9000; no INDIRECT_DESC, so each
			// takes its chain of descriptors in the ring; no EVENT_IDX,
			// so the flags suppress kicks and interrupts.
			s.Features.MrgRxbuf = false
			s.Features.EventIdx = false
			s.Features.IndirectDesc = false
			s.Features.AccessPlatform = true
			s.Driver.BufferSource = SourcePage
			s.Driver.DMA = DMARing
			// iperf TCP into the guest over a vDPA virtqueue: the NIC
			// takes buffers as frames come off the wire and drops a
			// frame that finds none; TCP answers by slowing down.
			s.Device.Kind = DeviceVDPA
			s.Traffic = Traffic{Kind: TrafficTCPStream, Proto: "tcp", Flows: 1, LineGbps: r2LineGbps, RTTUs: r2RTTUs, DstPort: 5201}
			s.Consumer = Consumer{CPU: 1, Context: FreeProcess, CostNs: iperfRecvmsgNs}
			s.CostNotes = vmNotes
		})
	}
	// R3's "before" is 6.4 and "after" 6.5, the release that merged it
	// (napi_pp_put_page's list_owner test).
	r3 := func(kernel string) func() Scenario {
		return with(func(s *Scenario) {
			s.Kernel = kernel
			s.CPUs = 2
			s.RingSize = 1024
			s.Device.Kind = DeviceNIC
			// A TCP stream (the thread's test): the sender's windows
			// follow the application, so the socket never overflows and
			// every page comes back through the application's frees,
			// deferred to the NAPI CPU (skb_attempt_defer_free, TCP
			// 5.17+). The link speed is not in the thread: 25 Gbit/s,
			// a common bnxt port, is assumed. A stream the application
			// keeps up with sends steadily; one it cannot (a faster
			// link) closes its window in bursts, and the deferred frees
			// then come back in chunks larger than the alloc cache.
			s.Traffic = Traffic{Kind: TrafficTCPStream, Proto: "tcp", Flows: 1, LineGbps: 25, DstPort: 5201}
			s.Consumer = Consumer{CPU: 1, Context: FreeProcess, CostNs: iperfRecvmsgNs}
		})
	}
	// R4 was measured in 2018 on a 4.17-era net-next, before a pool could
	// recycle direct from its own NAPI CPU (R3, 6.5 for skbs, 6.10 for
	// xdp_return_frame): xdp_return_frame called page_pool_put_page with
	// allow_direct false, so even a frame completed on the receive CPU
	// went back through the ptr_ring, whose consumer took its lock.
	r4 := func(src, dma string, flows, comp int) func() Scenario {
		return with(func(s *Scenario) {
			s.Kernel = "4.17"
			s.CPUs = 3
			s.Queues = flows
			s.RingSize = 1024
			s.Device.Kind = DeviceNIC
			s.Driver.BufferSource = src
			s.Driver.DMA = dma
			s.XDP = &XDP{Program: "xdp_redirect_dev"}
			s.Next = &Next{MaxPPS: 13e6, RingSize: 512, CompletionCPU: comp}
			s.Traffic.Flows = flows
		})
	}
	return []Preset{
		{Name: "r1-upstream", Seed: "R1", Description: "R1 before (6.4): a TCP stream into the VM; XDP redirects every packet to CPU 1 through a cpumap. Buffers come from page_frag: CPU 0 takes a reference on the 32 KiB block for every buffer, CPU 1 frees them (page_frag_free), so the block's refcount line moves between the CPUs and CPU 1 frees every block to the page allocator.",
			Build: r1(SourcePageFrag, 0)},
		{Name: "r1-page-pool", Seed: "R1", Description: "R1 with the 2023 series' page_pool (2/5): a whole order-0 pool page per buffer, no PP_FLAG_DMA_MAP (the ring still maps every buffer); the skbs CPU 1 frees recycle through the pool's ptr_ring (6.4 marks cpumap skbs for recycling) and CPU 0 refills 64 at a time.",
			Build: r1(SourcePagePool, 0)},
		{Name: "r1-page-pool-frag", Seed: "R1", Description: "R1 with the series' fragments (3/5, PP_FLAG_PAGE_FRAG): order-3 pool pages, eight one-page XDP buffers each, allocated one at a time (slow_high_order).",
			Build: r1(SourcePagePoolFrag, 3)},
		{Name: "r2-mtu1500-before", Seed: "R2", Description: "R2, MTU 1500, before the fix: without guest GSO the driver uses small buffers; the fix does not apply.",
			Build: r2(1500, "6.0")},
		{Name: "r2-mtu1500-after", Seed: "R2", Description: "R2, MTU 1500, after the fix.",
			Build: r2(1500, "6.1")},
		{Name: "r2-mtu9000-before", Seed: "R2", Description: "R2, MTU 9000, before the fix: MAX_SKB_FRAGS + 1 = 18 pages in 19 descriptors per big buffer, 53 buffers in a 1024-entry ring (no INDIRECT_DESC: with it each buffer would take one slot).",
			Build: r2(9000, "6.0")},
		{Name: "r2-mtu9000-after", Seed: "R2", Description: "R2, MTU 9000, after the fix: DIV_ROUND_UP(9000, 4096) + 1 = 4 pages in 5 descriptors per buffer, 204 buffers in the same ring.",
			Build: r2(9000, "6.1")},
		{Name: "r3-napi-local-off", Seed: "R3", Description: "R3 before: skbs freed in softirq on the NAPI CPU still recycle through the locked ptr_ring.",
			Build: r3("6.4")},
		{Name: "r3-napi-local-on", Seed: "R3", Description: "R3 after: the same frees go straight into the lockless alloc cache.",
			Build: r3("6.5")},
		{Name: "r4-page-alloc-1flow", Seed: "R4", Description: "R4: one RX CPU redirects through a devmap; pages come from and return to the page allocator.",
			Build: r4(SourcePage, DMARing, 1, -1)},
		{Name: "r4-page-alloc-2flows", Seed: "R4", Description: "R4: two RX CPUs on the page allocator; the next device completes every frame on CPU 0, so CPU 1's pages are freed on CPU 0 and CPU 1 refills from the zone: the zone lock and the struct page lines moving under it serialise them.",
			Build: r4(SourcePage, DMARing, 2, 0)},
		{Name: "r4-page-pool-same-cpu", Seed: "R4", Description: "R4: page_pool, frames returned on the RX CPU; in 2018 that was through the ptr_ring too, so the RX CPU both produces and consumes it.",
			Build: r4(SourcePagePool, DMAPremapped, 1, -1)},
		{Name: "r4-page-pool-other-cpu", Seed: "R4", Description: "R4: page_pool, frames returned on another CPU through the ptr_ring: the RX CPU only consumes it.",
			Build: r4(SourcePagePool, DMAPremapped, 1, 2)},
	}
}
