package engine

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// heapOf returns the heap a world of s holds once built.
func heapOf(t *testing.T, s scenario.Scenario) int64 {
	t.Helper()
	require.NoError(t, s.Validate())
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	w, err := New(s)
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(w)
	return int64(ms.HeapAlloc) - int64(before)
}

// TestMemoryEstimate: scenario.MemoryEstimate is never below what a world
// holds and at most about twice above, over the presets and worlds whose
// every size is large in turn (what a room's server refuses by it must
// really be that large, and what it accepts no larger).
func TestMemoryEstimate(t *testing.T) {
	cases := map[string]scenario.Scenario{}
	for _, p := range scenario.PresetNames() {
		if testing.Short() && !shortPresets[p] {
			continue
		}
		s, err := scenario.LookupPreset(p)
		require.NoError(t, err)
		cases[p] = s
	}
	grid := func(name string, f func(*scenario.Scenario)) {
		s := scenario.Default()
		f(&s)
		cases[name] = s
	}
	grid("memory pages", func(s *scenario.Scenario) { s.MemoryPages = 1 << 20 })
	grid("rx ring", func(s *scenario.Scenario) { s.RingSize, s.MemoryPages = 32768, 1<<18 })
	grid("tx ring", func(s *scenario.Scenario) { s.TxRingSize = 32768 })
	grid("cpus", func(s *scenario.Scenario) { s.CPUs = 32 })
	grid("queues", func(s *scenario.Scenario) { s.CPUs, s.Queues, s.Traffic.Flows, s.MemoryPages = 16, 16, 16, 1<<18 })
	grid("pool", func(s *scenario.Scenario) { s.Driver.PoolSize, s.MemoryPages = 16384, 1<<18 })
	grid("flows", func(s *scenario.Scenario) { s.Traffic.Flows = 1 << 14 })
	grid("queues and rings", func(s *scenario.Scenario) {
		s.CPUs, s.Queues, s.Traffic.Flows, s.RingSize, s.TxRingSize, s.MemoryPages = 8, 8, 8, 8192, 8192, 1<<19
	})
	if testing.Short() {
		delete(cases, "memory pages")
	}
	for name, s := range cases {
		got, est := heapOf(t, s), s.MemoryEstimate()
		assert.GreaterOrEqual(t, est, got, "%s: the estimate is not below the world", name)
		assert.LessOrEqual(t, est, 2*got+4<<20, "%s: the estimate is not far above (%d MB for %d MB)", name, est>>20, got>>20)
	}
}
