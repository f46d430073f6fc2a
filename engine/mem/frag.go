package mem

import (
	"fmt"
	"math"

	"ringlab/engine/sim"
)

// Page fragment cache geometry (include/linux/page_frag_cache.h).
const (
	FragCacheMaxOrder = 3                             // PAGE_FRAG_CACHE_MAX_ORDER: get_order(32768)
	FragCacheMaxSize  = PageSize << FragCacheMaxOrder // PAGE_FRAG_CACHE_MAX_SIZE, 32 KiB
	fragBias          = int32(FragCacheMaxSize) + 1   // pagecnt_bias after a refill
)

// FragCache is struct page_frag_cache (mm/page_frag_cache.c): it carves
// buffers out of one order-3 (32 KiB) compound page, or an order-0 page
// when order 3 is not available, and starts a new page when a buffer does
// not fit. Each buffer holds one page reference, paid for in advance: a
// refill adds FragCacheMaxSize references at once and the cache counts
// down its own share (pagecnt_bias), so carving needs no atomic.
//
// virtio_net's mergeable receive (before page_pool) carves from a
// per-queue struct page_frag with skb_page_frag_refill, which takes a
// get_page per buffer instead of the bias; pages live and die the same
// way, the bias only saves the atomics.
//
// The page a cache holds is in PageFrag with the cache's owner; it stays
// there until its last reference is dropped (page_frag_free is PutPage),
// even after the cache has moved on, since its buffers may be anywhere.
type FragCache struct {
	m      *Mem
	page   PageID // encoded_page: the current page, NoPage none
	size   uint32 // PAGE_SIZE << order of the current page
	offset uint32 // next free byte
	bias   int32  // pagecnt_bias: references the cache still holds
	owner  int

	stats FragStats
}

// FragStats are a FragCache's counters.
type FragStats struct {
	Allocs    uint64 // buffers carved
	Refills   uint64 // new pages taken from the page allocator
	Fallbacks uint64 // refills that got order 0 because order 3 failed
	Reuses    uint64 // full pages reused in place: every buffer had come back
	Fails     uint64 // allocations that returned nothing
}

// NewFragCache returns an empty cache; owner (a CPU or queue id) is
// recorded with its pages' location.
func (m *Mem) NewFragCache(owner int) (*FragCache, error) {
	if owner < -1 || owner > math.MaxInt16 {
		return nil, fmt.Errorf("mem: NewFragCache: owner %d out of range", owner)
	}
	return &FragCache{m: m, page: NoPage, owner: owner}, nil
}

// Alloc is __page_frag_alloc_align: size bytes at an offset aligned to
// align (a power of two; 0 means 1) in the cache's page. ok is false when
// memory ran out, or when size is larger than PAGE_SIZE and does not fit
// the current page, or when the arguments are unusable (align not a power
// of two, size 0). Costs c PageFragCarve, plus an atomic when a full page
// is checked for reuse, plus the page allocator on a refill.
func (f *FragCache) Alloc(c *sim.CPU, size, align uint32) (page PageID, offset uint32, ok bool) {
	if align == 0 {
		align = 1
	}
	if size == 0 || align&(align-1) != 0 || align > FragCacheMaxSize || f.m.checkCPU(c) != nil {
		f.stats.Fails++
		return NoPage, 0, false
	}
	c.Spend(c.Costs().PageFragCarve)
	if f.page == NoPage {
		if !f.refill(c) {
			f.stats.Fails++
			return NoPage, 0, false
		}
	}
	off := (f.offset + align - 1) &^ (align - 1)
	if uint64(off)+uint64(size) > uint64(f.size) {
		if size > PageSize {
			// Too big for what the cache could get; keep the page.
			f.stats.Fails++
			return NoPage, 0, false
		}
		if !f.m.pageRefSubAndTest(c, f.page, f.bias) {
			// Buffers are still out: they own the old page now.
			f.page = NoPage
			if !f.refill(c) {
				f.stats.Fails++
				return NoPage, 0, false
			}
		} else {
			// Every buffer came back: reuse the page (set_page_count).
			f.m.pages[f.page].refcount = fragBias
			f.m.note(f.page)
			f.bias = fragBias
			f.stats.Reuses++
		}
		off = 0
	}
	f.bias--
	f.offset = off + size
	f.stats.Allocs++
	return f.page, off, true
}

// refill is __page_frag_cache_refill: an order-3 compound page, or order 0
// when that fails, with FragCacheMaxSize references added up front.
func (f *FragCache) refill(c *sim.CPU) bool {
	id, err := f.m.AllocPages(c, FragCacheMaxOrder, PageFrag, f.owner)
	if err != nil {
		id, err = f.m.AllocPages(c, 0, PageFrag, f.owner)
		if err != nil {
			return false
		}
		f.stats.Fallbacks++
	}
	f.page = id
	f.size = PageSize << f.m.pages[id].order
	f.m.pages[id].refcount += fragBias - 1 // page_ref_add(page, PAGE_FRAG_CACHE_MAX_SIZE)
	f.bias = fragBias
	f.offset = 0
	f.stats.Refills++
	return true
}

// Remaining is the free space left in the current page, in bytes (0 with
// no page).
func (f *FragCache) Remaining() uint32 {
	if f.page == NoPage {
		return 0
	}
	return f.size - min(f.offset, f.size)
}

// Hole applies virtio_net's add_recvbuf_mergeable rule after a buffer was
// carved: when the space left is smaller than next (the size the next
// buffer will need), the rest of the page is consumed and its size
// returned; the driver adds it to this buffer's length unless it reserves
// XDP headroom (then the hole is simply lost). Otherwise it returns 0.
func (f *FragCache) Hole(next uint32) uint32 {
	hole := f.Remaining()
	if hole >= next {
		return 0
	}
	f.offset = f.size
	return hole
}

// Page is the page the cache carves from, NoPage none.
func (f *FragCache) Page() PageID { return f.page }

// Offset is the offset of the next buffer in the current page.
func (f *FragCache) Offset() uint32 { return f.offset }

// Bias is pagecnt_bias: the page references the cache still holds.
func (f *FragCache) Bias() int32 { return f.bias }

// Stats returns the cache's counters.
func (f *FragCache) Stats() FragStats { return f.stats }

// Drain is page_frag_cache_drain: the cache drops its own references and
// forgets the page, which is freed now when no buffer holds it.
func (f *FragCache) Drain(c *sim.CPU) error {
	if f.page == NoPage {
		return nil
	}
	if err := f.m.checkCPU(c); err != nil {
		return err
	}
	h := f.page
	f.page = NoPage
	if f.m.pageRefSubAndTest(c, h, f.bias) {
		// The count is already 0: free without another decrement.
		f.m.freePages(c, h, false)
	}
	f.bias = 0
	return nil
}
