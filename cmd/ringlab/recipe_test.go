package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/play"
	"ringlab/server/rooms"
	"ringlab/tutorials"
)

// TestOneRecipeEveryPath: one recipe, a preset and changes spelled as
// --set spells them (knobs with their consequences, a raw path, a string
// field's bare word, JSON), builds one scenario through each of its
// consumers: `ringlab run PRESET --set ...`, a tutorial's preset and set
// lines, the page's link (and the page's own parameters, which the link
// re-encodes), and a room the recipe starts (checked by the server,
// replayed by the page's follower).
func TestOneRecipeEveryPath(t *testing.T) {
	const preset = "r4-page-pool-other-cpu"
	sets := []string{"cpus=1", "kernel=6.10", "page_pool=off", ".mtu=1400", "traffic.sizes=[64,1400]", "ring_size=512"}
	text := preset + " " + strings.Join(sets, " ")
	rec, err := scenario.ParseRecipe(text)
	require.NoError(t, err)
	require.Equal(t, text, rec.String(), "the text form is --set's spelling")
	want, err := rec.Build()
	require.NoError(t, err)
	require.Equal(t, 1, want.CPUs, "the cpus knob, which moves what pointed past the last CPU")
	require.Equal(t, scenario.DMARing, want.Driver.DMA, "page_pool=off: ring-mapped DMA")

	paths := map[string]scenario.Scenario{}

	// The CLI: ringlab run PRESET --set ... --set ...
	cli, err := recipeOf(preset, sets)
	require.NoError(t, err)
	paths["cli"], err = buildRecipe(cli, sets)
	require.NoError(t, err)

	// A tutorial: preset and set lines.
	src := "---\ntitle: T\nlevel: beginner\nduration: 5 min\nlearn:\n- one thing\n---\n\n## Step 1: s\n\n```ringlab\npreset " + preset + "\n"
	for _, kv := range sets {
		src += "set " + kv + "\n"
	}
	src += "check rx_packets >= 0\n```\n"
	tut, err := tutorials.Parse("t.md", []byte(src))
	require.NoError(t, err)
	require.NotNil(t, tut.Steps[0].Scenario)
	assert.Equal(t, text, tut.Steps[0].Recipe.String())
	paths["tutorial"] = *tut.Steps[0].Scenario

	// The page: a link, as the address bar carries it.
	st, err := play.DecodeState("recipe=" + url.QueryEscape(text) + "&speed=0")
	require.NoError(t, err)
	paths["link"], err = st.A.Build()
	require.NoError(t, err)
	again, err := play.DecodeState(st.Encode())
	require.NoError(t, err)
	paths["link re-encoded"], err = again.A.Build()
	require.NoError(t, err)

	// A room: the server checks the recipe in its text form and keeps it
	// in JSON; a page's follower replays the room from it.
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	canonical, err := rooms.DefaultScenario(raw)
	require.NoError(t, err)
	c := play.NewFollower()
	require.NoError(t, c.Step(play.RoomWelcome{Room: "r", You: play.RoleStudent, Scenario: canonical}))
	for c.Work(1 << 20) {
	}
	pane := c.Session().Panes[0]
	require.NoError(t, pane.World.Err())
	paths["room"] = pane.Scenario

	for name, got := range paths {
		// The world's name and description are the page's to say.
		got.Name, got.Description = want.Name, want.Description
		assert.Equal(t, want, got, "%s builds another scenario", name)
	}
}
