package pagepool

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// Put is page_pool_put_page(pool, page, dma_sync_size, allow_direct): drop
// one pp reference on id (a page or a fragment of one); the put that drops
// the last one recycles the page. A page someone else still holds a
// reference on (refcount != 1) is released to the page allocator
// (released_refcnt). Otherwise it is synced for the device
// (min(dmaSyncSize, MaxLen) with DMASyncDev) and pushed into the alloc
// cache when direct recycling is allowed — the caller says so, or ctx is
// Softirq and the CPU is pool->cpuid or has the pool's NAPI on its poll
// list (page_pool_napi_local) — and the cache has room; else into the
// ptr_ring, and when that is full, released (ring_full). A caller whose
// kernel does not ask page_pool_napi_local for this put passes Process.
//
// An error means the caller broke the rules: the page is not in flight
// from this pool, or the pool has been freed.
func (p *Pool) Put(c *sim.CPU, id mem.PageID, dmaSyncSize uint32, allowDirect bool, ctx Context) error {
	pg := p.m.Page(id)
	if !p.owns(c, id, pg) { // own, without the call
		return p.ownErr(c, id)
	}
	pg.Touch(c, sim.SymPagePoolPutUnrefed) // own checked that id is a head: Mem.Touch without the lookup
	// unref(pg, 1) of the only reference is a read that leaves it at 1.
	if pg.PPRef != 1 && p.unref(c, pg, 1) != 0 {
		return nil
	}
	if !allowDirect {
		allowDirect = p.napiLocal(c, ctx)
	}
	// The common case of putUnrefed, written out (it is every XDP_DROP):
	// an active pool, a page nobody else holds, direct recycling allowed
	// and room in the alloc cache. putPageState and recycleInCache in the
	// same order, without their calls.
	if allowDirect && p.state == Active && pg.RefCount() == 1 && p.count < AllocCacheSize {
		if p.dmaSync { // syncForDevice without the call and the lookup
			_ = p.p.DMA.SyncForDevice(c, pg.DMAAddr+uint64(p.p.Offset), min(dmaSyncSize, p.p.MaxLen))
		}
		c.Charge(sim.SymPagePoolRecycleCache, c.Costs().PPCachePut)
		p.cache[p.count] = id
		p.count++
		if err := p.m.Move(id, mem.PoolCache, int(p.id)); err != nil { // p.move without the call
			p.broken(err)
		}
		p.recycle.Cached++
		return nil
	}
	if !allowDirect && p.state == Active && pg.RefCount() == 1 {
		// The other common case, written out likewise (every page an
		// skb freed away from the pool's NAPI gives back, as a cpumap
		// kthread's): no direct recycling, so into the ptr_ring.
		// putPageState, recycleInRing and putUnrefed's ring_full in
		// the same order, without their calls.
		if p.dmaSync { // syncForDevice without the call and the lookup
			_ = p.p.DMA.SyncForDevice(c, pg.DMAAddr+uint64(p.p.Offset), min(dmaSyncSize, p.p.MaxLen))
		}
		ok := p.ring.Produce(c, int32(id)+1)
		p.ring.ProducerLock.Hold(c, sim.SymPagePoolRecycleRing, c.Costs().PPRingPut)
		if ok {
			if err := p.m.Move(id, mem.PoolRing, int(p.id)); err != nil { // p.move without the call
				p.broken(err)
			}
			p.recycle.Ring++
			return nil
		}
		p.recycle.RingFull++
		p.returnPage(c, id)
		return nil
	}
	p.putUnrefed(c, id, dmaSyncSize, allowDirect, ctx)
	return nil
}

// RecycleDirect is page_pool_recycle_direct, as XDP_DROP uses it from the
// pool's NAPI: a full-length put that may go into the alloc cache.
func (p *Pool) RecycleDirect(c *sim.CPU, id mem.PageID) error {
	return p.Put(c, id, SyncFull, true, Softirq)
}

// own validates a page handed back to the pool.
func (p *Pool) own(c *sim.CPU, id mem.PageID) (*mem.Page, error) {
	if pg := p.m.Page(id); p.owns(c, id, pg) {
		return pg, nil
	}
	return nil, p.ownErr(c, id)
}

// owns is every condition ownChecked checks, at once (ownErr says which
// failed). It is small enough to be inlined into Put.
func (p *Pool) owns(c *sim.CPU, id mem.PageID, pg *mem.Page) bool {
	return p.state != Freed && c != nil && uint(c.ID) < uint(p.m.Sim().NumCPU()) &&
		pg != nil && pg.IsHead() && pg.PP == p.id && pg.PPMagic == Signature && pg.PPRef > 0 &&
		(id != p.fragPage || pg.PPRef > BiasMax-p.fragUsers) &&
		pg.Loc()-mem.PoolCache > mem.PoolRing-mem.PoolCache // neither in the cache nor in the ring
}

// owns tests "in the cache or the ring" as one range: they must stay
// neighbours in mem.Loc (this fails to compile otherwise).
var _ = [1]struct{}{}[mem.PoolRing-mem.PoolCache-1]

// ownErr is own's error: the first rule the put breaks.
func (p *Pool) ownErr(c *sim.CPU, id mem.PageID) error {
	_, err := p.ownChecked(c, id)
	if err == nil {
		panic(fmt.Sprintf("pagepool %d: put of page %d: own and ownChecked disagree", p.id, id))
	}
	return err
}

// ownChecked validates a page handed back to the pool, one rule at a time.
func (p *Pool) ownChecked(c *sim.CPU, id mem.PageID) (*mem.Page, error) {
	if p.state == Freed {
		return nil, ErrDestroyed
	}
	if c == nil || c.ID < 0 || c.ID >= p.m.Sim().NumCPU() {
		return nil, fmt.Errorf("pagepool: put on a CPU that is not of this simulation")
	}
	pg := p.m.Page(id)
	if pg == nil || !pg.IsHead() || pg.PP != p.id || pg.PPMagic != Signature || pg.PPRef <= 0 {
		return nil, fmt.Errorf("pagepool %d: put of page %d: %w", p.id, id, ErrNotPoolPage)
	}
	if id == p.fragPage && pg.PPRef <= BiasMax-p.fragUsers {
		// The pool's own share of its fragment page: no fragment is out.
		return nil, fmt.Errorf("pagepool %d: put of fragment page %d with no fragment out: %w", p.id, id, ErrNotPoolPage)
	}
	if loc := pg.Loc(); loc == mem.PoolCache || loc == mem.PoolRing { // a head: Mem.Loc(id)
		return nil, fmt.Errorf("pagepool %d: put of page %d already in the %v: %w", p.id, id, loc, ErrNotPoolPage)
	}
	return pg, nil
}

// unref is page_pool_unref_netmem: drop nr pp references and return how
// many are left. Dropping all of them leaves pp_ref_count at 1, ready for
// the next user; when nr is all there is, it is a read, not an atomic.
func (p *Pool) unref(c *sim.CPU, pg *mem.Page, nr int64) int64 {
	if pg.PPRef == nr {
		pg.PPRef = 1
		return 0
	}
	c.Charge(sim.SymPagePoolPutUnrefed, c.Costs().Atomic)
	pg.PPRef -= nr
	if pg.PPRef < 0 {
		p.broken("pp_ref_count went negative")
	}
	if pg.PPRef == 0 {
		pg.PPRef = 1
		return 0
	}
	return pg.PPRef
}

// putUnrefed is page_pool_put_unrefed_netmem.
func (p *Pool) putUnrefed(c *sim.CPU, id mem.PageID, dmaSyncSize uint32, allowDirect bool, ctx Context) {
	if !allowDirect {
		allowDirect = p.napiLocal(c, ctx)
	}
	if p.state != Active {
		// A driver must not recycle directly after page_pool_destroy: the
		// cache is never emptied again. Such a put goes to the ring so
		// the page is not stranded.
		allowDirect = false
	}
	id = p.putPageState(c, id, dmaSyncSize, allowDirect)
	if id != mem.NoPage && !p.recycleInRing(c, id) {
		p.recycle.RingFull++
		p.returnPage(c, id)
	}
}

// putPageState is __page_pool_put_page: it returns the page when it is a
// candidate for the ptr_ring, NoPage when it went into the cache or was
// released.
func (p *Pool) putPageState(c *sim.CPU, id mem.PageID, dmaSyncSize uint32, allowDirect bool) mem.PageID {
	if p.m.Page(id).RefCount() == 1 { // __page_pool_page_can_be_recycled
		p.syncForDevice(c, id, dmaSyncSize)
		if allowDirect && p.recycleInCache(c, id) {
			return mem.NoPage
		}
		return id
	}
	p.recycle.ReleasedRefcnt++
	p.returnPage(c, id)
	return mem.NoPage
}

// recycleInCache is page_pool_recycle_in_cache.
func (p *Pool) recycleInCache(c *sim.CPU, id mem.PageID) bool {
	if p.count == AllocCacheSize {
		p.recycle.CacheFull++
		return false
	}
	c.Charge(sim.SymPagePoolRecycleCache, c.Costs().PPCachePut)
	p.cache[p.count] = id
	p.count++
	p.move(id, mem.PoolCache, int(p.id))
	p.recycle.Cached++
	return true
}

// recycleInRing is page_pool_recycle_in_ring: produce under the producer
// lock.
func (p *Pool) recycleInRing(c *sim.CPU, id mem.PageID) bool {
	ok := p.ring.Produce(c, int32(id)+1)
	p.ring.ProducerLock.Hold(c, sim.SymPagePoolRecycleRing, c.Costs().PPRingPut)
	if ok {
		p.move(id, mem.PoolRing, int(p.id))
		p.recycle.Ring++
	}
	return ok
}

// PutBulk is page_pool_put_netmem_bulk (xdp_return_frame_bulk's flush):
// drop one pp reference on each of up to BulkMax pages, then, pool by
// pool, recycle the pages that lost their last reference, producing them
// into the pool's ring under one producer lock; ring_full is counted once
// per bulk and the pages that did not fit are released. Direct recycling
// into the cache is allowed per pool when ctx is Softirq and
// page_pool_napi_local says so (6.10, 39806b96c89a; before, a bulk put
// never recycled direct: callers pass Process).
// pages is overwritten, as the kernel overwrites its array. Every page is
// validated first: on an error nothing was done.
func (r *Registry) PutBulk(c *sim.CPU, pages []mem.PageID, ctx Context) error {
	if len(pages) > BulkMax {
		return fmt.Errorf("pagepool: bulk put of %d pages: at most %d (XDP_BULK_QUEUE_SIZE)", len(pages), BulkMax)
	}
	for i, id := range pages {
		pg := r.m.Page(id)
		if pg == nil || pg.PP < 0 {
			return fmt.Errorf("pagepool: bulk put of page %d: %w", id, ErrNotPoolPage)
		}
		pool := r.Lookup(pg.PP)
		if pool == nil {
			return fmt.Errorf("pagepool: bulk put of page %d of pool %d, not in this registry: %w", id, pg.PP, ErrNotPoolPage)
		}
		if _, err := pool.own(c, id); err != nil {
			return err
		}
		refs := int64(0)
		for _, o := range pages[:i+1] {
			if o == id {
				refs++
			}
		}
		if refs > pg.PPRef {
			return fmt.Errorf("pagepool: bulk put of page %d %d times, it has %d pp references: %w", id, refs, pg.PPRef, ErrNotPoolPage)
		}
	}
	r.putBulk(c, pages, ctx)
	return nil
}

// putBulk is the body of page_pool_put_netmem_bulk, on validated pages.
func (r *Registry) putBulk(c *sim.CPU, data []mem.PageID, ctx Context) {
	count := 0
	for _, id := range data {
		pg := r.m.Page(id)
		r.m.Touch(c, sim.SymPagePoolPutUnrefed, id)
		if r.Lookup(pg.PP).unref(c, pg, 1) == 0 {
			data[count] = id
			count++
		}
	}
	for count > 0 {
		var bulk [BulkMax]mem.PageID
		n := 0
		var pool *Pool
		allowDirect := false
		foreign := 0
		for _, id := range data[:count] {
			pp := r.Lookup(r.m.Page(id).PP)
			if pool == nil {
				pool = pp
				allowDirect = pool.napiLocal(c, ctx)
			} else if pp != pool {
				data[foreign] = id
				foreign++
				continue
			}
			if id = pool.putPageState(c, id, SyncFull, allowDirect); id != mem.NoPage {
				bulk[n] = id
				n++
			}
		}
		if n > 0 {
			pool.recycleRingBulk(c, bulk[:n])
		}
		count = foreign
	}
}

// recycleRingBulk is page_pool_recycle_ring_bulk: produce under one lock;
// what does not fit is released outside it.
func (p *Pool) recycleRingBulk(c *sim.CPU, bulk []mem.PageID) {
	i := 0
	for ; i < len(bulk); i++ {
		if !p.ring.Produce(c, int32(bulk[i])+1) {
			p.recycle.RingFull++
			break
		}
		p.move(bulk[i], mem.PoolRing, int(p.id))
	}
	p.ring.ProducerLock.Hold(c, sim.SymPagePoolRecycleRing, c.Costs().PPRingPut*sim.Duration(max(i, 1)))
	p.recycle.Ring += uint64(i)
	for ; i < len(bulk); i++ {
		p.returnPage(c, bulk[i])
	}
}
