package pagepool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/pagepool"
)

// TestNewReturnsEINVAL covers page_pool_init's -EINVAL cases and the
// engine's own range checks; each error names the field.
func TestNewReturnsEINVAL(t *testing.T) {
	e := newEnv(t, 2, smallMem())
	tests := []struct {
		name  string
		p     pagepool.Params
		field string
	}{
		{"unknown flag", pagepool.Params{Flags: 1 << 5, CPUID: -1}, "Flags"},
		{"sync without map", pagepool.Params{Flags: pagepool.DMASyncDev, MaxLen: 4096, DMA: e.dma, CPUID: -1}, "Flags"},
		{"sync with max_len 0", pagepool.Params{Flags: pagepool.DMAMap | pagepool.DMASyncDev, DMA: e.dma, CPUID: -1}, "MaxLen"},
		{"sync past the page", pagepool.Params{Flags: pagepool.DMAMap | pagepool.DMASyncDev, MaxLen: 4096, Offset: 256, DMA: e.dma, CPUID: -1}, "MaxLen"},
		{"order above MAX_PAGE_ORDER", pagepool.Params{Order: 11, CPUID: -1}, "Order"},
		{"negative order", pagepool.Params{Order: -1, CPUID: -1}, "Order"},
		{"negative pool size", pagepool.Params{PoolSize: -1, CPUID: -1}, "PoolSize"},
		{"map without a device", pagepool.Params{Flags: pagepool.DMAMap, CPUID: -1}, "DMA"},
		{"cpuid out of range", pagepool.Params{CPUID: 2}, "CPUID"},
		{"node out of range", pagepool.Params{CPUID: -1, NID: 1}, "NID"},
		{"negative ifindex", pagepool.Params{CPUID: -1, Ifindex: -2}, "Ifindex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.r.New(tt.p)
			require.Error(t, err)
			assert.ErrorIs(t, err, pagepool.ErrInvalid)
			assert.Contains(t, err.Error(), "Params."+tt.field)
		})
	}
	p := e.pool(t, pagepool.Params{Flags: pagepool.DMAMap | pagepool.DMASyncDev, MaxLen: 4096, DMA: e.dma, CPUID: 0})
	assert.Equal(t, int32(1), p.ID())
	_, err := pagepool.NewRegistry(nil)
	assert.Error(t, err)
}

// TestRingSize is page_pool_init's ring size and __ptr_ring_set_size's
// batch.
func TestRingSize(t *testing.T) {
	e := newEnv(t, 1, smallMem())
	tests := []struct {
		poolSize, size, batch int
	}{
		{0, 1024, 16},
		{256, 256, 16},
		{64, 64, 16},
		{32, 32, 16},
		{31, 31, 1},
		{16, 16, 1},
		{1, 1, 1},
		{20000, 16384, 16},
	}
	for _, tt := range tests {
		p := e.pool(t, pagepool.Params{PoolSize: tt.poolSize, CPUID: -1})
		assert.Equal(t, tt.size, p.Ring().Size(), "pool_size %d", tt.poolSize)
		assert.Equal(t, tt.batch, p.Ring().Batch(), "pool_size %d", tt.poolSize)
	}
	assert.Len(t, e.r.List(nil), len(tests))
}
