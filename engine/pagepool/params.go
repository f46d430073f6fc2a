package pagepool

import (
	"errors"
	"fmt"
	"math"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// Flags are the PP_FLAG_* creation flags.
type Flags uint32

// The flags page_pool_init accepts.
const (
	DMAMap     Flags = 1 << 0 // PP_FLAG_DMA_MAP: the pool maps pages once and keeps them mapped
	DMASyncDev Flags = 1 << 1 // PP_FLAG_DMA_SYNC_DEV: sync for device on recycle (needs DMAMap)
	flagsAll         = DMAMap | DMASyncDev
)

// Constants of include/net/page_pool/types.h and net/core/page_pool.c.
const (
	AllocCacheSize   = 128   // PP_ALLOC_CACHE_SIZE: the alloc cache's depth
	AllocCacheRefill = 64    // PP_ALLOC_CACHE_REFILL: pages per refill and per bulk allocation
	RingDefault      = 1024  // ptr_ring size when pool_size is 0
	RingMax          = 16384 // pool_size cap in page_pool_init
	BulkMax          = 16    // XDP_BULK_QUEUE_SIZE: pages per page_pool_put_netmem_bulk
	// BiasMax is BIAS_MAX (LONG_MAX >> 1): the pp_ref_count a fragmented
	// page starts with.
	BiasMax = math.MaxInt64 >> 1
	// Signature is PP_SIGNATURE (POISON_POINTER_DELTA + 0x40 on x86-64),
	// written into pp_magic while the pool owns a page.
	Signature uint64 = 0xdead000000000000 + 0x40
	// SyncFull is a dma_sync_size of -1: sync max_len.
	SyncFull = ^uint32(0)
	// NoNode is NUMA_NO_NODE: allocate on, and refill for, the node of the
	// CPU running the pool.
	NoNode = -1
	// DeferTime is how often a detached pool retries its release.
	DeferTime = sim.Second
	// DeferWarnInterval is how often a stalled shutdown is reported.
	DeferWarnInterval = 60 * sim.Second
)

// Params is struct page_pool_params (and page_pool_create_percpu's cpuid),
// with the links the engine models in its own terms: a NAPI reduced to its
// list_owner, a mem.DMA instead of a struct device.
type Params struct {
	Order    int   // page order: 0 for single pages
	PoolSize int   // ptr_ring size; 0 means RingDefault, capped at RingMax
	Flags    Flags // DMAMap, DMASyncDev
	// CPUID is pool->cpuid (page_pool_create_percpu, 6.9+): a put in
	// softirq on this CPU may recycle into the alloc cache. -1: none, as
	// for every pool a driver creates with page_pool_create.
	CPUID int
	// NAPI is p.napi, the NAPI instance that is the pool's sole consumer
	// (6.5+): a put in softirq on the CPU whose poll list holds it may
	// recycle into the alloc cache. nil: no NAPI link.
	NAPI    *NAPI
	NAPIID  uint32   // netlink napi-id, 0 none
	Ifindex int      // netdev the pool is listed under (netlink ifindex), 0 none
	MaxLen  uint32   // bytes synced for device on recycle (p.max_len)
	Offset  uint32   // offset of the DMA area in the page (p.offset)
	NID     int      // NUMA node to allocate from and refill for; NoNode for the CPU's
	DMA     *mem.DMA // the device (p.dev); required with DMAMap
}

// ErrInvalid is -EINVAL from page_pool_create: the parameters are refused.
var ErrInvalid = errors.New("pagepool: invalid argument (EINVAL)")

// validate is page_pool_init's checks, plus the engine's own range checks
// on the fields it models as numbers. Every error wraps ErrInvalid and
// names the field.
func (p *Params) validate(m *mem.Mem) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("pagepool: Params.%s: %s: %w", field, fmt.Sprintf(format, args...), ErrInvalid)
	}
	if p.Flags&^flagsAll != 0 {
		return bad("Flags", "unknown flags %#x", uint32(p.Flags&^flagsAll))
	}
	if p.PoolSize < 0 {
		return bad("PoolSize", "%d is negative", p.PoolSize)
	}
	if p.Flags&DMAMap != 0 && p.DMA == nil {
		return bad("DMA", "DMAMap without a device")
	}
	if p.Flags&DMASyncDev != 0 {
		if p.Flags&DMAMap == 0 {
			return bad("Flags", "DMASyncDev needs DMAMap")
		}
		if p.MaxLen == 0 {
			return bad("MaxLen", "0 with DMASyncDev")
		}
		if uint64(p.Offset)+uint64(p.MaxLen) > uint64(mem.PageSize)<<max(p.Order, 0) {
			return bad("MaxLen", "offset %d + max_len %d is past the page", p.Offset, p.MaxLen)
		}
	}
	if p.Order < 0 || p.Order > m.MaxOrder() {
		return bad("Order", "%d: want 0..%d (MAX_PAGE_ORDER)", p.Order, m.MaxOrder())
	}
	if p.CPUID < -1 || p.CPUID >= m.Sim().NumCPU() {
		return bad("CPUID", "%d: want -1..%d", p.CPUID, m.Sim().NumCPU()-1)
	}
	if p.NID < NoNode || p.NID >= m.Nodes() {
		return bad("NID", "%d: want -1..%d", p.NID, m.Nodes()-1)
	}
	if p.Ifindex < 0 {
		return bad("Ifindex", "%d is negative", p.Ifindex)
	}
	return nil
}

// ringSize is page_pool_init's ptr_ring size.
func (p *Params) ringSize() int {
	if p.PoolSize == 0 {
		return RingDefault
	}
	return min(p.PoolSize, RingMax)
}
