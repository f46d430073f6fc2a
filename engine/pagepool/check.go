package pagepool

import (
	"fmt"

	"ringlab/engine/mem"
)

// Check verifies the pool's invariants and returns the first violation:
//
//   - the ptr_ring is well formed (PtrRing.Check);
//   - every page in the cache and the ring is a head page marked with the
//     pool's id and PP_SIGNATURE, located in PoolCache / PoolRing with the
//     pool as owner, with refcount 1 and pp_ref_count 1, and mapped when
//     the pool maps (until destroy unmaps everything);
//   - no other page is located in the pool's cache or ring;
//   - hold_cnt - release_cnt equals the number of pages marked with the
//     pool: no page is lost or counted twice;
//   - the dma_mapped count equals the marked pages still tracked;
//   - a freed pool has nothing in flight, a destroyed one an empty cache.
//
// It scans the whole memory: for tests.
func (p *Pool) Check() error {
	if err := p.CheckCounts(); err != nil {
		return err
	}
	if err := p.ring.Check(); err != nil {
		return fmt.Errorf("pagepool %d: %w", p.id, err)
	}
	for i := 0; i < p.count; i++ {
		if err := p.checkHeld(p.cache[i], mem.PoolCache); err != nil {
			return err
		}
	}
	for i := 0; i < p.ring.Len(); i++ {
		if err := p.checkHeld(mem.PageID(p.ring.At(i)-1), mem.PoolRing); err != nil {
			return err
		}
	}
	marked, tracked, inCache, inRing := 0, 0, 0, 0
	for id := mem.PageID(0); int(id) < p.m.NumPages(); id++ {
		pg := p.m.Page(id)
		if pg.PP == p.id {
			marked++
			if pg.DMAIndex != 0 {
				tracked++
			}
		}
		if !pg.IsHead() {
			continue
		}
		if loc, owner := p.m.Loc(id); owner == int(p.id) {
			switch loc {
			case mem.PoolCache:
				inCache++
			case mem.PoolRing:
				inRing++
			}
		}
	}
	if inCache != p.count || inRing != p.ring.Len() {
		return fmt.Errorf("pagepool %d: %d pages located in its cache and %d in its ring; they hold %d and %d",
			p.id, inCache, inRing, p.count, p.ring.Len())
	}
	if int64(marked) != p.Inflight() {
		return fmt.Errorf("pagepool %d: hold_cnt %d - release_cnt %d = %d, but %d pages carry the pool's mark",
			p.id, p.hold, p.release, p.Inflight(), marked)
	}
	if tracked != p.dmaMapped {
		return fmt.Errorf("pagepool %d: %d pages tracked as mapped, counter says %d", p.id, tracked, p.dmaMapped)
	}
	if !p.dmaMap && tracked != 0 {
		return fmt.Errorf("pagepool %d: maps no pages but tracks %d", p.id, tracked)
	}
	if p.state == Freed && p.Inflight() != 0 {
		return fmt.Errorf("pagepool %d: freed with %d pages in flight", p.id, p.Inflight())
	}
	if p.fragPage != mem.NoPage {
		if pg := p.m.Page(p.fragPage); pg == nil || pg.PP != p.id {
			return fmt.Errorf("pagepool %d: fragment page %d is not the pool's", p.id, p.fragPage)
		}
	}
	return nil
}

// checkHeld checks a page in the cache or ring.
func (p *Pool) checkHeld(id mem.PageID, where mem.Loc) error {
	pg := p.m.Page(id)
	if pg == nil || !pg.IsHead() {
		return fmt.Errorf("pagepool %d: %v holds %d, not a head page", p.id, where, id)
	}
	if pg.PP != p.id || pg.PPMagic != Signature {
		return fmt.Errorf("pagepool %d: page %d in the %v is marked for pool %d (magic %#x)", p.id, id, where, pg.PP, pg.PPMagic)
	}
	if loc, owner := p.m.Loc(id); loc != where || owner != int(p.id) {
		return fmt.Errorf("pagepool %d: page %d in the %v is located in %v (owner %d)", p.id, id, where, loc, owner)
	}
	if pg.RefCount() != 1 || pg.PPRef != 1 {
		return fmt.Errorf("pagepool %d: page %d in the %v has refcount %d, pp_ref_count %d", p.id, id, where, pg.RefCount(), pg.PPRef)
	}
	if pg.Order() != p.p.Order {
		return fmt.Errorf("pagepool %d: page %d in the %v has order %d", p.id, id, where, pg.Order())
	}
	if p.dmaMap && p.destroyCnt == 0 && (pg.DMAIndex == 0 || p.p.DMA.Live(id) == 0) {
		return fmt.Errorf("pagepool %d: page %d in the %v is not mapped", p.id, id, where)
	}
	return nil
}

// DMAMapped is the number of pages in the pool's dma_mapped xarray.
func (p *Pool) DMAMapped() int { return p.dmaMapped }

// CheckCounts checks in O(1) what every operation keeps: the ptr_ring's
// indices are in order (PtrRing.CheckIndices), the alloc cache count is in
// range and empty once destroyed (page_pool_empty_alloc_cache_once), and
// the pages the pool is responsible for, hold_cnt - release_cnt
// (page_pool_inflight), cover at least the cache and the ring: every page
// in them was counted in hold_cnt when allocated
// (__page_pool_alloc_pages_slow) and is counted in release_cnt only when
// it leaves the pool (page_pool_return_page).
func (p *Pool) CheckCounts() error {
	if err := p.ring.CheckIndices(); err != nil {
		return fmt.Errorf("pagepool %d: %w", p.id, err)
	}
	if p.count < 0 || p.count > AllocCacheSize {
		return fmt.Errorf("pagepool %d: cache count %d", p.id, p.count)
	}
	if p.state != Active && p.count != 0 {
		return fmt.Errorf("pagepool %d: %v with %d pages in the cache", p.id, p.state, p.count)
	}
	if p.release > p.hold || p.Inflight() < int64(p.count+p.ring.Len()) {
		return fmt.Errorf("pagepool %d: hold_cnt %d - release_cnt %d is less than the %d cached and %d ringed pages",
			p.id, p.hold, p.release, p.count, p.ring.Len())
	}
	if p.dmaMapped < 0 || int64(p.dmaMapped) > p.Inflight() {
		return fmt.Errorf("pagepool %d: %d pages tracked as mapped, %d in flight", p.id, p.dmaMapped, p.Inflight())
	}
	return nil
}

// CheckPage checks one page marked with the pool's id: it is a head of
// the pool's order with PP_SIGNATURE and at least one pp reference
// (page_pool_set_pp_info; pp_ref_count drops to 0 only on the put that
// recycles it, which sets it back to 1: page_pool_unref_netmem); it is
// mapped while the pool maps and has not been destroyed
// (page_pool_dma_map at allocation, page_pool_scrub at destroy); and when
// it is located in the cache or the ring it is there for this pool, with
// refcount 1 and pp_ref_count 1 (only a page nobody else holds is
// recycled: __page_pool_page_can_be_recycled).
func (p *Pool) CheckPage(id mem.PageID) error {
	pg := p.m.Page(id)
	if pg == nil || !pg.IsHead() || pg.PP != p.id {
		return fmt.Errorf("pagepool %d: page %d is not a head marked for the pool", p.id, id)
	}
	if pg.PPMagic != Signature || pg.PPRef < 1 || pg.PPRef > BiasMax {
		return fmt.Errorf("pagepool %d: page %d has pp_magic %#x, pp_ref_count %d", p.id, id, pg.PPMagic, pg.PPRef)
	}
	if pg.Order() != p.p.Order {
		return fmt.Errorf("pagepool %d: page %d has order %d", p.id, id, pg.Order())
	}
	if p.dmaMap && p.destroyCnt == 0 && (pg.DMAIndex == 0 || p.p.DMA.Live(id) == 0) {
		return fmt.Errorf("pagepool %d: page %d is not mapped", p.id, id)
	}
	if loc, owner := p.m.Loc(id); loc == mem.PoolCache || loc == mem.PoolRing {
		if owner != int(p.id) {
			return fmt.Errorf("pagepool %d: page %d is in the %v of pool %d", p.id, id, loc, owner)
		}
		return p.checkHeld(id, loc)
	}
	return nil
}
