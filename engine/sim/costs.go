package sim

import (
	"errors"
	"fmt"
	"sort"
)

// Costs is the cost table: what each operation costs a CPU, in virtual
// nanoseconds. Every entry is listed in costEntries with its source, and
// can be overridden by name (Set), for instance from a scenario file.
//
// The published figures (shared/KERNEL.md, "Published costs") are pairs or
// round trips measured in a tight loop on one CPU; where the engine charges
// the halves separately, the split is stated. Contention is never in these
// figures: it comes from Lock and CacheLine.
type Costs struct {
	// page_pool (net/core/page_pool.c)
	PPCacheAlloc Duration // pop from the alloc cache
	PPCachePut   Duration // push into the alloc cache (recycle direct)
	PPRingPut    Duration // ptr_ring produce, lock excluded
	PPRingGet    Duration // ptr_ring consume of one entry, lock excluded

	// page allocator (mm/page_alloc.c)
	PageAlloc     Duration // order-0 from the per-CPU list
	PageFree      Duration // order-0 to the per-CPU list
	BuddyPerPage  Duration // moving one page between zone and per-CPU list, under the zone lock
	PageFragCarve Duration // carving one buffer from a page_frag cache

	// synchronisation
	SpinLock          Duration // uncontended lock+unlock
	Atomic            Duration // atomic read-modify-write on a line this CPU owns
	CacheLineTransfer Duration // pulling a line another CPU wrote last

	// DMA (kernel/dma/, drivers/iommu/)
	DMAMapDirect   Duration // dma_map_page without an IOMMU
	DMAUnmapDirect Duration // dma_unmap_page without an IOMMU
	DMAMapIOMMU    Duration // dma_map_page through an IOMMU
	DMAUnmapIOMMU  Duration // dma_unmap_page through an IOMMU (IOTLB flush)
	DMASync        Duration // dma_sync_single_for_{cpu,device}, coherent

	// the host side of the device (engine/device)
	VhostPacket        Duration // vhost-net handle_rx work per frame, copy excluded
	VhostCopy64        Duration // copying 64 bytes of frame into guest memory
	VhostBuffer        Duration // each extra buffer of a frame spanning several
	VhostWakeLatency   Duration // kick (ioeventfd) to the vhost worker running
	NICPacket          Duration // a hardware NIC's per-frame DMA pipeline time
	NICDoorbellLatency Duration // doorbell write to the NIC seeing new buffers
}

// DefaultCosts returns the calibrated table.
func DefaultCosts() Costs {
	var c Costs
	for _, e := range costEntries {
		*e.field(&c) = e.value
	}
	return c
}

type costEntry struct {
	name   string
	value  Duration
	source string
	field  func(*Costs) *Duration
}

// costEntries is the one place where cost constants and their reasons live.
var costEntries = []costEntry{
	{"pp_cache_alloc", 3, "bench_page_pool_simple fast path: 5.4 ns (19 cycles @3.6 GHz) for alloc+recycle, 6.13; split 3 alloc / 2 put",
		func(c *Costs) *Duration { return &c.PPCacheAlloc }},
	{"pp_cache_put", 2, "second half of the 5.4 ns fast-path pair",
		func(c *Costs) *Duration { return &c.PPCachePut }},
	{"pp_ring_put", 2, "bench_page_pool_simple ptr_ring path: 15.1 ns per alloc+recycle; minus the 5.4 ns fast pair and one ~10 ns producer lock leaves ~1-2 ns per ring op",
		func(c *Costs) *Duration { return &c.PPRingPut }},
	{"pp_ring_get", 1, "same; the consumer lock is taken once per refill of up to 64",
		func(c *Costs) *Duration { return &c.PPRingGet }},
	{"page_alloc", 33, "bench_page_pool_simple no-pool: 66 ns (238 cycles) for alloc_pages+put_page of an order-0 page; split evenly",
		func(c *Costs) *Duration { return &c.PageAlloc }},
	{"page_free", 33, "second half of the 66 ns pair",
		func(c *Costs) *Duration { return &c.PageFree }},
	{"buddy_per_page", 10, "estimate: rmqueue_bulk/free_pcppages_bulk list work per page under zone->lock (no published figure)",
		func(c *Costs) *Duration { return &c.BuddyPerPage }},
	{"page_frag_carve", 8, "estimate: page_frag_alloc offset arithmetic and refcount bias, amortised (no published figure)",
		func(c *Costs) *Duration { return &c.PageFragCarve }},
	{"spin_lock", 10, "bench_page_pool_simple: uncontended spin_lock+unlock 10.4 ns (37 cycles)",
		func(c *Costs) *Duration { return &c.SpinLock }},
	{"atomic", 5, "bench_page_pool_simple: atomic_inc 4.8 ns (17 cycles)",
		func(c *Costs) *Duration { return &c.Atomic }},
	{"cache_line_transfer", 100, "order of a cross-core cache-to-cache transfer (shared/KERNEL.md: ~100 ns)",
		func(c *Costs) *Duration { return &c.CacheLineTransfer }},
	{"dma_map_direct", 5, "estimate: dma_direct_map_page without swiotlb is address arithmetic",
		func(c *Costs) *Duration { return &c.DMAMapDirect }},
	{"dma_unmap_direct", 5, "estimate: dma_direct_unmap_page",
		func(c *Costs) *Duration { return &c.DMAUnmapDirect }},
	{"dma_map_iommu", 1000, "dma_map_benchmark commit text: about 1.0 us to map a single page through an IOMMU",
		func(c *Costs) *Duration { return &c.DMAMapIOMMU }},
	{"dma_unmap_iommu", 1300, "dma_map_benchmark commit text: about 1.3 us to unmap (IOTLB invalidation)",
		func(c *Costs) *Duration { return &c.DMAUnmapIOMMU }},
	{"vhost_packet", 250, "calibrated: vhost-net forwards about 2-4 Mpps of small frames per worker thread (tap recvmsg, descriptor walk, used ring update)",
		func(c *Costs) *Duration { return &c.VhostPacket }},
	{"vhost_copy_64b", 4, "copy_to_iter at about 16 GB/s: 4 ns per 64 bytes",
		func(c *Costs) *Duration { return &c.VhostCopy64 }},
	{"vhost_buffer", 30, "estimate: one more descriptor chain per mergeable buffer (vhost get_rx_bufs)",
		func(c *Costs) *Duration { return &c.VhostBuffer }},
	{"vhost_wake_latency", 4000, "estimate: ioeventfd signal to the vhost worker thread running on another host CPU (a few us)",
		func(c *Costs) *Duration { return &c.VhostWakeLatency }},
	{"nic_packet", 7, "a 100 Gbit/s NIC delivers 148.8 Mpps of 64-byte frames: 6.7 ns per frame",
		func(c *Costs) *Duration { return &c.NICPacket }},
	{"nic_doorbell_latency", 500, "estimate: PCIe posted write to the NIC fetching the new descriptors",
		func(c *Costs) *Duration { return &c.NICDoorbellLatency }},
	{"dma_sync", 2, "estimate: coherent x86 sync is a barrier",
		func(c *Costs) *Duration { return &c.DMASync }},
}

// ErrUnknownCost is returned by Set for a name not in the table.
var ErrUnknownCost = errors.New("unknown cost")

// Set overrides one entry by name. Negative values are refused.
func (c *Costs) Set(name string, ns int64) error {
	for _, e := range costEntries {
		if e.name == name {
			if ns < 0 {
				return fmt.Errorf("cost %q: %d ns is negative", name, ns)
			}
			*e.field(c) = Duration(ns)
			return nil
		}
	}
	return fmt.Errorf("cost %q: %w (known: %v)", name, ErrUnknownCost, CostNames())
}

// Get returns an entry by name.
func (c *Costs) Get(name string) (Duration, bool) {
	for _, e := range costEntries {
		if e.name == name {
			return *e.field(c), true
		}
	}
	return 0, false
}

// CostInfo describes one entry of the table.
type CostInfo struct {
	Name   string
	Value  Duration // in this table
	Source string   // where the default comes from
}

// Table lists every entry with its current value and source, sorted by
// name.
func (c *Costs) Table() []CostInfo {
	out := make([]CostInfo, 0, len(costEntries))
	for _, e := range costEntries {
		out = append(out, CostInfo{e.name, *e.field(c), e.source})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CostNames lists the names Set accepts, sorted.
func CostNames() []string {
	out := make([]string, 0, len(costEntries))
	for _, e := range costEntries {
		out = append(out, e.name)
	}
	sort.Strings(out)
	return out
}
