// Package virtionet is the guest driver of a virtio network device,
// following drivers/net/virtio_net.c: receive queues filled with small, big
// or mergeable buffers from page_frag, the page allocator or a page_pool;
// NAPI polling with a budget and refill; XDP with every verdict; an XDP
// send queue per queue pair; the per-queue counters with their ethtool
// names.
package virtionet

import (
	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/virtq"
	"ringlab/engine/xdp"
)

// Constants of drivers/net/virtio_net.c and the headers it includes.
const (
	GoodPacketLen     = 14 + 4 + 1500 // GOOD_PACKET_LEN: ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN
	GoodCopyLen       = 128           // GOOD_COPY_LEN
	XDPHeadroom       = 256           // VIRTIO_XDP_HEADROOM
	HdrLen            = device.VirtioNetHdrLen
	PaddedVnetHdrLen  = 32  // sizeof(struct padded_vnet_hdr)
	RxPad             = 64  // VIRTNET_RX_PAD: NET_IP_ALIGN (0 on x86) + NET_SKB_PAD
	ShinfoSize        = 320 // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
	L1CacheBytes      = 64
	MrgCtxHeaderShift = 22 // MRG_CTX_HEADER_SHIFT
	EthHlen           = 14
	// EWMA weight: DECLARE_EWMA(pkt_len, 0, 64).
	ewmaWeight = 64
)

// bufferSource is scenario.Driver.BufferSource decoded.
type bufferSource uint8

const (
	srcPageFrag bufferSource = iota
	srcPage
	srcPagePool
	srcPagePoolFrag
)

func skbDataAlign(n int) int { return (n + L1CacheBytes - 1) &^ (L1CacheBytes - 1) }

// Env is what the driver shares with the rest of the world.
type Env struct {
	Sim      *sim.Sim
	Mem      *mem.Mem
	DMA      *mem.DMA
	Pools    *pagepool.Registry
	SKBs     *skb.Pool
	Frames   *xdp.FramePool
	Stack    *skb.Stack
	Releaser skb.Releaser
	Cpumap   *xdp.Cpumap // nil without a cpumap
	Devmap   *xdp.Devmap // nil without a devmap
	Prog     *bpf.Program
	Clock    bpf.Clock
}

// Driver is struct virtnet_info.
type Driver struct {
	env  *Env
	s    *scenario.Scenario
	mode string

	mergeable  bool
	bigPackets bool
	// Scenario choices decoded once at New, so the per-packet paths test
	// a flag instead of comparing strings.
	source      bufferSource
	premapped   bool // Driver.DMA is premapped: pool pages carry their DMA address
	nic         bool // Device.Kind is a hardware NIC (else vhost)
	wholePage   bool // buffers own their page (see RQ.wholePage)
	numSkbFrags int  // big_packets_num_skbfrags
	xdpEnabled  bool
	budget      int

	// poolFrags: page_pool buffers are fragments (page_pool_alloc_frag of
	// len + room, the hole given to the last of a page): page_pool on a
	// kernel with VirtioNetPagePool, page_pool_frag (the 2023 series'
	// 3/5) on any. Without it page_pool takes a whole page per buffer
	// (the 2023 series' 2/5).
	poolFrags bool
	// refillInNAPI: a failed refill is retried by NAPI polling again at
	// once (kernel.Behaviours.RefillRetryInNAPI, 6.19+); else
	// refill_work retries it in process context.
	refillInNAPI bool

	RQ []*RQ
	SQ []*SQ

	napiKind   sim.Kind
	landKind   sim.Kind
	irqKind    sim.Kind
	refillKind sim.Kind // refill_work (vi->refill), before 6.19

	// refillQueued: refill_work is queued (a delayed_work is queued once:
	// schedule_delayed_work on a pending one does nothing).
	refillQueued bool
	Refill       RefillStats

	// Err is the first internal error (a broken engine invariant); the
	// world stops when it is set.
	Err error
}

// RefillStats count refill_work (kernels before 6.19): its runs, and the
// runs that still could not fill a queue and rescheduled it after HZ/2.
type RefillStats struct {
	Runs    uint64
	Retries uint64
}

// RQStats are struct virtnet_rq_stats, ethtool names rx%u_*.
type RQStats struct {
	Packets      uint64
	Bytes        uint64
	Drops        uint64
	XDPPackets   uint64
	XDPTx        uint64
	XDPRedirects uint64
	XDPDrops     uint64
	Kicks        uint64
	// Not in ethtool: dev->stats and engine counters.
	LengthErrors uint64 // rx_length_errors
	NAPIPolls    uint64
	IRQs         uint64
	Refills      uint64 // try_fill_recv calls
	AllocFails   uint64 // buffers the refill could not allocate
	XDPAborted   uint64 // runs that ended XDP_ABORTED (trace_xdp_exception)
	Linearized   uint64 // xdp_linearize_page copies
	Copied       uint64 // packets copied into a small skb head (GOOD_COPY_LEN)
	Coalesced    uint64 // buffers coalesced into the previous frag
	FragList     uint64 // skbs chained through frag_list at MAX_SKB_FRAGS (receive_mergeable)
}

// rxBuf is what the driver remembers of a posted buffer: the kernel keeps
// the buffer address as the virtqueue token and the truesize in ctx.
type rxBuf struct {
	page     mem.PageID // block head
	off      uint32     // offset of the buffer's data start in the block
	len      uint32     // bytes posted
	truesize uint32
	dma      uint64 // address mapped by the ring (DMA ring mode), valid when mapped
	mapped   bool
	pool     bool   // from this queue's page_pool
	head     uint16 // descriptor head it was posted at (where the device wrote)
	next     int32  // free list
}

// set makes b an unmapped buffer: *b = rxBuf{page: page, off: off, ...}
// written field by field (a composite literal goes through a stack
// temporary whose narrow stores stall the wide copy out of it).
func (b *rxBuf) set(page mem.PageID, off, length, truesize uint32, pool bool, next int32, head uint16) {
	b.page, b.off, b.len, b.truesize = page, off, length, truesize
	b.dma, b.mapped, b.pool = 0, false, pool
	b.head, b.next = head, next
}

// RQ is struct receive_queue.
type RQ struct {
	d     *Driver
	Index int
	CPU   *sim.CPU
	VQ    *virtq.Queue
	Dev   *device.RX
	Pool  *pagepool.Pool // nil without page_pool
	frag  *mem.FragCache // rq->alloc_frag
	pages mem.PageID     // rq->pages: big mode's chain of spare pages

	ewma      uint32 // mrg_avg_pkt_len (internal value, precision 0)
	minBufLen uint32

	bufs     []rxBuf
	freeBuf  int32
	napiOn   bool // NAPI scheduled or running
	irqArmed bool // an interrupt event is scheduled
	xdpXmit  uint8

	xdpBuf []byte     // scratch: headroom + stored window for the program
	xdpIn  bpf.Input  // scratch: the program's input (kept here so it does not escape)
	xdpRes bpf.Result // scratch: the program's result

	Stats RQStats
	// LastFault is why the XDP program last aborted (the interpreter's
	// fault: instruction offset and reason), zero when it never did.
	LastFault bpf.Fault
}

// SQ is struct send_queue, used here for XDP_TX.
type SQ struct {
	Index int
	VQ    *virtq.Queue
	Dev   *device.TX
	Stats SQStats
}

// SQStats are struct virtnet_sq_stats, ethtool names tx%u_*.
type SQStats struct {
	Packets    uint64
	Bytes      uint64
	XDPTx      uint64
	XDPTxDrops uint64
	Kicks      uint64
	TxTimeouts uint64
}

// PostedDescriptors counts the descriptors of the buffers the driver has
// posted and not yet taken back: one per small or mergeable buffer,
// big_packets_num_skbfrags + 2 per big buffer.
func (rq *RQ) PostedDescriptors() int {
	per := 1
	if rq.d.bigPackets {
		per = rq.d.numSkbFrags + 2
	}
	n := 0
	for i := range rq.bufs {
		if rq.bufs[i].page != mem.NoPage {
			n += per
		}
	}
	return n
}
