package skb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/softnet"
)

// appStack is a two-CPU stack whose application runs on CPU 1, fed n skbs
// NAPI allocated on CPU 0.
func appStack(t *testing.T, cfg StackConfig, n int) (*sim.Sim, *Stack, *Pool, *countingReleaser) {
	t.Helper()
	s, err := sim.New(2, sim.DefaultCosts())
	require.NoError(t, err)
	p := NewPool(n)
	var r countingReleaser
	cfg.CPU, cfg.Process = 1, true
	st := NewStack(s, softnet.New(s, softnet.Config{}), p, &r, cfg)
	c0 := s.CPU(0)
	c0.Begin(0)
	for range n {
		id := p.Alloc(0, 0, 0)
		require.NotEqual(t, NoSKB, id)
		p.Get(id).Head = 1 // one page reference to release
		require.NoError(t, st.Deliver(c0, id))
	}
	c0.End()
	return s, st, p, &r
}

// TestSkbAttemptDeferFreeCapAndIPI is FIDELITY row 14: skb_attempt_defer_free
// queues at most sysctl_skb_defer_max skbs on the allocating CPU's list
// (past it the skb is freed where it is), and the skb that brings the list
// to half of the max sends that CPU one IPI (defer_ipi_scheduled), whose
// handler runs skb_defer_free_flush. An application that frees faster than
// the IPI arrives fills the list to the max; it never goes past it.
func TestSkbAttemptDeferFreeCapAndIPI(t *testing.T) {
	const n = 1000
	s, st, p, r := appStack(t, StackConfig{Cost: 1, DeferFree: true}, n)
	most := 0
	for s.Queue.Step() {
		require.NoError(t, st.CheckDefer())
		most = max(most, st.Deferred(0))
	}
	require.NoError(t, s.Err())
	c := st.Counters()
	assert.Equal(t, DeferMax, most, "the list fills up to sysctl_skb_defer_max and no further")
	assert.Positive(t, c.DeferFull, "past the max the skb is freed on CPU 1")
	assert.Positive(t, c.DeferIPIs)
	assert.Equal(t, uint64(n), c.Deferred+c.DeferFull)
	assert.Zero(t, st.Deferred(0), "the last IPI flushed the list")
	assert.Zero(t, p.Live())
	assert.Equal(t, n, r.n)
}

// TestSkbAttemptDeferFreeOnlyWhereTheProtocolDefers: without DeferFree
// (UDP before 6.18, TCP before 5.19) the application frees every skb
// itself.
func TestSkbAttemptDeferFreeOnlyWhereTheProtocolDefers(t *testing.T) {
	s, st, p, _ := appStack(t, StackConfig{Cost: 100}, 200)
	for s.Queue.Step() {
	}
	require.NoError(t, s.Err())
	c := st.Counters()
	assert.Zero(t, c.Deferred)
	assert.Zero(t, c.DeferIPIs)
	assert.Equal(t, uint64(200), c.Delivered)
	assert.Zero(t, p.Live())
}

// TestSkbDeferMax619: 6.19 raised sysctl_skb_defer_max to 128.
func TestSkbDeferMax619(t *testing.T) {
	s, st, _, _ := appStack(t, StackConfig{Cost: 1, DeferFree: true, DeferMax: DeferMax619}, 1000)
	most := 0
	for s.Queue.Step() {
		most = max(most, st.Deferred(0))
	}
	assert.Equal(t, DeferMax619, most)
}

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
			st := NewStack(s, softnet.New(s, softnet.Config{}), pool, &countingReleaser{}, StackConfig{CPU: 1, Process: true, Cost: 100, DeferFree: true})
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
