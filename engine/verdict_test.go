package engine

import (
	"math"
	"strings"
	"testing"

	"ringlab/engine/scenario"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJudge: the verdict is computed from the figure, what limits the run
// and what was fitted on the result, never written down per row.
func TestJudge(t *testing.T) {
	cpu0 := Limit{Kind: ResCPU, Name: "cpu0"}
	host := Limit{Kind: ResHost, Name: "host rx0"}
	fit := func(n int) []FittedValue { return make([]FittedValue, n) }
	row := func(sim, pub, ratio, pubRatio float64, mech string, l Limit, fitted int) Row {
		r := Row{Reproduction: scenario.Reproduction{ID: "R9", Config: "x", Unit: "Mpps", Baseline: "b", Published: pub, Mechanism: mech},
			Simulated: sim, Ratio: ratio, PublishedRatio: pubRatio, Limit: l, Fitted: fit(fitted)}
		return r
	}
	base := Row{Reproduction: scenario.Reproduction{ID: "R9", Config: "b", Unit: "Mpps", Published: 1, Mechanism: "cpu:cpu0"}, Simulated: 1, Limit: cpu0}
	tests := []struct {
		name string
		r    Row
		want Verdict
	}{
		{"match, mechanism, nothing fitted", row(2, 2, 2, 2, "cpu:cpu0", cpu0, 0), Explained},
		{"match, mechanism, one fitted", row(2, 2, 2.2, 2, "cpu:cpu0", cpu0, 1), Explained},
		{"match, mechanism, two fitted", row(2, 2, 2, 2, "cpu:cpu0", cpu0, 2), Calibrated},
		{"match, another mechanism, one fitted", row(2, 2, 2, 2, "cpu:cpu0", host, 1), Calibrated},
		{"match, another mechanism, nothing fitted", row(2, 2, 2, 2, "cpu:cpu0", host, 0), NotReproduced},
		{"ratio beyond the tolerance", row(2, 2, 1.5, 2, "cpu:cpu0", cpu0, 0), NotReproduced},
		{"wrong direction", row(2, 2, 0.9, 1.1, "cpu:cpu0", cpu0, 0), NotReproduced},
		{"no mechanism named, one fitted", row(2, 2, 2, 2, scenario.MechanismUnknown, cpu0, 1), Calibrated},
		{"counters, nothing fitted", row(2, 2, 2, 2, scenario.MechanismCounters, host, 0), Explained},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			Judge(&tc.r, &base)
			assert.Equal(t, tc.want, tc.r.Verdict, tc.r.Why)
			assert.NotEmpty(t, tc.r.Why)
		})
	}
	// The baseline's own limit counts: a ratio between two runs explains
	// nothing if the baseline is held by something else.
	r := row(2, 2, 2, 2, "cpu:cpu0", cpu0, 1)
	other := base
	other.Limit = host
	Judge(&r, &other)
	assert.Equal(t, Calibrated, r.Verdict, r.Why)
	assert.Contains(t, r.Why, "its baseline is limited by host rx0")
}

func TestMatches(t *testing.T) {
	share := func(sim, pub float64) Row {
		return Row{Reproduction: scenario.Reproduction{Unit: "share", Published: pub, Baseline: "b"}, Simulated: sim}
	}
	baseline := func(sim, pub float64) Row {
		return Row{Reproduction: scenario.Reproduction{Unit: "Gbit/s", Published: pub}, Simulated: sim}
	}
	ratio := func(got, want float64) Row {
		return Row{Reproduction: scenario.Reproduction{Unit: "Gbit/s", Baseline: "b"}, Ratio: got, PublishedRatio: want}
	}
	for name, tc := range map[string]struct {
		r    Row
		want bool
	}{
		"share close":          {share(0.95, 1), true},
		"share off":            {share(0.8, 1), false},
		"share of zero":        {share(0, 0), true},
		"baseline within 1.5x": {baseline(17.6, 22.5), true},
		"baseline off 2x":      {baseline(10, 22.5), false},
		"ratio within 1.25x":   {ratio(1.78, 2.02), true},
		"ratio off":            {ratio(1.3, 2.02), false},
		"flat and flat":        {ratio(1, 0.996), true},
		"flat against a rise":  {ratio(1.0, 1.2), false},
		"both near zero":       {ratio(0, 0.0009), true},
		"undefined":            {ratio(math.NaN(), 2), false},
		"rise against a fall":  {ratio(1.1, 0.9), false},
	} {
		got, desc := Matches(&tc.r)
		assert.Equal(t, tc.want, got, "%s: %s", name, desc)
	}
}

func TestFittedOn(t *testing.T) {
	r1, err := scenario.LookupPreset("r1-upstream")
	require.NoError(t, err)
	assert.Empty(t, FittedOn(&r1, "R1"), "R1 rebuilt from its setup fits nothing")
	r4, err := scenario.LookupPreset("r4-page-alloc-2flows")
	require.NoError(t, err)
	got := FittedOn(&r4, "R4")
	require.Len(t, got, 1)
	assert.Equal(t, FittedValue{Name: "buddy_per_page", Row: "r4-page-alloc-2flows", Why: got[0].Why}, got[0])
	assert.Empty(t, FittedOn(&r4, "R3"))
	// A scenario that overrides a fitted constant does not use it.
	r4.Costs = map[string]int64{"buddy_per_page": 60}
	assert.Empty(t, FittedOn(&r4, "R4"))
}

// TestEveryMechanismIsAResource: each row declares its mechanism as a
// resource LimitOf can name, or counters, or unknown.
func TestEveryMechanismIsAResource(t *testing.T) {
	kinds := map[string]bool{ResCPU: true, ResLock: true, ResHost: true, ResNext: true, ResRing: true, ResWire: true, ResWindow: true, ResApp: true}
	for _, r := range scenario.Reproductions() {
		assert.NotEmpty(t, r.MechanismNote, r.Config)
		if r.Mechanism == scenario.MechanismCounters || r.Mechanism == scenario.MechanismUnknown {
			continue
		}
		kind, _, _ := strings.Cut(r.Mechanism, ":")
		assert.True(t, kinds[kind], "%s: mechanism %q", r.Config, r.Mechanism)
	}
}
