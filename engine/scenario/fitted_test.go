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
// R1 and R2, rebuilt from their measured setups, fit nothing: no
// virtual IOMMU, no overridden cost, no fitted field (FIDELITY rows 1, 2).
func TestRebuiltPresetsFitNothing(t *testing.T) {
	for _, p := range Presets() {
		if p.Seed != "R1" && p.Seed != "R2" {
			continue
		}
		s, err := LookupPreset(p.Name)
		require.NoError(t, err)
		assert.Empty(t, s.Fitted, p.Name)
		assert.Empty(t, s.Costs, p.Name)
		assert.False(t, s.Driver.IOMMU, p.Name)
		assert.Equal(t, DMARing, s.Driver.DMA, "%s: the 2023 series had no PP_FLAG_DMA_MAP; big mode maps in the ring", p.Name)
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
