package mem

import (
	"fmt"
	"math"

	"ringlab/engine/sim"
)

// AllocPages is alloc_pages(gfp, order): a block of 1<<order pages with
// refcount 1 (a compound page when order > 0), placed in to with owner.
// Orders up to CostlyOrder come from c's per-CPU list (rmqueue_pcplist),
// refilled from the zone under the zone lock when empty; larger orders
// come from the zone directly (rmqueue_buddy). It costs c PageAlloc, plus
// BuddyPerPage per block and the lock when the zone is used, plus a
// cache-line transfer when another CPU touched the struct page last.
//
// ErrNoMemory (counted in Stats.AllocFail) means no block was free; any
// other error is a bad argument.
func (m *Mem) AllocPages(c *sim.CPU, order int, to Loc, owner int) (PageID, error) {
	if err := m.checkAlloc(c, to, owner); err != nil {
		return NoPage, err
	}
	if order < 0 || order > m.maxOrder {
		return NoPage, fmt.Errorf("mem: alloc order %d: want 0..%d", order, m.maxOrder)
	}
	c.Charge(sim.SymAllocPages, c.Costs().PageAlloc)
	var id PageID
	if order <= CostlyOrder {
		m.pcpAllocated(c)
		id = m.rmqueuePCP(c, order)
	} else {
		id = m.rmqueueSmallest(order)
		m.zone.lock.Hold(c, sim.SymAllocPages, c.Costs().BuddyPerPage)
	}
	if id == NoPage {
		m.stats.AllocFail++
		return NoPage, ErrNoMemory
	}
	m.prepNewPage(c, id, to, owner)
	return id, nil
}

// AllocPagesBulk is alloc_pages_bulk for order 0: it fills out with up to
// len(out) pages from c's per-CPU list (refilling it from the zone as
// needed) and returns how many it got; fewer than asked means memory ran
// out (counted once in Stats.AllocFail when none was found). Each page
// costs PageAlloc (simplified: the kernel's bulk path saves part of the
// per-call overhead). It takes pages with __rmqueue_pcplist directly, so,
// unlike AllocPages, it leaves free_factor and free_count alone.
func (m *Mem) AllocPagesBulk(c *sim.CPU, out []PageID, to Loc, owner int) (int, error) {
	if err := m.checkAlloc(c, to, owner); err != nil {
		return 0, err
	}
	m.stats.BulkAllocs++
	n := 0
	for n < len(out) {
		id := m.rmqueuePCP(c, 0)
		if id == NoPage {
			break
		}
		c.Charge(sim.SymAllocPages, c.Costs().PageAlloc)
		m.prepNewPage(c, id, to, owner)
		out[n] = id
		n++
	}
	m.stats.BulkPages += uint64(n)
	if n == 0 && len(out) > 0 {
		m.stats.AllocFail++
	}
	return n, nil
}

func (m *Mem) checkAlloc(c *sim.CPU, to Loc, owner int) error {
	if err := m.checkCPU(c); err != nil {
		return err
	}
	if !to.Valid() || to.free() {
		return fmt.Errorf("mem: alloc into %v: %w", to, errBadLoc)
	}
	if owner < -1 || owner > math.MaxInt16 {
		return fmt.Errorf("mem: alloc owner %d out of range", owner)
	}
	return nil
}

// prepNewPage is prep_new_page: refcount 1 (set_page_refcounted), the
// struct page written by c.
func (m *Mem) prepNewPage(c *sim.CPU, id PageID, to Loc, owner int) {
	p := &m.pages[id]
	p.refcount = 1
	p.Private = NoPage
	p.allocCPU = uint8(c.ID)
	p.line.Touch(c, sim.SymAllocPages)
	m.setLoc(id, to, owner)
	m.stats.Allocs++
}

// GetPage is get_page: one more reference on the block holding id. It
// costs c an atomic on the struct page's line (the compound head's
// _refcount), plus a cache-line transfer when another CPU wrote it last.
func (m *Mem) GetPage(c *sim.CPU, id PageID) error {
	if err := m.checkCPU(c); err != nil {
		return err
	}
	h, err := m.allocatedHead(id)
	if err != nil {
		return err
	}
	p := &m.pages[h]
	if p.refcount <= 0 || p.refcount == math.MaxInt32 {
		return fmt.Errorf("mem: get_page on page %d with refcount %d: %w", id, p.refcount, ErrBadPage)
	}
	m.touchRef(c, p)
	c.Charge(sim.SymPageRef, c.Costs().Atomic)
	p.refcount++
	m.note(h)
	return nil
}

// touchRef touches the refcount line of head p from c: a transfer, counted
// in Stats.RefTransfers, when another CPU wrote it last.
func (m *Mem) touchRef(c *sim.CPU, p *Page) {
	if p.line.Touch(c, sim.SymPageRef) {
		m.stats.RefTransfers++
	}
}

// PutPage is put_page: drop a reference on the block holding id and free
// it when that was the last (free_unref_page / free_frozen_pages for
// orders up to CostlyOrder, to the freeing CPU's per-CPU list;
// __free_pages_ok to the zone above). It reports whether the block was
// freed. Freeing a page that page_pool still marks as its own, or that a
// DMA mapping still covers, is refused with ErrBadPage (the kernel's
// bad_page check leaks such a page instead).
func (m *Mem) PutPage(c *sim.CPU, id PageID) (bool, error) {
	if err := m.checkCPU(c); err != nil {
		return false, err
	}
	h, err := m.allocatedHead(id)
	if err != nil {
		return false, err
	}
	p := &m.pages[h]
	if p.refcount <= 0 {
		return false, fmt.Errorf("mem: put_page on page %d with refcount %d: %w", id, p.refcount, ErrBadPage)
	}
	if p.refcount == 1 {
		if err := m.freeable(h); err != nil {
			return false, err
		}
	}
	m.touchRef(c, p)
	c.Charge(sim.SymPageRef, c.Costs().Atomic)
	p.refcount--
	if p.refcount > 0 {
		m.note(h)
		return false, nil
	}
	m.freePages(c, h)
	return true, nil
}

// freeable is free_pages_prepare's bad-page check for what this engine
// tracks.
func (m *Mem) freeable(h PageID) error {
	p := &m.pages[h]
	if p.PPMagic != 0 || p.PP != -1 {
		return fmt.Errorf("mem: page %d freed while page_pool %d owns it (page_pool leak): %w", h, p.PP, ErrBadPage)
	}
	if n := m.dmaLive(h); n > 0 {
		return fmt.Errorf("mem: page %d freed with %d live DMA mappings: %w", h, n, ErrBadPage)
	}
	return nil
}

// freePages is free_frozen_pages (free_unref_page before 6.14): the block
// at head h, refcount 0, goes to c's per-CPU list, or to the zone under
// the zone lock above CostlyOrder (free_one_page). Costs c PageFree. A free
// on a CPU other than the one that allocated the block is counted remote.
func (m *Mem) freePages(c *sim.CPU, h PageID) {
	c.Charge(sim.SymFreePages, c.Costs().PageFree)
	m.stats.Frees++
	p := &m.pages[h]
	if int(p.allocCPU) != c.ID {
		m.stats.RemoteFrees++
	}
	p.Private = NoPage
	order := int(p.order)
	if order <= CostlyOrder {
		m.freeToPCP(c, h)
		return
	}
	m.zone.lock.Hold(c, sim.SymFreePages, c.Costs().BuddyPerPage)
	m.setLoc(h, Buddy, -1)
	m.freeOneBlock(h, order)
}
