package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// readoutWorld runs preset for n packets.
func readoutWorld(t *testing.T, preset string, n uint64) *World {
	t.Helper()
	sc, err := scenario.LookupPreset(preset)
	require.NoError(t, err)
	w, err := New(sc)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(n))
	return w
}

// TestReadoutNamesOnce: every figure a reader shows is named once, by a
// row of engine/vocab under its canonical name (never an alias), with
// the row's kind (a text is words); a readout of fewer parts is the
// fuller one's subsequence, so two readers of one part see one order.
func TestReadoutNamesOnce(t *testing.T) {
	for _, preset := range []string{"default", "cpumap", "devmap", "big-9000", "xdp-tx", "r3-napi-local-on"} {
		w := readoutWorld(t, preset, 500)
		full := w.ReadoutOf(PartsAll)
		seen := map[string]bool{}
		for _, f := range full.Figures {
			assert.False(t, seen[f.Name], "%s: %s is read twice", preset, f.Name)
			seen[f.Name] = true
			d, ok := vocab.Lookup(f.Name)
			if !assert.True(t, ok, "%s: %s is not in engine/vocab", preset, f.Name) {
				continue
			}
			assert.Equal(t, f.Name, vocab.Canonical(f.Name), "%s: %s is an alias of %s", preset, f.Name, d.Same)
			if !strings.Contains(d.Name, "*") { // scenario.* holds words and numbers
				assert.Equal(t, d.Kind == vocab.Text, f.IsText, "%s: %s is a text in the vocabulary, and only then here", preset, f.Name)
			}
		}
		for _, parts := range []Part{PartsTable, SummaryParts, MetricParts, PartRings | PartPerf} {
			sub := w.ReadoutOf(parts)
			j := 0
			for _, f := range sub.Figures {
				for j < len(full.Figures) && full.Figures[j].Name != f.Name {
					j++
				}
				if assert.Less(t, j, len(full.Figures), "%s: %s of parts %b is not in the full readout's order", preset, f.Name, parts) {
					assert.Equal(t, full.Figures[j], f, "%s: one figure, one value", preset)
				}
				assert.NotZero(t, parts&f.Part, "%s: %s is of a part not asked for", preset, f.Name)
			}
		}
	}
}

// TestEveryPrintedNameIsAFigure: what `ringlab run` prints and writes
// (its summary's maps), the compare pane's first rows and the metrics
// `ringlab reproduce` measures are all figures of the readout, so each
// is named once, there.
func TestEveryPrintedNameIsAFigure(t *testing.T) {
	w := readoutWorld(t, "devmap", 500)
	r := w.ReadoutOf(PartsAll)
	has := func(name string) bool { _, ok := r.Get(name); return ok }
	s := w.Summarize()
	for _, c := range s.CounterList {
		assert.True(t, has(c.Name), c.Name)
	}
	for _, c := range s.PagePoolList {
		assert.True(t, has(c.Name), c.Name)
	}
	for i, cs := range s.CPUList {
		for _, c := range cs {
			assert.True(t, has(vocab.CPUCounter(i, c.Name)), c.Name)
		}
	}
	for l := range s.Pages {
		assert.True(t, has(vocab.Pages(l)), l)
	}
	for _, q := range s.Queues {
		for name := range q {
			assert.True(t, has(name), name)
		}
	}
	for _, d := range s.Drops {
		assert.True(t, has(vocab.Drops(d.Name)), d.Name)
	}
	for _, row := range scenario.Reproductions() {
		f, ok := r.Get(row.Metric)
		if assert.True(t, ok, "reproduce's %s is a figure", row.Metric) {
			assert.NotZero(t, f.Part&MetricParts, "%s is a rate or share", row.Metric)
		}
	}
}

// TestSummaryIsTheReadout: the summary holds the readout's values,
// arranged: nothing is computed twice.
func TestSummaryIsTheReadout(t *testing.T) {
	w := readoutWorld(t, "cpumap", 2000)
	r := w.ReadoutOf(SummaryParts)
	get := func(name string) float64 {
		f, ok := r.Get(name)
		require.True(t, ok, name)
		return f.Value
	}
	s := w.Summarize()
	assert.Equal(t, get("pps"), s.PPS)
	assert.Equal(t, get("gbps"), s.Gbps)
	assert.Equal(t, get("sim_time_ns"), float64(s.SimTimeNS))
	assert.Equal(t, get("events"), float64(s.Events))
	assert.Equal(t, get("rx_packets"), float64(s.Packets))
	assert.Equal(t, w.Received(), s.Packets)
	for i, u := range s.CPUs {
		assert.Equal(t, get(vocab.CPUUtil(i)), u)
	}
	for name, v := range s.Counters {
		assert.Equal(t, get(name), float64(v), name)
	}
	assert.Len(t, s.PagePool, 11)
	for i, m := range s.PerCPU {
		for name, v := range m {
			assert.Equal(t, get(vocab.CPUCounter(i, name)), float64(v), name)
		}
	}
	for l, n := range s.Pages {
		assert.Equal(t, get(vocab.Pages(l)), float64(n), l)
	}
	assert.Equal(t, len(w.Driver.RQ), len(s.Queues))
}

// TestReadSinceIsTheWindow: a readout since a mark takes its rates over
// the window, and from the start's mark it is the whole run's.
func TestReadSinceIsTheWindow(t *testing.T) {
	sc, err := scenario.LookupPreset("r3-napi-local-off")
	require.NoError(t, err)
	w, err := New(sc)
	require.NoError(t, err)
	start := w.MarkReadout()
	require.NoError(t, w.RunUntil(sim.Time(2*sim.Millisecond)))
	mid := w.MarkReadout()
	p0, r0 := w.Received(), w.Stats().PagePool
	require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
	p1, r1 := w.Received(), w.Stats().PagePool

	var whole, fromStart, window Readout
	w.Read(&whole, MetricParts)
	w.ReadSince(&fromStart, MetricParts, &start)
	w.ReadSince(&window, MetricParts|PartCPUUtil, &mid)
	// (Not the utilisations: building the world charged its CPUs work
	// before a mark could be taken, which the whole run's include.)
	assert.Equal(t, whole.Figures, fromStart.Figures, "the start's mark is the whole run's rates")

	pps, _ := window.Get("pps")
	assert.InEpsilon(t, float64(p1-p0)/(3*sim.Millisecond).Seconds(), pps.Value, 1e-12)
	cached, ring := r1[ppRecycleCached]-r0[ppRecycleCached], r1[ppRecycleRing]-r0[ppRecycleRing]
	require.NotZero(t, cached+ring, "the preset recycles in the window")
	share, _ := window.Get("recycle_ring_share")
	assert.InEpsilon(t, float64(ring)/float64(cached+ring), share.Value, 1e-12)
	u, _ := window.Get("cpu0.util")
	assert.True(t, u.Value >= 0 && u.Value <= 1, "a utilisation over the window is a fraction: %g", u.Value)
	v, err := MetricSince(w, "recycle_ring_share", &mid)
	require.NoError(t, err)
	assert.Equal(t, share.Value, v, "a metric is the readout's figure")
	_, err = MetricSince(w, "rx_packets", &mid)
	assert.ErrorContains(t, err, "unknown metric", "a counter is not a rate")
}

// TestReadoutStatIndices: the measures read the page_pool stats they
// name.
func TestReadoutStatIndices(t *testing.T) {
	assert.Equal(t, "rx_pp_alloc_refill", pagepool.StatNames[ppAllocRefill])
	assert.Equal(t, "rx_pp_recycle_cached", pagepool.StatNames[ppRecycleCached])
	assert.Equal(t, "rx_pp_recycle_ring", pagepool.StatNames[ppRecycleRing])
}
