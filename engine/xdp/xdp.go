// Package xdp is what happens to a packet after an XDP program: xdp_frame
// and its return to the memory model it came from, the cpumap that hands
// frames to a kthread on another CPU, and the devmap that sends them out of
// another device (include/net/xdp.h, net/core/xdp.c, kernel/bpf/cpumap.c,
// kernel/bpf/devmap.c).
package xdp

import (
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
)

// Constants from the kernel.
const (
	PacketHeadroom = 256 // XDP_PACKET_HEADROOM
	CPUMapBulkSize = 8   // CPU_MAP_BULK_SIZE: frames per per-CPU bulk queue
	CPUMapBatch    = 8   // CPUMAP_BATCH: frames the kthread takes at once
	DevMapBulkSize = 16  // DEV_MAP_BULK_SIZE (XDP_BULK_QUEUE_SIZE)
	ReturnBulkSize = 16  // XDP_BULK_QUEUE_SIZE for xdp_return_frame_bulk
	DefaultQsize   = 2048
)

// MemType is enum xdp_mem_type: it decides where a returned frame's page
// goes.
type MemType uint8

// Memory types.
const (
	MemPageShared  MemType = iota // MEM_TYPE_PAGE_SHARED: page_frag_free / put_page
	MemPageOrder0                 // MEM_TYPE_PAGE_ORDER0: put_page
	MemPagePool                   // MEM_TYPE_PAGE_POOL: back to the rxq's page_pool
	MemXSKBuffPool                // MEM_TYPE_XSK_BUFF_POOL (not modelled)
)

func (m MemType) String() string {
	switch m {
	case MemPageShared:
		return "PAGE_SHARED"
	case MemPageOrder0:
		return "PAGE_ORDER0"
	case MemPagePool:
		return "PAGE_POOL"
	}
	return "XSK_BUFF_POOL"
}

// FrameID indexes a Frame in a FramePool.
type FrameID int32

// NoFrame is none.
const NoFrame FrameID = -1

// Frame is struct xdp_frame, which lives in the buffer's headroom.
type Frame struct {
	Page     mem.PageID
	Off      uint32 // offset of data_hard_start in the page block
	Len      uint32
	Headroom uint32
	FrameSz  uint32
	Mem      MemType
	Queue    int16 // receive queue it came from (xdp_rxq_info)
	RxCPU    int16 // CPU that received it
	next     FrameID
}

// Set fills every field but the pool's free-list link: *f = Frame{...}
// written field by field (a composite literal goes through a stack
// temporary whose narrow stores stall the wide copy out of it).
func (f *Frame) Set(page mem.PageID, off, n, headroom, frameSz uint32, mt MemType, queue, rxCPU int16) {
	f.Page, f.Off, f.Len, f.Headroom, f.FrameSz = page, off, n, headroom, frameSz
	f.Mem, f.Queue, f.RxCPU, f.next = mt, queue, rxCPU, 0
}

// FramePool preallocates frames. The kernel stores the frame in the
// buffer's headroom, so it never runs out while buffers exist; the pool is
// sized so that it does not either.
type FramePool struct {
	frames []Frame
	free   FrameID
	live   int
}

// NewFramePool returns a pool of n frames.
func NewFramePool(n int) *FramePool {
	p := &FramePool{frames: make([]Frame, n)}
	for i := range p.frames {
		p.frames[i].next = FrameID(i + 1)
	}
	p.frames[n-1].next = NoFrame
	return p
}

// Alloc returns a frame, or NoFrame when none is left.
func (p *FramePool) Alloc() FrameID {
	id := p.free
	if id == NoFrame {
		return NoFrame
	}
	p.free = p.frames[id].next
	p.live++
	return id
}

// Get returns frame id.
func (p *FramePool) Get(id FrameID) *Frame { return &p.frames[id] }

// Live is the number of frames in use.
func (p *FramePool) Live() int { return p.live }

func (p *FramePool) put(id FrameID) {
	p.frames[id].next = p.free
	p.free = id
	p.live--
}

// Return is xdp_return_frame (direct false) and xdp_return_frame_rx_napi
// (direct true: only from the NAPI poll of the frame's own queue): the
// page goes back to its page_pool, or is put with put_page.
func (p *FramePool) Return(c *sim.CPU, id FrameID, r skb.Releaser, ctx skb.Context) error {
	f := &p.frames[id]
	err := r.Release(c, f.Page, f.Mem == MemPagePool, ctx)
	p.put(id)
	return err
}

// ToSKB builds an skb around a frame (__xdp_build_skb_from_frame): the skb
// head is the frame's page, marked for recycling when it came from a
// page_pool. The frame is consumed.
func (p *FramePool) ToSKB(id FrameID, skbs *skb.Pool, cpu int, now sim.Time) skb.ID {
	f := &p.frames[id]
	s := skbs.Alloc(cpu, int(f.Queue), now)
	if s == skb.NoSKB {
		return skb.NoSKB
	}
	b := skbs.Get(s)
	b.Head = f.Page
	b.Len = f.Len
	b.Truesize = f.FrameSz
	b.PPRecycle = f.Mem == MemPagePool
	p.put(id)
	return s
}
