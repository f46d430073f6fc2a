package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
)

// allocFrag takes a fragment and records the test's reference.
func (e *env) allocFrag(t testing.TB, p *pagepool.Pool, size uint32) (mem.PageID, uint32) {
	t.Helper()
	id, off, err := p.AllocFrag(e.s.CPU(0), size)
	require.NoError(t, err)
	e.out[id]++
	return id, off
}

// TestFragTwoHalves: two 2048-byte fragments share a page; the third starts
// a new one while the halves are out; the last half returned recycles the
// first page.
func TestFragTwoHalves(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	a, offA := e.allocFrag(t, p, 2048)
	b, offB := e.allocFrag(t, p, 2048)
	e.verify(t, p)
	assert.Equal(t, a, b)
	assert.Equal(t, uint32(0), offA)
	assert.Equal(t, uint32(2048), offB)
	assert.Equal(t, int64(pagepool.BiasMax), e.m.Page(a).PPRef, "BIAS_MAX while the pool carves it")

	c, offC := e.allocFrag(t, p, 2048)
	e.verify(t, p)
	assert.NotEqual(t, a, c, "the halves are still out: a new page")
	assert.Zero(t, offC)
	assert.Equal(t, int64(2), e.m.Page(a).PPRef, "the pool gave back BIAS_MAX - 2")

	e.put(t, p, 0, a, true, pagepool.Softirq)
	e.verify(t, p)
	assert.Zero(t, stats(p)["rx_pp_recycle_cached"], "one half is still out")
	e.put(t, p, 0, b, true, pagepool.Softirq)
	e.verify(t, p)
	assert.Equal(t, uint64(1), stats(p)["rx_pp_recycle_cached"])
	loc, _ := e.m.Loc(a)
	assert.Equal(t, mem.PoolCache, loc)
	assert.Equal(t, int64(1), e.m.Page(a).PPRef)
}

// TestFragReusedWhenAllReturned: when both halves came back before the page
// is full, the pool drains and reuses it in place, counting a cached
// recycle and a fast allocation.
func TestFragReusedWhenAllReturned(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	a, _ := e.allocFrag(t, p, 2048)
	b, _ := e.allocFrag(t, p, 2048)
	e.put(t, p, 0, a, false, pagepool.Process)
	e.put(t, p, 0, b, false, pagepool.Process)
	e.verify(t, p)
	before := stats(p)
	c, off := e.allocFrag(t, p, 2048)
	e.verify(t, p)
	assert.Equal(t, a, c)
	assert.Zero(t, off)
	s := stats(p)
	assert.Equal(t, before["rx_pp_recycle_cached"]+1, s["rx_pp_recycle_cached"])
	assert.Equal(t, before["rx_pp_alloc_fast"]+1, s["rx_pp_alloc_fast"])
	assert.Zero(t, s["rx_pp_recycle_ring"])
}

// TestAllocNetmemSizes is page_pool_alloc_netmem: more than half a page
// takes the page; a fragment after which another would not fit takes the
// tail too.
func TestAllocNetmemSizes(t *testing.T) {
	tests := []struct {
		name     string
		sizes    []uint32
		offsets  []uint32
		sizesGot []uint32
		samePage []bool // same page as the previous allocation
	}{
		{"over half takes the whole page", []uint32{2049}, []uint32{0}, []uint32{4096}, []bool{false}},
		{"exactly half is a fragment", []uint32{2048, 2048}, []uint32{0, 2048}, []uint32{2048, 2048}, []bool{false, true}},
		{"tail joins the last fragment", []uint32{1500, 1500, 1500}, []uint32{0, 1500, 0}, []uint32{1500, 2596, 1500}, []bool{false, true, false}},
		{"small fragments", []uint32{1000, 1000, 1000, 1000, 1000}, []uint32{0, 1000, 2000, 3000, 0}, []uint32{1000, 1000, 1000, 1096, 1000}, []bool{false, true, true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 1, smallMem())
			p := e.pool(t, pagepool.Params{CPUID: 0})
			prev := mem.NoPage
			for i, size := range tt.sizes {
				id, off, got, err := p.AllocNetmem(e.s.CPU(0), size)
				require.NoError(t, err)
				e.out[id]++
				e.verify(t, p)
				assert.Equal(t, tt.offsets[i], off, "allocation %d offset", i)
				assert.Equal(t, tt.sizesGot[i], got, "allocation %d truesize", i)
				assert.Equal(t, tt.samePage[i], id == prev, "allocation %d page", i)
				prev = id
			}
			for id, n := range e.out {
				for range n {
					e.put(t, p, 0, id, true, pagepool.Softirq)
				}
			}
			e.verify(t, p)
		})
	}
}
