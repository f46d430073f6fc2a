// Package virtionet is the guest driver of a virtio network device,
// following drivers/net/virtio_net.c: receive queues filled with small, big
// or mergeable buffers from page_frag, the page allocator or a page_pool;
// NAPI polling with a budget and refill; XDP with every verdict; an XDP
// send queue per queue pair; the per-queue counters with their ethtool
// names. Refill runs in NAPI, and before 6.19 falls back to refill_work
// in process context.
//
// A driver is built (New) from a Config, which ConfigOf decodes from the
// scenario once with its kernel's dated behaviours, and an Env of the
// world's parts, so the package's tests build a driver without a world.
// RQ.CheckPosted is the cheap check the engine's every-event checker runs
// on each chain just posted. docs/internals.md follows a packet through
// Driver.Poll.
package virtionet

import (
	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
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

// bufferSource is Config.BufferSource decoded.
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
	Softnet  *softnet.Softnet // NET_RX, where the queues' NAPI instances poll
	Releaser skb.Releaser
	Cpumap   *xdp.Cpumap // nil without a cpumap
	Devmap   *xdp.Devmap // nil without a devmap
	Prog     *bpf.Program
	Clock    bpf.Clock
	// Traffic is the generator feeding receive queue q's host (for a
	// scenario, device.NewStreamTraffic), called once per queue by New.
	Traffic func(q int) (*device.Traffic, error)
	// Replay says the traffic replays a capture: the driver records what
	// became of each frame it takes (device.Traffic.Fate).
	Replay bool
}

// Driver is struct virtnet_info.
type Driver struct {
	env  *Env
	mode string

	mergeable  bool
	bigPackets bool
	// Config choices decoded once at New, so the per-packet paths test
	// a flag instead of comparing strings.
	source    bufferSource
	premapped bool // Driver.DMA is premapped: pool pages carry their DMA address
	// fragPremap: the driver maps each page_frag block once, with struct
	// virtnet_rq_dma at its head (virtnet_rq_alloc, 6.6+; off by default
	// in 6.11 and 6.12), in small and mergeable modes.
	fragPremap  bool
	nic         bool // Device.Kind is hardware, a NIC or a vdpa virtqueue (else vhost)
	injectedIRQ bool // interrupts reach the guest through KVM (vhost, vdpa), not from the device
	wholePage   bool // buffers own their page (see RQ.wholePage)
	numSkbFrags int  // big_packets_num_skbfrags
	indirectBig bool // big buffers go indirect: one ring slot each (INDIRECT_DESC, no ctx)
	buildBig    bool // page_to_skb builds big-mode skbs around the first page (5.13+)
	xdpEnabled  bool
	xdpFrags    bool // the program supports multi-buffer packets (Config.XDPFrags)
	stream      bool // a stream workload: buffers carry their frame's number to the socket
	tcpStream   bool // a tcp_stream, whose frames GRO merges
	replay      bool // Env.Replay: each frame's fate is recorded
	budget      int
	// skbLead is what precedes the data in a buffer build_skb wraps: the
	// headroom skb_reserve keeps, the header, and, for small buffers,
	// VIRTNET_RX_PAD (fixed when the driver is built).
	skbLead int
	// constProg: the XDP program is constant, its verdict constAct
	// (bpf.Program.ConstVerdict; fixed when the driver is built).
	constProg bool
	constAct  bpf.Action
	// mrgRoom is add_recvbuf_mergeable's room: SKB_DATA_ALIGN(headroom +
	// tailroom), the tailroom skb_shared_info's with XDP, none without
	// (fixed when the driver is built).
	mrgRoom uint32

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
	napiBase   softnet.NAPIID // the first queue's NAPI instance
	landKind   sim.Kind
	irqKind    sim.Kind
	refillKind sim.Kind // refill_work (vi->refill), before 6.19

	// refillQueued: refill_work is queued (a delayed_work is queued once:
	// schedule_delayed_work on a pending one does nothing).
	refillQueued bool
	Refill       RefillStats

	cfg Config // what New was given; the per-packet paths read the fields above
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
	Linearized   uint64 // xdp_linearize_page copies (and mergeable_xdp_get_buf's copy of a head without headroom)
	Copied       uint64 // packets copied into a small skb head (GOOD_COPY_LEN)
	Coalesced    uint64 // buffers coalesced into the previous frag
	BigBuilt     uint64 // big-mode skbs built around the first page (page_to_skb's build_skb, 5.13+)
	FragList     uint64 // skbs chained through frag_list at MAX_SKB_FRAGS (receive_mergeable)
	// Reasons counts every packet counted in Drops by why it was lost
	// (engine/drop): the sum is Drops.
	Reasons drop.Counts
}

// rxBuf is what the driver remembers of a posted buffer: the kernel keeps
// the buffer address as the virtqueue token and the truesize in ctx. It is
// 32 bytes, two to a cache line: what only some modes need of a slot is in
// RQ.bufMaps.
type rxBuf struct {
	page     mem.PageID // block head
	off      uint32     // offset of the buffer's data start in the block
	len      uint32     // bytes posted
	truesize uint32
	seq      uint64 // the frame's number (device.RX.FrameSeq), set when taken back
	next     int32  // free list
	head     uint16 // descriptor head it was posted at (where the device wrote)
	// mapped: the buffer holds a mapping of its own, kept in RQ.bufMaps at
	// its slot: the ring's (DMA ring mode) or a reference on its premapped
	// page_frag block (fragPremap).
	mapped bool
	pool   bool // from this queue's page_pool
}

// bufMap is the mapping a posted buffer holds when rxBuf.mapped: one of
// the two.
type bufMap struct {
	dma uint64 // address mapped by the ring (DMA ring mode)
	blk int32  // 1 + its block's virtnet_rq_dma slot in RQ.rqDMA (fragPremap), 0 none
}

// set makes b an unmapped buffer: *b = rxBuf{page: page, off: off, ...}
// written field by field (a composite literal goes through a stack
// temporary whose narrow stores stall the wide copy out of it).
func (b *rxBuf) set(page mem.PageID, off, length, truesize uint32, pool bool, next int32, head uint16) {
	b.page, b.off, b.len, b.truesize = page, off, length, truesize
	b.mapped, b.pool = false, pool
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
	frag  *mem.Frag      // rq->alloc_frag
	pages mem.PageID     // rq->pages: big mode's chain of spare pages

	// rqDMA holds the struct virtnet_rq_dma of every premapped page_frag
	// block still mapped (fragPremap): the kernel keeps it in the first
	// bytes of the block; here a slot, found from each buffer's blk. freeDMA
	// is the first free slot, lastDMA rq->last_dma (the current block's);
	// both -1 for none.
	rqDMA        []rqDMA
	freeDMA      int32
	lastDMA      int32
	mappedBlocks int // slots of rqDMA in use

	ewma      uint32 // mrg_avg_pkt_len (internal value, precision 0)
	minBufLen uint32

	bufs    []rxBuf
	bufMaps []bufMap // by slot, beside bufs: the mapping of a mapped buffer
	freeBuf int32
	napiOn  bool // NAPI scheduled or running
	// napi is what page_pool reads of rq->napi: list_owner, this queue's
	// CPU while napiOn, else -1 (____napi_schedule, napi_complete_done).
	napi pagepool.NAPI
	// gro is the instance's GRO (napi->gro), which passes skbs up to the
	// stack.
	gro      *skb.GRO
	irqArmed bool     // an interrupt event is scheduled
	armedAt  sim.Time // for it
	xdpXmit  uint8

	xdpBuf []byte // scratch: headroom + stored window for the program
	// xdpFrags are the frags of the multi-buffer packet being received
	// (the xdp_buff's skb_shared_info), xdpNFrags of them, each with len
	// the bytes received; 0 between packets.
	xdpFrags  [skb.MaxSkbFrags]rxBuf
	xdpNFrags int
	xdpIn     bpf.Input  // scratch: the program's input (kept here so it does not escape)
	xdpRes    bpf.Result // scratch: the program's result

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

	sg    [skb.MaxSkbFrags + 1]virtq.SG // scratch: a multi-buffer frame's entries
	frags int                           // frags of the frames posted
	descs int                           // descriptors the posted frames and ACKs hold
	acks  int                           // ACKs posted and not yet reclaimed
}

// Frags is the number of frags the frames posted on the send queue carry
// (their pages are located in transmit queues, with the heads').
func (sq *SQ) Frags() int { return sq.frags }

// GRO is the queue's GRO.
func (rq *RQ) GRO() *skb.GRO { return rq.gro }

// ACKs is the number of ACKs posted on the send queue and not yet
// reclaimed.
func (sq *SQ) ACKs() int { return sq.acks }

// Descs is the number of descriptors the frames posted hold: one each, or
// one per sg entry of a multi-buffer frame without indirect descriptors.
func (sq *SQ) Descs() int { return sq.descs }

// SQStats are struct virtnet_sq_stats, ethtool names tx%u_*.
type SQStats struct {
	Packets    uint64
	Bytes      uint64
	XDPTx      uint64
	XDPTxDrops uint64
	Kicks      uint64
	TxTimeouts uint64
	// ACKs counts the pure ACKs TCP sent through the queue
	// (tcp_send_ack), ACKDrops those that found it full.
	ACKs, ACKDrops uint64
	// Reasons counts XDPTxDrops and ACKDrops by why (engine/drop).
	Reasons drop.Counts
}

// PostedDescriptors counts the descriptors of the main table that the
// buffers the driver has posted and not yet taken back hold: DescPerBuf
// per buffer (one per small or mergeable buffer, big_packets_num_skbfrags
// + 2 per big buffer, one per big buffer that went indirect).
func (rq *RQ) PostedDescriptors() int {
	per := rq.DescPerBuf()
	n := 0
	for i := range rq.bufs {
		if rq.bufs[i].page != mem.NoPage {
			n += per
		}
	}
	return n
}
