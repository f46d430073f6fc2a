package kernel_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
)

// Every function of the table has a line at the kernel of every preset
// whose release was read (but those that release did not have,
// kernel.HasNoLineForTest); the presets whose release was not read link
// Elixir's identifier search, and are listed.
func TestPresetKernelsHaveLines(t *testing.T) {
	byRelease := map[kernel.Version][]string{}
	for _, p := range scenario.Presets() {
		s := p.Build()
		v := s.KernelVersion()
		byRelease[v] = append(byRelease[v], p.Name)
	}
	var unread []string
	for v, names := range byRelease {
		if _, ok := kernel.SourceTag(v); !ok {
			unread = append(unread, v.String())
			continue
		}
		for _, f := range kernel.Funcs() {
			_, _, ok := kernel.FuncLine(f.Name, v)
			if why, none := kernel.HasNoLineForTest(f.Name, v); none {
				assert.False(t, ok, "%s at %s (%v): %s", f.Name, v, names, why)
				continue
			}
			assert.True(t, ok, "%s has no line at %s, the kernel of %v", f.Name, v, names)
		}
	}
	sort.Strings(unread)
	t.Logf("preset kernels without lines (their release not read): %v", unread)
	assert.Less(t, len(unread), len(byRelease), "at least one preset's release was read")
}
