package scenario

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecipeRoundTrip: every text reads as a recipe whose String is the
// canonical text, which reads back as the same recipe.
func TestRecipeRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, canonical string }{
		{"default", "default"},
		{"  default \t cpus=2  ", "default cpus=2"},
		{`default cpus="2"`, "default cpus=2"},
		{"r2-mtu9000-after kernel=6.10 page_pool=off", "r2-mtu9000-after kernel=6.10 page_pool=off"},
		{`default kernel="6.10"`, "default kernel=6.10"},
		{"default .cpus=1", "default .cpus=1"},
		{"default .traffic.size=128", "default traffic.size=128"},
		{"default .kernel=6.10", "default .kernel=6.10"},
		{"default traffic.sizes=[64,\t1514]", "default traffic.sizes=[64,"}, // a tab outside a string separates
		{`default traffic={"size":128,"proto":"udp"}`, `default traffic={"size":128,"proto":"udp"}`},
		{`default xdp={"program":"xdp_drop_udp_port","args":{"port":"53"}}`, `default xdp={"program":"xdp_drop_udp_port","args":{"port":"53"}}`},
		{"default xdp=null", "default xdp=null"},
		{`default description="a ring of 16"`, `default description="a ring of 16"`},
		{"default driver.buffer_source=page_frag driver.dma=ring", "default driver.buffer_source=page_frag driver.dma=ring"},
		{`default driver.dma="ring"`, "default driver.dma=ring"},
		{"default mtu=9000 mtu=1500", "default mtu=9000 mtu=1500"},
		{"default xdp=object:prog.o", "default xdp=object:prog.o"},
		{`default cpus="a b"`, `default cpus="a b"`},
		{`default mode=x"y`, ""}, // an open string
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRecipe(tc.in)
			if tc.canonical == "" || tc.canonical == "default traffic.sizes=[64," {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.canonical, r.String())
			back, err := ParseRecipe(r.String())
			require.NoError(t, err)
			assert.Equal(t, r, back)
		})
	}
	s := Default()
	s.MTU = 4000
	r := Recipe{Scenario: &s, Changes: []Change{{Path: "cpus", Value: json.RawMessage("2")}}}
	back, err := ParseRecipe(r.String())
	require.NoError(t, err)
	assert.Equal(t, 4000, back.Scenario.MTU)
	assert.Equal(t, "cpus=2", back.Changes[0].String())
	assert.Equal(t, "default", Recipe{}.String(), "no base: the default preset")
}

// TestRecipeBuild: a recipe builds what Apply makes of its base, knobs
// with their consequences, paths alone, validated once.
func TestRecipeBuild(t *testing.T) {
	r, err := ParseRecipe("r4-page-pool-other-cpu cpus=1 driver.buffer_source=page_frag driver.dma=ring kernel=6.10")
	require.NoError(t, err)
	got, err := r.Build()
	require.NoError(t, err)
	assert.Equal(t, 1, got.CPUs)
	assert.Equal(t, SourcePageFrag, got.Driver.BufferSource)
	assert.Equal(t, "6.10", got.Kernel)
	base, err := LookupPreset("r4-page-pool-other-cpu")
	require.NoError(t, err)
	want, err := Apply(base, r.Changes...)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	obj, err := Recipe{Changes: []Change{{Path: "xdp", Value: jsonString("object:prog.o")}}}.Build()
	require.NoError(t, err)
	require.NotNil(t, obj.XDP)
	assert.Equal(t, "prog.o", obj.XDP.Object)
	v, err := GetKnob(&obj, "xdp")
	require.NoError(t, err)
	assert.Equal(t, "object:prog.o", v, "the xdp knob reads back what it set")
}

// TestRecipeErrorsNameTheChange: a change refused, in the text or when
// built, names its place, key and value; a base refused says so.
func TestRecipeErrorsNameTheChange(t *testing.T) {
	for _, tc := range []struct {
		in    string
		index int // -1: no change at fault
		key   string
		want  string
	}{
		{"", -1, "", "recipe: empty"},
		{"nope", -1, "", `no preset named "nope"`},
		{"cpus=2", -1, "", "a recipe begins with a preset"},
		{"scenario:!!", -1, "", "scenario: not base64url"},
		{"default cpus", 0, "cpus", `"cpus": want KEY=VALUE`},
		{"default cpus=2 .mtu=big", 1, ".mtu", "change 2 (.mtu=big): mtu: the value big is not JSON"},
		{"default traffic..size=1", 0, "traffic..size", "empty segment"},
		{"default" + strings.Repeat(" mtu=1500", MaxChanges+1), -1, "", "at most 64"},
	} {
		t.Run("parse "+tc.in, func(t *testing.T) {
			_, err := ParseRecipe(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			ce, ok := errors.AsType[*ChangeError](err)
			if tc.index < 0 {
				assert.False(t, ok, "the base, not a change: %v", err)
				return
			}
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.index, ce.Index)
			assert.Equal(t, tc.key, ce.Key)
		})
	}
	for _, tc := range []struct {
		in         string
		index      int
		key, value string
		want       string
	}{
		{"default cpus=2 ring_size=100", 1, "ring_size", "100", `change 2 (ring_size=100): ring_size="100": want a power of two`},
		{"default mtu=1500 traffic.sise=1", 1, "traffic.sise", "1", `change 2 (traffic.sise=1): traffic.sise: the scenario has no field "sise"`},
		{"default kernel=6.99", 0, "kernel", "6.99", `kernel="6.99": kernel version 6.99`},
		// Validation names a field no change set: the change after which
		// the scenario stops validating is blamed.
		{"r4-page-pool-other-cpu mtu=1500 .cpus=1 ring_size=64", 1, ".cpus", "1", "change 2 (.cpus=1): "},
		// Validation names the field a change set.
		{"default mtu=1500 driver.buffer_source=page_frag", 1, "driver.buffer_source", "page_frag", "change 2 (driver.buffer_source=page_frag): driver.dma: premapped needs a page_pool buffer source"},
		{"default .traffic.sizes.3=64", 0, "traffic.sizes.3", "64", "traffic.sizes is empty"},
	} {
		t.Run("build "+tc.in, func(t *testing.T) {
			r, err := ParseRecipe(tc.in)
			require.NoError(t, err)
			_, err = r.Build()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			ce, ok := errors.AsType[*ChangeError](err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.index, ce.Index)
			assert.Equal(t, tc.key, ce.Key)
			assert.Equal(t, tc.value, ce.Value)
		})
	}
}

// TestRecipeJSON: the JSON form round-trips, a bare preset's is
// {"preset": NAME} (what a room carried before recipes), a whole scenario
// reads as a recipe without changes, and errors name the field.
func TestRecipeJSON(t *testing.T) {
	r, err := ParseRecipe(`default cpus=2 description="a b"`)
	require.NoError(t, err)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"preset":"default","set":["cpus=2","description=\"a b\""]}`, string(b))
	back, err := DecodeRecipe(b)
	require.NoError(t, err)
	assert.Equal(t, r, back)

	b, err = json.Marshal(Recipe{Preset: "xdp-drop"})
	require.NoError(t, err)
	assert.Equal(t, `{"preset":"xdp-drop"}`, string(b))

	s := Default()
	js, err := json.Marshal(s)
	require.NoError(t, err)
	whole, err := DecodeRecipe(js)
	require.NoError(t, err)
	require.NotNil(t, whole.Scenario)
	assert.Empty(t, whole.Changes)
	none, err := DecodeRecipe([]byte("null"))
	require.NoError(t, err)
	assert.Equal(t, Recipe{Preset: DefaultPreset}, none)
	wrapped, err := DecodeRecipe([]byte(`{"scenario":` + string(js) + `,"set":["mtu=4000"]}`))
	require.NoError(t, err)
	got, err := wrapped.Build()
	require.NoError(t, err)
	assert.Equal(t, 4000, got.MTU)

	for in, field := range map[string]string{
		`{"preset":"nope"}`:                         "preset",
		`{"preset":"default","set":["cpus=2","x"]}`: "set.1",
		`{"scenario":{"ring_size":100}}`:            "scenario.ring_size",
		`{"set":["cpus=2"]}`:                        "preset",
		`{"preset":"default","scenario":{}}`:        "preset",
		`{"preset":"default","colour":1}`:           "colour",
		`{"preset":"default","set":["mtu=1500"` + strings.Repeat(`,"mtu=1500"`, MaxChanges) + `]}`: "set",
	} {
		_, err := DecodeRecipe([]byte(in))
		fe, ok := errors.AsType[*FieldError](err)
		require.True(t, ok, "%s: %v", in, err)
		assert.Equal(t, field, fe.Field, in)
	}
}

// FuzzRecipe: whatever text reads as a recipe prints as a canonical text
// that reads back as the same recipe and prints the same; nothing panics.
// The seeds run in every go test.
func FuzzRecipe(f *testing.F) {
	for _, s := range []string{
		"default", "default cpus=2 page_pool=off", "r2-mtu9000-after kernel=6.10 mtu=4000 traffic.size=4014",
		`default description="a ring of 16"`, `default traffic={"size": 128}`, "default .cpus=1 .kernel=6.10",
		"default traffic.sizes=[64,1514] xdp=null", `default xdp={"program":"xdp_redirect_cpu","args":{"cpu":"0"}}`,
		`default cpus="a\"b c"`, "default mode=\xff", "default costs.atomic=7", "cpumap xdp=object:a.o",
		"default ring_size=100", "default =1", "default a=", `default a="\u003c"`, `default description=<b>`,
		"scenario:e30 cpus=2", "default x=1e400", "default .=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRecipe(text)
		if err != nil {
			return
		}
		canon := r.String()
		back, err := ParseRecipe(canon)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not read: %v", text, canon, err)
		}
		if again := back.String(); again != canon {
			t.Fatalf("%q: %q prints as %q", text, canon, again)
		}
		if r.Scenario != nil {
			a, _ := json.Marshal(r.Scenario)
			b, _ := json.Marshal(back.Scenario)
			if string(a) != string(b) {
				t.Fatalf("%q: the scenario changed in the round trip", text)
			}
			r.Scenario, back.Scenario = nil, nil
		}
		if len(r.Changes) != len(back.Changes) || r.Preset != back.Preset {
			t.Fatalf("%q printed as %q reads as %+v, not %+v", text, canon, back, r)
		}
		for i := range r.Changes {
			if r.Changes[i].Path != back.Changes[i].Path || string(r.Changes[i].Value) != string(back.Changes[i].Value) {
				t.Fatalf("%q printed as %q: change %d reads as %s=%s, not %s=%s", text, canon, i+1,
					back.Changes[i].Path, back.Changes[i].Value, r.Changes[i].Path, r.Changes[i].Value)
			}
		}
		_, _ = r.Build() // errors are fine; a panic is not
	})
}

// BenchmarkRecipeBuildWorst: the most a recipe costs to build (a room's
// request, a link): MaxChanges changes alternating knobs and raw paths,
// each raw one a pass over the scenario's JSON form, refused at the end
// by a validation no change's field names, so the change to blame is
// bisected.
func BenchmarkRecipeBuildWorst(b *testing.B) {
	var changes []Change
	for i := 0; len(changes) < MaxChanges-1; i++ {
		changes = append(changes, Change{Path: "ring_size", Value: jsonString("256")}, Change{Path: "traffic.size", Value: json.RawMessage("128")})
	}
	changes = append(changes[:MaxChanges-1], Change{Path: ".cpus", Value: json.RawMessage("1")})
	r := Recipe{Preset: "r4-page-pool-other-cpu", Changes: changes}
	if _, err := r.Build(); err == nil {
		b.Fatal("want the last change refused")
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = r.Build()
	}
}
