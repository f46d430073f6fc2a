package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// TestTraceDescribesEveryEvent: a traced run numbers its events in order,
// its changes add up to the world's figures, and tracing does not change
// what the world does.
func TestTraceDescribesEveryEvent(t *testing.T) {
	const n = 300
	s, err := scenario.LookupPreset("cpumap")
	require.NoError(t, err)
	traced, err := New(s)
	require.NoError(t, err)
	start := map[string]int64{}
	for _, f := range traced.traceFigures(nil) {
		start[f.Name] = f.To
	}
	var events []TraceEvent
	require.NoError(t, traced.Trace(n, func(e TraceEvent) { events = append(events, e) }))
	require.Len(t, events, n)

	sum := map[string]int64{}
	handlers := map[string]bool{}
	for i, e := range events {
		assert.Equal(t, uint64(i+1), e.Seq)
		if i > 0 {
			assert.GreaterOrEqual(t, e.At, events[i-1].At, "event %d goes back in time", e.Seq)
		}
		require.NotEmpty(t, e.Handler)
		handlers[e.Handler] = true
		for _, c := range e.Changes {
			assert.NotEqual(t, c.From, c.To, "event %d: %s did not change", e.Seq, c.Name)
			if prev, ok := sum[c.Name]; ok {
				assert.Equal(t, prev, c.From, "event %d: %s starts where the last change left it", e.Seq, c.Name)
			} else {
				assert.Equal(t, start[c.Name], c.From, "event %d: %s starts at its value before the trace", e.Seq, c.Name)
			}
			sum[c.Name] = c.To
		}
	}
	assert.Equal(t, int64(traced.Received()), sum["rx_packets"], "the rx_packets changes add up to what was received")
	for _, h := range []string{"napi poll", "host lands frames", "rx interrupt", "cpumap kthread"} {
		assert.True(t, handlers[h], "no %q event in %d", h, n)
	}

	plain, err := New(s)
	require.NoError(t, err)
	for range n {
		require.True(t, plain.Step())
	}
	assert.Equal(t, plain.Totals(), traced.Totals(), "tracing changed the run")
	assert.Equal(t, plain.Now(), traced.Now())

	one, err := New(s)
	require.NoError(t, err)
	for i := range 4 {
		ev, ok := one.StepTraced()
		require.True(t, ok)
		assert.Equal(t, events[i], ev, "StepTraced describes event %d as Trace does", i+1)
	}

	line := events[3].String()
	assert.True(t, strings.HasPrefix(line, "#4 "), line)
	assert.Contains(t, line, "rx_packets 0->")
	b, err := json.Marshal(events[3])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"changes":[{"name":"rx_packets","from":0,"to":`)
}

// TestTraceOfNothing: a trace of no events runs none.
func TestTraceOfNothing(t *testing.T) {
	s, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	calls := 0
	require.NoError(t, w.Trace(0, func(TraceEvent) { calls++ }))
	assert.Zero(t, calls)
	assert.Zero(t, w.Sim.Queue.Fired())
}
