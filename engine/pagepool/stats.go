package pagepool

import (
	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// AllocStats is struct page_pool_alloc_stats.
type AllocStats struct {
	Fast          uint64 // popped from the alloc cache
	Slow          uint64 // order-0 bulk allocations from the page allocator
	SlowHighOrder uint64 // higher-order allocations from the page allocator
	Empty         uint64 // refills that found the ptr_ring empty
	Refill        uint64 // refills of the cache from the ptr_ring
	Waive         uint64 // pages from another NUMA node released during a refill
}

// RecycleStats is struct page_pool_recycle_stats.
type RecycleStats struct {
	Cached         uint64 // recycled into the alloc cache
	CacheFull      uint64 // direct recycles that found the cache full
	Ring           uint64 // recycled into the ptr_ring
	RingFull       uint64 // puts (or bulks) that found the ring full and released pages
	ReleasedRefcnt uint64 // pages released because someone else held a reference
}

// Stat is one named counter.
type Stat struct {
	Name  string
	Value uint64
}

// NumStats is the number of ethtool page_pool counters.
const NumStats = 11

// StatNames are the ethtool names (pp_stats[],
// page_pool_ethtool_stats_get_strings), in the kernel's order. Read only.
var StatNames = [NumStats]string{
	"rx_pp_alloc_fast",
	"rx_pp_alloc_slow",
	"rx_pp_alloc_slow_ho",
	"rx_pp_alloc_empty",
	"rx_pp_alloc_refill",
	"rx_pp_alloc_waive",
	"rx_pp_recycle_cached",
	"rx_pp_recycle_cache_full",
	"rx_pp_recycle_ring",
	"rx_pp_recycle_ring_full",
	"rx_pp_recycle_released_ref",
}

// Stats returns the counters as ethtool lists them
// (page_pool_ethtool_stats_get), in StatNames order.
func (p *Pool) Stats() [NumStats]Stat {
	a, r := p.alloc, p.recycle
	v := [NumStats]uint64{a.Fast, a.Slow, a.SlowHighOrder, a.Empty, a.Refill, a.Waive,
		r.Cached, r.CacheFull, r.Ring, r.RingFull, r.ReleasedRefcnt}
	var out [NumStats]Stat
	for i := range out {
		out[i] = Stat{StatNames[i], v[i]}
	}
	return out
}

// AllocStats returns the allocation counters.
func (p *Pool) AllocStats() AllocStats { return p.alloc }

// RecycleStats returns the recycling counters.
func (p *Pool) RecycleStats() RecycleStats { return p.recycle }

// Info is what netlink's page-pool-get reports for a pool.
type Info struct {
	ID          int32    // id
	Ifindex     int      // ifindex, 0 none
	NAPIID      uint32   // napi-id, 0 none
	Inflight    int64    // inflight: pages not yet returned to the page allocator
	InflightMem int64    // inflight-mem: the same in bytes
	Detached    bool     // whether detach-time is present
	DetachTime  sim.Time // detach-time (the kernel reports seconds since boot)
	DMAMapped   int      // pages still DMA-mapped by the pool
}

// Info returns the pool's netlink attributes.
func (p *Pool) Info() Info {
	inflight := max(p.Inflight(), 0) // page_pool_inflight(pool, false)
	return Info{
		ID:          p.id,
		Ifindex:     p.p.Ifindex,
		NAPIID:      p.p.NAPIID,
		Inflight:    inflight,
		InflightMem: inflight * (int64(mem.PageSize) << p.p.Order),
		Detached:    p.state != Active,
		DetachTime:  p.detachTime,
		DMAMapped:   p.dmaMapped,
	}
}
