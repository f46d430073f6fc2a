package mem

import "ringlab/engine/sim"

// PageID is a page frame number: the index of a struct page in the
// machine's page array.
type PageID int32

// NoPage is the null page (NULL struct page *).
const NoPage PageID = -1

// Page geometry (x86-64).
const (
	PageShift = 12             // PAGE_SHIFT
	PageSize  = 1 << PageShift // PAGE_SIZE, bytes
	// CostlyOrder is PAGE_ALLOC_COSTLY_ORDER: orders up to it have per-CPU
	// lists (pcp_allowed_order).
	CostlyOrder = 3
	// MaxPageOrder is the largest MAX_PAGE_ORDER accepted (the kernel's
	// default on x86-64).
	MaxPageOrder = 10
)

// HistoryLen is how many of a page's last moves Mem.History returns.
const HistoryLen = 4

// Move is one change of location of a page block, for inspection.
type Move struct {
	At    sim.Time // event time of the move
	From  Loc
	To    Loc
	Owner int16 // owner in the new location (CPU, pool id, queue), -1 none
}

// Page is struct page. The fields the page allocator owns (order, refcount,
// location, list links) are private and change only through Mem; the
// page_pool fields are exported because page_pool writes them, as the
// kernel's page_pool writes its union in struct page.
//
// Only the head page of a block carries the block's state; a tail page's
// head is found from alignment (Mem.Head), as compound_head() finds it.
type Page struct {
	// page_pool's part of struct page (netmem_desc).
	PPMagic  uint64 // pp_magic: PP_SIGNATURE while a page_pool owns the page, else 0
	PPRef    int64  // pp_ref_count: page_pool references (fragments, BIAS_MAX)
	DMAAddr  uint64 // dma_addr stored by page_pool_dma_map, 0 none
	PP       int32  // pp: id of the owning page_pool, -1 none
	DMAIndex uint32 // index in the pool's dma_mapped xarray, 0 untracked

	// Private is page->private: virtio_net big mode chains pages through it
	// (the next page of a chain, NoPage at the end).
	Private PageID

	refcount int32  // _refcount
	next     PageID // free list / pcp list link (lru, buddy_list, pcp_list)
	prev     PageID
	owner    int16 // owner within loc (CPU for PCP, pool id, queue...), -1 none
	order    uint8 // order of the block this page heads
	loc      Loc   // location of the block this page heads; locTail on tails
	isHead   bool  // first page of a block (free or allocated)
	nid      uint8 // NUMA node
	// allocCPU is the CPU whose alloc_pages handed the block out
	// (prep_new_page); a free on another CPU is a remote free.
	allocCPU uint8

	line sim.CacheLine // the struct page's cache line
	// dmaFirst is the first live mapping of this head on the memory's
	// first DMA device (DMA.first), -1 none. It fills the 64 bytes of a
	// struct page: one cache line of the host's for each, as the kernel's
	// own struct page is one line. Where a page has been is in the
	// memory's move log (Mem.record), not here.
	dmaFirst int32
}

// RefCount is page_ref_count: the page's _refcount.
func (p *Page) RefCount() int32 { return p.refcount }

// Order is the order of the block the page heads (0 for a tail).
func (p *Page) Order() int { return int(p.order) }

// IsHead reports whether the page is the first page of a block.
func (p *Page) IsHead() bool { return p.isHead }

// NID is the NUMA node the page belongs to (page_to_nid).
func (p *Page) NID() int { return int(p.nid) }

// LastCPU is the CPU that touched the page's struct page last, or -1.
func (p *Page) LastCPU() int { return p.line.Owner() }

// Loc is where the block this page heads is; meaningful on a head only
// (Mem.Loc resolves any page).
func (p *Page) Loc() Loc { return p.loc }

// Touch is Mem.Touch on a head page the caller already holds: it charges c
// for the struct page's cache line when another CPU touched it last and
// reports whether the line moved; the transfer is charged to sym.
func (p *Page) Touch(c *sim.CPU, sym sim.Sym) bool { return p.line.Touch(c, sym) }

// allocCPU holds a CPU id in a byte.
var _ = [1]struct{}{}[sim.MaxCPUs>>8]
