package mem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

type buf struct {
	page mem.PageID
	off  uint32
}

// TestSkbPageFragRefillGetPagePerBuffer is FIDELITY row 6: virtio_net's
// rq->alloc_frag is a struct page_frag filled by skb_page_frag_refill, and
// every buffer takes a reference with get_page; the frag keeps one of its
// own. 1536-byte buffers: 21 fit in 32 KiB; the 22nd makes the refill drop
// the frag's reference (put_page) and take a new block; the old block is
// freed by its last buffer.
func TestSkbPageFragRefillGetPagePerBuffer(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	f, err := m.NewFrag(0)
	require.NoError(t, err)
	var bufs []buf
	for i := 0; i < 21; i++ {
		p, off, ok := f.Alloc(c, 1536)
		require.True(t, ok)
		bufs = append(bufs, buf{p, off})
		assert.Equal(t, int32(1+i+1), m.Page(p).RefCount(), "the frag's reference and one per buffer")
		verify(t, m)
	}
	first := bufs[0].page
	assert.Equal(t, 3, m.Page(first).Order())
	for i := range bufs {
		assert.Equal(t, first, bufs[i].page)
		assert.Equal(t, uint32(i*1536), bufs[i].off)
	}
	p, off, ok := f.Alloc(c, 1536)
	require.True(t, ok)
	assert.NotEqual(t, first, p)
	assert.Zero(t, off)
	assert.Equal(t, int32(21), m.Page(first).RefCount(), "the refill dropped the frag's own reference: the old block is held by its 21 buffers only")
	assert.Equal(t, int32(2), m.Page(p).RefCount())
	assert.Equal(t, mem.FragStats{Buffers: 22, Refills: 2}, f.Stats())
	l, owner := m.Loc(first)
	assert.Equal(t, mem.PageFrag, l)
	assert.Equal(t, 0, owner)
	assert.Equal(t, int64(16), m.Count(mem.PageFrag))

	for i, b := range bufs {
		freed, err := m.PutPage(c, b.page) // page_frag_free
		require.NoError(t, err)
		assert.Equal(t, i == 20, freed, "the last buffer frees the block")
		verify(t, m)
	}
	l, _ = m.Loc(first)
	assert.Equal(t, mem.PCP, l)

	freed, err := m.PutPage(c, p)
	require.NoError(t, err)
	assert.False(t, freed, "the frag still holds its reference on the current block")
	require.NoError(t, f.Drain(c))
	verify(t, m)
	assert.Equal(t, int64(0), m.Count(mem.PageFrag))
}

// TestSkbPageFragRefillReusesAtRefCountOne is FIDELITY row 6: every
// refill reads page_ref_count; when it is 1 (every buffer was freed) the
// block starts again at offset 0, wherever the offset was; with a buffer
// still held it does not, and a full block is replaced.
func TestSkbPageFragRefillReusesAtRefCountOne(t *testing.T) {
	tests := []struct {
		name    string
		carve   int  // 4096-byte buffers carved first
		keep    bool // keep the first buffer
		reused  bool
		newPage bool
		offset  uint32 // of the next buffer
	}{
		{"all freed, block full: reused", 8, false, true, false, 0},
		{"all freed, block half used: reused from 0", 4, false, true, false, 0},
		{"one held, block half used: carving goes on", 4, true, false, false, 16384},
		{"one held, block full: a new block", 8, true, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			f, err := m.NewFrag(0)
			require.NoError(t, err)
			var bufs []buf
			for i := 0; i < tt.carve; i++ {
				p, off, ok := f.Alloc(c, 4096)
				require.True(t, ok)
				bufs = append(bufs, buf{p, off})
			}
			block := bufs[0].page
			for i, b := range bufs {
				if tt.keep && i == 0 {
					continue
				}
				_, err := m.PutPage(c, b.page)
				require.NoError(t, err)
				verify(t, m)
			}
			p, off, ok := f.Alloc(c, 4096)
			require.True(t, ok)
			verify(t, m)
			assert.Equal(t, tt.offset, off)
			assert.Equal(t, tt.newPage, p != block)
			if tt.reused {
				assert.Equal(t, uint64(1), f.Stats().Reuses)
			} else {
				assert.Zero(t, f.Stats().Reuses)
			}
			want := uint64(1)
			if tt.newPage {
				want = 2
			}
			assert.Equal(t, want, f.Stats().Refills)
		})
	}
}

// TestSkbPageFragRemoteFreesBounceTheRefcountLine is FIDELITY row 6: CPU 0
// takes a reference per buffer, CPU 1 drops them (a cpumap); the
// compound head's refcount line moves between them, and the block is
// freed on CPU 1, a remote free of a block CPU 0 allocated.
func TestSkbPageFragRemoteFreesBounceTheRefcountLine(t *testing.T) {
	s, m := newMem(t, 2, small())
	c0, c1 := s.CPU(0), s.CPU(1)
	f, err := m.NewFrag(0)
	require.NoError(t, err)
	costs := sim.DefaultCosts()
	var first mem.PageID
	for i := 0; i < 8; i++ {
		before := c0.Busy()
		p, _, ok := f.Alloc(c0, 4096)
		require.True(t, ok)
		first = p
		if i > 0 {
			assert.Equal(t, costs.PageFragCarve+costs.Atomic, c0.Busy()-before, "buffer %d: CPU 0 owns the line", i)
		}
	}
	assert.Zero(t, m.Stats().RefTransfers)
	// Interleaved: each get_page and each put_page pulls the line back.
	p, _, ok := f.Alloc(c0, 4096) // the block is full: a new one
	require.True(t, ok)
	require.NotEqual(t, first, p)
	for i := 0; i < 8; i++ {
		before := c1.Busy()
		freed, err := m.PutPage(c1, first)
		require.NoError(t, err)
		assert.Equal(t, i == 7, freed)
		if i == 0 {
			assert.GreaterOrEqual(t, c1.Busy()-before, costs.CacheLineTransfer+costs.Atomic, "CPU 1's first put pulls the line")
		}
		verify(t, m)
	}
	assert.Equal(t, uint64(1), m.Stats().RefTransfers, "CPU 1 pulled the old block's line once")
	assert.Equal(t, uint64(1), m.Stats().RemoteFrees, "the block CPU 0 allocated was freed on CPU 1")
	for i := 0; i < 4; i++ {
		_, _, ok := f.Alloc(c0, 4096)
		require.True(t, ok)
		_, err := m.PutPage(c1, p)
		require.NoError(t, err)
	}
	// Each put on CPU 1 and the next refill's page_ref_count read on CPU 0
	// move the line: 4 puts and 4 reads after the first put.
	assert.Equal(t, uint64(1+4+3), m.Stats().RefTransfers)
	assert.Positive(t, c0.Transfers())
	assert.Positive(t, c1.Transfers())
	verify(t, m)
}

// TestSkbPageFragFallsBackToOrder0 leaves no order-3 block free: the frag
// takes one order-0 page (skb_page_frag_refill's alloc_page fallback).
func TestSkbPageFragFallsBackToOrder0(t *testing.T) {
	s, m := newMem(t, 1, mem.Config{Pages: 10, MaxOrder: 3, PCPBatch: 2, PCPHigh: 4})
	c := s.CPU(0)
	_, err := m.AllocPages(c, 3, mem.Driver, -1)
	require.NoError(t, err)
	f, err := m.NewFrag(1)
	require.NoError(t, err)
	p, _, ok := f.Alloc(c, 2048)
	require.True(t, ok)
	verify(t, m)
	assert.Equal(t, 0, m.Page(p).Order())
	assert.Equal(t, uint32(mem.PageSize), f.Size())
	assert.Equal(t, uint32(2048), f.Remaining())
	assert.Equal(t, uint64(1), f.Stats().Fallbacks)
}

func TestSkbPageFragRejectsBadArguments(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	f, err := m.NewFrag(0)
	require.NoError(t, err)
	for _, size := range []uint32{0, mem.PageSize + 1} {
		_, _, ok := f.Alloc(c, size)
		assert.False(t, ok, "size %d", size)
		verify(t, m)
	}
	assert.Equal(t, uint64(2), f.Stats().Fails)
	_, err = m.NewFrag(1 << 20)
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
		{"exact fit leaves no hole", repeat(4096, 6), 4096, 0, 8192},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			f, err := m.NewFrag(0)
			require.NoError(t, err)
			for _, size := range tt.carve {
				_, _, ok := f.Alloc(c, size)
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
