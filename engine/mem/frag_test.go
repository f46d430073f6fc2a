package mem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
)

type buf struct {
	page mem.PageID
	off  uint32
}

// TestFragCarvesOrder3Pages carves 1536-byte buffers: 21 fit in 32 KiB,
// each holds a page reference, the 22nd starts a new page, and the first
// page is freed when its last buffer is.
func TestFragCarvesOrder3Pages(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	f, err := m.NewFragCache(0)
	require.NoError(t, err)
	var bufs []buf
	for i := 0; i < 22; i++ {
		p, off, ok := f.Alloc(c, 1536, 64)
		require.True(t, ok)
		bufs = append(bufs, buf{p, off})
		verify(t, m)
	}
	first := bufs[0].page
	assert.Equal(t, 3, m.Page(first).Order())
	for i := 0; i < 21; i++ {
		assert.Equal(t, first, bufs[i].page)
		assert.Equal(t, uint32(i*1536), bufs[i].off)
	}
	assert.NotEqual(t, first, bufs[21].page)
	assert.Equal(t, int32(21), m.Page(first).RefCount(), "the old page is held by its 21 buffers only")
	assert.Equal(t, uint64(2), f.Stats().Refills)
	l, owner := m.Loc(first)
	assert.Equal(t, mem.PageFrag, l)
	assert.Equal(t, 0, owner)
	assert.Equal(t, int64(16), m.Count(mem.PageFrag))

	for i := 0; i < 21; i++ {
		freed, err := m.PutPage(c, bufs[i].page) // page_frag_free
		require.NoError(t, err)
		assert.Equal(t, i == 20, freed)
		verify(t, m)
	}
	l, _ = m.Loc(first)
	assert.Equal(t, mem.PCP, l)

	freed, err := m.PutPage(c, bufs[21].page)
	require.NoError(t, err)
	assert.False(t, freed, "the cache still holds its bias on the current page")
	require.NoError(t, f.Drain(c))
	verify(t, m)
	assert.Equal(t, int64(0), m.Count(mem.PageFrag))
}

// TestFragReusesPageWhenAllReturned: when every buffer came back before the
// page is full, the same page is reused from offset 0 (set_page_count).
func TestFragReusesPageWhenAllReturned(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	f, err := m.NewFragCache(0)
	require.NoError(t, err)
	var bufs []buf
	for i := 0; i < 4; i++ {
		p, off, ok := f.Alloc(c, 8192, 0)
		require.True(t, ok)
		bufs = append(bufs, buf{p, off})
	}
	assert.Zero(t, f.Remaining())
	for _, b := range bufs {
		_, err := m.PutPage(c, b.page)
		require.NoError(t, err)
		verify(t, m)
	}
	p, off, ok := f.Alloc(c, 100, 0)
	require.True(t, ok)
	assert.Equal(t, bufs[0].page, p)
	assert.Zero(t, off)
	assert.Equal(t, uint64(1), f.Stats().Reuses)
	assert.Equal(t, uint64(1), f.Stats().Refills)
	verify(t, m)
}

// TestFragFallsBackToOrder0 leaves no order-3 block free: the cache takes
// an order-0 page and carves PAGE_SIZE from it.
func TestFragFallsBackToOrder0(t *testing.T) {
	s, m := newMem(t, 1, mem.Config{Pages: 10, MaxOrder: 3, PCPBatch: 2, PCPHigh: 4})
	c := s.CPU(0)
	_, err := m.AllocPages(c, 3, mem.Driver, -1)
	require.NoError(t, err)
	f, err := m.NewFragCache(1)
	require.NoError(t, err)
	p, _, ok := f.Alloc(c, 2048, 0)
	require.True(t, ok)
	verify(t, m)
	assert.Equal(t, 0, m.Page(p).Order())
	assert.Equal(t, uint32(2048), f.Remaining())
	assert.Equal(t, uint64(1), f.Stats().Fallbacks)
	_, _, ok = f.Alloc(c, 5000, 0)
	assert.False(t, ok, "more than PAGE_SIZE does not fit an order-0 cache")
	assert.Equal(t, p, f.Page(), "the page is kept")
	verify(t, m)
}

func TestFragRejectsBadArguments(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	f, err := m.NewFragCache(0)
	require.NoError(t, err)
	tests := []struct {
		name        string
		size, align uint32
	}{
		{"zero size", 0, 0},
		{"align not a power of two", 100, 48},
		{"larger than the cache page", 40000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ok := f.Alloc(c, tt.size, tt.align)
			assert.False(t, ok)
			verify(t, m)
		})
	}
	_, err = m.NewFragCache(1 << 20)
	assert.Error(t, err)
}

// TestFragHoleRule is virtio_net's add_recvbuf_mergeable: after a buffer,
// if the space left cannot hold the next one, it goes to this buffer.
func TestFragHoleRule(t *testing.T) {
	tests := []struct {
		name      string
		carve     []uint32 // buffers carved first
		next      uint32   // size of the next buffer
		hole      uint32
		remaining uint32
	}{
		{"room for the next buffer", []uint32{1536}, 1536, 0, 32768 - 1536},
		{"last buffer of the page", repeat(1536, 21), 1536, 32768 - 21*1536, 0},
		{"exact fit leaves no hole", []uint32{24576}, 8192, 0, 8192},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			f, err := m.NewFragCache(0)
			require.NoError(t, err)
			for _, size := range tt.carve {
				_, _, ok := f.Alloc(c, size, 0)
				require.True(t, ok)
			}
			assert.Equal(t, tt.hole, f.Hole(tt.next))
			assert.Equal(t, tt.remaining, f.Remaining())
			verify(t, m)
		})
	}
}

func repeat(v uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = v
	}
	return out
}
