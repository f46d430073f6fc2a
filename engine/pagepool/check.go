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
	if err := p.ring.Check(); err != nil {
		return fmt.Errorf("pagepool %d: %w", p.id, err)
	}
	if p.count < 0 || p.count > AllocCacheSize {
		return fmt.Errorf("pagepool %d: cache count %d", p.id, p.count)
	}
	if p.state != Active && p.count != 0 {
		return fmt.Errorf("pagepool %d: %v with %d pages in the cache", p.id, p.state, p.count)
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
