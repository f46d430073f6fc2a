package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// env is a machine with memory, one DMA device and a page_pool registry.
type env struct {
	s   *sim.Sim
	m   *mem.Mem
	dma *mem.DMA
	r   *pagepool.Registry
	// out holds the pp references the test holds, per page.
	out map[mem.PageID]int
}

func newEnv(t testing.TB, ncpu int, cfg mem.Config) *env {
	t.Helper()
	s, err := sim.New(ncpu, sim.DefaultCosts())
	require.NoError(t, err)
	m, err := mem.New(s, cfg)
	require.NoError(t, err)
	r, err := pagepool.NewRegistry(m)
	require.NoError(t, err)
	return &env{s: s, m: m, dma: m.NewDMA(true), r: r, out: map[mem.PageID]int{}}
}

func smallMem() mem.Config { return mem.Config{Pages: 4096, PCPBatch: 63, PCPHigh: 378} }

func (e *env) pool(t testing.TB, p pagepool.Params) *pagepool.Pool {
	t.Helper()
	pool, err := e.r.New(p)
	require.NoError(t, err)
	return pool
}

// verify runs every invariant checker and the accounting rule:
// hold_cnt - release_cnt = cache + ring + pages out with the test (and the
// pool's fragment page when no test-held fragment covers it).
func (e *env) verify(t testing.TB, pools ...*pagepool.Pool) {
	t.Helper()
	require.NoError(t, e.m.Check())
	require.NoError(t, e.r.Check())
	for _, p := range pools {
		owned := int64(p.CacheLen() + p.Ring().Len())
		seen := map[mem.PageID]bool{}
		for id, refs := range e.out {
			if refs > 0 && e.m.Page(id).PP == p.ID() {
				seen[id] = true
			}
		}
		if f := p.FragPage(); f != mem.NoPage {
			seen[f] = true
		}
		owned += int64(len(seen))
		require.Equal(t, owned, p.Inflight(), "pool %d: inflight = cache + ring + out", p.ID())
	}
}

func (e *env) alloc(t testing.TB, p *pagepool.Pool, cpu int) mem.PageID {
	t.Helper()
	id, err := p.Alloc(e.s.CPU(cpu))
	require.NoError(t, err)
	e.out[id]++
	return id
}

func (e *env) put(t testing.TB, p *pagepool.Pool, cpu int, id mem.PageID, direct bool, ctx pagepool.Context) {
	t.Helper()
	require.NoError(t, p.Put(e.s.CPU(cpu), id, pagepool.SyncFull, direct, ctx))
	e.drop(id)
}

func (e *env) drop(id mem.PageID) {
	e.out[id]--
	if e.out[id] == 0 {
		delete(e.out, id)
	}
}

// stats maps the ethtool names to values.
func stats(p *pagepool.Pool) map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range p.Stats() {
		out[s.Name] = s.Value
	}
	return out
}
