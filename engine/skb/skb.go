// Package skb holds socket buffers reduced to what decides where their
// pages go: the head, the frags, the skbs chained through frag_list,
// whether they are marked for page_pool recycling, and the CPU that
// allocated them; the path that frees them (skb_release_data,
// napi_pp_put_page, put_page); and TCP's merging of a new skb into the
// tail of a socket's receive queue (skb_try_coalesce).
//
// GRO (gro.go) is a NAPI instance's held skb, into which a TCP stream's
// in-order frames merge (napi_gro_receive). The Stack (stack.go) consumes
// what GRO passes up: in softirq, on another CPU (RPS), or on a socket
// after the protocol's receive, once per skb where NET_RX runs, read by
// an application thread per CPU, a task with recvmsg's copy and deferred
// frees. Sockets are bounded by sk_rcvbuf; TCP's receive queue merges
// skbs into its tail unless a packet socket's clones prevent it; a
// SocketObserver hears what a stream's sockets take and read.
package skb

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// MaxSkbFrags is MAX_SKB_FRAGS (CONFIG_MAX_SKB_FRAGS default).
const MaxSkbFrags = 17

// StructTruesize is SKB_DATA_ALIGN(sizeof(struct sk_buff)): 232 bytes on
// x86-64 in 6.x, rounded up to the 64-byte cache line. The kernel's
// skb->truesize counts it; SKB.Truesize leaves it out (it counts buffer
// memory), so socket memory adds it once per skb.
const StructTruesize = 256

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
// grown with Coalesce only; the pool's release relies on it to clear just
// the frags the last user had. A free skb holds no page: Head is NoPage
// and NrFrags 0.
type SKB struct {
	Head mem.PageID
	// Len is the bytes of packet: of every skb chained through FragList
	// too (the head's skb->len), while a chained skb's Len is its own.
	Len uint32
	// Truesize is the buffer memory the skb holds (skb->truesize less the
	// struct sk_buff, StructTruesize): a head skb's includes its chain.
	Truesize uint32
	NrFrags  uint8
	// PPRecycle is skb->pp_recycle (skb_mark_for_recycle): pages go back
	// to their page_pool, not to the page allocator.
	PPRecycle bool
	// Cloned is skb_cloned(): a packet socket that listens (packet_rcv)
	// holds a clone sharing the data, which may then not be changed in
	// place. The stack sets it on delivery (Stack.SetSocket).
	Cloned bool
	// Tailroom is skb_tailroom() of the linear area: what skb_put may
	// still add (0 for an skb with frags, and where the builder does not
	// say).
	Tailroom uint16
	// Segs is how many received packets the skb carries: 1, more once
	// TCP merged later packets into it on a socket (TryCoalesce).
	Segs     uint16
	AllocCPU int16 // skb->alloc_cpu: where the skb was allocated
	Queue    int16 // receive queue
	// Seq is the number of the frame the skb was built from, as its
	// sender numbered it (device.RX.FrameSeq): a stream's receiver
	// reports it to the sender.
	Seq uint64
	// FragList is skb_shinfo(skb)->frag_list: the first skb chained
	// behind this one when its frags ran out (receive_mergeable at
	// MAX_SKB_FRAGS), NoSKB when none. The chain continues through each
	// chained skb's next (skb->next); the chain is freed with the head.
	FragList ID
	Born     sim.Time
	// next links the free list while the skb is free, and the frag_list
	// chain (skb->next) while it is chained.
	next ID
	// Frags come last: the fields above share the skb's first cache
	// line, which is all that building and freeing an skb of one buffer
	// touch.
	Frags [MaxSkbFrags]Frag
}

// Pool is a preallocated array of SKBs with a free list. Alloc and Free are
// O(1) and allocate nothing.
type Pool struct {
	skbs    []SKB
	free    ID
	live    int
	chained int // live skbs that sit on another skb's frag_list
	max     int
	// coalescePP is the kernel's page_pool rule for TryCoalesce.
	coalescePP CoalescePP
}

// NewPool returns a pool of n skbs.
func NewPool(n int) *Pool {
	p := &Pool{skbs: make([]SKB, n), max: n, coalescePP: CoalescePPMatch}
	for i := range p.skbs {
		p.skbs[i].Head = mem.NoPage
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
	// stores that built it. A free skb has no head and no frags already
	// (release cleared them), which keeps Alloc small enough to inline.
	s.Len, s.Truesize = 0, 0
	s.PPRecycle, s.Cloned, s.Tailroom, s.Segs = false, false, 0, 1
	s.AllocCPU, s.Queue, s.Born, s.next, s.FragList = int16(cpu), int16(queue), now, NoSKB, NoSKB
	s.Seq = 0
	p.live++
	return id
}

// Get returns the skb with id.
func (p *Pool) Get(id ID) *SKB { return &p.skbs[id] }

// Live is the number of skbs in use, chained ones included.
func (p *Pool) Live() int { return p.live }

// Chained is the number of live skbs chained behind another through
// frag_list: they are freed with their head, not on their own.
func (p *Pool) Chained() int { return p.chained }

// Cap is the pool's size.
func (p *Pool) Cap() int { return p.max }

// release returns id to the free list, its pages given back: it clears
// the head and the frags the skb had (Frags past NrFrags are zero).
func (p *Pool) release(id ID) {
	s := &p.skbs[id]
	clear(s.Frags[:s.NrFrags])
	s.Head, s.NrFrags = mem.NoPage, 0
	s.next = p.free
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

// CanCoalesce is skb_can_coalesce (include/linux/skbuff.h): the new data
// continues the last frag in the same page. It has no clone test, and
// needs none where receive_mergeable calls it: the skb is new there and
// nobody else holds it (FIDELITY row 4). Where a clone does stop a merge
// is on the socket: TryCoalesce.
func (s *SKB) CanCoalesce(page mem.PageID, off uint32) bool {
	if s.NrFrags == 0 {
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

// Chain is the frag_list step of virtnet_skb_append_frag: nskb, a fresh
// skb, goes behind tail in head's chain (skb_shinfo(head)->frag_list when
// tail is the head, else tail->next). The caller adds nskb's truesize and
// the bytes it then takes to the head, as the kernel does.
func (p *Pool) Chain(head, tail, nskb ID) {
	if tail == head {
		p.skbs[head].FragList = nskb
	} else {
		p.skbs[tail].next = nskb
	}
	p.skbs[nskb].next = NoSKB
	p.chained++
}

// Free is kfree_skb / napi_consume_skb: skb_release_data gives back the
// head and every frag, frees the skbs on its frag_list the same way
// (skb_drop_fraglist), then the skb returns to the pool. id must not be a
// chained skb.
func (p *Pool) Free(c *sim.CPU, id ID, r Releaser, ctx Context) error {
	s := &p.skbs[id]
	if s.NrFrags == 0 && s.FragList == NoSKB && s.Head != mem.NoPage {
		// An skb of one buffer, its head (every skb built around a
		// buffer of one page): releaseData and the release without the
		// calls and the chain walk.
		err := r.Release(c, s.Head, s.PPRecycle, ctx)
		p.release(id)
		if err != nil {
			return headErr(id, err)
		}
		return nil
	}
	err := p.releaseData(c, id, s.PPRecycle, r, ctx)
	for n := s.FragList; n != NoSKB; {
		next := p.skbs[n].next
		if e := p.releaseData(c, n, p.skbs[n].PPRecycle, r, ctx); e != nil && err == nil {
			err = e
		}
		p.chained--
		p.release(n)
		n = next
	}
	p.release(id)
	return err
}

// releaseData gives back the page references one skb holds itself.
func (p *Pool) releaseData(c *sim.CPU, id ID, ppRecycle bool, r Releaser, ctx Context) error {
	s := &p.skbs[id]
	if s.Head != mem.NoPage {
		if err := r.Release(c, s.Head, ppRecycle, ctx); err != nil {
			return headErr(id, err)
		}
	}
	for i := 0; i < int(s.NrFrags); i++ {
		if err := r.Release(c, s.Frags[i].Page, ppRecycle, ctx); err != nil {
			return fmt.Errorf("skb %d frag %d: %w", id, i, err)
		}
	}
	return nil
}

// headErr is releaseData's error for skb id's head, out of line.
//
//go:noinline
func headErr(id ID, err error) error {
	return fmt.Errorf("skb %d head: %w", id, err)
}

// Pages calls f for every page reference the skb holds itself (its
// chain's are the chained skbs' own: Pool.Pages walks them too).
func (s *SKB) Pages(f func(mem.PageID)) {
	if s.Head != mem.NoPage {
		f(s.Head)
	}
	for i := 0; i < int(s.NrFrags); i++ {
		f(s.Frags[i].Page)
	}
}

// Pages calls f for every page reference skb id and the skbs chained
// behind it hold.
func (p *Pool) Pages(id ID, f func(mem.PageID)) {
	s := &p.skbs[id]
	s.Pages(f)
	for n := s.FragList; n != NoSKB; n = p.skbs[n].next {
		p.skbs[n].Pages(f)
	}
}

// PageRefs counts the page references every live skb holds, chained ones
// included (an O(pool) walk, for the invariant checker).
func (p *Pool) PageRefs() int64 {
	var n int64
	for i := range p.skbs {
		s := &p.skbs[i] // a free skb holds none
		if s.Head != mem.NoPage {
			n++
		}
		n += int64(s.NrFrags)
	}
	return n
}

// Coalesced is how TryCoalesce merged an skb, or did not.
type Coalesced uint8

// The outcomes of TryCoalesce.
const (
	NotCoalesced Coalesced = iota
	// CoalescedCopy: the data was copied into the tail skb's linear room
	// (skb_copy_bits into skb_put) and the new skb freed whole.
	CoalescedCopy
	// CoalescedFrags: the new skb's frags, and its head when that is a
	// page fragment, were moved into the tail skb (the head "stolen") and
	// the emptied sk_buff freed (kfree_skb_partial).
	CoalescedFrags
)

// CoalescePP is skb_try_coalesce's rule for page_pool skbs
// (skb->pp_recycle), which the kernel changed four times; read at 5.12,
// 5.15, 5.17-rc5, 5.19, 6.2, 6.3, 6.4 and 6.8.
type CoalescePP uint8

// The rules, oldest first.
const (
	// CoalescePPAny: before 5.14 there is no pp_recycle to compare.
	CoalescePPAny CoalescePP = iota
	// CoalescePPMatch: to->pp_recycle != from->pp_recycle refuses
	// (6a5bcd84e886, 5.14). From 6.8 the rule again, a cloned page_pool
	// from's frags taking page_pool references (skb_pp_frag_ref,
	// f7dc3248dcfb).
	CoalescePPMatch
	// CoalescePPClonedToPlain: to->pp_recycle != (from->pp_recycle &&
	// !skb_cloned(from)) refuses: a cloned page_pool skb may go into a
	// plain one (its frags then counted by page references), not into a
	// page_pool one (1effe8ca4e34, 5.18).
	CoalescePPClonedToPlain
	// CoalescePPNoClone: a cloned page_pool skb is never coalesced
	// (to->pp_recycle != from->pp_recycle || (from->pp_recycle &&
	// skb_cloned(from)), 0646dc31ca88, 6.3, until 6.8).
	CoalescePPNoClone
)

// SetCoalescePP sets the kernel's page_pool rule for TryCoalesce; a new
// pool has CoalescePPMatch.
func (p *Pool) SetCoalescePP(r CoalescePP) { p.coalescePP = r }

// ppRefuses is skb_try_coalesce's page_pool test under p's rule.
func (p *Pool) ppRefuses(t, f *SKB) bool {
	switch p.coalescePP {
	case CoalescePPAny:
		return false
	case CoalescePPClonedToPlain:
		return t.PPRecycle != (f.PPRecycle && !f.Cloned)
	case CoalescePPNoClone:
		return t.PPRecycle != f.PPRecycle || (f.PPRecycle && f.Cloned)
	}
	return t.PPRecycle != f.PPRecycle
}

// TryCoalesce is skb_try_coalesce(to, from) as tcp_try_coalesce calls it
// when tcp_queue_rcv queues in-order data behind the tail skb of a
// socket's receive queue (net/core/skbuff.c, net/ipv4/tcp_input.c, 6.x):
//
//   - never into a cloned tail (skb_cloned(to)), nor where the kernel's
//     page_pool rule refuses (CoalescePP: from 5.14, never between a
//     page_pool skb and another);
//   - data that fits the tail's linear room is copied there, the new skb
//     freed (delta truesize 0);
//   - otherwise, neither may have a frag_list; a head that is a page
//     fragment (built around a buffer) is stolen as one more frag unless
//     the new skb is cloned (skb_head_is_locked), as long as the frags
//     then stay below MAX_SKB_FRAGS; a small kmalloc'd head holds only
//     the headers the stack pulled (skb_headlen 0 by then) and is freed,
//     its frags moved as long as they fit in MAX_SKB_FRAGS. The tail's
//     truesize grows by the new skb's, less the struct sk_buff.
//
// A small copied packet with no frags has payload in a kmalloc'd head and
// cannot be stolen: only the copy takes it. The engine compares frame
// bytes with Tailroom (the kernel compares payload after the headers are
// pulled). The caller charges the cost. from is consumed unless the
// result is NotCoalesced; its frees run in ctx.
//
// The engine's clone is a packet socket's that it keeps (Stack.SetSocket
// clones every skb), so a cloned from always meets a cloned tail and the
// rules on a cloned page_pool from never decide in a world; the engine
// moves a cloned from's frags with the references it holds, where the
// kernel takes more (get_page, or page_pool references from 6.8) for the
// clone that keeps them.
func (p *Pool) TryCoalesce(c *sim.CPU, to, from ID, r Releaser, ctx Context) (Coalesced, error) {
	t, f := &p.skbs[to], &p.skbs[from]
	if t.Cloned || p.ppRefuses(t, f) {
		return NotCoalesced, nil
	}
	if t.NrFrags == 0 && t.FragList == NoSKB && f.Len <= uint32(t.Tailroom) {
		t.Len += f.Len
		t.Tailroom -= uint16(f.Len)
		t.Segs += f.Segs
		return CoalescedCopy, p.Free(c, from, r, ctx)
	}
	if t.FragList != NoSKB || f.FragList != NoSKB {
		return NotCoalesced, nil
	}
	n := int(t.NrFrags) + int(f.NrFrags)
	switch {
	case f.Head != mem.NoPage:
		if f.Cloned || n >= MaxSkbFrags {
			return NotCoalesced, nil
		}
		headlen := f.Len
		for i := 0; i < int(f.NrFrags); i++ {
			headlen -= f.Frags[i].Len
		}
		// skb_fill_page_desc(to, ..., head page, offset, headlen): the
		// engine does not keep the data's offset in the head page.
		t.Frags[t.NrFrags] = Frag{Page: f.Head, Len: headlen}
		t.NrFrags++
		f.Head = mem.NoPage
	case f.NrFrags == 0 || n > MaxSkbFrags:
		return NotCoalesced, nil
	}
	t.takeFrags(f)
	return CoalescedFrags, p.Free(c, from, r, ctx)
}

// takeFrags moves f's frags behind t's, and its length, truesize and
// packets into t's: what skb_try_coalesce and skb_gro_receive do once
// each has decided the frags fit (and made f's head one of them when it
// steals it). f is left with no page.
func (t *SKB) takeFrags(f *SKB) {
	copy(t.Frags[t.NrFrags:], f.Frags[:f.NrFrags])
	t.NrFrags += f.NrFrags
	clear(f.Frags[:f.NrFrags])
	f.NrFrags = 0
	t.Len += f.Len
	t.Truesize += f.Truesize
	t.Segs += f.Segs
	t.Tailroom = 0
}
