package engine

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// TestSteadyStateDoesNotAllocate guards the hot paths: once a preset has
// run long enough for its rings, pools, skb caches and event heap to reach
// their working size, receiving more packets allocates nothing.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every preset for a while")
	}
	for _, p := range scenario.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			s, err := scenario.LookupPreset(p.Name)
			require.NoError(t, err)
			w, err := New(s)
			require.NoError(t, err)
			require.NoError(t, w.RunPackets(50_000))
			allocs := testing.AllocsPerRun(5, func() {
				require.NoError(t, w.RunPackets(2_000))
			})
			assert.Zero(t, allocs, "allocations per 2000 packets in steady state (seed %d)", s.Seed)
		})
	}
}

// TestMemoryFourQueues4096 is the memory budget of BENCHMARKS.md: a world
// of 4 queues with 4096-entry rings, run until every ring has been filled
// and used, holds at most 128 MiB of Go heap. Pages store only the window
// a program can see (device.WindowSize); payload past it is generated on
// read.
func TestMemoryFourQueues4096(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a large world")
	}
	s, err := scenario.LookupPreset("xdp-drop")
	require.NoError(t, err)
	s.CPUs, s.Queues = 4, 4
	s.RingSize, s.TxRingSize = 4096, 4096
	require.NoError(t, s.Validate())
	base := liveHeap()
	w, err := New(s)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(200_000))
	used := liveHeap() - base
	runtime.KeepAlive(w)
	t.Logf("4 queues x 4096: %.1f MiB of live heap", float64(used)/(1<<20))
	assert.LessOrEqual(t, used, int64(128<<20), "live heap of the world")
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
