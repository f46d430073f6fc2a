package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerfStateRowsNeverNull: at t=0 a CPU that has done nothing yet has
// no rows, and the page reads an empty list, not null (web/perf.js
// iterates it).
func TestPerfStateRowsNeverNull(t *testing.T) {
	_, outs := New("preset=r3-napi-local-off&speed=0")
	var st *StateOut
	for _, o := range outs {
		if s, ok := o.(StateOut); ok {
			st = &s
		}
	}
	require.NotNil(t, st)
	require.NotNil(t, st.Panes[0].Perf)
	cpus := st.Panes[0].Perf.CPUs
	require.Len(t, cpus, 2)
	assert.Equal(t, 0.0, cpus[1].Busy, "cpu1 has not run")
	b, err := MarshalOut(*st)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"rows":null`)
}
