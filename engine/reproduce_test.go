package engine

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reproduced is Reproduce(nil), run once for the tests that read its
// rows (a run of every published configuration, a few seconds under the
// race detector): each gets a copy of the slice.
func reproduced() ([]Row, error) {
	rows, err := reproduceOnce()
	return slices.Clone(rows), err
}

var reproduceOnce = sync.OnceValues(func() ([]Row, error) { return Reproduce(nil) })

// TestReproductionTargets holds the published results to what the model
// must get whatever its fitted constants: the direction of each change
// between configurations, and which resource limits each configuration
// today (LimitOf). Ratio targets that hold only through constants fitted
// on that very ratio are not asserted: R1's 7x (the virtual IOMMU's two
// costs and consumer.cost_ns, fitted), R2's 2x at MTU 9000 (vhost_desc
// and vhost_copy_64b, fitted) and R4's two-flows-over-one 2/3
// (buddy_per_page, fitted); nor the 1.4x margin of R4's page_pool rows.
// `ringlab reproduce` prints those ratios with their verdicts.
func TestReproductionTargets(t *testing.T) {
	rows, err := reproduced()
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
		t.Logf("%s %-24s %-22s pub %10.3f sim %10.3f ratio %6.3f (published %6.3f) %-14s limited by %s", r.ID, r.Config, r.Metric, r.Published, r.Simulated, r.Ratio, r.PublishedRatio, r.Verdict, r.Limit.Why)
		assert.False(t, math.IsInf(r.Simulated, 0) || math.IsNaN(r.Simulated), r.Config)
		assert.NotEmpty(t, r.Verdict, r.Config)
	}
	limit := func(config, metric, want string) {
		t.Helper()
		assert.Equal(t, want, get(config, metric).Limit.Name, "%s: %s", config, get(config, metric).Limit.Why)
	}

	// R1, rebuilt from its setup (no IOMMU, no premapping, order-3 pool
	// pages for fragments, a TCP stream): page_pool delivers at least as
	// much as page_frag, and CPU 1, the cpumap CPU that builds, reads and
	// frees every packet, limits all three, as published. The ratio is
	// what the sourced costs give (docs/published.md: not reproduced).
	up := get("r1-upstream", "goodput_gbps").Simulated
	assert.GreaterOrEqual(t, get("r1-page-pool", "goodput_gbps").Simulated, up, "R1: page_pool over upstream")
	assert.GreaterOrEqual(t, get("r1-page-pool-frag", "goodput_gbps").Simulated, up, "R1: page_pool fragments over upstream")
	for _, c := range []string{"r1-upstream", "r1-page-pool", "r1-page-pool-frag"} {
		limit(c, "goodput_gbps", "cpu1")
	}

	// R2, rebuilt on a vDPA virtqueue with a TCP stream: at MTU 1500 the
	// fix does not apply (small buffers) and nothing moves; at 9000 the
	// 204-buffer ring delivers more than the 53-buffer one. The NAPI CPU
	// (CPU 0: the driver, GRO, the protocol and the ACKs) limits both
	// 1500 runs and 9000 before the fix, where add_recvbuf_big builds
	// 19-descriptor buffers; after it the receiving application's CPU
	// does. Before the fix frames find the ring empty too, but CPU 0 is
	// what holds the stream (docs/published.md: not reproduced).
	assert.Greater(t, get("r2-mtu9000-after", "goodput_gbps").Ratio, 1.2, "R2 MTU 9000: after over before")
	assert.InDelta(t, 1.0, get("r2-mtu1500-after", "goodput_gbps").Ratio, 0.05, "R2 MTU 1500: the fix does not apply")
	for _, c := range []string{"r2-mtu1500-before", "r2-mtu1500-after", "r2-mtu9000-before"} {
		limit(c, "goodput_gbps", "cpu0")
	}
	limit("r2-mtu9000-after", "goodput_gbps", "cpu1")
	// The ring's capacity in buffers, as the 2022 mlx5 vDPA device leaves
	// it (no INDIRECT_DESC, mlx5_vnet.c get_supported_features):
	// add_recvbuf_big's MAX_SKB_FRAGS + 2 = 19 descriptors a buffer before
	// 6.1, DIV_ROUND_UP(9000, PAGE_SIZE) + 2 = 5 after; and the verdict
	// says what a ring-limited "before" would need of the guest.
	before, after := get("r2-mtu9000-before", "goodput_gbps"), get("r2-mtu9000-after", "goodput_gbps")
	assert.Equal(t, 1024/19, before.Usage.RingBuffers, "R2 before: buffers in a 1024-entry ring")
	assert.Equal(t, 1024/5, after.Usage.RingBuffers, "R2 after: buffers in the same ring")
	assert.Contains(t, before.Why, "a ring of 53 buffers", "R2 before: the why says what the ring's capacity needs")

	// R3: NAPI-local recycling moves the frees from the ptr_ring to the
	// alloc cache, and the refills all but vanish.
	assert.GreaterOrEqual(t, get("r3-napi-local-off", "recycle_ring_share").Simulated, 0.95, "R3 off: ring share")
	assert.GreaterOrEqual(t, get("r3-napi-local-on", "recycle_cached_share").Simulated, 0.85, "R3 on: cached share")
	off := get("r3-napi-local-off", "alloc_refill_per_mpkt").Simulated
	on := get("r3-napi-local-on", "alloc_refill_per_mpkt").Simulated
	assert.Positive(t, off)
	assert.LessOrEqual(t, on*10, off, "R3: refills must fall at least 10x (off %.1f, on %.1f per Mpkt)", off, on)

	// R4: the page allocator scales negatively with a second RX CPU
	// (zone->lock), page_pool beats it, and returning on another CPU
	// beats returning on the RX CPU in 2018; the RX CPU holds the rest.
	one := get("r4-page-alloc-1flow", "tx_mpps").Simulated
	two := get("r4-page-alloc-2flows", "tx_mpps").Simulated
	same := get("r4-page-pool-same-cpu", "tx_mpps").Simulated
	other := get("r4-page-pool-other-cpu", "tx_mpps").Simulated
	assert.Less(t, two, one, "R4: two flows on the page allocator must deliver less than one")
	assert.Greater(t, same, one, "R4: page_pool same CPU over the page allocator")
	assert.Greater(t, other, one, "R4: page_pool other CPU over the page allocator")
	assert.Greater(t, other, same, "R4 (2018, no NAPI-local recycling): returning on another CPU takes the completions and the ptr_ring's producer side off the RX CPU")
	for _, v := range []float64{one, two, same, other} {
		assert.LessOrEqual(t, v, 13.0, "R4: nothing exceeds the next device's 13 Mpps")
	}
	limit("r4-page-alloc-1flow", "tx_mpps", "cpu0")
	limit("r4-page-alloc-2flows", "tx_mpps", "zone->lock")
	limit("r4-page-pool-same-cpu", "tx_mpps", "cpu0")
	limit("r4-page-pool-other-cpu", "tx_mpps", "cpu0")
}

// TestReproductionVerdicts pins today's verdicts and says why: R1 is not
// reproduced (its sourced costs give page_pool a few per cent over
// page_frag, not 7x: docs/published.md says what a larger ratio would
// need); R2 at MTU 1500 is flat as published and explained, at 9000 not
// reproduced (the 53-buffer ring never binds: the guest turns its
// buffers around about 50 times faster than a ring-limited 12.8 Gbit/s
// needs); R3's counters come from the mechanism with nothing fitted; R4
// is limited by the published resources with one constant
// (buddy_per_page) fitted on it. A model change that moves a verdict must
// say so here.
func TestReproductionVerdicts(t *testing.T) {
	rows, err := reproduced()
	require.NoError(t, err)
	want := map[string]Verdict{"R1": NotReproduced, "R3": Explained, "R4": Explained}
	for _, r := range rows {
		w, ok := want[r.ID]
		if r.ID == "R2" {
			// MTU 1500 is flat, as published, but its baseline runs
			// faster than the measured guest (more than 1.5x); at 9000
			// the fix gains less than published (TestReproductionTargets).
			w, ok = NotReproduced, true
			if r.Config == "r2-mtu1500-after" {
				w = Explained
			}
		}
		require.True(t, ok, r.ID)
		assert.Equal(t, w, r.Verdict, "%s %s %s: %s", r.ID, r.Config, r.Metric, r.Why)
	}
}

// TestPublishedDocIsCurrent keeps the table of verdicts in
// docs/published.md in step with `ringlab reproduce`: per row, what
// limits it, the published mechanism, what was fitted on its result and
// the verdict. Rewrite it with -update.
func TestPublishedDocIsCurrent(t *testing.T) {
	const path = "../docs/published.md"
	const begin, end = "<!-- verdicts: generated by go test ./engine -run TestPublishedDocIsCurrent -update -->\n", "<!-- end verdicts -->"
	rows, err := reproduced()
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("| result | configuration | metric | limited by | published mechanism | fitted on the result | verdict |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		var fitted []string
		for _, f := range r.Fitted {
			fitted = append(fitted, "`"+f.Name+"`")
		}
		if len(fitted) == 0 {
			fitted = []string{"nothing"}
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", r.ID, r.Config, r.Metric, r.Limit.Name, r.Mechanism, strings.Join(fitted, ", "), r.Verdict)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := string(got)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "docs/published.md has the verdicts markers")
	want := doc[:i+len(begin)] + b.String() + doc[j:]
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, doc, "docs/published.md's verdicts are stale: run go test ./engine -run TestPublishedDocIsCurrent -update")
}

// TestR2PollProseIsCurrent holds the prose of docs/published.md and
// tutorial 3 to what the model gives for R2 at MTU 9000: the goodput
// before and after the fix and their ratio, the frames a NAPI poll takes
// before it and the frames that found no buffer, as reproduce computes
// them. A change to the guest's timing moves the figures, and the prose
// must move with them.
func TestR2PollProseIsCurrent(t *testing.T) {
	rows, err := reproduced()
	require.NoError(t, err)
	var before, after Row
	for _, r := range rows {
		switch r.Config {
		case "r2-mtu9000-before":
			before = r
		case "r2-mtu9000-after":
			after = r
		}
	}
	require.Positive(t, before.Usage.FramesPerPoll, "reproduce gives r2-mtu9000-before's frames per poll")
	prose := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return strings.Join(strings.Fields(string(b)), " ")
	}
	pub, tut := prose("../docs/published.md"), prose("../tutorials/03-big-mtu-fix.md")
	for _, want := range []string{
		fmt.Sprintf("gains %.2fx (%.1f -> %.1f Gbit/s", after.Ratio, before.Simulated, after.Simulated),
		fmt.Sprintf("a poll takes %.1f frames on average, and %d frames found no buffer", before.Usage.FramesPerPoll, before.Usage.RingDrops),
	} {
		assert.True(t, strings.Contains(pub, want), "docs/published.md should say %q, what the model computes", want)
	}
	want := fmt.Sprintf("a poll takes some %.0f frames", before.Usage.FramesPerPoll)
	assert.True(t, strings.Contains(tut, want), "tutorial 3 should say %q, the frames per poll reproduce computes", want)
}
