package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A short bench: every case is listed, the engine cases have values, the
// others say why they were not measured.
func TestBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine presets")
	}
	var out, errb bytes.Buffer
	code := dispatch([]string{"bench", "--json", "--packets", "2000", "--runs", "1"}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	var got []benchResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	cases := benchCases()
	require.Len(t, got, len(cases))
	for i, c := range cases {
		r := got[i]
		assert.Equal(t, c.name, r.Name)
		assert.NotEmpty(t, r.Unit, r.Name)
		assert.NotEmpty(t, r.Target, r.Name)
		switch {
		case c.run == nil:
			assert.Nil(t, r.Value, r.Name)
			assert.Nil(t, r.Holds, r.Name)
			assert.Equal(t, notMeasuredHere, r.Note, r.Name)
		case r.Value == nil:
			assert.NotEmpty(t, r.Note, "%s: a case that could not run says why", r.Name)
		default:
			assert.GreaterOrEqual(t, *r.Value, 0.0, r.Name)
			assert.NotNil(t, r.Holds, r.Name)
		}
	}
	byName := map[string]benchResult{}
	for _, r := range got {
		byName[r.Name] = r
	}
	for _, name := range []string{"engine-xdp-drop", "engine-xdp-pass", "engine-cpumap", "engine-allocs-per-packet", "engine-memory-4x4096"} {
		require.NotNil(t, byName[name].Value, name)
	}
	assert.Zero(t, *byName["engine-allocs-per-packet"].Value, "the steady state allocates")
	assert.True(t, *byName["engine-memory-4x4096"].Holds, "memory budget")
}

func TestBenchTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine presets")
	}
	var out, errb bytes.Buffer
	code := dispatch([]string{"bench", "--packets", "1000", "--runs", "1"}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	for _, c := range benchCases() {
		assert.Contains(t, out.String(), c.name)
	}
	assert.Contains(t, out.String(), notMeasuredHere)
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero runs", []string{"bench", "--runs", "0"}, "--runs 0"},
		{"zero packets", []string{"bench", "--packets", "0"}, "--packets 0"},
		{"an argument", []string{"bench", "xdp-drop"}, `unexpected argument "xdp-drop"`},
		{"a bad flag", []string{"bench", "--nope"}, "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, exitUsage, dispatch(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), tc.want)
			assert.Empty(t, out.String())
		})
	}
	var out, errb bytes.Buffer
	assert.Equal(t, exitOK, dispatch([]string{"help", "bench"}, &out, &errb))
	assert.Contains(t, errb.String(), "Usage: ringlab bench")
}
