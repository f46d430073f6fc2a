package tutorials

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
	"ringlab/internal/testenv"
)

// TestPathIsTheSessionsWorld: a tutorial's run directives are read once
// (Directive.Run, Tutorial.PathTo): the world a reader that jumps to
// step n builds from the path (the playground's pane A, a room's
// replay) is the world the session that ran every step up to n has.
func TestPathIsTheSessionsWorld(t *testing.T) {
	testenv.SkipUnderRace(t, "it runs the engine")
	for _, name := range []string{"descriptor-journey", "softirq-budget-ksoftirqd"} {
		tut, err := Find(name)
		require.NoError(t, err)
		s := NewSession(tut, Options{})
		for n := 1; n <= len(tut.Steps); n++ {
			res := s.RunStep()
			require.Zero(t, res.Failed, "%s step %d", name, n)
			p := tut.PathTo(n)
			if p.Scenario == nil {
				assert.Nil(t, s.World(), "%s step %d: no scenario, no world", name, n)
				continue
			}
			w, err := engine.New(*p.Scenario)
			require.NoError(t, err)
			for _, r := range p.Runs {
				require.NoError(t, r.On(w, func(engine.TraceEvent) {}))
			}
			assert.Equal(t, s.World().Now(), w.Now(), "%s step %d", name, n)
			assert.Equal(t, s.World().Totals(), w.Totals(), "%s step %d: the counters", name, n)
		}
	}
}

// TestRunReadsEachForm: each form of a run directive, read once.
func TestRunReadsEachForm(t *testing.T) {
	for _, tc := range []struct {
		text string
		want RunSpec
	}{
		{"run packets=20", RunSpec{Unit: RunPackets, N: 20}},
		{"run packets=20 watch", RunSpec{Unit: RunPackets, N: 20, Watch: true}},
		{"run duration=2ms", RunSpec{Unit: RunTime, N: 2_000_000}},
		{"run events=40 trace", RunSpec{Unit: RunEvents, N: 40, Trace: true}},
		{"run events=40", RunSpec{Unit: RunEvents, N: 40}},
	} {
		d, err := parseDirective(tc.text)
		require.NoError(t, err, tc.text)
		assert.Equal(t, tc.want, d.Run(), tc.text)
	}
	d, err := parseDirective("show rx_packets")
	require.NoError(t, err)
	assert.Zero(t, d.Run().N, "not a run")
}
