package scenario

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"ringlab/engine/kernel"
	"ringlab/engine/sim"

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
		fmt.Fprintf(&b, "## %s%s\n\n%s\n\n", p.Name, seed, p.Description)
		if len(s.Fitted) > 0 {
			b.WriteString("Fitted, not sourced (`fitted`):\n\n")
			for _, f := range s.Fitted {
				fmt.Fprintf(&b, "- `%s`, on %s (`%s`): %s.\n", f.Field, f.Result, f.Row, f.Why)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "```json\n%s\n```\n\n", js)
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

// TestVersionsDocIsCurrent keeps the table of dated behaviours in
// docs/scenario.md in step with engine/kernel. Rewrite it with -update.
func TestVersionsDocIsCurrent(t *testing.T) {
	const path = "../../docs/scenario.md"
	const begin, end = "<!-- versions: generated from engine/kernel by go test ./engine/scenario -run TestVersionsDocIsCurrent -update -->\n", "<!-- end versions -->"
	var b strings.Builder
	b.WriteString("| from | behaviour | where |\n| --- | --- | --- |\n")
	for _, c := range kernel.Changes() {
		from := c.From.String()
		if c.Off != (kernel.Version{}) {
			off := "off"
			if c.OffByDefault {
				off = "off by default"
			}
			from += fmt.Sprintf(" (%s in %s", off, c.Off)
			if last := lastBefore(c.On); last != c.Off {
				from += " to " + last.String()
			}
			from += ", on again in " + c.On.String() + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", from, c.What, c.Function)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(got)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "docs/scenario.md has the versions markers")
	want := doc[:i+len(begin)] + b.String() + doc[j:]
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, doc, "docs/scenario.md's versions table is stale: run go test ./engine/scenario -run TestVersionsDocIsCurrent -update")
}

// TestCostsDocIsCurrent keeps docs/costs.md, the cost table with each
// constant's kind and source and the presets' fitted overrides, in step
// with engine/sim/costs.go and the presets. Rewrite it with -update.
func TestCostsDocIsCurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Costs\n\nGenerated from engine/sim/costs.go and the presets by `go test ./engine/scenario -run TestCostsDocIsCurrent -update`.\n\n")
	b.WriteString("What each operation costs a simulated CPU or device, in nanoseconds. Every constant is of one kind:\n\n")
	b.WriteString("- **sourced**: a published measurement of the operation (a microbenchmark, a commit text, a paper), cited;\n")
	b.WriteString("- **estimate**: no published figure; the source says what the estimate rests on;\n")
	b.WriteString("- **fitted**: chosen so that one published result (R1..R4, docs/published.md) comes out; it names the result and the row. A result that matches only through constants fitted on it is *calibrated*, not explained (`ringlab reproduce`).\n\n")
	b.WriteString("A scenario overrides constants by name (`costs`) and declares the ones it fitted (`fitted`, docs/scenario.md); `ringlab run --costs` prints the table a run used.\n\n")
	b.WriteString("| cost | ns | kind | source |\n| --- | --- | --- | --- |\n")
	c := sim.DefaultCosts()
	for _, e := range c.Table() {
		kind := e.Kind.String()
		if e.Fit != "" {
			kind += " on " + e.Fit
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s |\n", e.Name, e.Value, kind, strings.ReplaceAll(e.Source, "|", "\\|"))
	}
	b.WriteString("\n## What the devices are assumed to do\n\nNo source gives these; each is the engine's assumption (engine/sim/costs.go `DeviceAssumptions`).\n\n")
	for _, a := range sim.DeviceAssumptions {
		fmt.Fprintf(&b, "- %s\n", a)
	}
	b.WriteString("\n## What the presets override\n\n| preset | cost | ns | default | fitted on | why |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, p := range Presets() {
		s, err := LookupPreset(p.Name)
		require.NoError(t, err)
		for _, e := range c.Table() {
			v, ok := s.Costs[e.Name]
			if !ok {
				continue
			}
			on, why := "not declared", s.CostNotes
			for _, f := range s.Fitted {
				if f.Field == "costs."+e.Name {
					on, why = fmt.Sprintf("%s (`%s`)", f.Result, f.Row), f.Why
				}
			}
			fmt.Fprintf(&b, "| %s | `%s` | %d | %d | %s | %s |\n", p.Name, e.Name, v, e.Value, on, why)
		}
	}
	const path = "../../docs/costs.md"
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write docs/costs.md")
	assert.Equal(t, b.String(), string(got), "docs/costs.md is stale: run go test ./engine/scenario -run TestCostsDocIsCurrent -update")
}

// lastBefore is the release before v.
func lastBefore(v kernel.Version) kernel.Version {
	var last kernel.Version
	for _, r := range kernel.Releases() {
		if !r.Less(v) {
			break
		}
		last = r
	}
	return last
}
