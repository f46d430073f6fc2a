package skb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// groRig is a GRO over a pool whose skbs go up into a list.
type groRig struct {
	pool *Pool
	gro  *GRO
	c    *sim.CPU
	up   []ID
}

func newGRO(t *testing.T, on bool) *groRig {
	t.Helper()
	s, err := sim.New(1, sim.DefaultCosts())
	require.NoError(t, err)
	r := &groRig{pool: NewPool(256), c: s.CPU(0)}
	r.gro = NewGRO(r.pool, func(_ *sim.CPU, id ID) error { r.up = append(r.up, id); return nil }, on, 1514)
	r.c.Begin(0)
	return r
}

// frame builds the skb of frame seq: a head page with n bytes, in
// queue 0.
func (r *groRig) frame(t *testing.T, seq uint64, n uint32) ID {
	t.Helper()
	id := r.pool.Alloc(0, 0, 0)
	require.NotEqual(t, NoSKB, id)
	s := r.pool.Get(id)
	s.Head, s.Len, s.Truesize, s.Seq = mem.PageID(100+seq), n, 2048, seq
	return id
}

// dev_gro_receive, skb_gro_receive: in-order frames of the flow merge
// into the held skb (each head a frag), until MAX_SKB_FRAGS, then onto
// its frag_list; the held skb goes up when the next frame does not
// continue the flow, and at napi_complete_done (FlushAll).
func TestGROMergesInOrderFrames(t *testing.T) {
	r := newGRO(t, true)
	for seq := uint64(0); seq < 20; seq++ {
		require.NoError(t, r.gro.Receive(r.c, r.frame(t, seq, 1514), true, 0))
	}
	assert.Empty(t, r.up, "held while the flow continues")
	h := r.pool.Get(r.gro.Held())
	assert.Equal(t, uint16(20), h.Segs)
	assert.Equal(t, uint32(20*1514), h.Len)
	assert.Equal(t, uint8(MaxSkbFrags), h.NrFrags, "17 heads stolen as frags")
	assert.NotEqual(t, NoSKB, h.FragList, "then the frag_list")
	assert.Equal(t, 2, r.pool.Chained(), "frames 18 and 19: the held skb's own head and 17 stolen ones before them")
	assert.Equal(t, uint64(19), r.gro.Merged)

	// A gap (frame 21 without 20): the held skb goes up, 21 is held.
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 21, 1514), true, 0))
	require.Len(t, r.up, 1)
	assert.Equal(t, uint16(20), r.pool.Get(r.up[0]).Segs)
	require.NoError(t, r.gro.FlushAll(r.c))
	require.Len(t, r.up, 2)
	assert.Equal(t, NoSKB, r.gro.Held())
	assert.Equal(t, uint64(2), r.gro.Flushed)
	assert.Positive(t, r.c.Profile()[sim.SymNAPIGROReceive], "each frame costs gro_receive")
}

// skb_gro_receive: p->len + len >= gro_max_size flushes: a held skb never
// reaches 64 KiB of packet.
func TestGROStopsAtGROMaxSize(t *testing.T) {
	r := newGRO(t, true)
	for seq := uint64(0); seq < 50; seq++ {
		require.NoError(t, r.gro.Receive(r.c, r.frame(t, seq, 1514), true, 0))
	}
	require.NoError(t, r.gro.FlushAll(r.c))
	total := 0
	for _, id := range r.up {
		s := r.pool.Get(id)
		assert.Less(t, s.Len, uint32(GROMaxSize))
		total += int(s.Segs)
	}
	assert.Equal(t, 50, total, "every frame went up once")
	assert.Len(t, r.up, 2, "43 frames of 1514 bytes fit under 64 KiB, then a second skb")
}

// What GRO does not merge: frames of no stream (no UDP GRO without a
// socket asking), GSO frames longer than the MTU, skbs whose pages
// recycle differently (pp_recycle); and with GRO off nothing is held.
func TestGROPassesThrough(t *testing.T) {
	r := newGRO(t, true)
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 0, 1514), false, 0))
	assert.Len(t, r.up, 1, "not a stream's frame")
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 1, 9014), true, 0))
	assert.Len(t, r.up, 2, "a GSO frame")
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 2, 1514), true, 0))
	pp := r.frame(t, 3, 1514)
	r.pool.Get(pp).PPRecycle = true
	require.NoError(t, r.gro.Receive(r.c, pp, true, 0))
	assert.Len(t, r.up, 3, "pp_recycle differs: the held skb goes up")
	assert.Equal(t, pp, r.gro.Held())

	off := newGRO(t, false)
	require.NoError(t, off.gro.Receive(off.c, off.frame(t, 0, 1514), true, 0))
	require.NoError(t, off.gro.Receive(off.c, off.frame(t, 1, 1514), true, 0))
	assert.Len(t, off.up, 2, "ethtool -K gro off: every frame goes up")
	assert.Zero(t, off.c.Profile()[sim.SymNAPIGROReceive])
}

// napi_poll's napi_gro_flush(n, HZ >= 1000) after a full-budget poll
// flushes only what was held since an earlier jiffy.
func TestGROFlushOldByJiffy(t *testing.T) {
	r := newGRO(t, true)
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 0, 1514), true, 7))
	require.NoError(t, r.gro.FlushOld(r.c, 7))
	assert.Empty(t, r.up, "held in this jiffy")
	require.NoError(t, r.gro.FlushOld(r.c, 8))
	assert.Len(t, r.up, 1, "held since an earlier one")
}

// tcp_gro_receive with segments of different sizes (a sender's small
// writes, FIDELITY T1): a segment shorter than the held skb's gso_size
// merges and ends it (flush = len < mss); a longer one does not merge
// (flush |= (len - 1) >= mss) and is held in its place.
func TestGROShortSegmentEndsTheSkb(t *testing.T) {
	r := newGRO(t, true)
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 0, 1514), true, 0))
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 1, 1514), true, 0))
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 2, 322), true, 0))
	require.Len(t, r.up, 1, "the short segment merged and the skb went up")
	assert.Equal(t, uint16(3), r.pool.Get(r.up[0]).Segs)
	assert.Equal(t, NoSKB, r.gro.Held())

	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 3, 322), true, 0))
	require.NoError(t, r.gro.Receive(r.c, r.frame(t, 4, 1514), true, 0))
	require.Len(t, r.up, 2, "a longer segment does not merge into a short one's skb")
	assert.Equal(t, uint16(1), r.pool.Get(r.up[1]).Segs)
	assert.Equal(t, uint64(2), r.gro.Merged)
}
