package vocab

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/numbers.md")

// TestNumbersDocIsCurrent keeps docs/numbers.md, the table as a person
// reads it, in step with the code. Rewrite it with -update.
func TestNumbersDocIsCurrent(t *testing.T) {
	const path = "../../docs/numbers.md"
	want := Markdown()
	for g := range groupTitles {
		assert.Contains(t, want, "## "+groupTitles[g])
	}
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to write docs/numbers.md")
	assert.Equal(t, want, string(got), "docs/numbers.md is stale: run go test ./engine/vocab -run TestNumbersDocIsCurrent -update")
}
