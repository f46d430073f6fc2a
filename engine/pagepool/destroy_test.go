package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// TestDestroyWithInflightPages: destroy empties cache and ring and detaches
// the pool; pages returned later go through the ring, the retry releases
// them, and the pool is freed when nothing is in flight. Nothing is lost.
func TestDestroyWithInflightPages(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{Flags: pagepool.DMAMap | pagepool.DMASyncDev, MaxLen: 4096, DMA: e.dma, CPUID: 0})
	c := e.s.CPU(0)
	var ids []mem.PageID
	for range 10 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for _, id := range ids[:3] {
		e.put(t, p, 0, id, true, pagepool.Softirq)
	}
	e.put(t, p, 1, ids[3], false, pagepool.Softirq)
	frag, _ := e.allocFrag(t, p, 1024)
	e.verify(t, p)
	freeBefore := e.m.Count(mem.Buddy) + e.m.Count(mem.PCP)

	done, err := p.Destroy(c)
	require.NoError(t, err)
	assert.False(t, done)
	e.verify(t, p)
	assert.Equal(t, pagepool.Detached, p.State())
	assert.Zero(t, p.CacheLen())
	assert.Zero(t, p.Ring().Len())
	assert.Equal(t, int64(7), p.Inflight(), "6 pages and the fragment page are out")
	assert.Zero(t, e.dma.Stats().Live, "destroy unmapped the pages in flight too")
	info := p.Info()
	assert.True(t, info.Detached)
	assert.Equal(t, int64(7), info.Inflight)
	assert.Greater(t, e.m.Count(mem.Buddy)+e.m.Count(mem.PCP), freeBefore, "cache and ring pages went back")

	_, err = p.Alloc(c)
	assert.ErrorIs(t, err, pagepool.ErrDestroyed)
	_, err = p.Destroy(c)
	assert.ErrorIs(t, err, pagepool.ErrDestroyed)

	// Pages come back, one even asking for direct recycling: they land in
	// the ring, never in the cache.
	for i, id := range ids[4:] {
		e.put(t, p, i%2, id, i == 0, pagepool.Softirq)
		e.verify(t, p)
	}
	e.put(t, p, 0, frag, true, pagepool.Softirq)
	e.verify(t, p)
	assert.Zero(t, p.CacheLen())
	assert.Equal(t, 7, p.Ring().Len())
	assert.Equal(t, pagepool.Detached, p.State(), "freed only by the retry")

	assert.True(t, p.RetryRelease(c))
	e.verify(t, p)
	assert.Equal(t, pagepool.Freed, p.State())
	assert.Zero(t, p.Inflight())
	assert.Equal(t, p.HoldCnt(), p.ReleaseCnt())
	assert.Empty(t, e.r.List(nil))
	assert.Zero(t, e.m.Count(mem.Driver)+e.m.Count(mem.PoolCache)+e.m.Count(mem.PoolRing))
	assert.True(t, p.RetryRelease(c), "a freed pool stays freed")
	assert.ErrorIs(t, p.Put(c, ids[0], 0, false, pagepool.Process), pagepool.ErrDestroyed)
}

// TestDestroyWithNothingInflight frees the pool at once.
func TestDestroyWithNothingInflight(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	id := e.alloc(t, p, 0)
	e.put(t, p, 0, id, true, pagepool.Softirq)
	done, err := p.Destroy(e.s.CPU(0))
	require.NoError(t, err)
	assert.True(t, done)
	assert.Equal(t, pagepool.Freed, p.State())
	e.verify(t, p)
	assert.Equal(t, int64(0), e.m.Count(mem.PoolCache))
}

// TestStalledShutdownWarnings: retries every second, a warning every 60
// seconds, only for pools netlink cannot list.
func TestStalledShutdownWarnings(t *testing.T) {
	tests := []struct {
		name     string
		ifindex  int
		warnings uint64
	}{
		{"not listed under a netdev", 0, 2},
		{"listed under a netdev", 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1, smallMem())
			p := e.pool(t, pagepool.Params{CPUID: 0, Ifindex: tt.ifindex})
			c := e.s.CPU(0)
			id := e.alloc(t, p, 0)
			done, err := p.Destroy(c)
			require.NoError(t, err)
			require.False(t, done)
			for sec := 1; sec <= 125; sec++ {
				c.Begin(sim.Time(sec) * sim.Time(pagepool.DeferTime))
				require.False(t, p.RetryRelease(c))
				c.End()
			}
			assert.Equal(t, tt.warnings, p.StalledWarnings())
			e.put(t, p, 0, id, false, pagepool.Process)
			assert.True(t, p.RetryRelease(c))
			e.verify(t, p)
		})
	}
}

// TestReleasePage is page_pool_release_page, xdp_release_frame's call
// until 6.3 (FIDELITY row 21): the page leaves the pool (unmapped,
// release_cnt counted, unmarked) while its holder keeps it, and its
// put_page gives it to the page allocator. A fragment page with other
// fragments out is refused.
func TestReleasePage(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{Flags: pagepool.DMAMap, DMA: e.dma, CPUID: 0})
	id := e.alloc(t, p, 0)
	mapped := p.DMAMapped()
	require.NoError(t, p.ReleasePage(e.s.CPU(1), id))
	e.drop(id)
	assert.Equal(t, uint64(1), p.ReleaseCnt())
	assert.Equal(t, mapped-1, p.DMAMapped())
	assert.Equal(t, int32(-1), e.m.Page(id).PP)
	e.verify(t, p)
	freed, err := e.m.PutPage(e.s.CPU(1), id)
	require.NoError(t, err)
	assert.True(t, freed, "the holder's put_page frees it")
	assert.Error(t, p.ReleasePage(e.s.CPU(1), id), "no longer the pool's")

	a, _ := e.allocFrag(t, p, 1024)
	b, _ := e.allocFrag(t, p, 1024)
	require.Equal(t, a, b)
	assert.ErrorIs(t, p.ReleasePage(e.s.CPU(1), a), pagepool.ErrNotPoolPage)
	e.verify(t, p)
}
