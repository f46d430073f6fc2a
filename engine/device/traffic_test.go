package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

func sizes(t *Traffic, n int) []int {
	out := make([]int, n)
	for i := range out {
		_, out[i] = t.Peek()
		t.Advance()
	}
	return out
}

func TestTrafficSizes(t *testing.T) {
	spec := scenario.Traffic{Sizes: []int{64, 512, 1514}, Flows: 1, Proto: "udp"}
	assert.Equal(t, []int{64, 512, 1514, 64, 512}, sizes(NewTraffic(spec, 0, 1, 1), 5), "cycled by default")

	spec.RandomSizes = true
	a := sizes(NewTraffic(spec, 0, 1, 7), 3000)
	b := sizes(NewTraffic(spec, 0, 1, 7), 3000)
	c := sizes(NewTraffic(spec, 0, 1, 8), 3000)
	assert.Equal(t, a, b, "same seed, same sizes")
	assert.NotEqual(t, a, c, "another seed, other sizes")
	count := map[int]int{}
	for _, n := range a {
		count[n]++
	}
	require.Len(t, count, 3)
	for n, k := range count {
		assert.InDelta(t, 1000, k, 150, "size %d drawn uniformly", n)
	}
}

// 10 Gbit/s of minimum frames (60 bytes here, 64 with the FCS) is the
// classic 14.88 Mpps once preamble, FCS and gap are counted: 67.2 ns apart.
func TestTrafficLineRate(t *testing.T) {
	spec := scenario.Traffic{Size: 60, Flows: 1, Proto: "udp", LineGbps: 10}
	assert.InDelta(t, 14.88e6, spec.PPS(), 0.01e6)
	tr := NewTraffic(spec, 0, 1, 1)
	for i := 0; i < 1000; i++ {
		tr.Advance()
	}
	assert.InDelta(t, 67200, float64(tr.NextArrival()), 2)
	assert.Equal(t, sim.Time(0), NewTraffic(scenario.Traffic{Size: 64, Flows: 1}, 0, 1, 1).NextArrival())
}
