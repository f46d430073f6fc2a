package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/vocab"
	"ringlab/tutorials"
)

// TestOneReadoutAgrees: on one world, `ringlab run`'s summary, the
// tutorials' figures, the page's counters table and `ringlab
// reproduce`'s metrics say the same numbers under the same names (an
// alias a tutorial spells reads its canonical number): each is the
// engine's readout, computed once.
func TestOneReadoutAgrees(t *testing.T) {
	for _, preset := range []string{"default", "cpumap", "devmap"} {
		src := "---\ntitle: T\nlevel: beginner\nduration: 5 min\nlearn:\n- one thing\n---\n" +
			"## Step 1: s\n\n```ringlab\npreset " + preset + "\nrun packets=3000\ncheck rx_packets > 0\n```\n"
		tt, err := tutorials.Parse("tutorials/99-readout.md", []byte(src))
		require.NoError(t, err)
		ts := tutorials.NewSession(tt, tutorials.Options{})
		ts.RunStep()
		w := ts.World()
		require.NotNil(t, w, preset)
		fig := func(name string) float64 {
			t.Helper()
			v, err := ts.Lookup(name)
			require.NoError(t, err, "%s: the tutorials read %s", preset, name)
			return v.Num
		}

		// The page's counters table, as a pane refreshes it.
		s := &Session{Panes: []*Pane{{World: w, Scenario: w.Scenario, dirty: true}}}
		require.True(t, s.Refresh())
		table := s.Panes[0].Metrics.Figures
		require.NotEmpty(t, table)
		for _, f := range table {
			assert.Equal(t, fig(f.Name), f.Value, "%s: the page's %s", preset, f.Name)
		}
		for _, k := range []string{"pps", "rx_packets", "rx_pp_alloc_fast", "page_allocs", vocab.CPUUtil(0)} {
			_, ok := s.Panes[0].Metrics.Get(k)
			assert.True(t, ok, "%s: the table shows %s", preset, k)
		}

		sum := w.Summarize()
		assert.Equal(t, fig("pps"), sum.PPS, preset)
		assert.Equal(t, fig("gbps"), sum.Gbps, preset)
		assert.Equal(t, fig("time_ns"), float64(sum.SimTimeNS), "%s: time_ns is sim_time_ns", preset)
		assert.Equal(t, fig("sim_time_ns"), float64(sum.SimTimeNS), preset)
		assert.Equal(t, fig("packets"), float64(sum.Packets), "%s: packets is rx_packets", preset)
		assert.Equal(t, fig("events"), float64(sum.Events), preset)
		for i, u := range sum.CPUs {
			assert.Equal(t, fig(vocab.CPUUtil(i)), u, preset)
		}
		for n, v := range sum.Counters {
			assert.Equal(t, fig(n), float64(v), "%s: run's %s", preset, n)
		}
		for i, m := range sum.PerCPU {
			for n, v := range m {
				assert.Equal(t, fig(vocab.CPUCounter(i, n)), float64(v), "%s: run's cpu%d %s", preset, i, n)
			}
		}
		for l, v := range sum.Pages {
			assert.Equal(t, fig(vocab.Pages(l)), float64(v), "%s: run's pages in %s", preset, l)
		}
		for _, q := range sum.Queues {
			for n, v := range q {
				assert.Equal(t, fig(n), float64(v), "%s: run's %s", preset, n)
			}
		}

		for _, row := range scenario.Reproductions() {
			v, err := engine.MetricSince(w, row.Metric, nil)
			require.NoError(t, err)
			assert.Equal(t, fig(row.Metric), v, "%s: reproduce's %s over the whole run", preset, row.Metric)
		}
	}
}
