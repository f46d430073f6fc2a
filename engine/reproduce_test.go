package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReproductionTargets checks the targets the published results set
// (docs/published.md): the ratios between configurations, computed from
// simulated time alone, must land where the issue says.
func TestReproductionTargets(t *testing.T) {
	rows, err := Reproduce(nil)
	require.NoError(t, err)
	get := func(config, metric string) Row {
		for _, r := range rows {
			if r.Config == config && r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no row %s %s", config, metric)
		return Row{}
	}
	for _, r := range rows {
		t.Logf("%s %-24s %-22s pub %10.3f sim %10.3f ratio %6.3f (published %6.3f)", r.ID, r.Config, r.Metric, r.Published, r.Simulated, r.Ratio, r.PublishedRatio)
		assert.False(t, math.IsInf(r.Simulated, 0) || math.IsNaN(r.Simulated), r.Config)
	}
	within := func(name string, got, want, tol float64) {
		assert.InDelta(t, want, got, want*tol, "%s: simulated ratio %.3f, published %.3f ±%.0f%%", name, got, want, tol*100)
	}
	r1 := get("r1-page-pool", "delivered_gbps")
	within("R1 page_pool / upstream", r1.Ratio, 7.06, 0.25)

	r2a := get("r2-mtu9000-after", "delivered_gbps")
	within("R2 MTU 9000 after / before", r2a.Ratio, 2.02, 0.25)
	r2b := get("r2-mtu1500-after", "delivered_gbps")
	within("R2 MTU 1500 after / before", r2b.Ratio, 1.0, 0.05)

	assert.GreaterOrEqual(t, get("r3-napi-local-off", "recycle_ring_share").Simulated, 0.95, "R3 off: ring share")
	assert.GreaterOrEqual(t, get("r3-napi-local-on", "recycle_cached_share").Simulated, 0.85, "R3 on: cached share")
	off := get("r3-napi-local-off", "alloc_refill_per_mpkt").Simulated
	on := get("r3-napi-local-on", "alloc_refill_per_mpkt").Simulated
	assert.Positive(t, off)
	assert.LessOrEqual(t, on*10, off, "R3: refills must fall at least 10x (off %.1f, on %.1f per Mpkt)", off, on)

	one := get("r4-page-alloc-1flow", "tx_mpps").Simulated
	two := get("r4-page-alloc-2flows", "tx_mpps").Simulated
	same := get("r4-page-pool-same-cpu", "tx_mpps").Simulated
	other := get("r4-page-pool-other-cpu", "tx_mpps").Simulated
	assert.Less(t, two, one, "R4: two flows on the page allocator must deliver less than one")
	assert.InDelta(t, 4.0/6, two/one, 0.07, "R4: two flows forward about two thirds of one, as published")
	assert.GreaterOrEqual(t, same, 1.4*one, "R4: page_pool same CPU vs page allocator")
	assert.GreaterOrEqual(t, other, 1.4*one, "R4: page_pool other CPU vs page allocator")
	assert.Greater(t, other, same, "R4 (2018, no NAPI-local recycling): returning on another CPU takes the completions and the ptr_ring's producer side off the RX CPU")
	for _, v := range []float64{one, two, same, other} {
		assert.LessOrEqual(t, v, 13.0, "R4: nothing exceeds the next device's 13 Mpps")
	}
}
