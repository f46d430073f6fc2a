//go:build linux

package twinsrc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
	"ringlab/internal/testenv"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
)

// TestTwinFollowsALab runs the engine next to a real lab: the twin
// measures the lab's own flow (xdp_packets_counted) and the engine's
// predicted XDP drops grow, per second of its simulated time, at the rate
// the lab's veth counts them per second of the wall's.
func TestTwinFollowsALab(t *testing.T) {
	testenv.RequireRoot(t)
	reg := metrics.Registry{"lab": labsrc.Open}
	reg[Kind] = OpenWith(func() metrics.Registry { return reg })
	src, err := reg.Open("twin:lab:xdp_drop,rate=20000,size=128")
	require.NoError(t, err)
	defer func() {
		require.NoError(t, src.Close())
		left, err := labsrc.Namespaces()
		require.NoError(t, err)
		for _, n := range left {
			_, alive, ok := labsrc.NamespaceOwner(n)
			assert.False(t, ok && !alive, "leftover %s", n)
		}
	}()
	tw := src.(*Source)
	info := tw.Info()
	assert.Contains(t, info.Counters, "predicted_rx_xdp_drops")
	assert.Contains(t, info.Counters, "predicted_rx_packets")
	// Drops by reason side by side: the kernel's (the lab's skb:kfree_skb)
	// and the model's, whose names differ where the two drop differently
	// (veth frees an XDP_DROP's skb with kfree_skb, reason NOT_SPECIFIED;
	// a native XDP driver frees no skb: the model's xdp_drop).
	assert.Contains(t, info.Counters, "drops.NOT_SPECIFIED")
	assert.Contains(t, info.Counters, "predicted_drops.xdp_drop")

	// The window: 8 samples (2 s at 4 Hz) after the first 8, within one
	// world (no rebuild between its ends); the engine's rate is read
	// over the simulated time it ran, which on a loaded machine falls
	// behind the wall's (the twin bounds its work per sample).
	var first, last metrics.Sample
	var simFirst, simLast sim.Time
	for i, n := 0, 0; n < 8; i++ {
		require.Less(t, i, 48, "no 2 s without a rebuild in 12 s")
		time.Sleep(250 * time.Millisecond)
		s, err := tw.Sample()
		require.NoError(t, err)
		switch {
		case i < 8:
			continue
		case n == 0 || s.Totals["twin_rebuilds"] != first.Totals["twin_rebuilds"]:
			first, simFirst, n = s, tw.w.Now(), 0
		}
		last, simLast = s, tw.w.Now()
		n++
	}
	pps, size := tw.Traffic()
	dt := last.Time.Sub(first.Time).Seconds()
	simDt := simLast.Sub(simFirst).Seconds()
	require.Positive(t, simDt, "the engine ran")
	real := float64(last.Totals["rx_xdp_drops"]-first.Totals["rx_xdp_drops"]) / dt
	pred := float64(last.Totals["predicted_rx_xdp_drops"]-first.Totals["predicted_rx_xdp_drops"]) / simDt
	t.Logf("engine traffic: %.0f pps of %d bytes; XDP drops per second: measured %.0f, predicted %.0f (%.2f s simulated in %.2f s)", pps, size, real, pred, simDt, dt)
	assert.Equal(t, 128, size)
	assert.InDelta(t, real, pps, real*0.5, "the engine runs the measured rate")
	assert.InDelta(t, real, pred, real*0.5, "side by side, the same rate")
	assert.Greater(t, last.Totals["drops.NOT_SPECIFIED"], first.Totals["drops.NOT_SPECIFIED"], "the kernel's drops, by its reason")
	assert.Greater(t, last.Totals["predicted_drops.xdp_drop"], first.Totals["predicted_drops.xdp_drop"], "the model's, by its own")
}
