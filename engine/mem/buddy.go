package mem

import "ringlab/engine/sim"

// zone is struct zone with one migrate type: free_area[order] lists of
// free blocks over PFNs, and zone->lock. Blocks are aligned to their size;
// a free block of order k and its buddy (pfn ^ 1<<k) merge when both are
// free (__free_one_page) and split when a smaller order is wanted
// (expand). The lock is a sim.Lock: holding it costs its holder, and two
// CPUs wanting it at once wait for each other.
type zone struct {
	free [MaxPageOrder + 1]list
	lock sim.Lock
}

// init puts all memory on the free lists in the largest aligned blocks that
// fit, lowest PFN first (memblock_free_pages -> __free_pages_core).
func (z *zone) init(m *Mem) {
	z.lock.Name = "zone->lock"
	for i := range z.free {
		z.free[i] = newList()
	}
	n := PageID(len(m.pages))
	for pfn := PageID(0); pfn < n; {
		k := m.maxOrder
		for k > 0 && (pfn&(1<<k-1) != 0 || pfn+1<<k > n) {
			k--
		}
		p := &m.pages[pfn]
		p.isHead = true
		p.order = uint8(k)
		p.loc = Buddy
		m.counts[Buddy] += 1 << k
		m.listAddTail(&z.free[k], pfn)
		pfn += 1 << k
	}
}

// rmqueueSmallest is __rmqueue_smallest: the first block on the smallest
// non-empty list of order >= order, split down to order. It returns NoPage
// when no block is large enough. The caller holds the zone lock and owns
// the block's new location and count (it is still counted in Buddy).
func (m *Mem) rmqueueSmallest(order int) PageID {
	for cur := order; cur <= m.maxOrder; cur++ {
		l := &m.zone.free[cur]
		if l.n == 0 {
			continue
		}
		id := m.listPopHead(l)
		m.expand(id, order, cur)
		return id
	}
	return NoPage
}

// expand splits the block at id from order high down to low, putting each
// upper half on the free list of its order (expand / page_del_and_expand).
func (m *Mem) expand(id PageID, low, high int) {
	for high > low {
		high--
		bud := id + PageID(1)<<high
		b := &m.pages[bud]
		b.isHead = true
		b.order = uint8(high)
		b.loc = Buddy
		b.owner = -1
		m.listAdd(&m.zone.free[high], bud)
		m.stats.Splits++
	}
	m.pages[id].order = uint8(low)
}

// freeOneBlock is __free_one_page: the block at pfn, of the given order and
// already counted in Buddy by the caller, merges with its free buddies as
// far as they go and lands on the free list of the resulting order. The
// caller holds the zone lock.
func (m *Mem) freeOneBlock(pfn PageID, order int) {
	n := PageID(len(m.pages))
	for order < m.maxOrder {
		bud := pfn ^ PageID(1)<<order
		if bud >= n {
			break
		}
		b := &m.pages[bud]
		if !b.isHead || b.loc != Buddy || int(b.order) != order {
			break // page_is_buddy() is false
		}
		m.listDel(&m.zone.free[order], bud)
		hi := max(pfn, bud)
		m.pages[hi].isHead = false
		m.pages[hi].loc = locTail
		m.pages[hi].order = 0
		pfn = min(pfn, bud)
		order++
		m.stats.Merges++
	}
	p := &m.pages[pfn]
	p.isHead = true
	p.order = uint8(order)
	p.loc = Buddy
	p.owner = -1
	m.listAdd(&m.zone.free[order], pfn)
}

// FreeBlocks is free_area[order].nr_free: free blocks of that order in the
// zone (pcp lists not included).
func (m *Mem) FreeBlocks(order int) int {
	if order < 0 || order > m.maxOrder {
		return 0
	}
	return m.zone.free[order].n
}

// ZoneLock is the zone's lock, for its statistics.
func (m *Mem) ZoneLock() *sim.Lock { return &m.zone.lock }
