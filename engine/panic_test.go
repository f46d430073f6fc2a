package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// TestPanicInAnEventStopsOnlyThatWorld: a handler that panics (an engine
// bug) stops its world with an *InternalError naming the event; the
// program and other worlds go on.
func TestPanicInAnEventStopsOnlyThatWorld(t *testing.T) {
	s, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	bad, err := New(s)
	require.NoError(t, err)
	good, err := New(s)
	require.NoError(t, err)
	require.NoError(t, bad.RunPackets(10))
	boom := bad.Sim.Queue.Register("boom", func(sim.Time, uint64) { panic("index out of range [7] with length 4") })
	bad.Sim.Queue.Schedule(bad.Now(), boom, 0)
	before := bad.Sim.Queue.Fired()

	err = bad.RunUntil(bad.Now() + 1_000_000)
	var ie *InternalError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "boom", ie.Kind)
	assert.Equal(t, before+1, ie.Event)
	assert.Contains(t, ie.Error(), "index out of range")
	assert.Contains(t, ie.Stack, "TestPanicInAnEventStopsOnlyThatWorld")
	assert.False(t, bad.Step(), "a stopped world runs no more events")
	assert.Equal(t, before+1, bad.Sim.Queue.Fired())
	assert.ErrorAs(t, bad.RunPackets(5), &ie)

	require.NoError(t, good.RunPackets(100), "another world goes on")
	assert.GreaterOrEqual(t, good.Received(), uint64(100))
}
