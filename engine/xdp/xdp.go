// Package xdp is what happens to a packet after an XDP program: xdp_frame
// and its return to the memory model it came from, the cpumap that hands
// frames to a kthread on another CPU, and the devmap that sends them out of
// another device (include/net/xdp.h, net/core/xdp.c, kernel/bpf/cpumap.c,
// kernel/bpf/devmap.c).
//
// An xdp_frame carries a multi-buffer frame's frags. The cpumap keeps a
// bulk queue per pair of CPUs and a ptr_ring per target, drained by its
// kthread into skbs, which recycle to their page_pool from 6.4
// (skb_mark_for_recycle); the devmap keeps a bulk queue per CPU and the
// next device's transmit ring with its TX completion.
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

// Frame is struct xdp_frame, which lives in the buffer's headroom. A
// multi-buffer frame (XDP_FLAGS_HAS_FRAGS) also has the skb_shared_info in
// the head buffer's tailroom, whose frags are the packet's other buffers:
// they travel with the frame and go back with it (xdp_return_frame) or
// become the skb's frags (__xdp_build_skb_from_frame).
//
// It is 32 bytes, two to a cache line: the sender's frame number, which
// only stream workloads have, is kept beside the frames (FramePool.Seq).
type Frame struct {
	Page     mem.PageID
	Off      uint32 // offset of data_hard_start in the page block
	Len      uint32 // bytes in the head buffer
	FrameSz  uint32
	Headroom uint16 // XDP_PACKET_HEADROOM or less
	Queue    int16  // receive queue it came from (xdp_rxq_info)
	RxCPU    int16  // CPU that received it
	Mem      MemType
	NrFrags  uint8 // skb_shared_info nr_frags; 0: a single buffer
	shinfo   int32 // index of its shared info in the pool, when NrFrags > 0
	next     FrameID
}

// Set fills every field but the pool's free-list link, for a frame
// without frags: *f = Frame{...} written field by field (a composite
// literal goes through a stack temporary whose narrow stores stall the
// wide copy out of it).
func (f *Frame) Set(page mem.PageID, off, n, headroom, frameSz uint32, mt MemType, queue, rxCPU int16) {
	f.Page, f.Off, f.Len, f.Headroom, f.FrameSz = page, off, n, uint16(headroom), frameSz
	f.Mem, f.Queue, f.RxCPU, f.NrFrags, f.next = mt, queue, rxCPU, 0, 0
}

// shinfo is the part of a multi-buffer frame's skb_shared_info the engine
// keeps: its frags (MAX_SKB_FRAGS at most).
type shinfo struct {
	frags [skb.MaxSkbFrags]skb.Frag
	next  int32 // free list
}

// FramePool preallocates frames. The kernel stores the frame in the
// buffer's headroom, so it never runs out while buffers exist; the pool is
// sized so that it does not either. Shared infos for multi-buffer frames
// come from a second array, empty unless ReserveFrags sized it.
type FramePool struct {
	frames []Frame
	free   FrameID
	live   int

	shinfos    []shinfo
	freeShinfo int32 // -1: none left
	liveFrags  int   // frags held by live frames

	seqs []uint64 // by frame: its sender's frame number, when TrackSeqs
}

// TrackSeqs has the pool keep each frame's number from its sender (SetSeq,
// Seq): the world calls it once for a stream workload, whose receiver
// reports the numbers. Without it every frame's number is 0.
func (p *FramePool) TrackSeqs() { p.seqs = make([]uint64, len(p.frames)) }

// SetSeq sets frame id's number from its sender (skb.SKB.Seq); it does
// nothing unless TrackSeqs.
func (p *FramePool) SetSeq(id FrameID, seq uint64) {
	if p.seqs != nil {
		p.seqs[id] = seq
	}
}

// Seq is frame id's number from its sender, as SetSeq left it; 0 unless
// TrackSeqs.
func (p *FramePool) Seq(id FrameID) uint64 {
	if p.seqs == nil {
		return 0
	}
	return p.seqs[id]
}

// NewFramePool returns a pool of n frames.
func NewFramePool(n int) *FramePool {
	p := &FramePool{frames: make([]Frame, n)}
	for i := range p.frames {
		p.frames[i].next = FrameID(i + 1)
	}
	p.frames[n-1].next = NoFrame
	p.freeShinfo = -1
	return p
}

// ReserveFrags gives the pool n shared infos, so that up to n live frames
// can carry frags: the world calls it once, with the most frames that can
// be in flight at once, when the program supports multi-buffer packets.
func (p *FramePool) ReserveFrags(n int) {
	p.shinfos = make([]shinfo, n)
	for i := range p.shinfos {
		p.shinfos[i].next = int32(i + 1)
	}
	if n > 0 {
		p.shinfos[n-1].next = -1
		p.freeShinfo = 0
	}
}

// AddFrag appends a frag to frame id (skb_frag_fill_page_desc on the
// frame's shared info, as virtnet_build_xdp_buff_mrg fills the xdp_buff's
// before xdp_convert_buff_to_frame). It reports false when the frame has
// MAX_SKB_FRAGS already or no shared info is left; the caller drops the
// packet.
func (p *FramePool) AddFrag(id FrameID, page mem.PageID, off, n uint32) bool {
	f := &p.frames[id]
	if f.NrFrags == 0 {
		s := p.freeShinfo
		if s < 0 {
			return false
		}
		p.freeShinfo = p.shinfos[s].next
		f.shinfo = s
	} else if int(f.NrFrags) == skb.MaxSkbFrags {
		return false
	}
	p.shinfos[f.shinfo].frags[f.NrFrags] = skb.Frag{Page: page, Off: off, Len: n}
	f.NrFrags++
	p.liveFrags++
	return true
}

// Frags returns frame id's frags (nil for a single buffer). The slice is
// the pool's: valid until the frame is returned or turned into an skb.
func (p *FramePool) Frags(id FrameID) []skb.Frag {
	f := &p.frames[id]
	if f.NrFrags == 0 {
		return nil
	}
	return p.shinfos[f.shinfo].frags[:f.NrFrags]
}

// Free gives frame id back without its pages: for a frame the caller
// could not finish building (the caller still holds the pages).
func (p *FramePool) Free(id FrameID) {
	p.dropFrags(&p.frames[id])
	p.put(id)
}

// LiveFrags is the number of frags live frames hold.
func (p *FramePool) LiveFrags() int { return p.liveFrags }

// dropFrags gives frame id's shared info back.
func (p *FramePool) dropFrags(f *Frame) {
	if f.NrFrags == 0 {
		return
	}
	p.liveFrags -= int(f.NrFrags)
	p.shinfos[f.shinfo].next = p.freeShinfo
	p.freeShinfo = f.shinfo
	f.NrFrags = 0
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
// (direct true: only from the NAPI poll of the frame's own queue): each
// frag's page, then the head's, goes back to its page_pool, or is put with
// put_page.
func (p *FramePool) Return(c *sim.CPU, id FrameID, r skb.Releaser, ctx skb.Context) error {
	f := &p.frames[id]
	ctx.Frame = true
	pool := f.Mem == MemPagePool
	var err error
	if f.NrFrags > 0 {
		for _, fr := range p.shinfos[f.shinfo].frags[:f.NrFrags] {
			if e := r.Release(c, fr.Page, pool, ctx); e != nil && err == nil {
				err = e
			}
		}
		p.dropFrags(f)
	}
	if e := r.Release(c, f.Page, pool, ctx); e != nil && err == nil {
		err = e
	}
	p.put(id)
	return err
}

// PoolReleaser takes a page out of its page_pool while someone still holds
// it (page_pool_release_page); the world implements it.
type PoolReleaser interface {
	ReleasePoolPage(c *sim.CPU, page mem.PageID) error
}

// ToSKB builds an skb around a frame (__xdp_build_skb_from_frame): the skb
// head is the frame's page and its frags are the frame's, each of
// FrameSz truesize (xdp_update_skb_shared_info). A page_pool frame's skb
// is marked for recycling (skb_mark_for_recycle, 6.4+); with release set
// (until 6.3) its pages are instead taken out of their pool
// (xdp_release_frame: page_pool_release_page on each) and go to the page
// allocator when the skb is freed. The frame is consumed; on an error (a
// page rel refuses) the skb is built all the same.
func (p *FramePool) ToSKB(id FrameID, skbs *skb.Pool, c *sim.CPU, release bool, rel PoolReleaser) (skb.ID, error) {
	f := &p.frames[id]
	s := skbs.Alloc(c.ID, int(f.Queue), c.Now())
	if s == skb.NoSKB {
		return skb.NoSKB, nil
	}
	b := skbs.Get(s)
	b.Head = f.Page
	b.Len = f.Len
	b.Seq = p.Seq(id)
	b.Truesize = f.FrameSz
	pool := f.Mem == MemPagePool
	b.PPRecycle = pool && !release
	var err error
	if f.NrFrags > 0 {
		for _, fr := range p.shinfos[f.shinfo].frags[:f.NrFrags] {
			b.AddFrag(fr.Page, fr.Off, fr.Len, f.FrameSz)
		}
	}
	if pool && release {
		err = rel.ReleasePoolPage(c, b.Head)
		for i := 0; i < int(b.NrFrags); i++ {
			if e := rel.ReleasePoolPage(c, b.Frags[i].Page); e != nil && err == nil {
				err = e
			}
		}
	}
	p.dropFrags(f)
	p.put(id)
	return s, err
}
