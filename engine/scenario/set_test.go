package scenario

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetText(t *testing.T) {
	base := Default()
	tests := []struct {
		name, path, text string
		check            func(t *testing.T, s Scenario)
	}{
		{"number", "mtu", "9000", func(t *testing.T, s Scenario) { assert.Equal(t, 9000, s.MTU) }},
		// As JSON 6.10 is the number 6.1: a string field takes the text.
		{"bare version", "kernel", "6.10", func(t *testing.T, s Scenario) { assert.Equal(t, "6.10", s.Kernel) }},
		{"quoted version", "kernel", `"6.10"`, func(t *testing.T, s Scenario) { assert.Equal(t, "6.10", s.Kernel) }},
		{"bare word", "driver.dma", "ring", func(t *testing.T, s Scenario) { assert.Equal(t, DMARing, s.Driver.DMA) }},
		{"bool", "features.access_platform", "true", func(t *testing.T, s Scenario) { assert.True(t, s.Features.AccessPlatform) }},
		{"float", "traffic.rate_pps", "1e6", func(t *testing.T, s Scenario) { assert.Equal(t, 1e6, s.Traffic.RatePPS) }},
		{"object merges", "traffic", `{"size": 128}`, func(t *testing.T, s Scenario) {
			assert.Equal(t, 128, s.Traffic.Size)
			assert.Equal(t, base.Traffic.Proto, s.Traffic.Proto, "the other traffic fields stay")
		}},
		{"list", "traffic.sizes", "[64, 128]", func(t *testing.T, s Scenario) { assert.Equal(t, []int{64, 128}, s.Traffic.Sizes) }},
		{"map entry", "costs.atomic", "7", func(t *testing.T, s Scenario) { assert.Equal(t, int64(7), s.Costs["atomic"]) }},
		{"absent section", "xdp.program", "xdp_drop", func(t *testing.T, s Scenario) {
			require.NotNil(t, s.XDP)
			assert.Equal(t, "xdp_drop", s.XDP.Program)
		}},
		{"string map entry", "xdp", `{"program": "xdp_drop_udp_port", "args": {"port": "53"}}`, func(t *testing.T, s Scenario) {
			assert.Equal(t, "53", s.XDP.Args["port"])
		}},
		{"string with spaces", "description", "a ring of 16", func(t *testing.T, s Scenario) { assert.Equal(t, "a ring of 16", s.Description) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SetText(base, tc.path, tc.text)
			require.NoError(t, err)
			tc.check(t, s)
		})
	}
}

// TestSetTextBufferSource: a bare buffer source (--set driver.buffer_source=page_pool) on a
// preset whose ring maps its buffers.
func TestSetTextBufferSource(t *testing.T) {
	s, err := LookupPreset("r4-page-alloc-1flow")
	require.NoError(t, err)
	s, err = SetText(s, "driver.buffer_source", "page_frag")
	require.NoError(t, err)
	assert.Equal(t, SourcePageFrag, s.Driver.BufferSource)
	s.Traffic.Sizes = []int{64, 128}
	_, err = SetText(s, "traffic.sizes.2", "64")
	assert.ErrorContains(t, err, "traffic.sizes.2: want an index 0..1 of traffic.sizes")
	s, err = SetText(s, "traffic.sizes.1", "256")
	require.NoError(t, err)
	assert.Equal(t, []int{64, 256}, s.Traffic.Sizes)
}

func TestSetErrorsNameThePath(t *testing.T) {
	tests := []struct {
		name, path, text, want string
	}{
		{"unknown field", "traffic.sise", "100", `traffic.sise: the scenario has no field "sise"`},
		{"invalid value", ".ring_size", "100", "ring_size: 100: want a power of two"},
		{"invalid knob value", "ring_size", "100", `ring_size="100": want a power of two`},
		{"wrong type", ".ring_size", `"big"`, "ring_size: want int"},
		{"not JSON for a number", ".mtu", "nine", "mtu: the value nine is not JSON"},
		{"not a number for a knob", "mtu", "nine", `mtu="nine": not a whole number`},
		{"through a number", "mtu.x", "1", "mtu.x: mtu is not an object"},
		{"bad index", "traffic.sizes.3", "64", "traffic.sizes.3: traffic.sizes is empty"},
		{"bad kernel", "kernel", "6.99", `kernel="6.99": kernel version 6.99`},
		{"empty segment", "traffic..size", "1", "traffic..size: empty segment"},
		{"empty path", "", "1", "empty path"},
		// Validation names another field: the path set comes first. (The
		// cpus knob moves consumer.cpu with it; the raw path does not.)
		{"knock-on", ".cpus", "1", "cpus: consumer.cpu"},
		{"two values", ".mtu", "1 2", "mtu: the value 1 2 is not JSON: more than one value"},
	}
	base, err := LookupPreset("r2-mtu9000-after")
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SetText(base, tc.path, tc.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestSetDropsFittedEntries: a field declared fitted that a set changes
// is no longer the fitted value.
func TestSetDropsFittedEntries(t *testing.T) {
	s, err := LookupPreset("r1-upstream")
	require.NoError(t, err)
	// A scenario that fitted two values on R1, as its presets once did.
	s.Consumer.CostNs = 1000
	s.Driver.IOMMU, s.Features.AccessPlatform = true, true
	s.Costs = map[string]int64{"dma_map_iommu": 4000}
	s.Fitted = []Fit{
		{Field: "consumer.cost_ns", Result: "R1", Row: "r1-page-pool", Why: "puts page_pool at its figure"},
		{Field: "costs.dma_map_iommu", Result: "R1", Row: "r1-upstream", Why: "puts upstream at its figure"},
	}
	require.NoError(t, s.Validate())
	fields := func(s Scenario) []string {
		var out []string
		for _, f := range s.Fitted {
			out = append(out, f.Field)
		}
		return out
	}
	require.Contains(t, fields(s), "consumer.cost_ns")
	require.Contains(t, fields(s), "costs.dma_map_iommu")
	got, err := SetText(s, "consumer.cost_ns", "200")
	require.NoError(t, err)
	assert.NotContains(t, fields(got), "consumer.cost_ns")
	assert.Contains(t, fields(got), "costs.dma_map_iommu")
	got, err = SetText(s, "consumer", `{"cost_ns": 200}`)
	require.NoError(t, err)
	assert.NotContains(t, fields(got), "consumer.cost_ns", "a set of the enclosing object counts")
	got, err = SetText(s, "mtu", "1500")
	require.NoError(t, err)
	assert.Equal(t, fields(s), fields(got), "other fields keep their entries")
}

func TestFieldKind(t *testing.T) {
	for path, want := range map[string]reflect.Kind{
		"kernel": reflect.String, "mtu": reflect.Int, "traffic.rate_pps": reflect.Float64,
		"xdp.program": reflect.String, "xdp.args.cpu": reflect.String, "costs.atomic": reflect.Int64,
		"traffic.sizes": reflect.Slice, "traffic.sizes.0": reflect.Int, "next_device": reflect.Struct,
		"fitted.0.field": reflect.String, "features.event_idx": reflect.Bool,
	} {
		got, ok := FieldKind(path)
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"nope", "mtu.x", "traffic.sizes.x", ""} {
		_, ok := FieldKind(path)
		assert.False(t, ok, path)
	}
}

func TestSetKeepsJSONStrict(t *testing.T) {
	// Set (the tutorials' set) takes JSON only: a bare word is an error.
	_, err := Set(Default(), ".kernel", json.RawMessage("6.10x"))
	assert.ErrorContains(t, err, "kernel: the value 6.10x is not JSON")
}

// TestSetTakesKnobsByName: a key a knob has sets the knob, with its
// consequences, as the page does: cpus=1 on r4-page-pool-other-cpu moves
// the cpumap target and the consumer with it (the raw path is refused),
// and page_pool=off, a knob with no field of its name, turns the pool off
// with ring-mapped DMA. Knobs and paths mix in order.
func TestSetTakesKnobsByName(t *testing.T) {
	r4, err := LookupPreset("r4-page-pool-other-cpu")
	require.NoError(t, err)
	_, err = SetText(r4, ".cpus", "1")
	require.Error(t, err, "the field alone leaves references to CPU 1")
	one, err := SetText(r4, "cpus", "1")
	require.NoError(t, err)
	assert.Equal(t, 1, one.CPUs)
	require.NoError(t, one.Validate())

	def := Default()
	var changes []Change
	for _, kv := range []string{"page_pool=off", "driver.buffer_source=page", "ring_size=512"} {
		c, err := ParseChange(kv)
		require.NoError(t, err)
		changes = append(changes, c)
	}
	got, err := Apply(def, changes...)
	require.NoError(t, err)
	assert.Equal(t, SourcePage, got.Driver.BufferSource, "the path after the knob wins")
	assert.Equal(t, DMARing, got.Driver.DMA, "page_pool off: ring-mapped DMA")
	assert.Equal(t, 512, got.RingSize)
	v, err := GetKnob(&got, "page_pool")
	require.NoError(t, err)
	assert.Equal(t, Off, v)

	_, err = SetText(def, "colour", "red")
	assert.ErrorContains(t, err, "colour: ", "neither a knob nor a field: a raw path, refused by name")
}

// TestApplyValidatesOnce: changes that only make sense together go
// through Apply together; one at a time the first is refused.
func TestApplyValidatesOnce(t *testing.T) {
	_, err := SetText(Default(), "driver.buffer_source", "page_frag")
	require.ErrorContains(t, err, "driver.buffer_source: driver.dma: premapped needs a page_pool buffer source")
	var changes []Change
	for _, kv := range []string{"driver.buffer_source=page_frag", "driver.dma=ring", "kernel=6.10"} {
		c, err := ParseChange(kv)
		require.NoError(t, err)
		changes = append(changes, c)
	}
	s, err := Apply(Default(), changes...)
	require.NoError(t, err)
	assert.Equal(t, SourcePageFrag, s.Driver.BufferSource)
	assert.Equal(t, DMARing, s.Driver.DMA)
	assert.Equal(t, "6.10", s.Kernel)
	_, err = ParseChange("mtu")
	assert.ErrorContains(t, err, "want KEY=VALUE")
	_, err = Apply(Default(), TextChange("mtu", "1500"), TextChange("traffic.sise", "1"))
	assert.ErrorContains(t, err, `traffic.sise: the scenario has no field "sise"`)
}
