package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// TestSlowPathCountsOncePer64: an empty pool bulk-allocates 64 pages, counts
// one slow allocation and one empty refill, then serves 63 from the cache.
func TestSlowPathCountsOncePer64(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{PoolSize: 256, CPUID: 0})
	type want struct{ fast, slow, empty, hold uint64 }
	steps := []struct {
		name   string
		allocs int
		want   want
	}{
		{"first alloc goes to the page allocator", 1, want{0, 1, 1, 64}},
		{"63 from the cache", 63, want{63, 1, 1, 64}},
		{"cache and ring empty again", 1, want{63, 2, 2, 128}},
		{"and 63 more", 63, want{126, 2, 2, 128}},
	}
	for _, st := range steps {
		for range st.allocs {
			e.alloc(t, p, 0)
			e.verify(t, p)
		}
		s := stats(p)
		assert.Equal(t, st.want.fast, s["rx_pp_alloc_fast"], st.name)
		assert.Equal(t, st.want.slow, s["rx_pp_alloc_slow"], st.name)
		assert.Equal(t, st.want.empty, s["rx_pp_alloc_empty"], st.name)
		assert.Equal(t, st.want.hold, p.HoldCnt(), st.name)
	}
	assert.Equal(t, uint64(2), e.m.Stats().BulkAllocs)
}

// TestSlowHighOrder: order > 0 allocates one page per slow path.
func TestSlowHighOrder(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{Order: 2, CPUID: 0})
	for range 3 {
		id := e.alloc(t, p, 0)
		assert.Equal(t, 2, e.m.Page(id).Order())
		e.verify(t, p)
	}
	s := stats(p)
	assert.Equal(t, uint64(3), s["rx_pp_alloc_slow_ho"])
	assert.Equal(t, uint64(0), s["rx_pp_alloc_slow"])
	assert.Equal(t, uint64(3), p.HoldCnt())
	assert.Equal(t, int64(3*4*4096), p.Info().InflightMem)
}

// TestRefillCountedOncePer64: 128 pages in the ring come back 64 per
// refill, one refill counted each time.
func TestRefillCountedOncePer64(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{PoolSize: 256, CPUID: 0})
	var ids []mem.PageID
	for range 128 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for _, id := range ids {
		e.put(t, p, 1, id, false, pagepool.Softirq)
	}
	e.verify(t, p)
	require.Equal(t, 128, p.Ring().Len())
	base := stats(p)
	for i := range 128 {
		e.alloc(t, p, 0)
		e.verify(t, p)
		s := stats(p)
		assert.Equal(t, uint64(i/64+1), s["rx_pp_alloc_refill"]-base["rx_pp_alloc_refill"], "alloc %d", i)
	}
	s := stats(p)
	assert.Equal(t, uint64(126), s["rx_pp_alloc_fast"]-base["rx_pp_alloc_fast"])
	assert.Equal(t, base["rx_pp_alloc_slow"], s["rx_pp_alloc_slow"], "no page allocator on the way")
	assert.Equal(t, uint64(128), p.HoldCnt())
}

// TestCacheFullAt128: direct recycling fills the cache to 128; the 129th
// page counts cache_full and falls through to the ring.
func TestCacheFullAt128(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{PoolSize: 256, CPUID: 0})
	var ids []mem.PageID
	for range 129 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	// The last bulk left 63 in the cache: allocate them too.
	for p.CacheLen() > 0 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for i, id := range ids[:129] {
		require.NoError(t, p.RecycleDirect(e.s.CPU(0), id))
		e.drop(id)
		e.verify(t, p)
		s := stats(p)
		if i < 128 {
			assert.Equal(t, uint64(i+1), s["rx_pp_recycle_cached"])
			assert.Zero(t, s["rx_pp_recycle_cache_full"])
		}
	}
	s := stats(p)
	assert.Equal(t, 128, p.CacheLen())
	assert.Equal(t, uint64(128), s["rx_pp_recycle_cached"])
	assert.Equal(t, uint64(1), s["rx_pp_recycle_cache_full"])
	assert.Equal(t, uint64(1), s["rx_pp_recycle_ring"])
	assert.Equal(t, 1, p.Ring().Len())
}

// TestReleasedRefcntWhenShared: a page someone else also holds (refcount
// 2) leaves the pool on its last pp reference; the other holder frees it.
func TestReleasedRefcntWhenShared(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{Flags: pagepool.DMAMap, DMA: e.dma, CPUID: 0})
	c := e.s.CPU(0)
	id := e.alloc(t, p, 0)
	require.NoError(t, e.m.GetPage(c, id)) // e.g. an skb clone holding the page
	require.NoError(t, e.m.Move(id, mem.SKB, 0))
	e.put(t, p, 0, id, true, pagepool.Softirq)
	e.verify(t, p)
	s := stats(p)
	assert.Equal(t, uint64(1), s["rx_pp_recycle_released_ref"])
	assert.Zero(t, s["rx_pp_recycle_cached"])
	assert.Equal(t, uint64(1), p.ReleaseCnt())
	pg := e.m.Page(id)
	assert.Equal(t, int32(-1), pg.PP)
	assert.Zero(t, pg.DMAAddr)
	assert.Zero(t, e.dma.Live(id), "released pages are unmapped")
	assert.Equal(t, int32(1), pg.RefCount())
	loc, _ := e.m.Loc(id)
	assert.Equal(t, mem.SKB, loc, "the other holder still has it")
	freed, err := e.m.PutPage(c, id)
	require.NoError(t, err)
	assert.True(t, freed)
	e.verify(t, p)
}

// TestDirectRecyclingContext is page_pool_napi_local: only softirq on the
// pool's NAPI CPU, or an explicit allow_direct, reaches the cache.
func TestDirectRecyclingContext(t *testing.T) {
	tests := []struct {
		name   string
		cpu    int
		direct bool
		ctx    pagepool.Context
		cached bool
	}{
		{"softirq on the NAPI CPU", 0, false, pagepool.Softirq, true},
		{"process context on the NAPI CPU", 0, false, pagepool.Process, false},
		{"softirq on another CPU", 1, false, pagepool.Softirq, false},
		{"caller allows direct", 1, true, pagepool.Process, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, smallMem())
			p := e.pool(t, pagepool.Params{CPUID: 0})
			id := e.alloc(t, p, 0)
			cache := p.CacheLen()
			e.put(t, p, tt.cpu, id, tt.direct, tt.ctx)
			e.verify(t, p)
			loc, _ := e.m.Loc(id)
			if tt.cached {
				assert.Equal(t, mem.PoolCache, loc)
				assert.Equal(t, cache+1, p.CacheLen())
			} else {
				assert.Equal(t, mem.PoolRing, loc)
				assert.Equal(t, 1, p.Ring().Len())
			}
		})
	}
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: -1})
	id := e.alloc(t, p, 0)
	e.put(t, p, 0, id, false, pagepool.Softirq)
	assert.Equal(t, 1, p.Ring().Len(), "no NAPI link, no direct recycling")
	require.NoError(t, p.SetCPUID(1))
	id = e.alloc(t, p, 1)
	e.put(t, p, 1, id, false, pagepool.Softirq)
	assert.Equal(t, 1, p.Ring().Len(), "after cpuid moved to CPU 1")
	assert.Error(t, p.SetCPUID(7))
	e.verify(t, p)
}

// TestDirectRecyclingListOwner is page_pool_napi_local's NAPI test (and
// napi_pp_put_page's before 6.10, FIDELITY row 11): a put in softirq may
// use the cache only on the CPU whose poll list holds the pool's NAPI,
// napi->list_owner, which is -1 while that NAPI is not scheduled.
func TestDirectRecyclingListOwner(t *testing.T) {
	tests := []struct {
		name   string
		owner  int // list_owner
		cpu    int
		ctx    pagepool.Context
		cached bool
	}{
		{"NAPI scheduled on the freeing CPU", 0, 0, pagepool.Softirq, true},
		{"NAPI not scheduled", -1, 0, pagepool.Softirq, false},
		{"NAPI scheduled on another CPU", 1, 0, pagepool.Softirq, false},
		{"NAPI scheduled, process context", 0, 0, pagepool.Process, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 2, smallMem())
			napi := &pagepool.NAPI{ListOwner: tt.owner}
			p := e.pool(t, pagepool.Params{CPUID: -1, NAPI: napi})
			id := e.alloc(t, p, 0)
			e.put(t, p, tt.cpu, id, false, tt.ctx)
			e.verify(t, p)
			loc, _ := e.m.Loc(id)
			if tt.cached {
				assert.Equal(t, mem.PoolCache, loc)
			} else {
				assert.Equal(t, mem.PoolRing, loc)
			}
		})
	}
	e := newEnv(t, 2, smallMem())
	napi := &pagepool.NAPI{ListOwner: 0}
	p := e.pool(t, pagepool.Params{CPUID: -1, NAPI: napi})
	require.NoError(t, p.SetNAPI(nil)) // page_pool_disable_direct_recycling
	id := e.alloc(t, p, 0)
	e.put(t, p, 0, id, false, pagepool.Softirq)
	assert.Equal(t, 1, p.Ring().Len(), "unlinked from its NAPI")
	require.NoError(t, p.SetNAPI(napi))
	_, err := p.Destroy(e.s.CPU(0))
	require.NoError(t, err)
	assert.Nil(t, p.NAPI(), "page_pool_destroy unlinks the NAPI")
}

// TestRefillConsumerLock is page_pool_refill_alloc_cache before 5.17
// (Kernel.LockedRefill, FIDELITY row 13): one consumer_lock acquisition
// per refill; from 5.17 none.
func TestRefillConsumerLock(t *testing.T) {
	for _, locked := range []bool{true, false} {
		e := newEnv(t, 2, smallMem())
		e.r.SetKernel(pagepool.Kernel{LockedRefill: locked})
		p := e.pool(t, pagepool.Params{PoolSize: 256, CPUID: 0})
		var ids []mem.PageID
		for i := 0; i < 200; i++ {
			ids = append(ids, e.alloc(t, p, 0))
		}
		for _, id := range ids {
			e.put(t, p, 1, id, false, pagepool.Softirq) // remote: the ring
		}
		for i := 0; i < 130; i++ {
			e.alloc(t, p, 0)
		}
		e.verify(t, p)
		refills := p.AllocStats().Refill
		require.Positive(t, refills)
		acq := p.Ring().ConsumerLock.Stats().Acquisitions
		if locked {
			assert.Equal(t, refills, acq)
		} else {
			assert.Zero(t, acq)
		}
	}
}

// TestWaiveOnNIDMismatch: a pool for node 1 fed pages of node 0 through its
// ring releases the first one it meets, counts waive, and goes to the page
// allocator instead.
func TestWaiveOnNIDMismatch(t *testing.T) {
	cfg := smallMem()
	cfg.Nodes = 2
	e := newEnv(t, 2, cfg)
	p := e.pool(t, pagepool.Params{CPUID: 0, NID: 1})
	var ids []mem.PageID
	for range 64 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	require.Zero(t, p.CacheLen())
	require.Equal(t, 0, e.m.Page(ids[0]).NID(), "the single zone hands out low PFNs: node 0")
	for _, id := range ids[:10] {
		e.put(t, p, 1, id, false, pagepool.Softirq)
	}
	e.alloc(t, p, 0)
	e.verify(t, p)
	s := stats(p)
	assert.Equal(t, uint64(1), s["rx_pp_alloc_waive"])
	assert.Zero(t, s["rx_pp_alloc_refill"])
	assert.Equal(t, uint64(2), s["rx_pp_alloc_slow"])
	assert.Equal(t, 9, p.Ring().Len())
	assert.Equal(t, uint64(1), p.ReleaseCnt())

	// NoNode follows the CPU: refilling on CPU 0 (node 0) takes them.
	cfg.CPUNode = []int{0, 1}
	e = newEnv(t, 2, cfg)
	p = e.pool(t, pagepool.Params{CPUID: 0, NID: pagepool.NoNode})
	ids = ids[:0]
	for range 64 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for _, id := range ids[:10] {
		e.put(t, p, 1, id, false, pagepool.Softirq)
	}
	e.alloc(t, p, 0)
	e.verify(t, p)
	assert.Zero(t, stats(p)["rx_pp_alloc_waive"])
	assert.Equal(t, uint64(1), stats(p)["rx_pp_alloc_refill"])
}

// TestStatsOrderAndNames pins the ethtool names and their order.
func TestStatsOrderAndNames(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	want := []string{"rx_pp_alloc_fast", "rx_pp_alloc_slow", "rx_pp_alloc_slow_ho", "rx_pp_alloc_empty",
		"rx_pp_alloc_refill", "rx_pp_alloc_waive", "rx_pp_recycle_cached", "rx_pp_recycle_cache_full",
		"rx_pp_recycle_ring", "rx_pp_recycle_ring_full", "rx_pp_recycle_released_ref"}
	assert.Equal(t, want, pagepool.StatNames[:])
	id := e.alloc(t, p, 0)
	e.put(t, p, 0, id, true, pagepool.Softirq)
	got := p.Stats()
	require.Len(t, got, len(want))
	for i, s := range got {
		assert.Equal(t, want[i], s.Name)
	}
	assert.Equal(t, uint64(1), got[1].Value) // slow
	assert.Equal(t, uint64(1), got[6].Value) // cached
	assert.Equal(t, pagepool.AllocStats{Slow: 1, Empty: 1}, p.AllocStats())
	assert.Equal(t, pagepool.RecycleStats{Cached: 1}, p.RecycleStats())
}

// TestPutErrors: misuse is an error, never a panic, and changes nothing.
func TestPutErrors(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	q := e.pool(t, pagepool.Params{CPUID: 1})
	c := e.s.CPU(0)
	id := e.alloc(t, p, 0)
	other := e.alloc(t, q, 1)
	plain, err := e.m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	tests := []struct {
		name string
		id   mem.PageID
	}{
		{"page of another pool", other},
		{"page not from a pool", plain},
		{"page in the pool's cache", mem.PageID(-1)}, // filled below
		{"out of range", mem.PageID(1 << 30)},
		{"negative", mem.PageID(-7)},
	}
	cached := e.alloc(t, p, 0)
	e.put(t, p, 0, cached, true, pagepool.Softirq)
	tests[2].id = cached
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.Stats()
			err := p.Put(c, tt.id, pagepool.SyncFull, true, pagepool.Softirq)
			assert.ErrorIs(t, err, pagepool.ErrNotPoolPage)
			assert.Equal(t, before, p.Stats())
			e.verify(t, p, q)
		})
	}
	assert.Error(t, p.Put(nil, id, 0, false, pagepool.Process))
	err = e.r.PutBulk(c, []mem.PageID{id, id}, pagepool.Process)
	assert.ErrorIs(t, err, pagepool.ErrNotPoolPage, "the same page twice with one reference")
	_, _, err = p.AllocFrag(c, 5000)
	assert.Error(t, err)
	e.verify(t, p, q)
}

// TestFastPathCosts pins what the alloc cache and the ring cost a CPU:
// the bench_page_pool_simple pairs of the cost table.
func TestFastPathCosts(t *testing.T) {
	costs := sim.DefaultCosts()
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{PoolSize: 256, CPUID: 0})
	c := e.s.CPU(0)
	id := e.alloc(t, p, 0)
	e.put(t, p, 0, id, true, pagepool.Softirq)
	before := c.Busy()
	id = e.alloc(t, p, 0)
	e.put(t, p, 0, id, true, pagepool.Softirq)
	assert.Equal(t, costs.PPCacheAlloc+costs.PPCachePut, c.Busy()-before, "cache fast path")

	before = c.Busy()
	id = e.alloc(t, p, 0)
	e.put(t, p, 0, id, false, pagepool.Process)
	assert.Equal(t, costs.PPCacheAlloc+costs.SpinLock+costs.PPRingPut, c.Busy()-before, "put through the ring")
	e.verify(t, p)
}
