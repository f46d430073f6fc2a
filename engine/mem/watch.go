package mem

import "fmt"

// Watching: an invariant checker that runs after every event asks the
// memory which blocks the event touched, instead of walking every page.
// While watching is off (the default) the only cost on the paths below is
// one predictable branch on a field of Mem that they already load.

// Watch turns the record of touched blocks on or off and empties it.
// While on, every block whose location, owner, reference count or DMA
// mappings change is appended to the record (possibly more than once).
func (m *Mem) Watch(on bool) {
	m.watching = on
	m.touched = m.touched[:0]
}

// Touched appends the heads recorded since the last call to buf, empties
// the record and returns buf. A head may appear more than once, and may
// have become a tail since (merged into a free buddy).
func (m *Mem) Touched(buf []PageID) []PageID {
	buf = append(buf, m.touched...)
	m.touched = m.touched[:0]
	return buf
}

// Note records that a caller changed fields of the struct page of id's
// block that the memory does not write itself (page_pool's mark, for
// one), so a watcher checks the block after the event.
func (m *Mem) Note(id PageID) {
	if h := m.Head(id); h != NoPage {
		m.note(h)
	}
}

// note records head h as touched while watching.
func (m *Mem) note(h PageID) {
	if m.watching {
		m.touched = append(m.touched, h)
	}
}

// CheckCounts checks in O(MaxOrder * CPUs) that the counters kept beside
// the lists agree: the zone's free lists hold counts[Buddy] base pages
// (__add_to_free_list and __del_page_from_free_list move nr_free with the
// list), each CPU's pcp lists hold its pcp->count (free_unref_page_commit
// and __rmqueue_pcplist move count with the list), the CPUs' counts add up
// to counts[PCP], and the locations add up to every page.
func (m *Mem) CheckCounts() error {
	var free int64
	for k := 0; k <= m.maxOrder; k++ {
		free += int64(m.zone.free[k].n) << k
	}
	if free != m.counts[Buddy] {
		return fmt.Errorf("mem: the zone's free lists hold %d pages, buddy counts %d", free, m.counts[Buddy])
	}
	var pcps int64
	for cpu := range m.pcp {
		pc := &m.pcp[cpu]
		n := 0
		for k := range pc.lists {
			n += pc.lists[k].n << k
		}
		if n != pc.count {
			return fmt.Errorf("mem: CPU %d's pcp lists hold %d pages, its count says %d", cpu, n, pc.count)
		}
		pcps += int64(pc.count)
	}
	if pcps != m.counts[PCP] {
		return fmt.Errorf("mem: the pcp counts add up to %d pages, pcp counts %d", pcps, m.counts[PCP])
	}
	var total int64
	for _, n := range m.counts {
		total += n
	}
	if total != int64(len(m.pages)) {
		return fmt.Errorf("mem: locations hold %d pages of %d", total, len(m.pages))
	}
	return nil
}

// CheckBlock checks one block head in O(MaxOrder + its DMA mappings): it is
// aligned to its order and has a location; a free block (buddy or pcp) has
// refcount 0, no page_pool mark, no DMA address and no mapping
// (free_pages_prepare's bad-page checks: page_expected_state), and a pcp
// block is on an existing CPU with an order that has a pcp list
// (pcp_allowed_order); an allocated block has refcount >= 1 (a block is
// freed when its last reference goes: put_page_testzero); the page_pool
// mark and pool id go together (page_pool_set_pp_info and
// page_pool_clear_pp_info write both); every DMA mapping chained on the
// page is live and maps this page. A page that is no longer a head (merged
// into a free buddy) must be a tail of a free block.
func (m *Mem) CheckBlock(h PageID) error {
	if !m.Valid(h) {
		return fmt.Errorf("mem: block %d out of range", h)
	}
	p := &m.pages[h]
	if !p.isHead {
		hd := m.Head(h)
		if !m.pages[hd].loc.free() {
			return fmt.Errorf("mem: page %d is a tail of block %d, which is %v", h, hd, m.pages[hd].loc)
		}
		return nil
	}
	k := int(p.order)
	if k > m.maxOrder || h&(PageID(1)<<k-1) != 0 || int(h)+1<<k > len(m.pages) {
		return fmt.Errorf("mem: block %d of order %d is misaligned or past the end", h, k)
	}
	if !p.loc.Valid() {
		return fmt.Errorf("mem: block %d has no location (%v)", h, p.loc)
	}
	if p.loc == PCP && (int(p.owner) < 0 || int(p.owner) >= len(m.pcp) || k > CostlyOrder) {
		return fmt.Errorf("mem: block %d of order %d is on the pcp of CPU %d", h, k, p.owner)
	}
	if err := m.checkBlockState(h); err != nil {
		return err
	}
	for i, d := range m.dmas {
		n := 0
		for s := *d.first(h); s >= 0; s = d.slots[s].next {
			if !d.slots[s].live || d.slots[s].page != h {
				return fmt.Errorf("mem: DMA device %d: mapping %d is on page %d's chain", i, s, h)
			}
			if n++; n > d.stats.Live {
				return fmt.Errorf("mem: DMA device %d: page %d's chain loops", i, h)
			}
		}
	}
	return nil
}
