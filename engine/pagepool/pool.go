package pagepool

import (
	"errors"
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// State is a pool's life stage.
type State uint8

// The stages: a pool is Active until Destroy; Detached while pages it
// handed out are still in flight; Freed once every page came back.
const (
	Active State = iota
	Detached
	Freed
)

func (s State) String() string {
	switch s {
	case Active:
		return "active"
	case Detached:
		return "detached"
	case Freed:
		return "freed"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ErrDestroyed is returned by operations on a pool after Destroy that the
// kernel would never see (an allocation, a second destroy), and by puts to
// a pool that has been freed.
var ErrDestroyed = errors.New("pagepool: pool destroyed")

// ErrNotPoolPage is returned by a put of a page that is not in flight from
// the pool: not its page, already back in its cache or ring, or free.
var ErrNotPoolPage = errors.New("pagepool: page is not in flight from this pool")

// Context says in which context a put runs, as page_pool_napi_local asks
// (in_softirq() on the calling CPU).
type Context uint8

// The contexts.
const (
	// Process is task context, or bottom halves disabled outside softirq:
	// never allows direct recycling by itself.
	Process Context = iota
	// Softirq is softirq on the calling CPU (a NAPI poll, the skb free in
	// net_rx_action) where the caller's kernel asks page_pool_napi_local:
	// direct recycling is allowed on pool->cpuid or on the CPU whose poll
	// list holds the pool's NAPI.
	Softirq
)

// Registry is the machine's set of page_pools (the page_pools xarray that
// netlink lists), and the place where pools are created and where bulk
// puts find each page's pool.
type Registry struct {
	m      *mem.Mem
	byID   []*Pool // indexed by pool id; nil for ids of other registries
	list   []*Pool // creation order
	kernel Kernel
}

// Kernel is what page_pool itself does differently between the kernel
// versions the engine models, fixed for the pools a registry creates
// after SetKernel. The zero value is today's page_pool.
type Kernel struct {
	// LockedRefill: page_pool_refill_alloc_cache takes the ptr_ring's
	// consumer_lock around the refill, as the first page_pool did (its
	// comment: "the ring consumer lock is not really needed due to the
	// softirq/NAPI protection", kept to reclaim pages later); until 5.16,
	// removed by 07b17f0f7485 in 5.17.
	LockedRefill bool
}

// SetKernel sets the behaviours of the pools created from now on.
func (r *Registry) SetKernel(k Kernel) { r.kernel = k }

// NAPI is struct napi_struct reduced to what page_pool reads of it:
// list_owner, the CPU whose poll list holds the instance while it is
// scheduled (set by ____napi_schedule), -1 once napi_complete_done takes
// it off. Its driver owns it and keeps ListOwner current.
type NAPI struct {
	ListOwner int
}

// NewRegistry returns an empty registry over m.
func NewRegistry(m *mem.Mem) (*Registry, error) {
	if m == nil {
		return nil, errors.New("pagepool: NewRegistry: nil memory")
	}
	return &Registry{m: m}, nil
}

// Pool is struct page_pool. Pages come from and return to engine/mem;
// every page the pool holds or has handed out carries the pool's id and
// PP_SIGNATURE in its struct page, and hold_cnt - release_cnt always equals
// the number of such pages (Check). Costs are charged to the CPU passed in:
// PPCacheAlloc / PPCachePut for the alloc cache, PPRingPut / PPRingGet,
// the producer lock and the ring's cache lines for the ptr_ring, an atomic
// for a shared pp_ref_count, the DMA costs for mapping and syncing, and the
// page allocator's own costs on the slow path and on release.
type Pool struct {
	r  *Registry
	m  *mem.Mem
	id int32
	p  Params

	dmaMap  bool  // pool->dma_map
	dmaSync bool  // pool->dma_sync (cleared by page_pool_scrub)
	cpuid   int   // pool->cpuid: CPU allowed to recycle directly, -1 none
	napi    *NAPI // pool->p.napi, nil none

	lockedRefill bool // the refill takes the ptr_ring's consumer_lock (Kernel.LockedRefill)

	// alloc cache (struct pp_alloc_cache): a LIFO stack.
	cache [AllocCacheSize]mem.PageID
	count int
	bulk  [AllocCacheRefill]mem.PageID // alloc_pages_bulk's array

	ring PtrRing

	hold    uint64 // pages_state_hold_cnt
	release uint64 // pages_state_release_cnt

	// fragments (page_pool_alloc_frag)
	fragPage   mem.PageID
	fragOffset uint32
	fragUsers  int64
	fragMax    uint32 // PAGE_SIZE << order: a page's bytes (fixed at New)

	dmaIndex  uint32 // last dma_mapped xarray index handed out
	dmaMapped int    // pages in the dma_mapped xarray

	state      State
	destroyCnt int
	detachTime sim.Time
	deferWarn  sim.Time
	warnings   uint64

	alloc   AllocStats
	recycle RecycleStats
}

// New is page_pool_create: a pool with an empty cache and ring. The kernel's
// -EINVAL cases, and out-of-range engine fields, are errors wrapping
// ErrInvalid that name the field.
func (r *Registry) New(p Params) (*Pool, error) {
	if err := p.validate(r.m); err != nil {
		return nil, err
	}
	pool := &Pool{
		r: r, m: r.m, p: p,
		id:       r.m.NewPoolID(),
		dmaMap:   p.Flags&DMAMap != 0,
		dmaSync:  p.Flags&DMASyncDev != 0,
		cpuid:    p.CPUID,
		napi:     p.NAPI,
		fragPage: mem.NoPage,
		fragMax:  uint32(mem.PageSize) << p.Order,

		lockedRefill: r.kernel.LockedRefill,
	}
	pool.ring.init(fmt.Sprintf("page_pool %d", pool.id), p.ringSize())
	for int(pool.id) >= len(r.byID) {
		r.byID = append(r.byID, nil)
	}
	r.byID[pool.id] = pool
	r.list = append(r.list, pool)
	return pool, nil
}

// Lookup returns the pool with id, or nil.
func (r *Registry) Lookup(id int32) *Pool {
	if id < 0 || int(id) >= len(r.byID) {
		return nil
	}
	return r.byID[id]
}

// List appends the pools netlink would list (active and detached, not
// freed) to buf, in creation order.
func (r *Registry) List(buf []*Pool) []*Pool {
	for _, p := range r.list {
		if p.state != Freed {
			buf = append(buf, p)
		}
	}
	return buf
}

// Check runs every pool's Check.
func (r *Registry) Check() error {
	for _, p := range r.list {
		if err := p.Check(); err != nil {
			return err
		}
	}
	return nil
}

// ID is the pool's id (netlink id, Page.PP of its pages).
func (p *Pool) ID() int32 { return p.id }

// Params returns the parameters the pool was created with.
func (p *Pool) Params() Params { return p.p }

// State is the pool's life stage.
func (p *Pool) State() State { return p.state }

// HoldCnt is pages_state_hold_cnt: pages taken from the page allocator.
func (p *Pool) HoldCnt() uint64 { return p.hold }

// ReleaseCnt is pages_state_release_cnt: pages given back to it.
func (p *Pool) ReleaseCnt() uint64 { return p.release }

// Inflight is page_pool_inflight: pages the pool is responsible for
// (cache, ring, fragment page and pages out with users).
func (p *Pool) Inflight() int64 { return int64(p.hold - p.release) }

// CacheLen is the number of pages in the alloc cache.
func (p *Pool) CacheLen() int { return p.count }

// Ring is the pool's ptr_ring, for inspection.
func (p *Pool) Ring() *PtrRing { return &p.ring }

// FragPage is the page fragments are being carved from, NoPage none.
func (p *Pool) FragPage() mem.PageID { return p.fragPage }

// CPUID is pool->cpuid, -1 none.
func (p *Pool) CPUID() int { return p.cpuid }

// NAPI is pool->p.napi, nil none.
func (p *Pool) NAPI() *NAPI { return p.napi }

// SetCPUID writes pool->cpuid (-1: none), as the owner of a per-CPU pool
// does. It is refused after Destroy.
func (p *Pool) SetCPUID(cpu int) error {
	if p.state != Active {
		return ErrDestroyed
	}
	if cpu < -1 || cpu >= p.m.Sim().NumCPU() {
		return fmt.Errorf("pagepool: cpuid %d: want -1..%d", cpu, p.m.Sim().NumCPU()-1)
	}
	p.cpuid = cpu
	return nil
}

// SetNAPI is page_pool_enable_direct_recycling (n non-nil: link the pool
// to n) or page_pool_disable_direct_recycling (nil: unlink it, and clear
// cpuid). It is refused after Destroy.
func (p *Pool) SetNAPI(n *NAPI) error {
	if p.state != Active {
		return ErrDestroyed
	}
	if n == nil {
		p.cpuid = -1
	}
	p.napi = n
	return nil
}

// napiLocal is page_pool_napi_local (6.10; the same test as
// napi_pp_put_page's from 6.5): in softirq on pool->cpuid, or on the CPU
// whose poll list holds the pool's NAPI (list_owner, -1 while that NAPI is
// not scheduled). Whether a put asks at all depends on the kernel and on
// who puts (an skb free, an xdp_frame return): the caller decides, and
// passes Process when it does not.
func (p *Pool) napiLocal(c *sim.CPU, ctx Context) bool {
	if ctx != Softirq {
		return false
	}
	if p.cpuid >= 0 && c.ID == p.cpuid {
		return true
	}
	return p.napi != nil && p.napi.ListOwner == c.ID
}

// move relocates a page the pool owns; the page is always allocated here,
// so an error is a broken invariant.
func (p *Pool) move(id mem.PageID, to mem.Loc, owner int) {
	if err := p.m.Move(id, to, owner); err != nil {
		p.broken(err)
	}
}

// broken panics on a broken internal invariant. It is kept out of line so
// that the small functions that call it stay cheap to call or inline.
//
//go:noinline
func (p *Pool) broken(what any) {
	panic(fmt.Sprintf("pagepool %d: %v", p.id, what))
}
