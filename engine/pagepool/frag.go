package pagepool

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// AllocFrag is page_pool_alloc_frag (page_pool_dev_alloc_frag): size bytes
// of a page shared with other fragments, at the returned offset. A new
// fragment page starts with pp_ref_count BiasMax; each fragment is one
// user, and the pool gives back the references it did not hand out
// (BiasMax - users) when it moves to another page (page_pool_drain_frag).
// Each fragment is returned with Put; the last put recycles the page. If
// every fragment of the full page already came back, the pool reuses it
// at once (counted as a cached recycle and a fast allocation, as the
// kernel does). The first fragment of a page is handed out in mem.Driver.
//
// size is aligned to dma_get_cache_alignment(), 1 on x86-64.
func (p *Pool) AllocFrag(c *sim.CPU, size uint32) (mem.PageID, uint32, error) {
	return p.AllocFragTo(c, size, mem.Driver, c.ID)
}

// AllocFragTo is AllocFrag handing a page's first fragment out in to,
// owned by owner: a caller that places the buffer at once (virtio_net
// posting a page-sized buffer to its ring) records one move, not a move
// to mem.Driver and another straight after it.
func (p *Pool) AllocFragTo(c *sim.CPU, size uint32, to mem.Loc, owner int) (mem.PageID, uint32, error) {
	if p.state != Active {
		return mem.NoPage, 0, ErrDestroyed
	}
	maxSize := p.fragMax
	if size > maxSize {
		return mem.NoPage, 0, fmt.Errorf("pagepool: fragment of %d bytes in a %d-byte page", size, maxSize)
	}
	offset := p.fragOffset
	id := p.fragPage
	if id != mem.NoPage && uint64(offset)+uint64(size) > uint64(maxSize) {
		if pg := p.m.Page(id); pg.PPRef > BiasMax-p.fragUsers && p.count > 0 {
			// The common case of the page change, written out (every
			// buffer that fills a page, as mergeable XDP buffers do):
			// fragments of the old page are still out, so drainFrag's
			// unref leaves them the page, and the alloc cache has the
			// next one. drainFrag, getCached and fragReset in the same
			// order, without their calls; the general path below stays
			// the reference.
			c.Charge(sim.SymPagePoolAllocFrag, c.Costs().Atomic)
			pg.PPRef -= BiasMax - p.fragUsers
			p.alloc.Fast++
			id = p.popCache(c)
			p.fragPage = id
			p.fragUsers = 1
			p.fragOffset = size
			p.m.Page(id).PPRef = BiasMax
			if err := p.m.Move(id, to, owner); err != nil { // p.move without the call
				p.broken(err)
			}
			return id, 0, nil
		}
		id = p.drainFrag(c, id)
		if id != mem.NoPage {
			p.recycle.Cached++
			p.alloc.Fast++
			return p.fragReset(id, size, to, owner), 0, nil
		}
	}
	if id == mem.NoPage {
		id = p.allocNetmems(c)
		if id == mem.NoPage {
			p.fragPage = mem.NoPage
			return mem.NoPage, 0, mem.ErrNoMemory
		}
		p.fragPage = id
		return p.fragReset(id, size, to, owner), 0, nil
	}
	p.fragUsers++
	p.fragOffset = offset + size
	return id, offset, nil
}

// FragRemaining is what is left of the current fragment page after the
// last AllocFrag: (PAGE_SIZE << order) - frag_offset, 0 without a page.
// A driver that gives the tail of a page to its last buffer reads it
// (virtio_net's hole).
func (p *Pool) FragRemaining() uint32 {
	if p.fragPage == mem.NoPage {
		return 0
	}
	return p.fragMax - p.fragOffset
}

// FragOffsetAdd moves the current fragment page's offset n bytes on, so
// the next fragment does not get them: the driver gave them to the last
// fragment (virtio_net's hole, pool->frag_offset += hole in the 2023
// series' 3/5). n is at most FragRemaining.
func (p *Pool) FragOffsetAdd(n uint32) {
	if p.fragPage == mem.NoPage {
		return
	}
	p.fragOffset = min(p.fragOffset+n, p.fragMax)
}

// fragReset is the frag_reset label: the page's first fragment, handed
// out in to.
func (p *Pool) fragReset(id mem.PageID, size uint32, to mem.Loc, owner int) mem.PageID {
	p.fragUsers = 1
	p.fragOffset = size
	p.m.Page(id).PPRef = BiasMax // page_pool_fragment_netmem(netmem, BIAS_MAX)
	p.move(id, to, owner)
	return id
}

// drainFrag is page_pool_drain_frag: give back the references not handed
// out. If fragments are still out, they own the page now (NoPage). If none
// is, the page is recycled in place when nobody else holds it (returned)
// or released.
func (p *Pool) drainFrag(c *sim.CPU, id mem.PageID) mem.PageID {
	pg := p.m.Page(id)
	if p.unref(c, pg, BiasMax-p.fragUsers) != 0 {
		return mem.NoPage
	}
	if pg.RefCount() == 1 {
		p.syncForDevice(c, id, SyncFull)
		return id
	}
	p.returnPage(c, id)
	return mem.NoPage
}

// freeFrag is page_pool_free_frag, at destroy: the pool gives up its
// fragment page; it is released now if no fragment is out.
func (p *Pool) freeFrag(c *sim.CPU) {
	id := p.fragPage
	p.fragPage = mem.NoPage
	if id == mem.NoPage {
		return
	}
	if p.unref(c, p.m.Page(id), BiasMax-p.fragUsers) != 0 {
		return
	}
	p.returnPage(c, id)
}

// AllocNetmem is page_pool_alloc_netmem (page_pool_dev_alloc): a request
// larger than half a page takes a whole page; a smaller one is a fragment,
// and when the page could not hold another fragment of the same size the
// rest of it is added to this one (so truesize is not underestimated). It
// returns the page, the offset and the size actually given (truesize).
func (p *Pool) AllocNetmem(c *sim.CPU, size uint32) (mem.PageID, uint32, uint32, error) {
	maxSize := p.fragMax
	if uint64(size)<<1 > uint64(maxSize) {
		id, err := p.Alloc(c)
		return id, 0, maxSize, err
	}
	id, offset, err := p.AllocFrag(c, size)
	if err != nil {
		return id, 0, 0, err
	}
	if uint64(p.fragOffset)+uint64(size) > uint64(maxSize) {
		size = maxSize - offset
		p.fragOffset = maxSize
	}
	return id, offset, size, nil
}
