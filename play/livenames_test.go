package play

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

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
