package sim

import (
	"errors"
	"fmt"
	"sort"
)

// Costs is the cost table: what each operation costs a CPU, in virtual
// nanoseconds. Every entry is listed in costEntries with its kind (sourced,
// estimate or fitted) and its source, and can be overridden by name (Set),
// for instance from a scenario file.
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
	PageFragCarve Duration // carving one buffer from a page_frag (skb_page_frag_refill, offset)

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
	// VIOMMUExit is one IOTLB invalidation a guest submits to QEMU's
	// emulated intel-iommu: the queued-invalidation tail write exits to
	// QEMU userspace and back.
	VIOMMUExit Duration

	// the host side of the device (engine/device)
	VhostPacket        Duration // vhost-net handle_rx work per frame, copy excluded
	VhostCopy64        Duration // copying 64 bytes of frame into guest memory
	VhostBuffer        Duration // each extra buffer of a frame spanning several
	VhostDesc          Duration // translating one descriptor into an iovec
	VhostIOTLBHit      Duration // a descriptor's IOVA found in vhost's own IOTLB (a guest IOMMU)
	VhostIOTLBMiss     Duration // an IOVA vhost's IOTLB lacks: VHOST_IOTLB_MISS to QEMU and its update back
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

	// GRO and the protocol in NET_RX (net/core/gro.c, net/ipv4/)
	GROReceive Duration // napi_gro_receive of one frame: the flow's lookup and the merge into the held skb
	TCPRcv     Duration // the protocol's receive of one skb (GRO skb or frame): ip_rcv .. tcp_v4_rcv .. tcp_data_queue
	TCPSendAck Duration // a pure ACK built and sent down to the driver: tcp_send_ack .. dev_queue_xmit .. start_xmit, the ring's descriptor and kick excluded

	// the sender of a tcp_stream (net/ipv4/tcp.c), on its own machine
	TCPSendmsg      Duration // one write(2) of a sending application: the syscall, tcp_sendmsg_locked, tcp_push and the transmit it leads to, per call
	NICTxCompletion Duration // a sending NIC's TX completion delay: from a frame on the wire to its skb freed (interrupt moderation)

	// sockets (net/ipv4/tcp_input.c, net/packet/af_packet.c)
	SKBCoalesce Duration // tcp_try_coalesce moving an skb's frags into the socket's tail skb (a copy adds Memcpy64 per 64 bytes)
	SKBClone    Duration // skb_clone of an skb for a listening packet socket (packet_rcv)

	// the virtio_net driver (drivers/net/virtio_net.c, drivers/virtio/virtio_ring.c)
	VirtqueueAdd    Duration // virtqueue_add_split of one buffer, DMA excluded
	VirtqueueGetBuf Duration // virtqueue_get_buf_ctx_split and detach_buf_split
	Kmalloc         Duration // kmalloc of a small object (an indirect descriptor table)
	Kfree           Duration // kfree of it
	RxPacket        Duration // receive_buf dispatch, header checks, stats, eth_type_trans
	NAPIPoll        Duration // one napi_poll: net_rx_action bookkeeping, enable/disable cb
	KickVMExit      Duration // virtqueue_notify to vhost: an MMIO/PIO write trapping to the host
	KickMMIO        Duration // doorbell write to a hardware NIC
	IRQVirt         Duration // an injected interrupt in a VM: exit, handler, EOI
	IRQLatencyVirt  Duration // an irqfd signal (vhost's, a vDPA device's) to the guest handler running
	Memcpy64        Duration // memcpy of 64 bytes in cache
	CopyUser64      Duration // recvmsg copying 64 bytes of payload to the application (skb_copy_datagram_iter)
	Csum64          Duration // summing 64 bytes of payload in software (csum_partial)
	XDPProg         Duration // bpf_prog_run_xdp: dispatcher and xdp_buff setup
	XDPInsn8        Duration // eight eBPF instructions, JIT-compiled

	// scheduling
	TaskWakeLatency Duration // try_to_wake_up to the woken thread running on another, idle CPU
	ContextSwitch   Duration // __schedule switching the CPU to another task
	Wakeup          Duration // try_to_wake_up: the waker's side
	IPISend         Duration // smp_call_function_single_async: the sender's side of an IPI
	IPIRecv         Duration // taking a call-function IPI and running its handler
}

// DefaultCosts returns the table of costEntries.
func DefaultCosts() Costs {
	var c Costs
	for _, e := range costEntries {
		*e.field(&c) = e.value
	}
	return c
}

// CostKind says where a cost constant comes from.
type CostKind uint8

const (
	// Sourced: a published measurement of the operation (a
	// microbenchmark, a commit text, a paper), cited precisely.
	Sourced CostKind = iota + 1
	// Estimate: no published figure; the source says what the estimate
	// rests on.
	Estimate
	// Fitted: chosen so that one published result (R1..R4) comes out; it
	// names that result and the row. A result reproduced through its own
	// fitted constants is calibrated, not explained (`ringlab reproduce`).
	Fitted
)

func (k CostKind) String() string {
	switch k {
	case Sourced:
		return "sourced"
	case Estimate:
		return "estimate"
	case Fitted:
		return "fitted"
	}
	return "unknown"
}

type costEntry struct {
	name   string
	value  Duration
	kind   CostKind
	fit    string // Fitted: the published result it was fitted on (R1..R4)
	source string
	field  func(*Costs) *Duration
}

// The figures of bench_page_pool_simple below are Jesper Dangaard
// Brouer's "before" run in his reply to Yunsheng Lin's "fix DMA API
// misuse" page_pool series (v7, January 2025, a 6.13-era net-next), on an
// Intel Xeon E5-1650 v4 at 3.60 GHz, in softirq (the tasklet_* rows).
const benchPP = "bench_page_pool_simple (Xeon E5-1650 v4 @3.6 GHz, net-next of January 2025; Brouer's reply to the page_pool DMA-fix series v7)"

// costEntries is the one place where cost constants and their reasons live.
var costEntries = []costEntry{
	{"pp_cache_alloc", 3, Sourced, "", benchPP + ": tasklet_page_pool01_fast_path 19 cycles, 5.399 ns per alloc+recycle through the alloc cache; split 3 alloc / 2 put",
		func(c *Costs) *Duration { return &c.PPCacheAlloc }},
	{"pp_cache_put", 2, Sourced, "", "second half of the 5.4 ns fast-path pair (pp_cache_alloc)",
		func(c *Costs) *Duration { return &c.PPCachePut }},
	{"pp_ring_put", 2, Sourced, "", benchPP + ": tasklet_page_pool02_ptr_ring 54 cycles, 15.090 ns per alloc+recycle through the ptr_ring; minus the 5.4 ns fast pair and one ~10 ns producer lock (spin_lock, charged apart) leaves 1-2 ns per ring op",
		func(c *Costs) *Duration { return &c.PPRingPut }},
	{"pp_ring_get", 1, Sourced, "", "the rest of the 15.1 ns ptr_ring pair (pp_ring_put); the consumer's lock, when taken, is charged apart",
		func(c *Costs) *Duration { return &c.PPRingGet }},
	{"page_alloc", 33, Sourced, "", benchPP + ": tasklet_page_pool03_slow 238 cycles, 66.134 ns for alloc_pages+put_page of an order-0 page (no recycling); split evenly",
		func(c *Costs) *Duration { return &c.PageAlloc }},
	{"page_free", 33, Sourced, "", "second half of the 66 ns pair (page_alloc)",
		func(c *Costs) *Duration { return &c.PageFree }},
	{"buddy_per_page", 180, Fitted, "R4", "fitted on R4 (r4-page-alloc-2flows against r4-page-alloc-1flow: two RX CPUs on the page allocator forward two thirds of what one does): rmqueue_bulk and free_pcppages_bulk write each struct page, its buddy and its list neighbours under zone->lock, two or three lines mostly cold (60-80 ns each from memory would give 120-240 ns); a page's own line moving between CPUs is charged on top (cache_line_transfer)",
		func(c *Costs) *Duration { return &c.BuddyPerPage }},
	{"page_frag_carve", 8, Estimate, "", "estimate: skb_page_frag_refill's checks and the offset arithmetic of one buffer (no published figure); get_page's atomic and the refcount line's transfers are charged apart (atomic, cache_line_transfer)",
		func(c *Costs) *Duration { return &c.PageFragCarve }},
	{"spin_lock", 10, Sourced, "", benchPP + ": lock 37 cycles, 10.431 ns per uncontended spin_lock+unlock",
		func(c *Costs) *Duration { return &c.SpinLock }},
	{"atomic", 5, Sourced, "", benchPP + ": atomic_inc 17 cycles, 4.769 ns",
		func(c *Costs) *Duration { return &c.Atomic }},
	{"cache_line_transfer", 100, Estimate, "", "estimate: the order of a cross-core cache-to-cache transfer on a server part (docs/kernel.md: on the order of 100 ns); no measurement of the machines of R1-R4",
		func(c *Costs) *Duration { return &c.CacheLineTransfer }},
	{"dma_map_direct", 5, Estimate, "", "estimate: dma_direct_map_page without swiotlb is address arithmetic",
		func(c *Costs) *Duration { return &c.DMAMapDirect }},
	{"dma_unmap_direct", 5, Estimate, "", "estimate: dma_direct_unmap_page, likewise",
		func(c *Costs) *Duration { return &c.DMAUnmapDirect }},
	{"dma_map_iommu", 100, Sourced, "", "dma_map_benchmark (-t $threads -g $nr_pages), the row \"4K - 1 thread\": one thread mapping one 4 KiB page, on Morello (Arm64, SMMUv3): 0.1 us per map (the tool prints tenths of a us), in Mostafa Saleh's \"iommu: Add IOMMU_DEBUG_PAGEALLOC sanitizer\" v5 cover letter (January 2026, CONFIG_IOMMU_DEBUG_PAGEALLOC=n). The often-quoted 1.0 us is Qinxin Xia's dma_map_sg benchmark patch (2025), -m 0 -t 8 -g 8: 8 threads each mapping 8 pages at once",
		func(c *Costs) *Duration { return &c.DMAMapIOMMU }},
	{"dma_unmap_iommu", 600, Sourced, "", "the same run: 0.6 us per unmap of one 4 KiB page by one thread (IOTLB invalidation included); the often-quoted 1.3 us is the 8-thread, 8-page run",
		func(c *Costs) *Duration { return &c.DMAUnmapIOMMU }},
	{"viommu_exit", 2930, Sourced, "", "Michael S. Tsirkin, QEMU commit 22773d6066a7 (\"pci: add pci test device\", 2013): kvm-unit-tests' vmexit measures an MMIO write that exits to QEMU userspace and back (mmio-no-eventfd:pci-mem) at 8796 cycles (CPU not stated; taken at 3 GHz). The guest's write to the emulated VT-d invalidation queue's tail register is such an exit; QEMU's own invalidation work and its message to vhost come on top, so this is a floor",
		func(c *Costs) *Duration { return &c.VIOMMUExit }},
	{"vhost_iotlb_hit", 8, Sourced, "", "derived from Jason Wang's f88949138058 (\"vhost: introduce O(1) vq metadata cache\", 2017): DPDK l2fwd in the guest, fixed mappings, so every translation hits: receive at 2.33 Mpps without an IOMMU and 2.29 Mpps through vhost's device IOTLB with the cache, 1/2.29 - 1/2.33 us = 7.5 ns a packet of one descriptor",
		func(c *Costs) *Duration { return &c.VhostIOTLBHit }},
	{"vhost_iotlb_miss", 7000, Estimate, "", "estimate: no published figure. vhost_iotlb_miss queues a VHOST_IOTLB_MISS message and the worker ends its run; QEMU's thread wakes (task_wake_latency, 2.5 us), reads it, translates the IOVA through the emulated VT-d tables and writes VHOST_IOTLB_UPDATE, which requeues the worker (vhost_wake_latency, 4 us), plus about 0.5 us for the two system calls and the walk. End to end, a Linux guest receiving through vhost with intel-iommu fell from 50323 to 749 Mbit/s (asterinas PR 1482, 2024, iperf3, Xeon Gold 6342)",
		func(c *Costs) *Duration { return &c.VhostIOTLBMiss }},
	{"vhost_packet", 250, Estimate, "", "estimate: vhost-net handle_rx per frame (tap recvmsg, descriptor walk, used ring update); rests on a vhost-net worker forwarding on the order of 2-4 Mpps of small frames, a figure often quoted without a citable measurement",
		func(c *Costs) *Duration { return &c.VhostPacket }},
	{"vhost_copy_64b", 6, Sourced, "", "vhost-net's copy_to_iter of the frame into guest pages is the same kind of kernel copy into user memory as recvmsg's (copy_user_64b): derived from Cai et al., SIGCOMM 2021, about 0.095 ns a byte. It was fitted on R2 (12 ns) while R2's presets ran vhost; R2 ran on vDPA hardware and its presets now do",
		func(c *Costs) *Duration { return &c.VhostCopy64 }},
	{"vhost_buffer", 30, Estimate, "", "estimate: one more descriptor chain per mergeable buffer (vhost get_rx_bufs); rests on it being a few cache misses on the ring",
		func(c *Costs) *Duration { return &c.VhostBuffer }},
	{"vhost_desc", 25, Estimate, "", "estimate: vhost_get_vq_desc reading one descriptor and translate_desc finding its guest address in the vhost umem tree or IOTLB cache, a few cache misses; it was fitted on R2 (150 ns), where the commit names ring capacity and the device was vDPA hardware (FIDELITY row 2)",
		func(c *Costs) *Duration { return &c.VhostDesc }},
	{"vhost_wake_latency", 4000, Estimate, "", "estimate: ioeventfd signal to the vhost worker thread running on another host CPU; rests on a thread wake-up across CPUs taking a few us",
		func(c *Costs) *Duration { return &c.VhostWakeLatency }},
	{"nic_packet", 7, Estimate, "", "estimate: a NIC is taken to keep up with a 100 Gbit/s line, which carries 148.8 Mpps of 64-byte frames (84 bytes each on the wire): 6.7 ns per frame",
		func(c *Costs) *Duration { return &c.NICPacket }},
	{"nic_doorbell_latency", 500, Estimate, "", "estimate: PCIe posted write to the NIC fetching the new descriptors; rests on a PCIe round trip being a fraction of a us",
		func(c *Costs) *Duration { return &c.NICDoorbellLatency }},
	{"build_skb", 40, Estimate, "", "estimate: napi_build_skb from the per-CPU skb cache and shinfo init, about 150 cycles",
		func(c *Costs) *Duration { return &c.BuildSKB }},
	{"alloc_skb", 60, Estimate, "", "estimate: napi_alloc_skb of a GOOD_COPY_LEN head from the page_frag cache, a build_skb plus the carve",
		func(c *Costs) *Duration { return &c.AllocSKB }},
	{"gro_receive", 72, Sourced, "", "Eric Dumazet, netdev 4 March 2024 (\"Re: [PATCH net-next 2/4] net: gro: change skb_gro_network_header()\"): one TCP flow at 1500 MTU saturates a CPU (Xeon Gold 6268L @ 2.80 GHz, gve, RFS on, so that CPU runs the driver and GRO only) at 6,233,000 packets a second, 160.4 ns a packet; its profile's GRO functions (dev_gro_receive 11.19%, ipv6_gro_receive 8.05, tcp_gro_receive 7.98, skb_gro_receive 7.25, tcp6_gro_receive 3.91, csum_ipv6_magic 3.55, napi_gro_frags 3.06) are 45.0% of it: 72 ns a frame merged. IPv6 through napi_gro_frags; virtio_net passes built skbs to napi_gro_receive",
		func(c *Costs) *Duration { return &c.GROReceive }},
	{"tcp_rcv", 1050, Estimate, "", "estimate: from Cai et al., \"Understanding Host Network Stack Overheads\" (SIGCOMM 2021), the receiver breakdowns in the authors' artifact (Terabit-Ethernet/Understanding-network-stack-overheads-SIGCOMM-2021, README's sample output; Xeon Gold 6128 @ 3.4 GHz, Linux 5.4, ConnectX-5): without TSO/GRO (9.0 Gbit/s, 1.86 cores) the tcp/ip category (ip_rcv, tcp_v4_rcv, tcp_rcv_established, tcp_data_queue, the ACKs' __tcp_send_ack and __ip_queue_xmit, tcp_recvmsg, nf_conntrack_in) is 54.8%: 1309 ns a 1448-byte skb; less half an ACK's TCP/IP share (one ACK per two segments, about 510 ns: tcp_send_ack's 800 less the device layer's 300) leaves about 1050 ns an skb. With GRO (26.6 Gbit/s) the same category is 36 ns a frame, which fits about 1.05 us an skb at some 30 frames a GRO skb; the paper's figures themselves were not read",
		func(c *Costs) *Duration { return &c.TCPRcv }},
	{"tcp_sendmsg", 371, Sourced, "", "derived from Eric Dumazet's f54b311142a9 (\"tcp: auto corking\", 3.14): super_netperf 4 -t TCP_STREAM -- -m 128 with tcp_autocorking=1 reached 9410.39 Mbit/s on 35,209 ms of task-clock; taking netperf's default 10 s run, that is 9.19e7 writes of 128 bytes, 383 ns of the senders' CPU a write (the syscall, tcp_sendmsg_locked, the pushes and transmits autocorking left, the ACKs handled in the task's context), less 128 bytes of copy at copy_user_64b's rate (12 ns). Charged once per write, whatever its size: the sender's copy per byte is not charged (the sender's machine is outside the model; only what the write size changes is)",
		func(c *Costs) *Duration { return &c.TCPSendmsg }},
	{"nic_tx_completion", 16000, Sourced, "", "mlx5's default TX completion moderation (drivers/net/ethernet/mellanox/mlx5/core/en.h: MLX5E_PARAMS_DEFAULT_TX_CQ_MODERATION_USEC 0x10, with MLX5E_PARAMS_DEFAULT_TX_CQ_MODERATION_PKTS 0x20): a completion event at most 16 us after a frame leaves, sooner after 32 frames; the model takes the time bound (a sender writing small pieces completes fewer than 32 frames in 16 us). A sender on the host writing into a tap device has none: tun_net_xmit orphans the skb (skb_orphan) as it queues it",
		func(c *Costs) *Duration { return &c.NICTxCompletion }},
	{"tcp_send_ack", 800, Estimate, "", "estimate: Eric Dumazet's 133c4c0d3717 (\"tcp: defer regular ACK while processing socket backlog\", netdev 6 September 2023; Xeon Platinum 8481C, one flow, the receiving application's CPU saturated): 100 -> 120 Gbit/s as ACKs fell from 240,000 to 40,000 a second, which puts an ACK at about 0.81 us of that CPU if the whole gain is the ACKs' (it includes the driver and its doorbell: an upper bound); Paolo Abeni's pktgen through dev_queue_xmit and pfifo_fast (netdev 19 June 2020: 3.3 Mpps, 303 ns a packet) times the device layer alone. The virtqueue descriptor and a kick are charged apart (virtqueue_add, kick_vmexit)",
		func(c *Costs) *Duration { return &c.TCPSendAck }},
	{"skb_coalesce", 30, Estimate, "", "estimate: tcp_try_coalesce and skb_try_coalesce moving the frag descriptors (16 bytes each) into the tail skb, the truesize and rmem updates, and kfree_skb_partial of the emptied sk_buff (~100 cycles)",
		func(c *Costs) *Duration { return &c.SKBCoalesce }},
	{"skb_clone", 40, Estimate, "", "estimate: skb_clone in packet_rcv: an sk_buff from skbuff_cache, __copy_skb_header, the dataref atomic (~150 cycles)",
		func(c *Costs) *Duration { return &c.SKBClone }},
	{"ndo_xdp_xmit", 60, Estimate, "", "estimate: TX queue lock, descriptor ring update and one doorbell per bulk",
		func(c *Costs) *Duration { return &c.NDOXmit }},
	{"xmit_frame", 15, Estimate, "", "estimate: one TX descriptor written and its DMA address looked up",
		func(c *Costs) *Duration { return &c.XmitFrame }},
	{"irq", 500, Estimate, "", "estimate: hard interrupt entry, handler, napi_schedule and softirq raise on bare metal",
		func(c *Costs) *Duration { return &c.IRQ }},
	{"irq_latency", 1000, Estimate, "", "estimate: MSI to the handler running (an injected interrupt in a VM is slower: irq_latency_virt)",
		func(c *Costs) *Duration { return &c.IRQLatency }},
	{"virtqueue_add", 15, Estimate, "", "estimate: virtqueue_add_split of one descriptor, about 50 cycles; vring_map_one_sg charged apart",
		func(c *Costs) *Duration { return &c.VirtqueueAdd }},
	{"virtqueue_get_buf", 10, Estimate, "", "estimate: reading the used element and detach_buf_split",
		func(c *Costs) *Duration { return &c.VirtqueueGetBuf }},
	{"kmalloc", 20, Estimate, "", "estimate: SLUB's per-CPU freelist fast path (this_cpu_cmpxchg of the freelist, ~70 cycles) for alloc_indirect_split's kmalloc_array of total_sg 16-byte descriptors (304 bytes for 19, from kmalloc-512) with GFP_ATOMIC; no published figure for this size",
		func(c *Costs) *Duration { return &c.Kmalloc }},
	{"kfree", 15, Estimate, "", "estimate: the matching SLUB fast-path free in detach_buf_split, on the CPU that allocated the table",
		func(c *Costs) *Duration { return &c.Kfree }},
	{"rx_packet", 25, Estimate, "", "estimate: receive_buf, header checks, per-queue stats, eth_type_trans",
		func(c *Costs) *Duration { return &c.RxPacket }},
	{"napi_poll", 100, Estimate, "", "estimate: net_rx_action/napi_poll bookkeeping and virtqueue_napi_complete",
		func(c *Costs) *Duration { return &c.NAPIPoll }},
	{"kick_vmexit", 1500, Estimate, "", "estimate: a notify MMIO write exits to the host and back; rests on KVM exits being commonly put at 1-2 us round trip",
		func(c *Costs) *Duration { return &c.KickVMExit }},
	{"kick_mmio", 100, Estimate, "", "estimate: a posted PCIe doorbell write from bare metal",
		func(c *Costs) *Duration { return &c.KickMMIO }},
	{"irq_virt", 1500, Estimate, "", "estimate: an injected MSI in a KVM guest: exit on EOI, handler, napi_schedule; rests on the same 1-2 us per exit as kick_vmexit",
		func(c *Costs) *Duration { return &c.IRQVirt }},
	{"irq_latency_virt", 5000, Estimate, "", "estimate: vhost (or vhost-vdpa, from the host interrupt of a vDPA device without irq bypass) signals an irqfd, KVM injects it, the vCPU takes it (several us)",
		func(c *Costs) *Duration { return &c.IRQLatencyVirt }},
	{"copy_user_64b", 6, Sourced, "", "derived from Cai et al., \"Understanding Host Network Stack Overheads\" (SIGCOMM 2021): one core receiving a single long TCP flow (TSO/GRO, 9000-byte MTU, aRFS, DDIO) reaches about 42 Gbit/s and spends about half of its cycles in the data copy to the application: 0.5 s of copy per 5.25 GB, 0.095 ns a byte, 6 ns per 64 bytes. A share read off the paper's CPU breakdown, not a microbenchmark of the copy alone",
		func(c *Costs) *Duration { return &c.CopyUser64 }},
	{"csum_64b", 4, Estimate, "", "estimate: x86-64 csum_partial adds 8 bytes per add-with-carry, two or more a cycle (arch/x86/lib/csum-partial_64.c), about 16 cycles per 64 bytes of data the copy has not brought into cache; no published figure for the received case",
		func(c *Costs) *Duration { return &c.Csum64 }},
	{"memcpy_64b", 2, Estimate, "", "estimate: memcpy within cache at about 32 bytes per cycle",
		func(c *Costs) *Duration { return &c.Memcpy64 }},
	{"xdp_prog", 8, Estimate, "", "estimate: bpf_prog_run_xdp through the dispatcher with xdp_buff set up",
		func(c *Costs) *Duration { return &c.XDPProg }},
	{"xdp_insn8", 3, Estimate, "", "estimate: JIT-compiled eBPF retiring about one instruction per cycle, ~3 ns per 8",
		func(c *Costs) *Duration { return &c.XDPInsn8 }},
	{"task_wake_latency", 2500, Sourced, "", "Andrei Vagin, LKML 27 Oct 2022 (\"sched: consider WF_SYNC to find idle siblings\", an 8-CPU host): perf bench sched pipe takes 8.814 us a round trip with the two tasks on two CPUs against 3.744 us with both on one: 2.5 us more per one-way hand-off, the wake-up of a task sleeping on another CPU (the IPI, the idle CPU's exit) before it runs; Chao Gao's cross-vCPU run in a KVM guest (kvm list, June 2022: 7.80-8.12 us a round trip) agrees. The woken task's context switch is charged apart (context_switch)",
		func(c *Costs) *Duration { return &c.TaskWakeLatency }},
	{"context_switch", 1000, Estimate, "", "estimate: perf bench sched pipe with both tasks on one CPU takes 2.79 us a round trip in a KVM guest (Ingo Molnar, LKML 31 May 2025), 1.40 us per half: a wake-up, a pipe write and read, and one context switch (two per round trip, counted by Arnaldo Carvalho de Melo, LKML 16 Oct 2023); no source splits the half, and the switch (__schedule, __switch_to and the cache it disturbs) is taken as the larger part",
		func(c *Costs) *Duration { return &c.ContextSwitch }},
	{"wakeup", 400, Estimate, "", "estimate: the rest of that 1.40 us half round trip (context_switch): try_to_wake_up of the woken task, paid by the waker (sk_data_ready's wake-up of the reader, wake_up_process of a kthread)",
		func(c *Costs) *Duration { return &c.Wakeup }},
	{"ipi_send", 1000, Estimate, "", "estimate: an IPI from a KVM guest is an x2APIC ICR write that exits to the host (handled on KVM's fastpath, cheaper than a notify's round trip, kick_vmexit); on bare metal it is a few hundred cycles",
		func(c *Costs) *Duration { return &c.IPISend }},
	{"ipi_recv", 1000, Estimate, "", "estimate: the target vCPU takes the injected call-function vector, runs the handler (trigger_rx_softirq raises NET_RX) and returns; cheaper than a device interrupt's full path (irq_virt)",
		func(c *Costs) *Duration { return &c.IPIRecv }},
	{"dma_sync", 2, Estimate, "", "estimate: a coherent x86 sync is a barrier",
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
	Name    string
	Value   Duration // in this table
	Default Duration // in DefaultCosts
	Kind    CostKind // of the default
	Fit     string   // Kind Fitted: the published result the default was fitted on
	Source  string   // where the default comes from
}

// DeviceAssumptions are what the engine takes a device to do that no
// source gives: firmware behaviour, and how a guest reaches a hardware
// device, stated rather than cited (docs/costs.md prints them).
var DeviceAssumptions = []string{
	"A vDPA device with no buffer posted for a frame off the wire drops it (host_no_buffer_drops) rather than holding it on the card, and after running out it waits for the driver's doorbell before it looks at the ring again. NICs differ (some buffer on chip, some poll); no vendor documents this for the vDPA cards the presets stand for.",
	"A guest's kick of a vDPA queue costs kick_mmio, a posted MMIO store without an exit. That holds only when QEMU maps the device's notify area into the guest (vhost-vdpa host notifiers); without it the store exits to QEMU like a vhost kick (kick_vmexit).",
	"A vDPA device's interrupt reaches the guest the way vhost's does, through an irqfd KVM injects (irq_latency_virt, irq_virt): the engine assumes no posted-interrupt bypass.",
}

// Table lists every entry with its current value, its default and where
// the default comes from, sorted by name.
func (c *Costs) Table() []CostInfo {
	out := make([]CostInfo, 0, len(costEntries))
	for _, e := range costEntries {
		out = append(out, CostInfo{Name: e.name, Value: *e.field(c), Default: e.value, Kind: e.kind, Fit: e.fit, Source: e.source})
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
