package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailKeepsTheFirstError: the world's one error sink keeps the first
// error, ignores nil and later ones, and a copy of the simulation carries
// it.
func TestFailKeepsTheFirstError(t *testing.T) {
	s, err := New(2, DefaultCosts())
	require.NoError(t, err)
	assert.NoError(t, s.Err())
	s.Fail(nil)
	assert.NoError(t, s.Err(), "nil records nothing")
	first := errors.New("page 7 freed twice")
	s.Fail(first)
	s.Fail(errors.New("a later one"))
	assert.Same(t, first, s.Err(), "the first sticks")

	c, err := New(2, DefaultCosts())
	require.NoError(t, err)
	require.NoError(t, c.CopyFrom(s))
	assert.Same(t, first, c.Err(), "a copy carries the error")
}
