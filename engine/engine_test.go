package engine

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// TestPresetsKeepInvariants runs every preset from its start with the
// full pass of CheckEveryEvent after every event: the full Check, and the
// incremental checker's accounting against every page, so a change the
// checker does not see is caught at the event that made it. The runs are
// short (presetCheckEvents; a full pass walks every page); TestSoakPresets
// runs long. -short checks shortPresets.
func TestPresetsKeepInvariants(t *testing.T) {
	for _, p := range scenario.Presets() {
		if testing.Short() && !shortPresets[p.Name] {
			continue // make test's second pass checks every preset
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			s, err := scenario.LookupPreset(p.Name)
			require.NoError(t, err)
			w, err := New(s)
			require.NoError(t, err)
			require.NoError(t, w.CheckEveryEvent(1))
			for i := 0; i < presetCheckEvents && w.Step(); i++ {
			}
			require.NoError(t, w.Err(), "seed %d", s.Seed)
			assert.Positive(t, w.Received(), "no packet received")
		})
	}
}

// golden is the transcript pinned per preset: the counters after a fixed
// number of packets.
type golden struct {
	SimTimeNS int64             `json:"sim_time_ns"`
	Packets   uint64            `json:"packets"`
	Events    uint64            `json:"events"`
	Counters  map[string]uint64 `json:"counters"`
	Pages     map[string]int64  `json:"pages"`
}

func runGolden(t *testing.T, s scenario.Scenario) golden {
	w, err := New(s)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(20000))
	sum := w.Summarize()
	return golden{sum.SimTimeNS, sum.Packets, sum.Events, sum.Counters, sum.Pages}
}

// goldenTraceEvents is how many of a preset's first events its golden
// trace lists, one a line.
const goldenTraceEvents = 60

// runGoldenTrace is the first goldenTraceEvents events of s as text.
func runGoldenTrace(t *testing.T, s scenario.Scenario) string {
	w, err := New(s)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, w.Trace(goldenTraceEvents, func(e TraceEvent) {
		fmt.Fprintf(&b, "%s\n    %s\n    in %s\n", e, e.Say, strings.Join(e.Funcs, ", "))
	}))
	return b.String()
}

// TestGoldenTranscripts pins each preset's behaviour: a change to the
// model shows up as a readable diff, of the counters after 20 000 packets
// (NAME.json) and of the first events, each with what it changed
// (NAME.trace), where a change shows at the event it starts. Run with
// -update to rewrite them after a deliberate change.
func TestGoldenTranscripts(t *testing.T) {
	for _, p := range scenario.Presets() {
		if testing.Short() && !shortPresets[p.Name] {
			continue // make test's second pass checks every preset
		}
		t.Run(p.Name, func(t *testing.T) {
			s, err := scenario.LookupPreset(p.Name)
			require.NoError(t, err)
			got := runGolden(t, s)
			b, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			checkGolden(t, p.Name+".json", append(b, '\n'))
			checkGolden(t, p.Name+".trace", []byte(runGoldenTrace(t, s)))
		})
	}
}

// checkGolden compares got with testdata/golden/name, or writes it there
// with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden transcript: run go test ./engine -run TestGoldenTranscripts -update")
	assert.Equal(t, string(want), string(got), "%s differs: run go test ./engine -run TestGoldenTranscripts -update after a deliberate change, and read the diff", path)
}

// TestDeterministic runs the same scenario twice: same seed, same result.
func TestDeterministic(t *testing.T) {
	s, err := scenario.LookupPreset("cpumap")
	require.NoError(t, err)
	a := runGolden(t, s)
	b := runGolden(t, s)
	assert.Equal(t, a, b)
}
