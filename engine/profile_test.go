package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// TestProfileSumsToBusy: in every preset, each CPU's time charged by
// symbol (sim.CPU.Charge) adds up to its busy time exactly: no cost is
// paid outside the accounting, none twice. The perf top of the run has
// each CPU's shares, idle included, sum to 1.
func TestProfileSumsToBusy(t *testing.T) {
	packets := uint64(20000)
	if testing.Short() {
		packets = 5000
	}
	for _, cc := range cloneCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			w, err := New(cc.s)
			require.NoError(t, err)
			require.NoError(t, w.RunPackets(packets))
			var busy sim.Duration
			for i := 0; i < w.Sim.NumCPU(); i++ {
				c := w.Sim.CPU(i)
				p := c.Profile()
				assert.Equal(t, c.Busy(), p.Sum(), "cpu%d", i)
				busy += c.Busy()
			}
			require.Greater(t, busy, sim.Duration(0), "the run charged nothing")
			var s PerfSample
			w.SamplePerf(&s)
			top, err := PerfTop(&PerfSample{}, &s)
			require.NoError(t, err)
			for _, pc := range top {
				var sum float64
				for _, r := range pc.Rows {
					sum += r.Share
				}
				if len(pc.Rows) > 0 {
					assert.InDelta(t, 1, sum, 1e-9, "%s: shares", pc.Name)
				}
			}
		})
	}
}

// TestProfileSymbolsAreKernelFunctions: every symbol time is charged to
// names a function of engine/kernel's table, or is a pseudo-row (the page
// refcount atomics, inlined into their callers); the host's row too.
func TestProfileSymbolsAreKernelFunctions(t *testing.T) {
	seen := map[string]bool{}
	for s := sim.Sym(0); s < sim.NumSyms; s++ {
		name := s.String()
		assert.False(t, seen[name], "%s twice", name)
		seen[name] = true
		_, ok := kernel.LookupFunc(name)
		if s.Pseudo() {
			assert.False(t, ok, "%s is a pseudo-row but the kernel table has it", name)
			continue
		}
		assert.True(t, ok, "symbol %d charges %s, which engine/kernel's table lacks", s, name)
	}
	_, ok := kernel.LookupFunc(HostSym)
	assert.True(t, ok, HostSym)
	_, ok = kernel.LookupFunc(sim.SymIdleName)
	assert.False(t, ok)
}

// TestPerfTopWindowAndClone: a perf top over a window is the difference of
// two samples; a clone carries each CPU's profile and charges the same
// next.
func TestPerfTopWindowAndClone(t *testing.T) {
	s, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(3000))
	var a, b PerfSample
	w.SamplePerf(&a)
	c, err := w.Clone()
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(3000))
	require.NoError(t, c.RunPackets(3000))
	w.SamplePerf(&b)
	var cb PerfSample
	c.SamplePerf(&cb)
	assert.Equal(t, b, cb, "a clone charges what its world charges")
	win, err := PerfTop(&a, &b)
	require.NoError(t, err)
	all, err := PerfTop(&PerfSample{}, &b)
	require.NoError(t, err)
	require.Len(t, win, len(all))
	require.NotEmpty(t, win[0].Rows)
	for i := range win {
		for _, r := range win[i].Rows {
			if r.Sym == sim.SymIdleName {
				continue
			}
			full := all[i].Share(r.Sym) * float64(b.T)
			assert.LessOrEqual(t, float64(r.Ns), full+1, "%s %s: a window holds no more than the run", win[i].Name, r.Sym)
		}
	}
	_, err = PerfTop(&b, &a)
	assert.Error(t, err, "a window backwards")
}
