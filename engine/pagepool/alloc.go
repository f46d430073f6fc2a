package pagepool

import (
	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// Alloc is page_pool_alloc_pages (page_pool_dev_alloc_pages): a page from
// the alloc cache (fast), else from the ptr_ring through a refill of the
// cache, else from the page allocator (slow). The page is handed to the
// caller in mem.Driver. mem.ErrNoMemory means the page allocator had
// nothing; ErrDestroyed that the pool was destroyed. The caller must be
// the pool's NAPI context (the kernel's rule; the engine does not check).
func (p *Pool) Alloc(c *sim.CPU) (mem.PageID, error) {
	if p.state != Active {
		return mem.NoPage, ErrDestroyed
	}
	var id mem.PageID
	if p.count > 0 {
		// getCached's fast path, without the calls.
		p.alloc.Fast++
		id = p.popCache(c)
	} else {
		id = p.allocNetmems(c)
	}
	if id == mem.NoPage {
		return mem.NoPage, mem.ErrNoMemory
	}
	if err := p.m.Move(id, mem.Driver, c.ID); err != nil { // p.move without the call
		p.broken(err)
	}
	return id, nil
}

// allocNetmems is page_pool_alloc_netmems.
func (p *Pool) allocNetmems(c *sim.CPU) mem.PageID {
	if id := p.getCached(c); id != mem.NoPage {
		return id
	}
	return p.allocSlow(c)
}

// getCached is __page_pool_get_cached: pop the alloc cache, or refill it.
func (p *Pool) getCached(c *sim.CPU) mem.PageID {
	if p.count > 0 {
		p.alloc.Fast++
		return p.popCache(c)
	}
	return p.refillAllocCache(c)
}

func (p *Pool) popCache(c *sim.CPU) mem.PageID {
	c.Charge(sim.SymPagePoolAlloc, c.Costs().PPCacheAlloc)
	p.count--
	id := p.cache[p.count]
	p.cache[p.count] = mem.NoPage
	return id
}

// refillAllocCache is page_pool_refill_alloc_cache: move up to
// AllocCacheRefill pages from the ptr_ring into the cache and pop one. A
// page from another NUMA node is released instead and ends the refill
// (waive). Only the pool's NAPI consumes the ring: since 5.17 it does so
// without the consumer lock (__ptr_ring_consume); before, the refill ran
// under consumer_lock (LockedRefill), one acquisition per refill.
func (p *Pool) refillAllocCache(c *sim.CPU) mem.PageID {
	if p.ring.Empty() {
		p.alloc.Empty++
		return mem.NoPage
	}
	pref := p.p.NID
	if pref == NoNode {
		pref = p.m.CPUNode(c.ID)
	}
	get := c.Costs().PPRingGet
	if p.lockedRefill {
		// The section covers the pages this refill takes: at most a
		// refill's worth, at most what the ring holds.
		n := min(p.ring.Len(), AllocCacheRefill-p.count)
		p.ring.ConsumerLock.Hold(c, sim.SymPagePoolRefill, sim.Duration(n)*get)
		get = 0
	}
	for {
		v := p.ring.Consume(c)
		if v == 0 {
			break
		}
		c.Charge(sim.SymPagePoolRefill, get)
		id := mem.PageID(v - 1)
		if p.m.Page(id).NID() != pref {
			p.returnPage(c, id)
			p.alloc.Waive++
			break
		}
		p.cache[p.count] = id
		p.count++
		p.move(id, mem.PoolCache, int(p.id))
		if p.count >= AllocCacheRefill {
			break
		}
	}
	if p.count > 0 {
		p.alloc.Refill++
		return p.popCache(c)
	}
	return mem.NoPage
}

// allocSlow is __page_pool_alloc_netmems_slow: order 0 bulk-allocates
// AllocCacheRefill pages into the cache (DMA-mapping each with DMAMap) and
// pops one; a higher order allocates a single page
// (__page_pool_alloc_page_order). Every page taken counts in hold_cnt.
func (p *Pool) allocSlow(c *sim.CPU) mem.PageID {
	if p.p.Order > 0 {
		id, err := p.m.AllocPages(c, p.p.Order, mem.Driver, c.ID)
		if err != nil {
			return mem.NoPage
		}
		if p.dmaMap && !p.dmaMapPage(c, id) {
			p.putPage(c, id)
			return mem.NoPage
		}
		p.alloc.SlowHighOrder++
		p.setPPInfo(id)
		p.hold++
		return id
	}
	if p.count > 0 {
		return p.popCache(c)
	}
	n, _ := p.m.AllocPagesBulk(c, p.bulk[:], mem.PoolCache, int(p.id))
	if n == 0 {
		return mem.NoPage
	}
	for _, id := range p.bulk[:n] {
		if p.dmaMap && !p.dmaMapPage(c, id) {
			p.putPage(c, id)
			continue
		}
		p.setPPInfo(id)
		p.cache[p.count] = id
		p.count++
		p.hold++
	}
	if p.count > 0 {
		p.alloc.Slow++
		return p.popCache(c)
	}
	return mem.NoPage
}

// setPPInfo is page_pool_set_pp_info: mark the page as the pool's, with one
// pp reference (page_pool_fragment_netmem(netmem, 1)).
func (p *Pool) setPPInfo(id mem.PageID) {
	pg := p.m.Page(id)
	pg.PP = p.id
	pg.PPMagic = Signature
	pg.PPRef = 1
}

// putPage drops the page allocator's reference on a page that is not the
// pool's (anymore); it is a broken invariant if that fails.
func (p *Pool) putPage(c *sim.CPU, id mem.PageID) {
	if _, err := p.m.PutPage(c, id); err != nil {
		panic("pagepool: " + err.Error())
	}
}
