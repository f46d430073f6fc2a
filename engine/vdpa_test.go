package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// vdpaScenario is a hardware virtqueue fed bursts of 64 frames from the
// wire (a burst every 320 µs, 200,000 frames a second): the guest keeps
// up on average, and what a burst finds in the ring decides whether it
// is dropped.
func vdpaScenario(ring int) scenario.Scenario {
	s := scenario.Default()
	s.Name = "vdpa-bursts"
	s.RingSize = ring
	s.Device.Kind = scenario.DeviceVDPA
	s.Traffic.RatePPS = 200_000
	s.Traffic.Burst = 64
	return s
}

// noBufferDrops runs w from 1 ms to 21 ms (past the frames that came
// before the first buffers were posted) and returns the drops in that
// time and the packets received.
func noBufferDrops(t *testing.T, w *World) (drops, received uint64) {
	t.Helper()
	require.NoError(t, w.RunUntil(sim.Time(sim.Millisecond)))
	d0, r0 := w.Driver.RQ[0].Dev.Counters().NoBufferDrops, w.Received()
	require.NoError(t, w.RunUntil(sim.Time(21*sim.Millisecond)))
	c := w.Driver.RQ[0].Dev.Counters()
	got, ok := w.Counter("host_no_buffer_drops")
	require.True(t, ok)
	assert.Equal(t, c.NoBufferDrops, got, "the total is the queue's")
	return c.NoBufferDrops - d0, w.Received() - r0
}

// TestVDPADropsWhatItCannotPlace: a vdpa device has no host queue; a frame
// that finds no posted buffer is dropped and counted (host_no_buffer_drops,
// per queue in device.Counters.NoBufferDrops). A 16-entry ring cannot
// hold a 64-frame burst; a 256-entry ring can, and drops nothing.
func TestVDPADropsWhatItCannotPlace(t *testing.T) {
	small, err := New(vdpaScenario(16))
	require.NoError(t, err)
	small.CheckLiveness(0)
	drops, recv := noBufferDrops(t, small)
	assert.Greater(t, drops, recv/2, "most of each burst finds the 16-entry ring full")
	assert.Zero(t, small.Driver.RQ[0].Dev.Counters().Drops, "no host backlog to overflow")

	big, err := New(vdpaScenario(256))
	require.NoError(t, err)
	big.CheckLiveness(0)
	drops, recv = noBufferDrops(t, big)
	assert.Zero(t, drops)
	assert.Equal(t, uint64(62*64), recv, "every frame of the 62 bursts in the 20 ms")

	// Hardware: no host thread, NIC costs, MMIO doorbells and MSI-X.
	c := big.Driver.RQ[0].Dev.Counters()
	assert.Equal(t, c.Packets, c.UsedPublishes, "used entries published per frame")
	assert.Zero(t, c.Runs)
}
