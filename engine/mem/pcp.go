package mem

import "ringlab/engine/sim"

// pcp is struct per_cpu_pages for one CPU of the zone: a list per order up
// to CostlyOrder (one migrate type), count in base pages, batch and high,
// and what free_high decides from (FreeHigh).
//
// Simplified: the kernel scales the refill with alloc_factor
// (nr_pcp_alloc), the drain with free_factor or free_count (nr_pcp_free)
// and tunes high between high_min and high_max (decay_pcp_high); here
// batch and high are fixed, high stands for high_min too, and a drain that
// is not free_high's gives back batch pages.
type pcp struct {
	lists [CostlyOrder + 1]list
	count int // base pages on all lists
	batch int // blocks per refill (order 0), base pages per drain
	high  int // a free that brings count to high drains a batch

	// freeFactor is pcp->free_factor (5.14 to 6.6): raised by each drain
	// at high, halved by each allocation; non-zero means the CPU has been
	// freeing without allocating.
	freeFactor uint8
	// prevHigh is PCPF_PREV_FREE_HIGH_ORDER (6.7+): the last free was of
	// order 1..CostlyOrder.
	prevHigh bool
	// freeCount is pcp->free_count (6.7+): base pages freed, at most
	// batch << pcpBatchScaleMax, halved by each allocation.
	freeCount int
}

// FreeHigh is the rule free_unref_page_commit (free_frozen_page_commit
// since 6.14) uses to decide free_high: a CPU that frees high-order pages
// without allocating sends them straight to the buddy lists under
// zone->lock instead of keeping them until high, the case of all
// allocations on one CPU and all frees on another. The engine picks the
// rule from the kernel version.
type FreeHigh uint8

const (
	// FreeHighNone: before 5.19, high-order frees wait on the list until
	// it reaches high like any other.
	FreeHighNone FreeHigh = iota
	// FreeHighFactor (5.19, f26b3fa04611 "mm/page_alloc: limit number of
	// high-order pages on PCP during bulk free"): free_high = free_factor
	// && order && order <= PAGE_ALLOC_COSTLY_ORDER; high becomes 0 and the
	// whole list (pcp->count) goes to the buddy.
	FreeHighFactor
	// FreeHighCount (6.7, 6ccdcb6d3a74 "mm, pcp: reduce detecting time of
	// consecutive high order page freeing"): free_high = order in
	// 1..PAGE_ALLOC_COSTLY_ORDER && free_count >= batch && the previous
	// free was high-order too (PCPF_PREV_FREE_HIGH_ORDER) && (the CPU has
	// no PCPF_FREE_HIGH_BATCH || count >= batch); it drains
	// min(count, batch << CONFIG_PCP_BATCH_SCALE_MAX).
	FreeHighCount
	// FreeHighCountHighMin (6.16, c544a952ba61 "mm: pcp: increase
	// pcp->free_count threshold to trigger free_high"): as FreeHighCount
	// with free_count >= batch + high_min / 2.
	FreeHighCountHighMin
)

// pcpBatchScaleMax is CONFIG_PCP_BATCH_SCALE_MAX's default (mm/Kconfig).
const pcpBatchScaleMax = 5

// pcpFreeHighBatch is PCPF_FREE_HIGH_BATCH (6.7+), set at boot by
// zone_pcp_update_cacheinfo when the CPU's share of the data cache holds
// more than 3 * batch pages (756 KiB at batch 63). Assumed set: a server
// CPU's last-level cache slice is larger than that (an assumption, not a
// measurement of the published setups). It keeps up to batch pages on the
// list between free_high drains.
const pcpFreeHighBatch = true

func (p *pcp) init(batch, high int) {
	for i := range p.lists {
		p.lists[i] = newList()
	}
	p.batch, p.high = batch, high
}

// nrAlloc is nr_pcp_alloc without the alloc_factor scaling: batch blocks
// for order 0, max(batch>>order, 2) for higher orders.
func (p *pcp) nrAlloc(order int) int {
	if order == 0 {
		return p.batch
	}
	return max(p.batch>>order, 2)
}

// rmqueuePCP is __rmqueue_pcplist: pop the front of this CPU's list for
// order (the hottest page, LIFO), refilling it first from the zone when it
// is empty (rmqueue_bulk). NoPage when the zone has nothing either.
func (m *Mem) rmqueuePCP(c *sim.CPU, order int) PageID {
	p := &m.pcp[c.ID]
	l := &p.lists[order]
	if l.n == 0 {
		n := m.rmqueueBulk(c, order, p.nrAlloc(order), l)
		p.count += n << order
		if n == 0 {
			return NoPage
		}
	}
	id := m.listPopHead(l)
	p.count -= 1 << order
	return id
}

// rmqueueBulk takes up to count blocks of order from the zone, under the
// zone lock, onto the tail of l (rmqueue_bulk). It returns how many.
func (m *Mem) rmqueueBulk(c *sim.CPU, order, count int, l *list) int {
	n := 0
	var hold sim.Duration
	for n < count {
		id := m.rmqueueSmallest(order)
		if id == NoPage {
			break
		}
		m.setLoc(id, PCP, c.ID)
		m.listAddTail(l, id)
		hold += m.underLock(c, id)
		n++
	}
	m.zone.lock.Hold(c, sim.SymRmqueueBulk, hold)
	m.stats.PCPRefills++
	return n
}

// underLock is the time one block costs inside zone->lock: the list and
// buddy work (BuddyPerPage), plus pulling its struct page's cache line when
// another CPU touched it last. rmqueue_bulk and free_pcppages_bulk write
// every struct page they move while holding the lock, so a page freed on
// one CPU and allocated on another makes the lock's holders wait for
// cache-line transfers: the lock scales negatively when pages migrate.
func (m *Mem) underLock(c *sim.CPU, id PageID) sim.Duration {
	d := c.Costs().BuddyPerPage
	if m.pages[id].line.Take(c) {
		d += c.Costs().CacheLineTransfer
	}
	return d
}

// freeToPCP is free_unref_page_commit (free_frozen_page_commit since
// 6.14): the block goes to the front of the freeing CPU's list; when the
// list holds high base pages or more, a batch goes back to the zone. With
// free_high (the rule of m.freeHigh) high is 0 and the list drains at
// once (nr_pcp_high, nr_pcp_free).
func (m *Mem) freeToPCP(c *sim.CPU, h PageID) {
	p := &m.pcp[c.ID]
	order := int(m.pages[h].order)
	m.setLoc(h, PCP, c.ID)
	m.listAdd(&p.lists[order], h)
	p.count += 1 << order
	freeHigh := false
	drain := p.count // nr_pcp_free with free_high before 6.7: pcp->count
	switch m.freeHigh {
	case FreeHighFactor:
		freeHigh = p.freeFactor > 0 && order > 0
	case FreeHighCount, FreeHighCountHighMin:
		if order > 0 {
			threshold := p.batch
			if m.freeHigh == FreeHighCountHighMin {
				threshold += p.high / 2 // high_min / 2
			}
			freeHigh = p.freeCount >= threshold && p.prevHigh && (!pcpFreeHighBatch || p.count >= p.batch)
			p.prevHigh = true
		} else {
			p.prevHigh = false
		}
		if p.freeCount < p.batch<<pcpBatchScaleMax {
			p.freeCount += 1 << order
		}
		drain = min(p.count, p.batch<<pcpBatchScaleMax)
	}
	if freeHigh {
		m.stats.FreeHighDrains++
		m.freePCPBulk(c, p, drain, order)
		return
	}
	if p.count >= p.high {
		// nr_pcp_free: each drain without an allocation in between raises
		// free_factor (while batch << free_factor < high - batch).
		if p.batch<<p.freeFactor < p.high-p.batch {
			p.freeFactor++
		}
		m.freePCPBulk(c, p, p.batch, order)
	}
}

// pcpAllocated is rmqueue_pcplist's bookkeeping of an allocation on c:
// free_factor (before 6.7) and free_count (6.7+) are halved, so a CPU that
// allocates is not taken for one that only frees.
func (m *Mem) pcpAllocated(c *sim.CPU) {
	p := &m.pcp[c.ID]
	p.freeFactor >>= 1
	p.freeCount >>= 1
}

// freePCPBulk is free_pcppages_bulk: under the zone lock, give count base
// pages back to the buddy lists, oldest first (list tails), emptying the
// list of pindex first and then the others round-robin.
func (m *Mem) freePCPBulk(c *sim.CPU, p *pcp, count, pindex int) {
	count = min(count, p.count)
	moved := 0
	var hold sim.Duration
	pindex--
	for count > 0 {
		for {
			pindex++
			if pindex > CostlyOrder {
				pindex = 0
			}
			if p.lists[pindex].n > 0 {
				break
			}
		}
		l := &p.lists[pindex]
		for {
			id := m.listPopTail(l)
			count -= 1 << pindex
			p.count -= 1 << pindex
			hold += m.underLock(c, id)
			m.setLoc(id, Buddy, -1)
			m.freeOneBlock(id, pindex)
			moved++
			if count <= 0 || l.n == 0 {
				break
			}
		}
	}
	m.zone.lock.Hold(c, sim.SymFreePCP, hold)
	m.stats.PCPDrains++
}

// PCPCount is the number of base pages on cpu's per-CPU lists.
func (m *Mem) PCPCount(cpu int) int {
	if cpu < 0 || cpu >= len(m.pcp) {
		return 0
	}
	return m.pcp[cpu].count
}

// PCPBatch and PCPHigh are the per-CPU list parameters.
func (m *Mem) PCPBatch() int { return m.pcp[0].batch }

// PCPHigh is the per-CPU high watermark in base pages.
func (m *Mem) PCPHigh() int { return m.pcp[0].high }

// DrainPCP is drain_local_pages for c's CPU: every block on its per-CPU
// lists goes back to the zone under the zone lock.
func (m *Mem) DrainPCP(c *sim.CPU) error {
	if err := m.checkCPU(c); err != nil {
		return err
	}
	p := &m.pcp[c.ID]
	if p.count > 0 {
		m.freePCPBulk(c, p, p.count, 0)
	}
	return nil
}
