package skb

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

type countingReleaser struct{ n int }

func (r *countingReleaser) Release(*sim.CPU, mem.PageID, bool, Context) error {
	r.n++
	return nil
}

// TestAllocClearsWhatTheLastUserLeft guards the partial clear of release
// and Alloc: an skb that had frags, a head, flags and a length comes back
// as a fresh one.
func TestAllocClearsWhatTheLastUserLeft(t *testing.T) {
	p := NewPool(1)
	id := p.Alloc(1, 2, 100)
	require.NotEqual(t, NoSKB, id)
	s := p.Get(id)
	s.Head, s.Len, s.Truesize, s.PPRecycle, s.Cloned, s.Tailroom, s.Segs = 7, 1500, 4096, true, true, 9, 3
	for i := 0; i < MaxSkbFrags; i++ {
		require.True(t, s.AddFrag(mem.PageID(10+i), uint32(i), 64, 4096))
	}
	s.Coalesce(10, 0)
	assert.False(t, s.AddFrag(99, 0, 1, 1), "MAX_SKB_FRAGS")
	var r countingReleaser
	require.NoError(t, p.Free(nil, id, &r, Context{}))
	assert.Equal(t, 1+MaxSkbFrags, r.n, "head and every frag released")

	id = p.Alloc(0, 3, 200)
	require.NotEqual(t, NoSKB, id)
	assert.Equal(t, SKB{Head: mem.NoPage, Segs: 1, AllocCPU: 0, Queue: 3, FragList: NoSKB, Born: 200, next: NoSKB}, *p.Get(id))
	assert.Equal(t, NoSKB, p.Alloc(0, 0, 0), "pool of one")
}

type recordingReleaser struct{ pages []mem.PageID }

func (r *recordingReleaser) Release(_ *sim.CPU, p mem.PageID, _ bool, _ Context) error {
	r.pages = append(r.pages, p)
	return nil
}

// FIDELITY row 4: skb_can_coalesce has no clone test (include/linux/skbuff.h).
func TestCanCoalesceIgnoresClones(t *testing.T) {
	p := NewPool(1)
	s := p.Get(p.Alloc(0, 0, 0))
	require.True(t, s.AddFrag(5, 100, 1000, 1536))
	s.Cloned = true
	assert.True(t, s.CanCoalesce(5, 1100), "same page, contiguous")
	assert.False(t, s.CanCoalesce(5, 1200))
	assert.False(t, s.CanCoalesce(6, 1100))
}

// FIDELITY row 10: skbs chained through frag_list (virtnet_skb_append_frag)
// are freed with their head, every page of each given back
// (skb_release_data, skb_drop_fraglist); Pages walks them.
func TestFragListChainIsFreedWithItsHead(t *testing.T) {
	p := NewPool(4)
	head := p.Alloc(0, 0, 0)
	p.Get(head).Head = 1
	for i := 0; i < MaxSkbFrags; i++ {
		require.True(t, p.Get(head).AddFrag(mem.PageID(10+i), 0, 100, 4096))
	}
	tail := head
	for k := 0; k < 2; k++ {
		n := p.Alloc(0, 0, 0)
		p.Chain(head, tail, n)
		require.True(t, p.Get(n).AddFrag(mem.PageID(100+k), 0, 100, 4096))
		tail = n
	}
	assert.Equal(t, 3, p.Live())
	assert.Equal(t, 2, p.Chained())
	assert.Equal(t, int64(1+MaxSkbFrags+2), p.PageRefs())
	var seen []mem.PageID
	p.Pages(head, func(pg mem.PageID) { seen = append(seen, pg) })
	assert.Len(t, seen, 1+MaxSkbFrags+2)
	var r recordingReleaser
	require.NoError(t, p.Free(nil, head, &r, Context{}))
	assert.Equal(t, seen, r.pages, "head, frags, then each chained skb's frags")
	assert.Zero(t, p.Live())
	assert.Zero(t, p.Chained())
	assert.Zero(t, p.PageRefs())
	// Reused, the skbs come back without a chain.
	for i := 0; i < 3; i++ {
		assert.Equal(t, NoSKB, p.Get(p.Alloc(0, 0, 0)).FragList)
	}
}

// FIDELITY row 4: skb_try_coalesce (net/core/skbuff.c) as tcp_try_coalesce
// calls it: never into a cloned tail; a page head is stolen as a frag and
// the frags moved, up to MAX_SKB_FRAGS; a small packet is copied into
// the tail's linear room.
func TestTryCoalesce(t *testing.T) {
	built := func(p *Pool, page mem.PageID) ID { // build_skb around a buffer
		id := p.Alloc(0, 0, 0)
		s := p.Get(id)
		s.Head, s.Len, s.Truesize, s.Tailroom = page, 1514, 2048, 10
		return id
	}
	t.Run("head stolen", func(t *testing.T) {
		p := NewPool(2)
		to, from := built(p, 1), built(p, 2)
		var r recordingReleaser
		how, err := p.TryCoalesce(nil, to, from, &r, Context{})
		require.NoError(t, err)
		assert.Equal(t, CoalescedFrags, how)
		s := p.Get(to)
		assert.Equal(t, uint32(2*1514), s.Len)
		assert.Equal(t, uint32(2*2048), s.Truesize, "truesize grows by the new skb's, less its sk_buff")
		assert.Equal(t, uint16(2), s.Segs)
		assert.Equal(t, uint8(1), s.NrFrags)
		assert.Equal(t, mem.PageID(2), s.Frags[0].Page)
		assert.Empty(t, r.pages, "no page is released: the head became a frag")
		assert.Equal(t, 1, p.Live())
	})
	t.Run("cloned tail", func(t *testing.T) {
		p := NewPool(2)
		to, from := built(p, 1), built(p, 2)
		p.Get(to).Cloned = true
		how, err := p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
		require.NoError(t, err)
		assert.Equal(t, NotCoalesced, how, "skb_cloned(to)")
		assert.Equal(t, 2, p.Live())
	})
	t.Run("cloned head is locked", func(t *testing.T) {
		p := NewPool(2)
		to, from := built(p, 1), built(p, 2)
		p.Get(from).Cloned = true
		how, _ := p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
		assert.Equal(t, NotCoalesced, how, "skb_head_is_locked(from)")
	})
	t.Run("MAX_SKB_FRAGS", func(t *testing.T) {
		p := NewPool(2)
		to, from := built(p, 1), built(p, 2)
		for i := 0; i < MaxSkbFrags-2; i++ {
			require.True(t, p.Get(to).AddFrag(mem.PageID(10+i), 0, 1, 1))
		}
		how, _ := p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
		assert.Equal(t, CoalescedFrags, how, "the head makes the 16th frag")
		from = built(p, 3)
		how, _ = p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
		assert.Equal(t, CoalescedFrags, how, "the 17th")
		from = built(p, 4)
		how, _ = p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
		assert.Equal(t, NotCoalesced, how, "nr_frags + from's >= MAX_SKB_FRAGS with a head to steal")
		assert.Equal(t, uint8(MaxSkbFrags), p.Get(to).NrFrags)
	})
	t.Run("small packet copied", func(t *testing.T) {
		p := NewPool(2)
		small := func() ID {
			id := p.Alloc(0, 0, 0)
			s := p.Get(id)
			s.Len, s.Truesize, s.Tailroom = 60, 128, 128-60
			return id
		}
		to, from := small(), small()
		var r countingReleaser
		how, err := p.TryCoalesce(nil, to, from, &r, Context{})
		require.NoError(t, err)
		assert.Equal(t, CoalescedCopy, how)
		assert.Equal(t, uint32(120), p.Get(to).Len)
		assert.Equal(t, uint32(128), p.Get(to).Truesize, "delta truesize 0")
		assert.Equal(t, 1, p.Live(), "the copied skb is freed")
	})
}

// TestTryCoalescePagePoolRules is FIDELITY row C1: skb_try_coalesce's
// page_pool rule at each kernel (skb.CoalescePP), for every mix of a
// page_pool or plain tail and a page_pool or plain, cloned or not, new
// skb whose frags alone are moved (its head holds only pulled headers).
func TestTryCoalescePagePoolRules(t *testing.T) {
	type mix struct{ toPP, fromPP, fromCloned bool }
	all := []mix{
		{false, false, false}, {false, false, true}, {false, true, false}, {false, true, true},
		{true, false, false}, {true, false, true}, {true, true, false}, {true, true, true},
	}
	for _, tc := range []struct {
		rule CoalescePP
		name string
		ok   func(m mix) bool
	}{
		{CoalescePPAny, "before 5.14", func(mix) bool { return true }},
		{CoalescePPMatch, "5.14, 6.8", func(m mix) bool { return m.toPP == m.fromPP }},
		{CoalescePPClonedToPlain, "5.18", func(m mix) bool { return m.toPP == (m.fromPP && !m.fromCloned) }},
		{CoalescePPNoClone, "6.3", func(m mix) bool { return m.toPP == m.fromPP && !(m.fromPP && m.fromCloned) }},
	} {
		for _, m := range all {
			t.Run(fmt.Sprintf("%s/to_pp=%v,from_pp=%v,cloned=%v", tc.name, m.toPP, m.fromPP, m.fromCloned), func(t *testing.T) {
				p := NewPool(2)
				p.SetCoalescePP(tc.rule)
				to, from := p.Alloc(0, 0, 0), p.Alloc(0, 0, 0)
				ts, fs := p.Get(to), p.Get(from)
				require.True(t, ts.AddFrag(1, 0, 1448, 2048))
				require.True(t, fs.AddFrag(2, 0, 1448, 2048))
				ts.Len, ts.Truesize, ts.PPRecycle = 1448, 2048, m.toPP
				fs.Len, fs.Truesize, fs.PPRecycle, fs.Cloned = 1448, 2048, m.fromPP, m.fromCloned
				how, err := p.TryCoalesce(nil, to, from, &countingReleaser{}, Context{})
				require.NoError(t, err)
				if tc.ok(m) {
					assert.Equal(t, CoalescedFrags, how)
					assert.Equal(t, uint8(2), p.Get(to).NrFrags)
					return
				}
				assert.Equal(t, NotCoalesced, how, "skb_try_coalesce refuses")
				assert.Equal(t, 2, p.Live())
			})
		}
	}
}

// TestSKBHeaderFitsALine: the fields before Frags, all that building and
// freeing an skb of one buffer touch, fit the skb's first cache line (the
// pool's array is page-aligned, and an skb a whole number of lines).
func TestSKBHeaderFitsALine(t *testing.T) {
	if off := unsafe.Offsetof(SKB{}.Frags); off > 64 {
		t.Fatalf("SKB.Frags starts at byte %d, want the fields before it in 64", off)
	}
	if n := unsafe.Sizeof(SKB{}); n%64 != 0 {
		t.Fatalf("SKB is %d bytes, want a multiple of 64", n)
	}
}
