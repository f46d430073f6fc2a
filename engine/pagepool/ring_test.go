package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
)

// TestPtrRingFullBeforeSizeOutstanding: a ring of 64 clears consumed slots
// 16 at a time. After 15 of 64 entries are consumed none is cleared, so the
// producer still finds the ring full with 49 entries outstanding; the 16th
// consume clears 16 slots, and exactly 16 more fit.
func TestPtrRingFullBeforeSizeOutstanding(t *testing.T) {
	s, err := sim.New(2, sim.DefaultCosts())
	require.NoError(t, err)
	prod, cons := s.CPU(0), s.CPU(1)
	r, err := pagepool.NewPtrRing("test", 64)
	require.NoError(t, err)
	require.Equal(t, 16, r.Batch())
	produce := func() int {
		n := 0
		for r.Produce(prod, int32(1000+n)) {
			n++
			require.NoError(t, r.Check())
		}
		return n
	}
	consume := func(n int) {
		for range n {
			require.NotZero(t, r.Consume(cons))
			require.NoError(t, r.Check())
		}
	}
	steps := []struct {
		name     string
		consume  int
		accepted int // entries the producer gets in before "full"
		len      int // outstanding when it sees full
		stale    int
	}{
		{"empty ring takes 64", 0, 64, 64, 0},
		{"15 consumed, none cleared: full at 49", 15, 0, 49, 15},
		{"16th consume clears a batch", 1, 16, 64, 0},
		{"31 more consumed: one batch cleared, 15 stale", 31, 16, 64 - 15, 15},
	}
	for _, st := range steps {
		consume(st.consume)
		assert.Equal(t, st.accepted, produce(), st.name)
		assert.True(t, r.Full(), st.name)
		assert.Equal(t, st.len, r.Len(), st.name)
		assert.Equal(t, st.stale, r.Stale(), st.name)
	}
	// The lines bounced between producer and consumer.
	assert.Positive(t, prod.Transfers())
	assert.Positive(t, cons.Transfers())

	assert.False(t, r.Produce(prod, 0), "NULL is not an entry")
	_, err = pagepool.NewPtrRing("bad", 0)
	assert.Error(t, err)
}

// TestPoolRingFullWithStaleSlots shows the same through a pool of 64: 20
// pages recycled through the ring and refilled into the cache leave 4
// consumed slots uncleared (20 = 16 + 4), so the ring refuses the 61st
// page with 60 in it and counts ring_full.
func TestPoolRingFullWithStaleSlots(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{PoolSize: 64, CPUID: 0})
	var ids []mem.PageID
	for range 128 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	e.verify(t, p)
	for _, id := range ids[:20] {
		e.put(t, p, 1, id, false, pagepool.Softirq) // remote CPU: ring
	}
	assert.Equal(t, 20, p.Ring().Len())
	ids = append(ids[20:], e.alloc(t, p, 0)) // refill takes all 20
	assert.Equal(t, 0, p.Ring().Len())
	assert.Equal(t, 4, p.Ring().Stale())
	e.verify(t, p)
	for i, id := range ids[:61] {
		e.put(t, p, 1, id, false, pagepool.Softirq)
		e.verify(t, p)
		if i < 60 {
			assert.Zero(t, stats(p)["rx_pp_recycle_ring_full"], "put %d", i)
		}
	}
	assert.Equal(t, 60, p.Ring().Len())
	st := stats(p)
	assert.Equal(t, uint64(1), st["rx_pp_recycle_ring_full"])
	assert.Equal(t, uint64(80), st["rx_pp_recycle_ring"])
	assert.Equal(t, uint64(1), p.ReleaseCnt(), "the refused page went back to the page allocator")
}
