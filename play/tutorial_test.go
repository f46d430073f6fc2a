package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/tutorials"
)

// TestStepConfigSaysTheRecipe: a tutorial step's world says what it runs
// as its recipe, a step that only sets continuing the previous step's.
func TestStepConfigSaysTheRecipe(t *testing.T) {
	src := "---\ntitle: T\nlevel: beginner\nduration: 5 min\nlearn:\n- one thing\n---\n\n" +
		"## Step 1: a\n\n```ringlab\npreset default\nset ring_size=64\ncheck rx_packets >= 0\n```\n\n" +
		"## Step 2: b\n\n```ringlab\nset .mtu = 1400\nset description=\"a b\"\ncheck rx_packets >= 0\n```\n\n" +
		"## Step 3: c\n\n```ringlab\ncheck rx_packets >= 0\n```\n"
	tut, err := tutorials.Parse("t.md", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, `Lesson (T), step 2: preset default; set ring_size=64, .mtu=1400, description="a b".`, tut.Describe(tut.PathTo(2), 2))
	assert.Equal(t, `Lesson (T), step 3: step 2's world, run on: preset default; set ring_size=64, .mtu=1400, description="a b".`, tut.Describe(tut.PathTo(3), 3))
	assert.Contains(t, tut.Describe(tut.PathTo(1), 1), "step 1: preset default; set ring_size=64.")
}
