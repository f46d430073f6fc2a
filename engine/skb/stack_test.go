package skb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// FIDELITY row 4: what a TCP socket holds with and without a listening
// packet socket. Twenty 1514-byte skbs built around 2 KiB buffers
// (build_skb: the head is a page fragment) queue while the application
// sleeps: tcp_try_coalesce merges them into two skbs (17 frags, then 3:
// each stolen head is a frag); with packet_rcv's clones each stays an
// skb of its own, with its struct sk_buff counted in sk_rmem_alloc.
func TestSocketMemoryWithClones(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clone bool
		skbs  int
	}{
		{"no listener: coalesced", false, 2},
		{"packet socket: cloned", true, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sim.New(2, sim.DefaultCosts())
			require.NoError(t, err)
			pool := NewPool(64)
			st := NewStack(s, pool, &countingReleaser{}, 1, true, 100)
			st.SetSocket(true, tc.clone)
			c := s.CPU(0)
			c.Begin(0)
			for i := 0; i < 20; i++ {
				id := pool.Alloc(0, 0, c.Now())
				b := pool.Get(id)
				b.Head, b.Len, b.Truesize, b.PPRecycle = mem.PageID(i), 1514, 2048, true
				require.NoError(t, st.Deliver(c, id))
			}
			c.End()
			skbs, truesize := st.SocketMem()
			assert.Equal(t, tc.skbs, skbs)
			assert.Equal(t, uint64(20*2048+tc.skbs*StructTruesize), truesize, "buffers plus one struct sk_buff per skb")
			assert.Equal(t, tc.skbs, pool.Live())
			cs := st.Counters()
			assert.Equal(t, uint64(tc.skbs), cs.SockQueued)
			assert.Equal(t, uint64(20-tc.skbs), cs.Coalesced)
			// The application reads them all: every packet counts.
			require.True(t, s.Queue.Step())
			assert.Equal(t, uint64(20), st.Counters().Delivered)
			left, _ := st.SocketMem()
			assert.Zero(t, left, "the socket is empty")
		})
	}
}
