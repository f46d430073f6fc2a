package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// TestDMAMappedOnceWhileRecycling: with DMAMap a page is mapped when it
// enters the pool and stays mapped while it recycles; it is unmapped when
// it leaves. With DMASyncDev every recycle syncs max_len for the device.
func TestDMAMappedOnceWhileRecycling(t *testing.T) {
	costs := sim.DefaultCosts()
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{Flags: pagepool.DMAMap | pagepool.DMASyncDev, MaxLen: 1536, Offset: 256,
		DMA: e.dma, CPUID: 0, PoolSize: 64})
	c := e.s.CPU(0)
	before := c.Busy()
	id := e.alloc(t, p, 0)
	e.verify(t, p)
	st := e.dma.Stats()
	assert.Equal(t, uint64(64), st.Maps, "the slow path maps the whole bulk")
	assert.Equal(t, uint64(64), st.SyncsForDevice, "and syncs each for the device")
	assert.GreaterOrEqual(t, c.Busy()-before, 64*costs.DMAMapIOMMU)
	addr := p.DMAAddr(id)
	assert.NotZero(t, addr)
	require.NoError(t, p.SyncForCPU(c, id, 0, 1536))

	for range 1000 {
		e.put(t, p, 0, id, true, pagepool.Softirq)
		id = e.alloc(t, p, 0)
	}
	e.verify(t, p)
	st = e.dma.Stats()
	assert.Equal(t, uint64(64), st.Maps, "recycling never maps again")
	assert.Equal(t, uint64(64+1000), st.SyncsForDevice)
	assert.Equal(t, uint64(1), st.SyncsForCPU)
	assert.Equal(t, addr, p.DMAAddr(id))

	// Recycling from another CPU through a full ring releases pages: each
	// one is unmapped.
	var ids []mem.PageID
	for range 200 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for _, x := range ids {
		e.put(t, p, 1, x, false, pagepool.Softirq)
	}
	e.verify(t, p)
	s := stats(p)
	require.Positive(t, s["rx_pp_recycle_ring_full"])
	assert.Equal(t, s["rx_pp_recycle_ring_full"], e.dma.Stats().Unmaps)
	assert.Equal(t, int(p.Inflight()), e.dma.Stats().Live)
}

// TestWithoutDMAMapNothingIsMapped: the driver maps and unmaps itself.
func TestWithoutDMAMapNothingIsMapped(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	id := e.alloc(t, p, 0)
	assert.Zero(t, p.DMAAddr(id))
	assert.ErrorIs(t, p.SyncForCPU(e.s.CPU(0), id, 0, 64), pagepool.ErrNotPoolPage)
	assert.Zero(t, e.dma.Stats().Maps)
	e.verify(t, p)
}
