package mem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// newMem returns a simulation with ncpu CPUs and a memory built from cfg.
func newMem(t testing.TB, ncpu int, cfg mem.Config) (*sim.Sim, *mem.Mem) {
	t.Helper()
	s, err := sim.New(ncpu, sim.DefaultCosts())
	require.NoError(t, err)
	m, err := mem.New(s, cfg)
	require.NoError(t, err)
	require.NoError(t, m.Check())
	return s, m
}

// small is a 4096-page machine with short per-CPU lists.
func small() mem.Config {
	return mem.Config{Pages: 4096, MaxOrder: 10, PCPBatch: 8, PCPHigh: 32}
}

// freeBlocks snapshots the zone's free lists.
func freeBlocks(m *mem.Mem) []int {
	out := make([]int, m.MaxOrder()+1)
	for k := range out {
		out[k] = m.FreeBlocks(k)
	}
	return out
}

// verify runs the invariant checker.
func verify(t testing.TB, m *mem.Mem) {
	t.Helper()
	require.NoError(t, m.Check())
}
