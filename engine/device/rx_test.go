package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// TestWindowHoldsTheFrameBuiltWhenRead: the host writes a frame's header
// and bytes into the window only when someone reads them; what Window,
// CopyFrame and NumBuffers return is the header and Flow.Build of the
// frame delivered there, whichever is read first and however much of it,
// also after the head is reused.
func TestWindowHoldsTheFrameBuiltWhenRead(t *testing.T) {
	s := scenario.Default()
	s.Traffic.Sizes = []int{1514, 60, 300}
	s.Traffic.Flows = 3
	s.Traffic.Proto = "tcp"
	const ring = 4
	q, err := virtq.New(ring, virtq.Config{Name: "rx", Ctx: true})
	require.NoError(t, err)
	costs := sim.DefaultCosts()
	r := NewRX(q, &s, 0, &costs)
	ref := NewTraffic(s.Traffic, 0, 1, s.Seed) // the same packets, built eagerly

	var tok virtq.Token
	heads := map[virtq.Token]uint16{}
	post := func() {
		tok++
		heads[tok] = q.FreeHead()
		require.NoError(t, q.AddInbuf(virtq.SG{Addr: uint64(tok) << 12, Len: 2048}, tok, 0))
		r.Kick(0) // wakes the host if it found the ring empty
	}
	for i := 0; i < ring; i++ {
		post()
	}
	const stored = WindowSize - VirtioNetHdrLen
	for pkt := 0; pkt < 12; pkt++ {
		r.CatchUp(sim.Time(1) << 40)
		got, _, _, ok := q.GetBuf()
		require.True(t, ok, "packet %d", pkt)
		head := heads[got]
		flow, size := ref.Peek()
		want := make([]byte, stored)
		n := flow.Build(want, uint64(pkt), size)
		want = want[:n]
		ref.Advance()

		part := make([]byte, min(pkt*13%stored, n))
		r.CopyFrame(head, part)
		assert.Equal(t, want[:len(part)], part, "packet %d: CopyFrame before Window", pkt)
		wantBufs := uint16(0)
		if s.Mode() == scenario.ModeMergeable {
			wantBufs = 1
		}
		assert.Equal(t, wantBufs, r.NumBuffers(head), "packet %d: num_buffers before Window", pkt)
		if pkt%2 == 0 {
			assert.Equal(t, want, r.Window(head)[VirtioNetHdrLen:][:n], "packet %d: Window", pkt)
			assert.Equal(t, wantBufs, NumBuffers(r.Window(head)), "packet %d: the window's header", pkt)
			assert.Equal(t, wantBufs, r.NumBuffers(head), "packet %d: num_buffers after Window", pkt)
			r.CopyFrame(head, part)
			assert.Equal(t, want[:len(part)], part, "packet %d: CopyFrame after Window", pkt)
		}
		post()
	}
}

// TestHostBusyAndStarvedTime: the host counts its time on frames and the
// time it waited for buffers with a frame waiting, from finding the ring
// empty to running again after the kick's latency; a wait still open is
// in StarvedFor.
func TestHostBusyAndStarvedTime(t *testing.T) {
	s := scenario.Default()
	s.Traffic.Size = 64
	const ring = 4
	q, err := virtq.New(ring, virtq.Config{Name: "rx", Ctx: true})
	require.NoError(t, err)
	costs := sim.DefaultCosts()
	r := NewRX(q, &s, 0, &costs)
	per := r.cost(64, 1, 1)
	var tok virtq.Token
	post := func(at sim.Time) {
		tok++
		require.NoError(t, q.AddInbuf(virtq.SG{Addr: uint64(tok) << 12, Len: 2048}, tok, 0))
		r.Kick(at)
	}
	for i := 0; i < ring; i++ {
		post(0)
	}
	r.CatchUp(sim.Time(1_000_000))
	c := r.Counters()
	assert.Equal(t, uint64(ring), c.Packets)
	assert.Equal(t, sim.Duration(ring)*per, c.Busy, "four frames, each its cost")
	require.True(t, r.Starved(), "the fifth frame finds the ring empty")
	emptyAt := sim.Time(ring) * sim.Time(per)
	assert.Equal(t, sim.Duration(0), c.StarvedTime, "the wait is still open")
	assert.Equal(t, sim.Time(1_000_000).Sub(emptyAt), r.StarvedFor(1_000_000))
	for q.NumFree() < ring {
		q.GetBuf()
	}
	post(2_000_000)
	woke := sim.Time(2_000_000).Add(costs.VhostWakeLatency)
	assert.Equal(t, woke.Sub(emptyAt), r.Counters().StarvedTime, "closed at the wake-up")
	assert.Equal(t, woke.Sub(emptyAt), r.StarvedFor(3_000_000), "nothing open")
}
