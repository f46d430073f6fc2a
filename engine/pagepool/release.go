package pagepool

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// returnPage is page_pool_return_netmem: the page leaves the pool. It is
// unmapped, counted in release_cnt, unmarked, and its page reference is
// dropped: freed when that was the last one, else left to whoever holds
// the others, where it already is.
func (p *Pool) returnPage(c *sim.CPU, id mem.PageID) {
	pg := p.m.Page(id)
	p.releaseDMA(c, pg)
	p.release++
	pg.PPMagic = 0 // page_pool_clear_pp_info
	pg.PP = -1
	p.putPage(c, id)
}

// ReleasePage is page_pool_release_page (until 6.3, for
// xdp_release_frame): a page in flight leaves the pool while its holder
// keeps it. It is unmapped, counted in release_cnt and unmarked; its page
// reference stays with the holder, whose put_page frees it to the page
// allocator. The page must be the pool's with one pp reference: the kernel
// releases a page whose other fragments are still out all the same, and
// their holders would free it under each other; the engine refuses that
// with an error instead (scenario validation keeps it from happening).
func (p *Pool) ReleasePage(c *sim.CPU, id mem.PageID) error {
	pg, err := p.own(c, id)
	if err != nil {
		return err
	}
	if pg.PPRef != 1 || id == p.fragPage {
		return fmt.Errorf("pagepool %d: release of page %d with %d pp references: other fragments are still out: %w", p.id, id, pg.PPRef, ErrNotPoolPage)
	}
	p.m.Touch(c, sim.SymPagePoolReturn, id)
	p.releaseDMA(c, pg)
	p.release++
	pg.PPMagic = 0 // page_pool_clear_pp_info
	pg.PP = -1
	p.m.Note(id)
	return nil
}

// Destroy is page_pool_destroy: direct recycling stops, the fragment page
// is given up, the cache and the ring are emptied (page_pool_release). When
// nothing is left in flight the pool is freed and Destroy reports true.
// Otherwise the pool is detached: later puts still recycle into its ring,
// and the engine calls RetryRelease every DeferTime until it reports true.
// Destroying twice is an error.
func (p *Pool) Destroy(c *sim.CPU) (bool, error) {
	if p.state != Active {
		return false, ErrDestroyed
	}
	p.cpuid = -1 // page_pool_disable_direct_recycling
	p.napi = nil
	p.freeFrag(c)
	if p.releasePool(c) == 0 {
		p.state = Freed
		return true, nil
	}
	p.state = Detached // page_pool_detached
	p.detachTime = c.Now()
	p.deferWarn = c.Now().Add(DeferWarnInterval)
	return false, nil
}

// RetryRelease is page_pool_release_retry, the delayed work the kernel runs
// every DeferTime after a destroy that left pages in flight: empty the ring
// again and report whether the pool could be freed. Every
// DeferWarnInterval without success counts a "stalled pool shutdown"
// warning, which the kernel prints only for pools netlink cannot show
// (Params.Ifindex 0).
func (p *Pool) RetryRelease(c *sim.CPU) bool {
	if p.state != Detached {
		return p.state == Freed
	}
	if p.releasePool(c) <= 0 {
		p.state = Freed
		return true
	}
	if now := c.Now(); now >= p.deferWarn {
		if p.p.Ifindex == 0 {
			p.warnings++
		}
		p.deferWarn = now.Add(DeferWarnInterval)
	}
	return false
}

// StalledWarnings is how many "stalled pool shutdown" warnings were
// printed.
func (p *Pool) StalledWarnings() uint64 { return p.warnings }

// releasePool is page_pool_release: scrub, then take the producer lock once
// so producers have left, and return what is still in flight.
func (p *Pool) releasePool(c *sim.CPU) int64 {
	p.scrub(c)
	inflight := p.Inflight()
	p.ring.ProducerLock.Hold(c, sim.SymPagePoolReturn, 0)
	return inflight
}

// scrub is page_pool_scrub: empty the alloc cache (once), on the first call
// stop syncing and unmap every page still mapped (those in flight too:
// their later release skips the unmap), then empty the ring.
func (p *Pool) scrub(c *sim.CPU) {
	if p.destroyCnt == 0 {
		for p.count > 0 { // page_pool_empty_alloc_cache_once
			p.count--
			p.returnPage(c, p.cache[p.count])
		}
	}
	first := p.destroyCnt == 0
	p.destroyCnt++
	if first && p.dmaMap {
		p.dmaSync = false
		for id := mem.PageID(0); p.dmaMapped > 0 && int(id) < p.m.NumPages(); id++ {
			if pg := p.m.Page(id); pg.PP == p.id && pg.DMAIndex != 0 {
				p.unmapDMA(c, pg)
			}
		}
	}
	// page_pool_empty_ring: ptr_ring_consume_bh takes the consumer lock.
	for {
		v := p.ring.Consume(c)
		p.ring.ConsumerLock.Hold(c, sim.SymPagePoolReturn, c.Costs().PPRingGet)
		if v == 0 {
			break
		}
		p.returnPage(c, mem.PageID(v-1))
	}
}
