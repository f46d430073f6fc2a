package scenario

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/presets.md")

// TestPresetsDocIsCurrent keeps docs/presets.md, the example per preset,
// in step with the code. Rewrite it with -update.
func TestPresetsDocIsCurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Presets\n\nGenerated from engine/scenario by `go test ./engine/scenario -run TestPresetsDocIsCurrent -update`.\n")
	b.WriteString("Each is a complete scenario file (docs/scenario.md explains the fields); `ringlab preset NAME` prints one.\n\n")
	for _, p := range Presets() {
		s, err := LookupPreset(p.Name)
		require.NoError(t, err)
		js, err := json.MarshalIndent(s, "", "  ")
		require.NoError(t, err)
		seed := ""
		if p.Seed != "" {
			seed = fmt.Sprintf(" (reproduces %s)", p.Seed)
		}
		fmt.Fprintf(&b, "## %s%s\n\n%s\n\n```json\n%s\n```\n\n", p.Name, seed, p.Description, js)
		// The example decodes back to the same scenario.
		back, err := DecodeBytes(js)
		require.NoError(t, err, p.Name)
		assert.Equal(t, s, back, p.Name)
	}
	const path = "../../docs/presets.md"
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write docs/presets.md")
	assert.Equal(t, b.String(), string(got), "docs/presets.md is stale: run go test ./engine/scenario -run TestPresetsDocIsCurrent -update")
}
