package mem

import (
	"fmt"
	"math"

	"ringlab/engine/sim"
)

// FragPageOrder is SKB_FRAG_PAGE_ORDER (net/core/sock.c): get_order(32768),
// the order skb_page_frag_refill asks for first.
const FragPageOrder = 3

// FragPageSize is the size of an order-FragPageOrder block, 32 KiB.
const FragPageSize = PageSize << FragPageOrder

// Frag is struct page_frag {page, offset, size} filled by
// skb_page_frag_refill (net/core/sock.c), as virtio_net's receive queues
// use it (rq->alloc_frag, add_recvbuf_small and add_recvbuf_mergeable
// until page_pool took over in 2026): every buffer carved from the block
// takes its own reference with get_page, an atomic on the compound head's
// refcount line; the frag holds one more reference of its own, taken when
// the block was allocated. The refill reads page_ref_count for every
// buffer and, when it is 1 (every buffer has been freed, wherever that
// happened), starts the block again at offset 0. Otherwise a buffer that
// does not fit makes it drop its own reference (put_page) and allocate a
// new block: order 3 with __GFP_COMP | __GFP_NOWARN | __GFP_NORETRY and
// no direct reclaim, falling back to one order-0 page. The old block is
// freed by whoever drops its last buffer reference (put_page from
// skb_release_data, page_frag_free): with a cpumap that is the remote CPU,
// which writes the same struct page line CPU 0's get_page writes
// (cpu_map_kthread_run prefetches it for exactly that reason).
//
// The kernel has a second page fragment allocator, struct page_frag_cache
// (page_frag_alloc: napi_alloc_frag and netdev_alloc_frag for skb heads),
// which pays a block's references in advance (pagecnt_bias) and so takes
// no atomic per fragment, and reuses a block only when it is used up. The
// engine has no user of it: virtio_net uses struct page_frag, and the
// engine's copied skb heads (GOOD_COPY_LEN) are not pages.
//
// The block a Frag holds is in PageFrag with the frag's owner; it stays
// there until its last reference is dropped, even after the frag has moved
// on, since its buffers may be anywhere.
type Frag struct {
	m      *Mem
	page   PageID // the current block, NoPage none
	size   uint32 // PAGE_SIZE << order of the current block
	offset uint32 // next free byte
	owner  int

	stats FragStats
}

// FragStats are a Frag's counters.
type FragStats struct {
	Buffers   uint64 // references taken for buffers (get_page)
	Refills   uint64 // new blocks taken from the page allocator
	Fallbacks uint64 // refills that got order 0 because order 3 failed
	Reuses    uint64 // blocks started again at offset 0: page_ref_count was 1
	Fails     uint64 // refills that found no memory
}

// NewFrag returns an empty page_frag; owner (a queue id) is recorded with
// its blocks' location.
func (m *Mem) NewFrag(owner int) (*Frag, error) {
	if owner < -1 || owner > math.MaxInt16 {
		return nil, fmt.Errorf("mem: NewFrag: owner %d out of range", owner)
	}
	return &Frag{m: m, page: NoPage, owner: owner}, nil
}

// Refill is skb_page_frag_refill(sz, pfrag, gfp): it reports whether the
// frag now has a block with sz bytes free at Offset. sz must be at most
// PAGE_SIZE (the kernel's rule: an order-0 fallback must hold it); a
// larger sz, or 0, is refused. Costs c the read of the block's refcount
// line, plus put_page and the page allocator when it takes a new block.
func (f *Frag) Refill(c *sim.CPU, sz uint32) bool {
	if sz == 0 || sz > PageSize || f.m.checkCPU(c) != nil {
		f.stats.Fails++
		return false
	}
	if f.page != NoPage {
		p := &f.m.pages[f.page]
		f.m.touchRef(c, p)
		if p.refcount == 1 {
			// Only the frag's own reference is left: every buffer came
			// back, so the whole block is free to carve again.
			f.offset = 0
			f.stats.Reuses++
			return true
		}
		if uint64(f.offset)+uint64(sz) <= uint64(f.size) {
			return true
		}
		// Buffers still hold the block; they free it with their last put.
		if _, err := f.m.PutPage(c, f.page); err != nil {
			panic(fmt.Sprintf("mem: page_frag put of block %d: %v", f.page, err))
		}
		f.page = NoPage
	}
	f.offset = 0
	id, err := f.m.AllocPages(c, FragPageOrder, PageFrag, f.owner)
	if err != nil {
		if id, err = f.m.AllocPages(c, 0, PageFrag, f.owner); err != nil {
			f.stats.Fails++
			return false
		}
		f.stats.Fallbacks++
	}
	f.page = id
	f.size = PageSize << f.m.pages[id].order
	f.stats.Refills++
	return true
}

// Take is what a driver does after a successful Refill: get_page on the
// block for a buffer of n bytes at the current offset, which it returns
// with the block, and offset += n. It costs c PageFragCarve and the
// get_page atomic (a transfer when another CPU wrote the line last). The
// caller must have refilled for at least n bytes.
func (f *Frag) Take(c *sim.CPU, n uint32) (PageID, uint32) {
	if f.page == NoPage || uint64(f.offset)+uint64(n) > uint64(f.size) {
		panic(fmt.Sprintf("mem: page_frag take of %d bytes at offset %d of a %d-byte block %d without a refill", n, f.offset, f.size, f.page))
	}
	c.Charge(sim.SymVirtnetRqAlloc, c.Costs().PageFragCarve)
	if err := f.m.GetPage(c, f.page); err != nil {
		panic(fmt.Sprintf("mem: page_frag get_page of block %d: %v", f.page, err))
	}
	off := f.offset
	f.offset += n
	f.stats.Buffers++
	return f.page, off
}

// Alloc is add_recvbuf_small's and add_recvbuf_mergeable's use of the
// frag until 6.5: skb_page_frag_refill(size), then get_page and offset +=
// size. ok is false when the refill failed.
func (f *Frag) Alloc(c *sim.CPU, size uint32) (page PageID, offset uint32, ok bool) {
	if !f.Refill(c, size) {
		return NoPage, 0, false
	}
	page, offset = f.Take(c, size)
	return page, offset, true
}

// Reserve moves the offset of a block the frag just started (Offset 0)
// past n bytes that no buffer takes: virtnet_rq_alloc puts its struct
// virtnet_rq_dma there (6.6+).
func (f *Frag) Reserve(n uint32) {
	if f.page == NoPage || f.offset != 0 || n > f.size {
		panic(fmt.Sprintf("mem: page_frag reserve of %d bytes at offset %d of block %d", n, f.offset, f.page))
	}
	f.offset = n
}

// Remaining is the free space left in the current block, in bytes (0 with
// no block).
func (f *Frag) Remaining() uint32 {
	if f.page == NoPage {
		return 0
	}
	return f.size - min(f.offset, f.size)
}

// Hole applies virtio_net's add_recvbuf_mergeable rule after a buffer was
// carved: when the space left is smaller than next (the size the next
// buffer will need), the rest of the block is consumed and its size
// returned; the driver adds it to this buffer's length unless it reserves
// XDP headroom (then the hole is simply lost). Otherwise it returns 0.
func (f *Frag) Hole(next uint32) uint32 {
	hole := f.Remaining()
	if hole >= next {
		return 0
	}
	f.offset = f.size
	return hole
}

// Page is the block the frag carves from, NoPage none.
func (f *Frag) Page() PageID { return f.page }

// Offset is the offset of the next buffer in the current block.
func (f *Frag) Offset() uint32 { return f.offset }

// Size is the size of the current block in bytes (0 with none).
func (f *Frag) Size() uint32 {
	if f.page == NoPage {
		return 0
	}
	return f.size
}

// Stats returns the frag's counters.
func (f *Frag) Stats() FragStats { return f.stats }

// Drain is free_receive_page_frags: the frag drops its own reference and
// forgets the block, which is freed now when no buffer holds it.
func (f *Frag) Drain(c *sim.CPU) error {
	if f.page == NoPage {
		return nil
	}
	if err := f.m.checkCPU(c); err != nil {
		return err
	}
	h := f.page
	f.page = NoPage
	f.offset, f.size = 0, 0
	_, err := f.m.PutPage(c, h)
	return err
}
