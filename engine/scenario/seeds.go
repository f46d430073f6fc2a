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
	Metric    string  // what is measured: delivered_gbps, tx_mpps, recycle_cached_share, recycle_ring_share, alloc_refill_per_mpkt
	Source    string
}

// Reproductions is the table `ringlab reproduce` prints.
func Reproductions() []Reproduction {
	const r1 = "virtio_net page_pool series (2023), XDP cpumap in a multi-core VM"
	const r2 = "virtio-net: use mtu size as buffer length for big packets (2022), iperf TCP, 1024-entry queue"
	const r3 = "page_pool: allow caching from safely localized NAPI (2023), bnxt TCP stream, page per packet"
	const r4 = "mlx5 XDP_REDIRECT with page_pool (2018), devmap to ixgbe"
	return []Reproduction{
		{"R1", "r1-upstream", "", "Gbit/s", 1.38, "delivered_gbps", r1},
		{"R1", "r1-page-pool", "r1-upstream", "Gbit/s", 9.74, "delivered_gbps", r1},
		{"R1", "r1-page-pool-frag", "r1-upstream", "Gbit/s", 10.3, "delivered_gbps", r1},
		{"R2", "r2-mtu1500-before", "", "Gbit/s", 22.5, "delivered_gbps", r2},
		{"R2", "r2-mtu1500-after", "r2-mtu1500-before", "Gbit/s", 22.4, "delivered_gbps", r2},
		{"R2", "r2-mtu9000-before", "", "Gbit/s", 12.8, "delivered_gbps", r2},
		{"R2", "r2-mtu9000-after", "r2-mtu9000-before", "Gbit/s", 25.9, "delivered_gbps", r2},
		{"R3", "r3-napi-local-off", "", "share", 0, "recycle_cached_share", r3},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "share", 150_197_505.0 / (150_197_505 + 0), "recycle_cached_share", r3},
		{"R3", "r3-napi-local-off", "", "share", 149_299_454.0 / (149_299_454 + 0), "recycle_ring_share", r3},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "share", 0, "recycle_ring_share", r3},
		{"R3", "r3-napi-local-off", "", "per Mpkt", 2_332_880 / 149.299454, "alloc_refill_per_mpkt", r3},
		{"R3", "r3-napi-local-on", "r3-napi-local-off", "per Mpkt", 2_128 / 150.197505, "alloc_refill_per_mpkt", r3},
		{"R4", "r4-page-alloc-1flow", "", "Mpps", 6, "tx_mpps", r4},
		{"R4", "r4-page-alloc-2flows", "r4-page-alloc-1flow", "Mpps", 4, "tx_mpps", r4},
		{"R4", "r4-page-pool-same-cpu", "r4-page-alloc-1flow", "Mpps", 10, "tx_mpps", r4},
		{"R4", "r4-page-pool-other-cpu", "r4-page-alloc-1flow", "Mpps", 12, "tx_mpps", r4},
	}
}

// vmNotes describes the R2 virtual machine.
const vmNotes = "a KVM guest with vhost-net and no IOMMU: the default cost table"

// The R1 virtual machine has a virtual IOMMU (VIRTIO_F_ACCESS_PLATFORM): a
// buffer mapped by the ring costs a request to the VMM to map it and
// another to unmap it, each a VM exit and an IOTLB update. Calibrated on
// R1's upstream figure; page_pool maps each page once and keeps it mapped
// while it recycles, which is what takes this cost away.
const (
	r1IOMMUMap   = 4000
	r1IOMMUUnmap = 4000
	r1Notes      = "a KVM guest with a virtual IOMMU: dma_map_iommu and dma_unmap_iommu are requests to the VMM (about 4 us each, calibrated on R1's upstream figure)"
)

func seedPresets() []Preset {
	// R1 ran a 6.4-era net-next with the 2023 series applied.
	r1 := func(src, dma string) func() Scenario {
		return with(func(s *Scenario) {
			s.Kernel = "6.4"
			s.CPUs = 2
			s.RingSize = 256
			s.TxRingSize = 256
			s.Driver.BufferSource = src
			s.Driver.DMA = dma
			s.XDP = &XDP{Program: "xdp_redirect_cpu", CpumapCPUs: []int{1}, CpumapQsize: 2048}
			s.Traffic.Size = 1514
			s.Consumer.CostNs = 1000
			s.Driver.IOMMU = true
			s.Costs = map[string]int64{"dma_map_iommu": r1IOMMUMap, "dma_unmap_iommu": r1IOMMUUnmap}
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
			s.Features.MrgRxbuf = false
			s.Driver.BufferSource = SourcePage
			s.Driver.DMA = DMARing
			s.Traffic.Size = mtu + 14
			s.Traffic.Proto = "tcp"
			s.Consumer = Consumer{CPU: 1, Context: FreeProcess, CostNs: 300}
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
			s.Traffic.Size = 1514
			s.Traffic.Proto = "tcp"
			s.Consumer = Consumer{CPU: 1, Context: FreeProcess, CostNs: 300}
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
		{Name: "r1-upstream", Seed: "R1", Description: "R1 before: XDP redirects every packet to CPU 1 through a cpumap; buffers come from page_frag, so pages freed on CPU 1 go back to the page allocator from the wrong CPU.",
			Build: r1(SourcePageFrag, DMARing)},
		{Name: "r1-page-pool", Seed: "R1", Description: "R1 with page_pool: pages freed on CPU 1 return through the pool's ptr_ring and are reused without the page allocator.",
			Build: r1(SourcePagePool, DMAPremapped)},
		{Name: "r1-page-pool-frag", Seed: "R1", Description: "R1 with page_pool fragments.",
			Build: r1(SourcePagePoolFrag, DMAPremapped)},
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
