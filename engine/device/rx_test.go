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
	tr, err := NewStreamTraffic(&s, 0, &costs)
	require.NoError(t, err)
	r := NewRX(q, ConfigOf(&s), tr, &costs)
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
	tr, err := NewStreamTraffic(&s, 0, &costs)
	require.NoError(t, err)
	r := NewRX(q, ConfigOf(&s), tr, &costs)
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

// rig is one receive queue and its host, without a driver: the test posts
// buffers and catches the host up itself.
type rig struct {
	q   *virtq.Queue
	r   *RX
	tok virtq.Token
}

func newRig(t *testing.T, s scenario.Scenario, ring int) *rig {
	t.Helper()
	q, err := virtq.New(ring, virtq.Config{Name: "rx", EventIdx: s.Features.EventIdx, Ctx: true})
	require.NoError(t, err)
	costs := sim.DefaultCosts()
	tr, err := NewStreamTraffic(&s, 0, &costs)
	require.NoError(t, err)
	r := NewRX(q, ConfigOf(&s), tr, &costs)
	return &rig{q: q, r: r}
}

// post adds n receive buffers of l bytes, kicking as virtqueue_kick
// would (kick_prepare, then the notification); it reports whether the
// driver kicked.
func (g *rig) post(t *testing.T, n int, l uint32, at sim.Time) bool {
	t.Helper()
	for range n {
		g.tok++
		require.NoError(t, g.q.AddInbuf(virtq.SG{Addr: uint64(g.tok) << 16, Len: l}, g.tok, 0))
	}
	if g.q.KickPrepare() && g.q.Notify() {
		g.r.Kick(at)
		return true
	}
	return false
}

// reclaim takes back every published used buffer.
func (g *rig) reclaim() int {
	n := 0
	for {
		if _, _, _, ok := g.q.GetBuf(); !ok {
			return n
		}
		n++
	}
}

// TestVhostWritesAvailEventOnlyWhenItRunsOut holds the host to vhost's
// rule (FIDELITY row 15): vhost_get_vq_desc takes buffers and writes
// nothing the driver reads; only when it finds no buffer does
// vhost_enable_notify write avail_event, with the avail index it has seen.
// QEMU's virtqueue_split_pop (device.avail_event "pop") also writes
// last_avail_idx after every pop.
func TestVhostWritesAvailEventOnlyWhenItRunsOut(t *testing.T) {
	for _, rule := range []string{scenario.AvailEventSeen, scenario.AvailEventPop} {
		t.Run(rule, func(t *testing.T) {
			s := scenario.Default()
			s.Device.AvailEvent = rule
			s.Traffic.RatePPS = 1e6 // a frame every µs
			g := newRig(t, s, 8)
			g.r.CatchUp(0) // the host finds the ring empty and sleeps
			require.True(t, g.r.Starved())
			assert.True(t, g.post(t, 8, 2048, 0), "the first buffers wake it")
			// The kick wakes it 4 µs later (vhost_wake_latency), with
			// frames waiting; they take cost(64, 1, 1) each.
			per := g.r.cost(64, 1, 1)
			g.r.CatchUp(sim.Time(4000).Add(3*per + per/2)) // three frames in, five buffers left
			require.Equal(t, uint64(3), g.r.Counters().Packets)
			want := uint16(0) // still what it wrote when it slept
			if rule == scenario.AvailEventPop {
				want = 3
			}
			assert.Equal(t, want, g.q.AvailEvent(), "avail_event while the host pops")
			g.r.CatchUp(sim.Time(20_000))
			require.True(t, g.r.Starved())
			assert.Equal(t, uint16(8), g.q.AvailEvent(), "vhost_enable_notify: the index it has seen")
		})
	}
}

// TestHostRearmsWithTheAvailIndexItHasSeen is FIDELITY row 16: a host
// that stops because the next frame needs more buffers than are left must
// write avail_event = the avail index it has seen (vhost_enable_notify),
// not its last_avail_idx: the driver's refill starts above last_avail_idx
// and vring_need_event would never tell it to kick, and both sides would
// wait for each other for good.
func TestHostRearmsWithTheAvailIndexItHasSeen(t *testing.T) {
	for _, rule := range []string{scenario.AvailEventSeen, scenario.AvailEventPop} {
		t.Run(rule, func(t *testing.T) {
			s := scenario.Default()
			s.MTU = 9000
			s.Traffic.Size = 2500 // 2512 bytes with the header: three 1000-byte buffers
			s.Device.AvailEvent = rule
			g := newRig(t, s, 8)
			g.r.CatchUp(0)
			assert.True(t, g.post(t, 8, 1000, 0))
			g.r.CatchUp(sim.Time(sim.Millisecond))
			require.Equal(t, uint64(2), g.r.Counters().Packets, "two frames fit eight buffers")
			require.True(t, g.r.Starved(), "the third needs three buffers, two are left")
			assert.Equal(t, uint16(8), g.q.AvailEvent())
			assert.Equal(t, 6, g.reclaim())
			assert.True(t, g.post(t, 1, 1000, sim.Time(sim.Millisecond)), "one more buffer must kick the sleeping host")
			assert.False(t, g.r.Starved())
			g.r.CatchUp(sim.Time(2 * sim.Millisecond))
			assert.Equal(t, uint64(3), g.r.Counters().Packets)
		})
	}
}

// TestVhostPublishesUsedInBatches is FIDELITY row 17: vhost-net's
// handle_rx keeps the heads it used in vq->heads (nvq->done_idx) and
// publishes them with one used.idx store and one interrupt decision
// (vhost_net_signal_used) when done_idx passes VHOST_NET_BATCH and when
// its run ends: at the weight (VHOST_NET_PKT_WEIGHT 256 frames), when it
// runs out of buffers, or when no frame is waiting. A hardware device
// publishes per frame. Without EVENT_IDX every publish interrupts, so
// publishes are interrupts.
func TestVhostPublishesUsedInBatches(t *testing.T) {
	const frames = 1024
	tests := []struct {
		name  string
		kind  string
		rate  float64 // pps; 0 saturates
		burst int
	}{
		{"vhost, saturating", scenario.DeviceVhost, 0, 0},
		{"vhost, bursts of 100", scenario.DeviceVhost, 100_000, 100},
		{"vhost, one frame at a time", scenario.DeviceVhost, 100_000, 0},
		{"nic, saturating", scenario.DeviceNIC, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario.Default()
			s.Features.EventIdx = false
			s.Device.Kind = tc.kind
			s.Traffic.RatePPS, s.Traffic.Burst = tc.rate, tc.burst
			g := newRig(t, s, frames)
			g.r.CatchUp(0)
			g.post(t, frames, 2048, 0)
			var published []uint16 // used.idx after each step, when it moved
			last := g.q.UsedIdx()
			for at := sim.Time(0); !g.r.Starved() && at < sim.Time(sim.Second); at += 100 {
				g.r.CatchUp(at)
				if u := g.q.UsedIdx(); u != last {
					published = append(published, u-last)
					last = u
				}
			}
			c := g.r.Counters()
			require.Equal(t, uint64(frames), c.Packets)
			assert.Equal(t, uint16(frames), g.q.UsedIdx(), "every entry published once the host ran dry")
			if tc.kind == scenario.DeviceNIC {
				assert.Equal(t, uint64(frames), c.UsedPublishes, "a hardware device publishes per frame")
				assert.Equal(t, uint64(frames), c.Interrupts)
				assert.Zero(t, c.PublishWaitNs)
				return
			}
			maxPublishes := (frames+VhostNetBatch-1)/VhostNetBatch + int(c.Runs)
			assert.LessOrEqual(t, int(c.UsedPublishes), maxPublishes, "ceil(frames/64) + runs")
			assert.Equal(t, c.UsedPublishes, c.Interrupts, "one decision per publish")
			for _, n := range published {
				assert.LessOrEqual(t, int(n), VhostNetBatch+1, "a batch holds at most VHOST_NET_BATCH+1 heads")
			}
			if tc.burst == 0 && tc.rate > 0 {
				assert.Equal(t, uint64(frames), c.UsedPublishes, "each frame ends a run: no frame waits behind it")
			} else {
				assert.Positive(t, c.PublishWaitNs, "batched entries wait to be published")
			}
			t.Logf("%d frames: %d publishes, %d runs, %d interrupts, %.0f ns waited per frame",
				frames, c.UsedPublishes, c.Runs, c.Interrupts, float64(c.PublishWaitNs)/frames)
		})
	}
}

// TestNextLandingIsTheNextPublish: for vhost-net, NextLanding looks ahead
// to the next publish (nextPublish) without changing anything. Where it
// can see every step (saturating traffic of fixed sizes, lone buffers) it
// is exactly the time the batch is published, whatever ends it: the batch
// passing VHOST_NET_BATCH, the ring running dry, the byte weight. Nothing
// is published before it in any case.
func TestNextLandingIsTheNextPublish(t *testing.T) {
	tests := []struct {
		name      string
		ring      int
		size      int
		buf       uint32
		mtu       int
		rate      float64
		exact     bool
		publishes int // at least
	}{
		{"batch passes 64", 1024, 64, 2048, 1500, 0, true, 10},
		{"ring runs dry", 16, 64, 2048, 1500, 0, true, 1},
		{"multi-buffer frames", 1024, 3000, 1000, 9000, 0, true, 10},
		{"byte weight", 1024, 9014, 9100, 9000, 0, true, 5},
		{"rate-limited: a frame may end the run", 1024, 64, 2048, 1500, 3e6, false, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario.Default()
			s.Features.EventIdx = false // every publish interrupts: irqAt is its time
			s.MTU = tc.mtu
			s.Traffic.Size = tc.size
			s.Traffic.RatePPS = tc.rate
			g := newRig(t, s, tc.ring)
			g.r.CatchUp(0)
			g.post(t, tc.ring, tc.buf, 0)
			for n := 0; n < tc.publishes; n++ {
				at, ok := g.r.NextLanding()
				require.True(t, ok, "publish %d", n)
				before := g.r.Counters().UsedPublishes
				irq, _ := g.r.CatchUp(at - 1)
				require.False(t, irq, "publish %d: nothing before the landing", n)
				require.Equal(t, before, g.r.Counters().UsedPublishes)
				irq, irqAt := g.r.CatchUp(at)
				if tc.exact {
					require.True(t, irq, "publish %d at the landing", n)
					require.Equal(t, at, irqAt)
				} else if !irq {
					n-- // a landing short of the publish: look again
				}
				g.post(t, g.reclaim(), tc.buf, at) // refill what was used
			}
		})
	}
}
