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
		for _, f := range w.ReadoutOf(PartQueues).Figures {
			names = append(names, f.Name)
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
	// Every field, and every element of an array field (drops by
	// reason), is set to 1 and must come out 2.
	ones := func(v any) {
		r := reflect.ValueOf(v).Elem()
		for i := range r.NumField() {
			switch f := r.Field(i); {
			case f.Kind() == reflect.Array:
				for j := range f.Len() {
					f.Index(j).SetUint(1)
				}
			case f.CanInt():
				f.SetInt(1) // durations
			default:
				f.SetUint(1)
			}
		}
	}
	check := func(v any, what string) {
		r := reflect.ValueOf(v).Elem()
		for i := range r.NumField() {
			f := r.Field(i)
			if f.Kind() == reflect.Array {
				for j := range f.Len() {
					assert.Equal(t, uint64(2), f.Index(j).Uint(), "%s.%s[%d] is not summed", what, r.Type().Field(i).Name, j)
				}
				continue
			}
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
	for _, f := range w.ReadoutOf(PartQueues).Figures {
		if f.Total == "rx_packets" {
			perQueue += uint64(f.Value)
		}
	}
	assert.Equal(t, s.RX.Packets, perQueue, "the queues add up to the total")
	var again Stats
	w.ReadStats(&again)
	qs := again.Queues
	w.ReadStats(&again)
	assert.Equal(t, &qs[0], &again.Queues[0], "ReadStats reuses the queue slice")
}

// Each CPU's counters (its softnet_stat line, the scheduler's) sum to the
// totals of the same names, and a time squeeze lands on the CPU whose
// net_rx_action ran out: eight queues on CPU 0 of two.
func TestCPUCountersSumToTotals(t *testing.T) {
	w := preset(t, "xdp-drop", func(s *scenario.Scenario) {
		s.CPUs, s.Queues, s.Traffic.Flows = 2, 8, 8
	})
	require.NoError(t, w.RunPackets(100_000))
	sums := map[string]uint64{}
	var cs []Counter
	for i := 0; i < w.Sim.NumCPU(); i++ {
		cs = w.CPUCounters(i, cs)
		for _, c := range cs {
			sums[c.Name] += c.Value
		}
	}
	require.NotEmpty(t, sums)
	for name, v := range sums {
		total, ok := w.Counter(name)
		require.True(t, ok, "%s is a total too", name)
		assert.Equal(t, total, v, name)
	}
	// Queue i runs on CPU i mod 2: four instances each, 4 x 64 < 300.
	assert.Zero(t, sums["softnet.time_squeeze"])
	w = preset(t, "xdp-drop", func(s *scenario.Scenario) {
		s.CPUs, s.Queues, s.Traffic.Flows = 2, 16, 16
	})
	require.NoError(t, w.RunPackets(100_000))
	for i := 0; i < 2; i++ {
		cs = w.CPUCounters(i, cs)
		assert.Positive(t, cs[2].Value, "CPU %d: eight instances of 64 run out of 300", i)
		assert.Equal(t, "softnet.time_squeeze", cs[2].Name)
	}
}
