package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// paths are the alloc+put cycles the benchmarks and the allocation test
// share, each through one page_pool path.
type paths struct {
	e         *env
	c0, c1    *sim.CPU
	cache     *pagepool.Pool // put direct on the NAPI CPU: alloc cache
	ring      *pagepool.Pool // put from another CPU: ptr_ring
	slow      *pagepool.Pool // pool_size 1: puts overflow, allocs go to the page allocator
	frag      *pagepool.Pool // two fragments per page
	bulk      *pagepool.Pool // bulk puts of 16
	dma       *pagepool.Pool // DMA-mapped, synced, recycled through the cache
	bulkPages []mem.PageID
}

func newPaths(tb testing.TB) *paths {
	e := newEnv(tb, 2, mem.Config{Pages: 1 << 16})
	mk := func(p pagepool.Params) *pagepool.Pool { return e.pool(tb, p) }
	return &paths{
		e: e, c0: e.s.CPU(0), c1: e.s.CPU(1),
		cache: mk(pagepool.Params{CPUID: 0}),
		ring:  mk(pagepool.Params{CPUID: 0}),
		slow:  mk(pagepool.Params{CPUID: 0, PoolSize: 1}),
		frag:  mk(pagepool.Params{CPUID: 0}),
		bulk:  mk(pagepool.Params{CPUID: 0}),
		dma: mk(pagepool.Params{CPUID: 0, Flags: pagepool.DMAMap | pagepool.DMASyncDev,
			MaxLen: 1536, DMA: e.dma}),
		bulkPages: make([]mem.PageID, pagepool.BulkMax),
	}
}

func must(tb testing.TB, err error) {
	if err != nil {
		tb.Fatal(err)
	}
}

func (p *paths) cacheCycle(tb testing.TB) {
	id, err := p.cache.Alloc(p.c0)
	must(tb, err)
	must(tb, p.cache.Put(p.c0, id, pagepool.SyncFull, false, pagepool.Softirq))
}

func (p *paths) ringCycle(tb testing.TB) {
	id, err := p.ring.Alloc(p.c0)
	must(tb, err)
	must(tb, p.ring.Put(p.c1, id, pagepool.SyncFull, false, pagepool.Softirq))
}

func (p *paths) slowCycle(tb testing.TB) {
	// Two pages out, both back: the ring of 1 takes one, the other goes
	// back to the page allocator; the cache drains, then refills slowly.
	a, err := p.slow.Alloc(p.c0)
	must(tb, err)
	b, err := p.slow.Alloc(p.c0)
	must(tb, err)
	must(tb, p.slow.Put(p.c1, a, pagepool.SyncFull, false, pagepool.Softirq))
	must(tb, p.slow.Put(p.c1, b, pagepool.SyncFull, false, pagepool.Softirq))
}

func (p *paths) fragCycle(tb testing.TB) {
	a, _, err := p.frag.AllocFrag(p.c0, 2048)
	must(tb, err)
	b, _, err := p.frag.AllocFrag(p.c0, 2048)
	must(tb, err)
	must(tb, p.frag.Put(p.c0, a, pagepool.SyncFull, false, pagepool.Softirq))
	must(tb, p.frag.Put(p.c0, b, pagepool.SyncFull, false, pagepool.Softirq))
}

func (p *paths) bulkCycle(tb testing.TB) {
	for i := range p.bulkPages {
		id, err := p.bulk.Alloc(p.c0)
		must(tb, err)
		p.bulkPages[i] = id
	}
	must(tb, p.e.r.PutBulk(p.c1, p.bulkPages, pagepool.Softirq))
}

func (p *paths) dmaCycle(tb testing.TB) {
	id, err := p.dma.Alloc(p.c0)
	must(tb, err)
	must(tb, p.dma.SyncForCPU(p.c0, id, 0, 1536))
	must(tb, p.dma.RecycleDirect(p.c0, id))
}

func BenchmarkAllocPutCache(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.cacheCycle(b)
	}
}

func BenchmarkAllocPutRing(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.ringCycle(b)
	}
}

func BenchmarkAllocPutSlow(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.slowCycle(b)
	}
}

func BenchmarkAllocPutFrag(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.fragCycle(b)
	}
}

func BenchmarkPutBulk16(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.bulkCycle(b)
	}
}

func BenchmarkAllocPutDMA(b *testing.B) {
	p := newPaths(b)
	b.ReportAllocs()
	for b.Loop() {
		p.dmaCycle(b)
	}
}

// TestSteadyStateAllocatesNothing fails if a page_pool path allocates Go
// memory once warmed up.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	p := newPaths(t)
	tests := []struct {
		name string
		op   func()
	}{
		{"cache", func() { p.cacheCycle(t) }},
		{"ring", func() { p.ringCycle(t) }},
		{"slow", func() { p.slowCycle(t) }},
		{"fragments", func() { p.fragCycle(t) }},
		{"bulk", func() { p.bulkCycle(t) }},
		{"dma", func() { p.dmaCycle(t) }},
		{"stats", func() { _ = p.cache.Stats(); _ = p.cache.Info() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2000 {
				tt.op()
			}
			assert.Zero(t, testing.AllocsPerRun(1000, tt.op))
			require.NoError(t, p.e.m.Check())
			require.NoError(t, p.e.r.Check())
		})
	}
	assert.Positive(t, p.slow.AllocStats().Slow)
	assert.Positive(t, p.slow.RecycleStats().RingFull)
	assert.Positive(t, p.ring.AllocStats().Refill)
}
