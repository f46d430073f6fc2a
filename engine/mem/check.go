package mem

import "fmt"

// Check verifies the memory's invariants and returns the first violation:
//
//   - the blocks partition the PFNs: each block is aligned to its size and
//     its tails are not heads; every block is in exactly one location;
//   - the per-location counts equal the blocks found there, in base pages,
//     and add up to NumPages;
//   - the zone's free lists hold exactly the Buddy blocks, of their order,
//     with no two free buddies left unmerged; each CPU's pcp lists hold
//     exactly its PCP blocks and its count matches them;
//   - free blocks have refcount 0, no page_pool mark and no DMA mapping;
//     allocated blocks have refcount >= 1; tails have refcount 0;
//   - every live DMA mapping covers an allocated block.
//
// It is O(NumPages) and meant for tests, after every operation.
func (m *Mem) Check() error {
	n := PageID(len(m.pages))
	var counts [NumLocs]int64
	var buddyHeads int
	pcpPerCPU := make([]int, len(m.pcp))
	for pfn := PageID(0); pfn < n; {
		p := &m.pages[pfn]
		if !p.isHead {
			return fmt.Errorf("mem: page %d is in no block", pfn)
		}
		k := int(p.order)
		if k > m.maxOrder || pfn&(PageID(1)<<k-1) != 0 || pfn+PageID(1)<<k > n {
			return fmt.Errorf("mem: block %d of order %d is misaligned or past the end", pfn, k)
		}
		if !p.loc.Valid() {
			return fmt.Errorf("mem: block %d has no location (%v)", pfn, p.loc)
		}
		counts[p.loc] += 1 << k
		for t := pfn + 1; t < pfn+PageID(1)<<k; t++ {
			tp := &m.pages[t]
			if tp.isHead || tp.loc != locTail {
				return fmt.Errorf("mem: tail %d of block %d is marked as a head or has a location", t, pfn)
			}
			if tp.refcount != 0 {
				return fmt.Errorf("mem: tail %d of block %d has refcount %d", t, pfn, tp.refcount)
			}
		}
		if err := m.checkBlockState(pfn); err != nil {
			return err
		}
		switch p.loc {
		case Buddy:
			buddyHeads++
			bud := pfn ^ PageID(1)<<k
			if k < m.maxOrder && bud < n {
				b := &m.pages[bud]
				if b.isHead && b.loc == Buddy && int(b.order) == k {
					return fmt.Errorf("mem: free buddies %d and %d of order %d are not merged", pfn, bud, k)
				}
			}
		case PCP:
			if int(p.owner) < 0 || int(p.owner) >= len(m.pcp) {
				return fmt.Errorf("mem: block %d is on the pcp of CPU %d, which does not exist", pfn, p.owner)
			}
			pcpPerCPU[p.owner]++
		}
		pfn += PageID(1) << k
	}
	var total int64
	for l := Loc(0); l < NumLocs; l++ {
		if counts[l] != m.counts[l] {
			return fmt.Errorf("mem: %v holds %d pages but its count says %d", l, counts[l], m.counts[l])
		}
		total += counts[l]
	}
	if total != int64(n) {
		return fmt.Errorf("mem: locations hold %d pages of %d", total, n)
	}
	if err := m.checkLists(buddyHeads, pcpPerCPU); err != nil {
		return err
	}
	return m.checkDMA()
}

// checkBlockState checks refcount and page_pool marks of the block at h.
func (m *Mem) checkBlockState(h PageID) error {
	p := &m.pages[h]
	if p.refcount < 0 {
		return fmt.Errorf("mem: block %d has refcount %d", h, p.refcount)
	}
	if (p.PPMagic != 0) != (p.PP >= 0) {
		return fmt.Errorf("mem: block %d has pp_magic %#x but pp %d", h, p.PPMagic, p.PP)
	}
	if p.loc.free() {
		if p.refcount != 0 {
			return fmt.Errorf("mem: free block %d (%v) has refcount %d", h, p.loc, p.refcount)
		}
		if p.PP >= 0 || p.DMAAddr != 0 {
			return fmt.Errorf("mem: free block %d still carries page_pool %d state", h, p.PP)
		}
		if k := m.dmaLive(h); k > 0 {
			return fmt.Errorf("mem: free block %d has %d live DMA mappings", h, k)
		}
		return nil
	}
	if p.refcount < 1 {
		return fmt.Errorf("mem: allocated block %d (%v) has refcount %d", h, p.loc, p.refcount)
	}
	return nil
}

// checkLists walks the zone's free lists and every pcp list.
func (m *Mem) checkLists(buddyHeads int, pcpPerCPU []int) error {
	entries := 0
	for k := 0; k <= MaxPageOrder; k++ {
		l := &m.zone.free[k]
		if k > m.maxOrder && l.n != 0 {
			return fmt.Errorf("mem: free list of order %d above MaxOrder is not empty", k)
		}
		got, err := m.walk(l, func(id PageID) error {
			p := &m.pages[id]
			if p.loc != Buddy || int(p.order) != k {
				return fmt.Errorf("mem: block %d on the order-%d free list is %v of order %d", id, k, p.loc, p.order)
			}
			return nil
		})
		if err != nil {
			return err
		}
		entries += got
	}
	if entries != buddyHeads {
		return fmt.Errorf("mem: free lists hold %d blocks, %d blocks are in buddy", entries, buddyHeads)
	}
	for cpu := range m.pcp {
		pc := &m.pcp[cpu]
		blocks, pages := 0, 0
		for k := range pc.lists {
			got, err := m.walk(&pc.lists[k], func(id PageID) error {
				p := &m.pages[id]
				if p.loc != PCP || int(p.owner) != cpu || int(p.order) != k {
					return fmt.Errorf("mem: block %d on CPU %d's order-%d pcp list is %v (owner %d) of order %d",
						id, cpu, k, p.loc, p.owner, p.order)
				}
				return nil
			})
			if err != nil {
				return err
			}
			blocks += got
			pages += got << k
		}
		if blocks != pcpPerCPU[cpu] {
			return fmt.Errorf("mem: CPU %d's pcp lists hold %d blocks, %d blocks are on its pcp", cpu, blocks, pcpPerCPU[cpu])
		}
		if pages != pc.count {
			return fmt.Errorf("mem: CPU %d's pcp count is %d, its lists hold %d pages", cpu, pc.count, pages)
		}
	}
	return nil
}

// walk follows l front to back, checking links and length, and calls f on
// each entry.
func (m *Mem) walk(l *list, f func(PageID) error) (int, error) {
	got := 0
	prev := NoPage
	for id := l.head; id != NoPage; id = m.pages[id].next {
		if !m.Valid(id) || !m.pages[id].isHead {
			return got, fmt.Errorf("mem: list entry %d is not a block head", id)
		}
		if m.pages[id].prev != prev {
			return got, fmt.Errorf("mem: list entry %d has prev %d, want %d", id, m.pages[id].prev, prev)
		}
		if err := f(id); err != nil {
			return got, err
		}
		got++
		if got > len(m.pages) {
			return got, fmt.Errorf("mem: list loops")
		}
		prev = id
	}
	if l.tail != prev || got != l.n {
		return got, fmt.Errorf("mem: list has %d entries ending at %d, header says %d ending at %d", got, prev, l.n, l.tail)
	}
	return got, nil
}

// checkDMA checks every device's mappings.
func (m *Mem) checkDMA() error {
	for i, d := range m.dmas {
		live := 0
		for s := range d.slots {
			sl := &d.slots[s]
			if !sl.live {
				continue
			}
			live++
			if !m.Valid(sl.page) || !m.pages[sl.page].isHead || m.pages[sl.page].loc.free() {
				return fmt.Errorf("mem: DMA device %d maps page %d, which is not an allocated block", i, sl.page)
			}
		}
		chained := 0
		for h := range m.pages {
			for s := *d.first(PageID(h)); s >= 0; s = d.slots[s].next {
				if !d.slots[s].live || d.slots[s].page != PageID(h) {
					return fmt.Errorf("mem: DMA device %d: mapping %d is on page %d's chain", i, s, h)
				}
				chained++
				if chained > live {
					return fmt.Errorf("mem: DMA device %d: page chains loop", i)
				}
			}
		}
		if live != d.stats.Live || chained != live {
			return fmt.Errorf("mem: DMA device %d has %d live mappings, %d chained, counter says %d", i, live, chained, d.stats.Live)
		}
	}
	return nil
}
