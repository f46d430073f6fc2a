package play

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/view"
	"ringlab/engine/vocab"
)

// TestLiveNamesAreCanonical: every number the live view draws is named
// by engine/vocab under its canonical name: the sources emit those, and
// an alias is the vocabulary's to declare, not a line's alternative.
func TestLiveNamesAreCanonical(t *testing.T) {
	check := func(where, n string) {
		_, ok := vocab.Lookup(n)
		assert.True(t, ok, "%s: %s is in engine/vocab", where, n)
		assert.Equal(t, n, vocab.Canonical(n), "%s: %s is an alias", where, n)
	}
	for _, c := range liveCharts {
		for _, ln := range c.lines {
			for _, n := range ln.names {
				check(c.title+" "+ln.label, n)
			}
		}
	}
	for s, names := range liveFlow {
		for _, n := range names {
			check(s.String(), n)
		}
	}
	for _, d := range liveLane {
		check("lane "+d.label, d.name)
	}
}

// TestLiveReadsAnAliasAsItsNumber: a source that still sends an alias
// (an older server's page_pool.alloc_fast, veth's rx_xdp_redirect) is
// drawn under the canonical name.
func TestLiveReadsAnAliasAsItsNumber(t *testing.T) {
	l := newLiveView(LiveHello{Source: "host:eth0", Counters: []string{"page_pool.alloc_fast", "rx_xdp_redirect"}})
	for i, v := range []float64{100, 300} {
		assert.NoError(t, l.snapshot(LiveSnapshot{Seq: uint64(i), TMs: float64(1000 * (i + 1)),
			Counters: map[string]float64{"page_pool.alloc_fast": v, "rx_xdp_redirect": v / 10}}))
	}
	assert.Equal(t, "rx_pp_alloc_fast", l.pick([]string{"rx_pp_alloc_fast"}))
	assert.Equal(t, 200.0, l.rateNow("rx_pp_alloc_fast"))
	assert.Equal(t, 20.0, l.rateNow("rx_xdp_redirects"))
	assert.True(t, math.IsNaN(l.rateNow("page_pool.alloc_fast")), "the alias is no name of its own")
}

// TestRatesAndChartsTravelUnderVocabNames: every key of a pane's rates
// in the page's state, and every counter a live chart's line names, is
// an engine/vocab row under its canonical name, never a label the views
// draw; a pane's rates hold every series, each under its own name.
func TestRatesAndChartsTravelUnderVocabNames(t *testing.T) {
	isRow := func(where, n string) {
		t.Helper()
		_, ok := vocab.Lookup(n)
		assert.True(t, ok, "%s: %s is an engine/vocab row", where, n)
		assert.Equal(t, n, vocab.Canonical(n), "%s: %s is an alias", where, n)
	}

	// A pane's rates: xdp-drop drops at XDP every packet it receives.
	c := New("preset=xdp-drop&speed=0")
	c.Step(Step{UnitPacket, 5000})
	settleC(t, c)
	rates := c.state().Panes[0].Rates
	require.NotEmpty(t, rates, "a rate after 5000 packets")
	for k := range rates {
		isRow("rates", k)
	}
	for s := view.Series(0); s < view.NumSeries; s++ {
		assert.Contains(t, rates, s.Name(), "the rates carry %s", s.Name())
	}
	assert.Positive(t, rates["rx_packets"])
	assert.InEpsilon(t, rates["rx_packets"], rates["rx_xdp_drops"], 0.05, "every packet dropped at XDP (%v)", rates)
	assert.Zero(t, rates["flow.xdp_pass"], "no XDP_PASS")
	assert.Zero(t, rates["flow.no_xdp"], "every packet ran the program")

	// The live charts: a source with every counter a line may be drawn
	// from, and a twin's prediction of each.
	var names []string
	for _, ch := range liveCharts {
		for _, ln := range ch.lines {
			names = append(names, ln.names...)
		}
	}
	counters := map[string]float64{}
	for _, n := range names {
		counters[n] = 0
		counters[vocab.Predicted(n)] = 0
	}
	hello := LiveHello{Source: "twin:lab", Counters: slices.Sorted(maps.Keys(counters))}
	require.NoError(t, c.Step(hello))
	for i := range 3 {
		next := map[string]float64{}
		for n := range counters {
			next[n] = float64(1000 * i)
		}
		require.NoError(t, c.Step(LiveSnapshot{Seq: uint64(i), TMs: float64(1000 * (i + 1)), Counters: next}))
	}
	c.Tick(0)
	live := c.state().Live
	require.NotNil(t, live)
	lines := 0
	for _, ch := range live.Charts {
		for _, ln := range ch.Lines {
			isRow(ch.Title+" "+ln.Label, ln.Name)
			lines++
		}
	}
	assert.Positive(t, lines, "the charts draw lines")
}
