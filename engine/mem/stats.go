package mem

import "ringlab/engine/sim"

// Stats are the page allocator's counters.
type Stats struct {
	Allocs      uint64        // blocks handed out, bulk included
	Frees       uint64        // blocks freed
	RemoteFrees uint64        // frees on a CPU other than the one that allocated the block
	BulkAllocs  uint64        // alloc_pages_bulk calls
	BulkPages   uint64        // pages those calls returned
	AllocFail   uint64        // allocations that found no memory
	PCPRefills  uint64        // rmqueue_bulk calls: a per-CPU list was empty
	PCPDrains   uint64        // free_pcppages_bulk calls: a per-CPU list reached high, or free_high
	Splits      uint64        // buddy blocks split in two (expand)
	Merges      uint64        // buddy pairs merged (__free_one_page)
	ZoneLock    sim.LockStats // zone->lock acquisitions, contended acquisitions, wait
	// FreeHighDrains counts the drains free_high made: a high-order free
	// on a CPU that frees without allocating (Config.FreeHigh).
	FreeHighDrains uint64
	// RefTransfers counts the times a CPU pulled a block's refcount line
	// (the struct page of its head) that another CPU wrote last: get_page,
	// put_page and page_ref_count.
	RefTransfers uint64
}

// Stats returns the counters.
func (m *Mem) Stats() Stats {
	s := m.stats
	s.ZoneLock = m.zone.lock.Stats()
	return s
}
