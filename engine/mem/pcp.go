package mem

import "ringlab/engine/sim"

// pcp is struct per_cpu_pages for one CPU of the zone: a list per order up
// to CostlyOrder (one migrate type), count in base pages, batch and high.
//
// Simplified: the kernel scales the refill with alloc_factor
// (nr_pcp_alloc), the drain with free_count (nr_pcp_free) and tunes high
// between high_min and high_max (decay_pcp_high); here batch and high are
// fixed.
type pcp struct {
	lists [CostlyOrder + 1]list
	count int // base pages on all lists
	batch int // blocks per refill (order 0), base pages per drain
	high  int // a free that brings count to high drains a batch
}

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
	m.zone.lock.Hold(c, hold)
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

// freeToPCP is free_unref_page_commit: the block goes to the front of the
// freeing CPU's list; when the list holds high base pages or more, a batch
// goes back to the zone.
func (m *Mem) freeToPCP(c *sim.CPU, h PageID) {
	p := &m.pcp[c.ID]
	order := int(m.pages[h].order)
	m.setLoc(h, PCP, c.ID)
	m.listAdd(&p.lists[order], h)
	p.count += 1 << order
	if p.count >= p.high {
		m.freePCPBulk(c, p, p.batch, order)
	}
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
	m.zone.lock.Hold(c, hold)
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
