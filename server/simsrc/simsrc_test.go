package simsrc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/vocab"
	"ringlab/server/metrics"
)

func TestSimSourceFollowsTheClock(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("default", func() time.Time { return now })
	require.NoError(t, err)
	info := src.Info()
	assert.Equal(t, "sim:default", info.Name)
	assert.Contains(t, info.Counters, "rx_packets")
	assert.Contains(t, info.Counters, "rx_pp_recycle_cached")

	now = now.Add(10 * time.Millisecond)
	a, err := src.Sample()
	require.NoError(t, err)
	assert.Equal(t, int64(10*time.Millisecond), int64(src.World().Now()), "simulated time follows the wall clock")
	// default preset: 50 kpps, so about 500 packets in 10 ms.
	assert.InDelta(t, 500, float64(a.Totals["rx_packets"]), 5)
	require.Len(t, a.Queues, 1)
	assert.Equal(t, a.Totals["rx_packets"], a.Queues[0]["rx_packets"], "per-queue names match the totals'")

	now = now.Add(10 * time.Millisecond)
	b, err := src.Sample()
	require.NoError(t, err)
	assert.Greater(t, b.Totals["rx_packets"], a.Totals["rx_packets"])

	for name := range b.Totals {
		_, ok := vocab.Lookup(name)
		assert.True(t, ok, "%s is in engine/vocab", name)
	}
	require.NoError(t, src.Close())
	_, err = src.Sample()
	assert.ErrorIs(t, err, metrics.ErrClosed)
}

func TestSimSourceBoundsItsWork(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("xdp-drop", func() time.Time { return now })
	require.NoError(t, err)
	now = now.Add(10 * time.Second) // far more than the engine can do in one sample
	start := time.Now()
	_, err = src.Sample()
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "one sample is bounded in wall time")
	assert.Contains(t, src.Info().Notes[len(src.Info().Notes)-1], "slower than real time")
}

func TestSimSourceBadPreset(t *testing.T) {
	_, err := Open("nosuch")
	assert.ErrorContains(t, err, "no preset named")
}
