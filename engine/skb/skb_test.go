package skb

import (
	"testing"

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

// TestAllocClearsWhatTheLastUserLeft guards Alloc's partial clear: an skb
// that had frags, a head, flags and a length comes back as a fresh one.
func TestAllocClearsWhatTheLastUserLeft(t *testing.T) {
	p := NewPool(1)
	id := p.Alloc(1, 2, 100)
	require.NotEqual(t, NoSKB, id)
	s := p.Get(id)
	s.Head, s.Len, s.Truesize, s.PPRecycle, s.Cloned = 7, 1500, 4096, true, true
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
	assert.Equal(t, SKB{Head: mem.NoPage, AllocCPU: 0, Queue: 3, Born: 200, next: NoSKB}, *p.Get(id))
	assert.Equal(t, NoSKB, p.Alloc(0, 0, 0), "pool of one")
}
