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
// The published figures (docs/kernel.md, "Published costs") are pairs or
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
	VhostDesc          Duration // translating one descriptor into an iovec
	VhostWakeLatency   Duration // kick (ioeventfd) to the vhost worker running
	NICPacket          Duration // a hardware NIC's per-frame DMA pipeline time
	NICDoorbellLatency Duration // doorbell write to the NIC seeing new buffers

	// the network stack
	BuildSKB   Duration // build_skb / napi_build_skb around an existing buffer
	AllocSKB   Duration // napi_alloc_skb of a small head (copy path)
	NDOXmit    Duration // one ndo_xdp_xmit call: TX queue lock, doorbell
	XmitFrame  Duration // one frame into a TX ring (descriptor write)
	IRQ        Duration // taking an interrupt and scheduling NAPI on the CPU
	IRQLatency Duration // from the device's signal to the handler running

	// sockets (net/ipv4/tcp_input.c, net/packet/af_packet.c)
	SKBCoalesce Duration // tcp_try_coalesce moving an skb's frags into the socket's tail skb (a copy adds Memcpy64 per 64 bytes)
	SKBClone    Duration // skb_clone of an skb for a listening packet socket (packet_rcv)

	// the virtio_net driver (drivers/net/virtio_net.c, drivers/virtio/virtio_ring.c)
	VirtqueueAdd    Duration // virtqueue_add_split of one buffer, DMA excluded
	VirtqueueGetBuf Duration // virtqueue_get_buf_ctx_split and detach_buf_split
	RxPacket        Duration // receive_buf dispatch, header checks, stats, eth_type_trans
	NAPIPoll        Duration // one napi_poll: net_rx_action bookkeeping, enable/disable cb
	KickVMExit      Duration // virtqueue_notify to vhost: an MMIO/PIO write trapping to the host
	KickMMIO        Duration // doorbell write to a hardware NIC
	IRQVirt         Duration // an injected interrupt in a VM: exit, handler, EOI
	IRQLatencyVirt  Duration // vhost's eventfd signal to the guest handler running
	Memcpy64        Duration // memcpy of 64 bytes in cache
	XDPProg         Duration // bpf_prog_run_xdp: dispatcher and xdp_buff setup
	XDPInsn8        Duration // eight eBPF instructions, JIT-compiled

	// scheduling
	TaskWakeLatency Duration // try_to_wake_up to the woken thread running
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
	{"buddy_per_page", 180, "calibrated on R4 (two RX CPUs on the page allocator forward two thirds of what one does, 4 vs 6 Mpps): rmqueue_bulk and free_pcppages_bulk write each struct page, its buddy and its list neighbours under zone->lock, two or three lines mostly cold (about 60-80 ns each from memory); a page's own line moving between CPUs is charged on top (cache_line_transfer)",
		func(c *Costs) *Duration { return &c.BuddyPerPage }},
	{"page_frag_carve", 8, "estimate: page_frag_alloc offset arithmetic and refcount bias, amortised (no published figure)",
		func(c *Costs) *Duration { return &c.PageFragCarve }},
	{"spin_lock", 10, "bench_page_pool_simple: uncontended spin_lock+unlock 10.4 ns (37 cycles)",
		func(c *Costs) *Duration { return &c.SpinLock }},
	{"atomic", 5, "bench_page_pool_simple: atomic_inc 4.8 ns (17 cycles)",
		func(c *Costs) *Duration { return &c.Atomic }},
	{"cache_line_transfer", 100, "order of a cross-core cache-to-cache transfer (docs/kernel.md: ~100 ns)",
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
	{"vhost_copy_64b", 12, "calibrated on R2: copy_to_iter into guest pages at about 5 GB/s (12 ns per 64 bytes), which puts a 9000-byte frame at about 2.7 us as 25.9 Gbit/s implies",
		func(c *Costs) *Duration { return &c.VhostCopy64 }},
	{"vhost_buffer", 30, "estimate: one more descriptor chain per mergeable buffer (vhost get_rx_bufs)",
		func(c *Costs) *Duration { return &c.VhostBuffer }},
	{"vhost_desc", 150, "calibrated on R2 (9k MTU fix): a 19-descriptor big buffer took the host about twice as long as a 5-descriptor one; vhost_get_vq_desc + translate_desc per descriptor",
		func(c *Costs) *Duration { return &c.VhostDesc }},
	{"vhost_wake_latency", 4000, "estimate: ioeventfd signal to the vhost worker thread running on another host CPU (a few us)",
		func(c *Costs) *Duration { return &c.VhostWakeLatency }},
	{"nic_packet", 7, "a 100 Gbit/s NIC delivers 148.8 Mpps of 64-byte frames: 6.7 ns per frame",
		func(c *Costs) *Duration { return &c.NICPacket }},
	{"nic_doorbell_latency", 500, "estimate: PCIe posted write to the NIC fetching the new descriptors",
		func(c *Costs) *Duration { return &c.NICDoorbellLatency }},
	{"build_skb", 40, "estimate: napi_build_skb from the per-CPU skb cache, shinfo init (~150 cycles)",
		func(c *Costs) *Duration { return &c.BuildSKB }},
	{"alloc_skb", 60, "estimate: napi_alloc_skb of a GOOD_COPY_LEN head from the page_frag cache",
		func(c *Costs) *Duration { return &c.AllocSKB }},
	{"skb_coalesce", 30, "estimate: tcp_try_coalesce and skb_try_coalesce moving the frag descriptors (16 bytes each) into the tail skb, the truesize and rmem updates, and kfree_skb_partial of the emptied sk_buff (~100 cycles)",
		func(c *Costs) *Duration { return &c.SKBCoalesce }},
	{"skb_clone", 40, "estimate: skb_clone in packet_rcv: an sk_buff from skbuff_cache, __copy_skb_header, the dataref atomic (~150 cycles)",
		func(c *Costs) *Duration { return &c.SKBClone }},
	{"ndo_xdp_xmit", 60, "estimate: TX queue lock, descriptor ring update and one doorbell per bulk",
		func(c *Costs) *Duration { return &c.NDOXmit }},
	{"xmit_frame", 15, "estimate: one TX descriptor written and DMA address looked up",
		func(c *Costs) *Duration { return &c.XmitFrame }},
	{"irq", 500, "estimate: hard interrupt entry, handler, napi_schedule and softirq raise on bare metal",
		func(c *Costs) *Duration { return &c.IRQ }},
	{"irq_latency", 1000, "estimate: MSI to the handler running (an injected interrupt in a VM is slower: see vhost presets)",
		func(c *Costs) *Duration { return &c.IRQLatency }},
	{"virtqueue_add", 15, "estimate: virtqueue_add_split of one descriptor (~50 cycles); vring_map_one_sg charged separately",
		func(c *Costs) *Duration { return &c.VirtqueueAdd }},
	{"virtqueue_get_buf", 10, "estimate: reading used elem, detach_buf_split",
		func(c *Costs) *Duration { return &c.VirtqueueGetBuf }},
	{"rx_packet", 25, "estimate: receive_buf, header checks, per-queue stats, eth_type_trans",
		func(c *Costs) *Duration { return &c.RxPacket }},
	{"napi_poll", 100, "estimate: net_rx_action/napi_poll bookkeeping and virtqueue_napi_complete",
		func(c *Costs) *Duration { return &c.NAPIPoll }},
	{"kick_vmexit", 1500, "a notify MMIO write exits to the host and back: about 1-2 us on KVM",
		func(c *Costs) *Duration { return &c.KickVMExit }},
	{"kick_mmio", 100, "a posted PCIe doorbell write from bare metal",
		func(c *Costs) *Duration { return &c.KickMMIO }},
	{"irq_virt", 1500, "an injected MSI in a KVM guest: exit on EOI, handler, napi_schedule (about 1-2 us)",
		func(c *Costs) *Duration { return &c.IRQVirt }},
	{"irq_latency_virt", 5000, "estimate: vhost signals an irqfd, KVM injects it, the vCPU takes it (several us)",
		func(c *Costs) *Duration { return &c.IRQLatencyVirt }},
	{"memcpy_64b", 2, "memcpy within cache, ~32 bytes per cycle",
		func(c *Costs) *Duration { return &c.Memcpy64 }},
	{"xdp_prog", 8, "estimate: bpf_prog_run_xdp through the dispatcher with xdp_buff set up",
		func(c *Costs) *Duration { return &c.XDPProg }},
	{"xdp_insn8", 3, "JIT-compiled eBPF retires about one instruction per cycle: ~3 ns per 8",
		func(c *Costs) *Duration { return &c.XDPInsn8 }},
	{"task_wake_latency", 3000, "estimate: wake-up latency of a sleeping thread on an idle CPU (a few us)",
		func(c *Costs) *Duration { return &c.TaskWakeLatency }},
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
