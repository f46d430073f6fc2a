package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
)

// TestPutBulkGroupsByPool: pages of two pools in one bulk go to their own
// rings, each under one producer lock.
func TestPutBulkGroupsByPool(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	q := e.pool(t, pagepool.Params{CPUID: 0})
	var data []mem.PageID
	for i := range 12 {
		if i%3 == 0 {
			data = append(data, e.alloc(t, q, 0))
		} else {
			data = append(data, e.alloc(t, p, 0))
		}
	}
	pLock := p.Ring().ProducerLock.Stats().Acquisitions
	qLock := q.Ring().ProducerLock.Stats().Acquisitions
	for _, id := range data {
		e.drop(id)
	}
	require.NoError(t, e.r.PutBulk(e.s.CPU(1), data, pagepool.Softirq))
	e.verify(t, p, q)
	assert.Equal(t, 8, p.Ring().Len())
	assert.Equal(t, 4, q.Ring().Len())
	assert.Equal(t, pLock+1, p.Ring().ProducerLock.Stats().Acquisitions)
	assert.Equal(t, qLock+1, q.Ring().ProducerLock.Stats().Acquisitions)
}

// TestPutBulkRingFullCountedOnce: 16 pages into a ring with room for 10
// count ring_full once and release the other 6.
func TestPutBulkRingFullCountedOnce(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0, PoolSize: 16}) // batch 1: no stale slots
	var ids []mem.PageID
	for range 22 {
		ids = append(ids, e.alloc(t, p, 0))
	}
	for _, id := range ids[:6] {
		e.put(t, p, 1, id, false, pagepool.Softirq)
	}
	data := append([]mem.PageID(nil), ids[6:]...)
	for _, id := range data {
		e.drop(id)
	}
	require.NoError(t, e.r.PutBulk(e.s.CPU(1), data, pagepool.Softirq))
	e.verify(t, p)
	s := stats(p)
	assert.Equal(t, uint64(1), s["rx_pp_recycle_ring_full"])
	assert.Equal(t, uint64(16), s["rx_pp_recycle_ring"])
	assert.Equal(t, uint64(6), p.ReleaseCnt())
}

// TestPutBulkDirectOnNAPICPU: a bulk freed in softirq on the pool's cpuid
// recycles into the cache; fragments only recycle with their last
// reference.
func TestPutBulkDirectOnNAPICPU(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	p := e.pool(t, pagepool.Params{CPUID: 0})
	a, _ := e.allocFrag(t, p, 2048)
	b, _ := e.allocFrag(t, p, 2048)
	require.Equal(t, a, b)
	x := e.alloc(t, p, 0) // from the cache
	cache := p.CacheLen()
	data := []mem.PageID{x, a, b}
	for _, id := range data {
		e.drop(id)
	}
	require.NoError(t, e.r.PutBulk(e.s.CPU(0), data, pagepool.Softirq))
	e.verify(t, p)
	assert.Equal(t, cache+1, p.CacheLen(), "x is back; the fragment page is still the pool's frag page")
	assert.Zero(t, p.Ring().Len())
	assert.Equal(t, int64(pagepool.BiasMax-2), e.m.Page(a).PPRef)
	assert.NoError(t, e.r.PutBulk(e.s.CPU(0), nil, pagepool.Softirq))
	assert.Error(t, e.r.PutBulk(e.s.CPU(0), make([]mem.PageID, pagepool.BulkMax+1), pagepool.Softirq))
}
