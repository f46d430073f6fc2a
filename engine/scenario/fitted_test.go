package scenario

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestR1DeclaresWhatItFits: R1's presets label the virtual IOMMU, its two
// costs and the consumer's cost as fitted, on the rows they were fitted to
// (FIDELITY row 23: consumer.cost_ns 1000 was fitted and not labelled; row
// 1: both ends of R1's ratio are fitted).
func TestR1DeclaresWhatItFits(t *testing.T) {
	for _, name := range []string{"r1-upstream", "r1-page-pool", "r1-page-pool-frag"} {
		s, err := LookupPreset(name)
		require.NoError(t, err)
		got := map[string]string{}
		for _, f := range s.Fitted {
			got[f.Field] = f.Result + " " + f.Row
		}
		assert.Equal(t, map[string]string{
			"driver.iommu":          "R1 r1-upstream",
			"costs.dma_map_iommu":   "R1 r1-upstream",
			"costs.dma_unmap_iommu": "R1 r1-upstream",
			"consumer.cost_ns":      "R1 r1-page-pool",
		}, got, name)
	}
}

func TestFittedValidation(t *testing.T) {
	good := Fit{Field: "consumer.cost_ns", Result: "R1", Row: "r1-page-pool", Why: "x"}
	tests := []struct {
		name string
		fit  Fit
		want string
	}{
		{"no such field", Fit{Field: "consumer.cost", Result: "R1", Row: "r1-page-pool", Why: "x"}, `fitted[0].field: "consumer.cost"`},
		{"cost not overridden", Fit{Field: "costs.atomic", Result: "R1", Row: "r1-page-pool", Why: "x"}, "does not override that cost"},
		{"unknown result", Fit{Field: "mtu", Result: "R9", Row: "r1-page-pool", Why: "x"}, `result "R9" row "r1-page-pool"`},
		{"row of another result", Fit{Field: "mtu", Result: "R2", Row: "r1-page-pool", Why: "x"}, "want a row of the published results"},
		{"no reason", Fit{Field: "mtu", Result: "R1", Row: "r1-upstream"}, "fitted[0].why: empty"},
		{"itself", Fit{Field: "fitted", Result: "R1", Row: "r1-upstream", Why: "x"}, "want the JSON path of a scenario field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Default()
			s.Fitted = []Fit{tc.fit}
			assert.ErrorContains(t, s.Validate(), tc.want)
		})
	}
	s := Default()
	s.Fitted = []Fit{good}
	assert.NoError(t, s.Validate())
}
