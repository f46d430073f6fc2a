package engine

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/device"
	"ringlab/engine/scenario"
	"ringlab/engine/virtionet"
	"ringlab/engine/vocab"
)

// TestEveryNameIsInTheVocabulary: whatever the world names (totals, queue
// counters, trace figures) has an entry in engine/vocab, so the page, the
// tutorials and /metrics can say what it is.
func TestEveryNameIsInTheVocabulary(t *testing.T) {
	for _, name := range []string{"default", "cpumap", "xdp-tx", "r4-page-alloc-2flows"} {
		sc, err := scenario.LookupPreset(name)
		require.NoError(t, err)
		w, err := New(sc)
		require.NoError(t, err)
		require.NoError(t, w.RunPackets(20))
		var names []string
		for _, c := range w.Totals() {
			names = append(names, c.Name)
		}
		for _, q := range w.Queues() {
			for _, c := range q {
				names = append(names, c.Name)
			}
		}
		for _, f := range w.traceFigures(nil) {
			names = append(names, f.Name)
		}
		for _, n := range names {
			d, ok := vocab.Lookup(n)
			if assert.True(t, ok, "%s (preset %s) is not in engine/vocab", n, name) {
				assert.NotEqual(t, vocab.Text, d.Kind, n)
			}
		}
	}
}

// TestStatsSumsEveryField guards the sums of ReadStats: a field added to
// a driver or host counter struct must be summed over queues too.
func TestStatsSumsEveryField(t *testing.T) {
	ones := func(v any) {
		r := reflect.ValueOf(v).Elem()
		for i := range r.NumField() {
			if f := r.Field(i); f.CanInt() {
				f.SetInt(1) // durations
			} else {
				f.SetUint(1)
			}
		}
	}
	check := func(v any, what string) {
		r := reflect.ValueOf(v).Elem()
		for i := range r.NumField() {
			f := r.Field(i)
			n := uint64(0)
			if f.CanInt() {
				n = uint64(f.Int())
			} else {
				n = f.Uint()
			}
			assert.Equal(t, uint64(2), n, "%s.%s is not summed", what, r.Type().Field(i).Name)
		}
	}
	var rq, rqSum virtionet.RQStats
	ones(&rq)
	addRQ(&rqSum, &rq)
	addRQ(&rqSum, &rq)
	check(&rqSum, "RQStats")
	var sq, sqSum virtionet.SQStats
	ones(&sq)
	addSQ(&sqSum, &sq)
	addSQ(&sqSum, &sq)
	check(&sqSum, "SQStats")
	var h, hSum device.Counters
	ones(&h)
	addHost(&hSum, &h)
	addHost(&hSum, &h)
	check(&hSum, "device.Counters")
}

// TestStatsAgreeWithTheirNames: the typed counters and their named forms
// are the same numbers.
func TestStatsAgreeWithTheirNames(t *testing.T) {
	sc, err := scenario.LookupPreset("cpumap")
	require.NoError(t, err)
	w, err := New(sc)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(500))
	s := w.Stats()
	byName := map[string]uint64{}
	for _, c := range s.Totals(nil) {
		byName[c.Name] = c.Value
	}
	assert.Equal(t, w.Received(), s.RX.Packets)
	assert.Equal(t, s.RX.Packets, byName["rx_packets"])
	assert.Equal(t, s.PagePool[6], byName["rx_pp_recycle_cached"])
	assert.Equal(t, s.Cpumap.Passed, byName["cpumap_passed"])
	assert.Equal(t, s.Host.Drops, byName["host_drops"])
	var perQueue uint64
	for i := range s.Queues {
		for _, c := range s.Queues[i].Counters(nil) {
			if c.Name == "rx_packets" {
				perQueue += c.Value
			}
		}
	}
	assert.Equal(t, s.RX.Packets, perQueue, "the queues add up to the total")
	var again Stats
	w.ReadStats(&again)
	qs := again.Queues
	w.ReadStats(&again)
	assert.Equal(t, &qs[0], &again.Queues[0], "ReadStats reuses the queue slice")
}
