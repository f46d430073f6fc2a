package engine

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// TestAnInternalErrorStopsTheWorld: an error a component records in the
// world's one sink (sim.Fail) stops the world before its next event; Err
// names it as ErrStopped, and a clone made after it is stopped too.
func TestAnInternalErrorStopsTheWorld(t *testing.T) {
	s, err := scenario.LookupPreset("cpumap")
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	for range 100 {
		require.True(t, w.Step())
	}
	at := w.Now()
	w.Sim.Fail(errors.New("cpumap: frame 3 returned twice"))
	assert.False(t, w.Step(), "the world stops on the error")
	assert.Equal(t, at, w.Now(), "no event ran after it")
	require.ErrorIs(t, w.Err(), ErrStopped)
	assert.ErrorContains(t, w.Err(), "frame 3 returned twice")
	c, err := w.Clone()
	require.NoError(t, err)
	assert.False(t, c.Step(), "a clone of a stopped world is stopped")
	assert.ErrorContains(t, c.Err(), "frame 3 returned twice")
}
