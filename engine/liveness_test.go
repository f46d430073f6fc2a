package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// stepUntil steps w until cond holds, at most limit events.
func stepUntil(t *testing.T, w *World, limit int, cond func() bool) {
	t.Helper()
	for i := 0; i < limit; i++ {
		if cond() {
			return
		}
		require.True(t, w.Step(), "world stopped before the condition held: %v", w.Err())
	}
	t.Fatalf("condition not reached in %d events", limit)
}

// requireStall runs w until it stops and returns the *LivenessError.
func requireStall(t *testing.T, w *World, limit int) *LivenessError {
	t.Helper()
	for i := 0; i < limit && w.Step(); i++ {
	}
	var le *LivenessError
	require.ErrorAs(t, w.Err(), &le, "no stall found within %d events", limit)
	assert.False(t, w.Step(), "a stalled world must stop")
	t.Log(le)
	return le
}

// TestLivenessCatchesALostWakeup loses one wakeup on purpose, the way a
// device that re-arms notifications wrongly does, and expects
// CheckLiveness to name the stalled queue and its sleeping host. The
// host is asleep with the ring empty; the driver's refill then decides
// whether to kick (virtqueue_kick_prepare) from what the device wrote.
func TestLivenessCatchesALostWakeup(t *testing.T) {
	tests := []struct {
		name     string
		eventIdx bool
		// lose makes the driver's next refill not kick.
		lose func(w *World)
	}{
		{"EVENT_IDX, avail_event behind the driver's index (row 16's write)", true, func(w *World) {
			vq := w.Driver.RQ[0].VQ
			vq.DeviceSetAvailEvent(vq.AvailIdx() - 1)
		}},
		{"no EVENT_IDX, NO_NOTIFY left set", false, func(w *World) {
			w.Driver.RQ[0].VQ.DeviceDisableNotify()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.LookupPreset("small-ring")
			require.NoError(t, err)
			s.Features.EventIdx = tc.eventIdx
			w, err := New(s)
			require.NoError(t, err)
			w.CheckLiveness(0)
			rq := w.Driver.RQ[0]
			// Past start-up, the host runs dry and sleeps.
			stepUntil(t, w, 10_000, func() bool { return w.Received() > 100 && rq.Dev.Starved() })
			tc.lose(w)
			le := requireStall(t, w, 100_000)
			assert.Equal(t, "small-ring", le.Scenario)
			require.Len(t, le.Queues, 1)
			assert.Contains(t, le.Queues[0], "rx0")
			assert.Contains(t, le.Queues[0], "host asleep until a kick")
			assert.Zero(t, le.Window, "nothing is left to run: caught at once")
			assert.False(t, le.Kernel, "a lost wakeup is the model's, not the kernel's deadlock")
		})
	}
}

// TestKernelDeadlockOnASmallRing is a stall the kernel has too, found by
// FuzzWorld: 64 KiB GSO frames into a small ring of mergeable buffers.
// virtnet_receive refills only when more than min(budget, ring)/2
// descriptors are free, so only ring - min(64, ring)/2 buffers are sure
// to be posted. Once a smaller frame has taken a few, what is left can
// hold less than the next 64 KiB frame: get_rx_bufs runs out, handle_rx
// waits for a kick, and the driver, with too few descriptors free to
// refill, never kicks. CheckLiveness must call that the kernel's own
// deadlock. With 128 entries or more, the 96 or more buffers always
// posted hold a 64 KiB frame even at the smallest size
// get_mergeable_buf_len gives them (GOOD_PACKET_LEN, 1536 bytes aligned),
// and the same stream runs.
func TestKernelDeadlockOnASmallRing(t *testing.T) {
	build := func(ring int) *World {
		s, err := scenario.LookupPreset("default")
		require.NoError(t, err)
		s.Kernel, s.CPUs, s.RingSize, s.MemoryPages = "6.17", 1, ring, 16384
		s.Features.MrgRxbuf, s.Features.GuestGSO, s.Features.EventIdx = true, true, true
		s.Driver.BufferSource = scenario.SourcePagePool
		s.Consumer = scenario.Consumer{CPU: -1, Context: scenario.FreeProcess, CostNs: 200, RcvbufBytes: 4 << 20}
		s.Traffic = scenario.Traffic{Kind: scenario.TrafficTCPStream, Proto: "tcp", Flows: 1, DstPort: 5201, RTTUs: 197}
		s.Device.AvailEvent = scenario.AvailEventPop
		require.NoError(t, s.Validate())
		w, err := New(s)
		require.NoError(t, err)
		w.CheckLiveness(0)
		return w
	}
	for _, tc := range []struct {
		ring      int
		threshold string
	}{{16, "more than 8 descriptors"}, {64, "more than 32 descriptors"}} {
		le := requireStall(t, build(tc.ring), 100_000)
		assert.True(t, le.Kernel, "ring %d: the kernel's own deadlock: %v", tc.ring, le)
		require.Len(t, le.Queues, 1)
		assert.Contains(t, le.Queues[0], "virtnet_receive refills only when "+tc.threshold+" are free")
		assert.Contains(t, le.Error(), "is in the kernel's own deadlock")
	}
	w := build(128)
	require.NoError(t, w.RunPackets(20_000))
	assert.NoError(t, w.Err(), "128 entries: 96 buffers of 1536 bytes or more always posted")
}

// TestLivenessWindow: a stalled queue next to a healthy one keeps the
// world's events going; CheckLiveness still finds it once it has gone a
// window with frames waiting and nothing delivered, and only then.
func TestLivenessWindow(t *testing.T) {
	s, err := scenario.LookupPreset("small-ring")
	require.NoError(t, err)
	s.Queues, s.CPUs, s.Traffic.Flows = 2, 2, 2
	w, err := New(s)
	require.NoError(t, err)
	const window = 2 * sim.Millisecond
	w.CheckLiveness(window)
	rq := w.Driver.RQ[0]
	stepUntil(t, w, 10_000, func() bool { return w.Received() > 100 && rq.Dev.Starved() })
	rq.VQ.DeviceSetAvailEvent(rq.VQ.AvailIdx() - 1)
	lost := w.Now()
	le := requireStall(t, w, 1_000_000)
	assert.Equal(t, window, le.Window)
	require.Len(t, le.Queues, 1, "only rx0 stalled")
	assert.Contains(t, le.Queues[0], "rx0")
	assert.GreaterOrEqual(t, le.At.Sub(le.Since), window)
	assert.Less(t, le.At.Sub(lost), window+sim.Millisecond, "found within a window of the loss")
	assert.Positive(t, w.Driver.RQ[1].Stats.Packets-rq.Stats.Packets, "rx1 kept receiving")
}

// TestLivenessQuietWithoutTraffic: slow traffic leaves long gaps with
// nothing waiting; that is not a stall.
func TestLivenessQuietWithoutTraffic(t *testing.T) {
	s := scenario.Default()
	s.Traffic.RatePPS = 20 // one frame every 50 ms
	w, err := New(s)
	require.NoError(t, err)
	w.CheckLiveness(0)
	require.NoError(t, w.RunUntil(sim.Time(500*sim.Millisecond)))
	assert.GreaterOrEqual(t, w.Received(), uint64(9))
}

// gsoStallScenario is where FIDELITY row 16 stalled the world for good:
// EVENT_IDX, mergeable buffers, 64 KiB guest GSO frames spanning dozens
// of buffers, and an IOMMU making each refill slow enough that the host
// runs out with a few buffers left that the next frame does not fit.
func gsoStallScenario() scenario.Scenario {
	s := scenario.Default()
	s.Name = "gso-64k-iommu"
	s.Features.GuestGSO = true
	s.Traffic.GSOSize = 65535
	s.Traffic.Size = 65000
	s.Traffic.Proto = "tcp"
	s.Driver.IOMMU = true
	s.Features.AccessPlatform = true // the IOMMU needs the DMA API
	s.Driver.BufferSource = scenario.SourcePageFrag
	s.Driver.DMA = scenario.DMARing
	return s
}

// TestMultiBufferFrameDoesNotStallTheHost is FIDELITY row 16 on a whole
// world: the host stops with buffers left that a 64 KiB frame does not
// fit; vhost_enable_notify re-arms with the avail index it has seen, the
// driver's next refill kicks, and packets keep coming. With avail_event
// at last_avail_idx instead, the world stopped after 6 packets.
func TestMultiBufferFrameDoesNotStallTheHost(t *testing.T) {
	for _, rule := range []string{scenario.AvailEventSeen, scenario.AvailEventPop} {
		t.Run(rule, func(t *testing.T) {
			s := gsoStallScenario()
			s.Device.AvailEvent = rule
			w, err := New(s)
			require.NoError(t, err)
			w.CheckLiveness(0)
			require.NoError(t, w.RunPackets(2000))
			rq := w.Driver.RQ[0]
			c := rq.Dev.Counters()
			assert.Positive(t, c.Starved, "the host ran out")
			assert.GreaterOrEqual(t, c.Wakeups+1, c.Starved, "a kick woke every stop but perhaps the last")
			t.Logf("%d packets in %d ns, %d stops, %d kicks", w.Received(), w.Now(), c.Starved, rq.Stats.Kicks)
		})
	}
}

// TestLivenessCatchesATaskThatNeverRuns: a CPU whose runnable work never
// runs is a stall. A task whose chunk never begins (its handler does
// nothing, as a lost switch would leave it) stays the CPU's current task,
// runnable, and CheckLiveness names it after TaskStall.
func TestLivenessCatchesATaskThatNeverRuns(t *testing.T) {
	w := preset(t, "default", nil)
	w.CheckLiveness(0)
	k := w.Sim.Queue.Register("lost task", func(sim.Time, uint64) {})
	id := w.Sim.NewTask(0, "lost/0", k, 0)
	require.True(t, w.Sim.Wake(id, w.Now()))
	le := requireStall(t, w, 10_000_000)
	require.Len(t, le.Tasks, 1)
	assert.Contains(t, le.Tasks[0], "lost/0 on CPU 0 running since")
	assert.GreaterOrEqual(t, le.At.Sub(0), TaskStall)
	assert.Contains(t, le.Error(), "runnable tasks never ran")
}
