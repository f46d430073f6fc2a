// Package skb holds socket buffers reduced to what decides where their
// pages go: the head, the frags, whether they are marked for page_pool
// recycling, and the CPU that allocated them; and the path that frees them
// (skb_release_data, napi_pp_put_page, put_page).
package skb

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// MaxSkbFrags is MAX_SKB_FRAGS (CONFIG_MAX_SKB_FRAGS default).
const MaxSkbFrags = 17

// ID indexes an SKB in a Pool; NoSKB is none.
type ID int32

// NoSKB is the null skb.
const NoSKB ID = -1

// Frag is skb_frag_t: a range of a page.
type Frag struct {
	Page     mem.PageID
	Off, Len uint32
}

// SKB is struct sk_buff. Head is the page holding the linear data when the
// skb was built around a buffer (build_skb); NoPage when the head is a
// small kmalloc'd copy (napi_alloc_skb of GOOD_COPY_LEN).
//
// Invariant: Frags[NrFrags:] are zero. Frags are added with AddFrag and
// grown with Coalesce only; Pool.Alloc relies on it to clear just the
// frags the previous user had.
type SKB struct {
	Head     mem.PageID
	Len      uint32 // bytes of packet
	Truesize uint32
	Frags    [MaxSkbFrags]Frag
	NrFrags  uint8
	// PPRecycle is skb->pp_recycle (skb_mark_for_recycle): pages go back
	// to their page_pool, not to the page allocator.
	PPRecycle bool
	Cloned    bool
	AllocCPU  int16 // skb->alloc_cpu: where the skb was allocated
	Queue     int16 // receive queue
	Born      sim.Time
	next      ID
}

// Pool is a preallocated array of SKBs with a free list. Alloc and Free are
// O(1) and allocate nothing.
type Pool struct {
	skbs []SKB
	free ID
	live int
	max  int
}

// NewPool returns a pool of n skbs.
func NewPool(n int) *Pool {
	p := &Pool{skbs: make([]SKB, n), max: n}
	for i := range p.skbs {
		p.skbs[i].next = ID(i + 1)
	}
	p.skbs[n-1].next = NoSKB
	return p
}

// Alloc returns a cleared skb, or NoSKB when all are in use (the caller
// counts an allocation failure, as a failed build_skb).
func (p *Pool) Alloc(cpu int, queue int, now sim.Time) ID {
	id := p.free
	if id == NoSKB {
		return NoSKB
	}
	s := &p.skbs[id]
	p.free = s.next
	// *s = SKB{Head: mem.NoPage, ...}, field by field: a composite literal
	// is built on the stack and block-copied, which stalls on the narrow
	// stores that built it. Frags past NrFrags are already zero (only
	// AddFrag writes there), so only the used ones are cleared.
	clear(s.Frags[:s.NrFrags])
	s.Head, s.Len, s.Truesize, s.NrFrags = mem.NoPage, 0, 0, 0
	s.PPRecycle, s.Cloned = false, false
	s.AllocCPU, s.Queue, s.Born, s.next = int16(cpu), int16(queue), now, NoSKB
	p.live++
	return id
}

// Get returns the skb with id.
func (p *Pool) Get(id ID) *SKB { return &p.skbs[id] }

// Live is the number of skbs in use.
func (p *Pool) Live() int { return p.live }

// Cap is the pool's size.
func (p *Pool) Cap() int { return p.max }

// release returns id to the free list.
func (p *Pool) release(id ID) {
	p.skbs[id].next = p.free
	p.free = id
	p.live--
}

// AddFrag appends a frag (skb_add_rx_frag). It reports false when the skb
// already has MaxSkbFrags.
func (s *SKB) AddFrag(page mem.PageID, off, n, truesize uint32) bool {
	if s.NrFrags == MaxSkbFrags {
		return false
	}
	s.Frags[s.NrFrags] = Frag{Page: page, Off: off, Len: n}
	s.NrFrags++
	s.Len += n
	s.Truesize += truesize
	return true
}

// CanCoalesce is skb_can_coalesce: the new data continues the last frag in
// the same page. A cloned skb's frags are shared and cannot grow.
func (s *SKB) CanCoalesce(page mem.PageID, off uint32) bool {
	if s.Cloned || s.NrFrags == 0 {
		return false
	}
	f := &s.Frags[s.NrFrags-1]
	return f.Page == page && f.Off+f.Len == off
}

// Coalesce grows the last frag by n (skb_coalesce_rx_frag).
func (s *SKB) Coalesce(n, truesize uint32) {
	s.Frags[s.NrFrags-1].Len += n
	s.Len += n
	s.Truesize += truesize
}

// Context says where a page is being released from: the CPU, and whether
// in softirq (NET_RX, or a kthread with BH disabled) or process context.
// Whether a page_pool put may then ask if it runs where the pool's NAPI is
// scheduled depends on the kernel and on who puts (engine.World.Release).
type Context struct {
	Softirq bool
	// Direct is the caller's allow_direct: it knows it runs in the pool's
	// NAPI poll (XDP_DROP, xdp_return_frame_rx_napi).
	Direct bool
	// NAPISafe is skb_release_data's napi_safe (6.5 to 6.9): the skb is
	// freed by napi_consume_skb with a non-zero budget (as
	// skb_defer_free_flush does) or __napi_kfree_skb, callers that know
	// they run in a NAPI poll. kfree_skb and consume_skb pass false.
	NAPISafe bool
	// Frame: the page comes back with an xdp_frame (xdp_return_frame,
	// xdp_return_frame_bulk), not with an skb.
	Frame bool
}

// Releaser gives back one reference a buffer held on a page: to its
// page_pool when the page is a pool page and the holder marked it for
// recycling, else put_page. The world implements it: it knows the pools.
type Releaser interface {
	Release(c *sim.CPU, page mem.PageID, ppRecycle bool, ctx Context) error
}

// Free is kfree_skb / napi_consume_skb: skb_release_data gives back the
// head and every frag, then the skb returns to the pool.
func (p *Pool) Free(c *sim.CPU, id ID, r Releaser, ctx Context) error {
	s := &p.skbs[id]
	if s.Head != mem.NoPage {
		if err := r.Release(c, s.Head, s.PPRecycle, ctx); err != nil {
			return fmt.Errorf("skb %d head: %w", id, err)
		}
	}
	for i := 0; i < int(s.NrFrags); i++ {
		if err := r.Release(c, s.Frags[i].Page, s.PPRecycle, ctx); err != nil {
			return fmt.Errorf("skb %d frag %d: %w", id, i, err)
		}
	}
	p.release(id)
	return nil
}

// Pages calls f for every page reference the skb holds.
func (s *SKB) Pages(f func(mem.PageID)) {
	if s.Head != mem.NoPage {
		f(s.Head)
	}
	for i := 0; i < int(s.NrFrags); i++ {
		f(s.Frags[i].Page)
	}
}
