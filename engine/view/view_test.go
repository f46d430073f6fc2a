package view

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// checkSnapshot verifies what every snapshot must hold: the ring's slots
// agree with num_free, the page map agrees with the counts, and the
// working set lies inside the span.
func checkSnapshot(t *testing.T, w *engine.World, s *Snapshot) {
	t.Helper()
	q := &s.Queue
	require.Len(t, q.Desc, q.Size)
	require.Len(t, q.Avail, q.Size)
	require.Len(t, q.Used, q.Size)
	posted := 0
	for _, d := range q.Desc {
		if d.State != virtq.SlotFree {
			posted++
		}
	}
	assert.Equal(t, q.Size-q.NumFree, posted, "descriptors not free = size - num_free")
	var perLoc [mem.NumLocs]int64
	for _, l := range s.Pages.Map {
		require.True(t, l.Valid())
		perLoc[l]++
	}
	assert.Equal(t, s.Pages.Counts, perLoc, "the page map agrees with the counts per location")
	assert.Equal(t, int64(s.Pages.N)-s.Pages.Counts[mem.Buddy], int64(s.Pages.Working))
	for id := s.Pages.Span; id < s.Pages.N; id++ {
		require.Equal(t, mem.Buddy, s.Pages.Map[id], "page %d past the span %d is not free", id, s.Pages.Span)
	}
	assert.Len(t, s.CPUs, w.Sim.NumCPU())
	assert.Equal(t, int64(w.Now()), s.Now)
	assert.Equal(t, w.Received(), s.Packets)
}

// snapshotShort are the presets TestSnapshotContents keeps under
// -short: mergeable buffers from page_pool fragments on one CPU
// (default), XDP_REDIRECT into a cpumap with a second CPU building skbs
// (cpumap), and big mode's chains of whole pages (big-9000). make test
// runs every one.
var snapshotShort = map[string]bool{"default": true, "cpumap": true, "big-9000": true}

func TestSnapshotContents(t *testing.T) {
	for _, name := range []string{"default", "xdp-drop", "big-9000", "cpumap", "xdp-tx", "r1-upstream", "r4-page-alloc-2flows"} {
		t.Run(name, func(t *testing.T) {
			if testing.Short() && !snapshotShort[name] {
				t.Skip("-short keeps three presets (snapshotShort); make test runs every one")
			}
			sc, err := scenario.LookupPreset(name)
			require.NoError(t, err)
			w, err := engine.New(sc)
			require.NoError(t, err)
			var s Snapshot
			s.Fill(w, 0)
			checkSnapshot(t, w, &s)
			for i := 0; i < 400 && w.Step(); i++ {
				if i%50 == 0 {
					s.Fill(w, 0)
					checkSnapshot(t, w, &s)
				}
			}
			s.Fill(w, 0)
			checkSnapshot(t, w, &s)
			assert.Equal(t, sc.RingSize, s.Queue.Size)
			// Whole-page buffers are located in the virtqueue, pages shared
			// by several buffers with their allocator (page_frag, or the
			// driver for page_pool fragments).
			assert.Positive(t, s.Pages.Counts[mem.Virtqueue]+s.Pages.Counts[mem.PageFrag]+s.Pages.Counts[mem.Driver], "buffers are posted")
		})
	}
}

func TestSnapshotChainsInBigMode(t *testing.T) {
	sc, err := scenario.LookupPreset("big-9000")
	require.NoError(t, err)
	w, err := engine.New(sc)
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		w.Step()
	}
	var s Snapshot
	s.Fill(w, 0)
	chained := 0
	for _, d := range s.Queue.Desc {
		if d.Chained() {
			chained++
		}
	}
	// Big mode posts chains of DIV_ROUND_UP(9000, 4096) + 2 = 5 descriptors.
	assert.Positive(t, chained)
	assert.Equal(t, 0, chained%4, "4 links per 5-descriptor chain")
}

func TestAvailUsedWindows(t *testing.T) {
	tests := []struct {
		name     string
		from, to uint16
		n        int
		live     []int
	}{
		{"empty", 5, 5, 8, nil},
		{"simple", 2, 5, 8, []int{2, 3, 4}},
		{"wraps the ring", 6, 10, 8, []int{6, 7, 0, 1}},
		{"wraps 16 bits", 65534, 2, 8, []int{6, 7, 0, 1}},
		{"full", 3, 11, 8, []int{0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for s := 0; s < tc.n; s++ {
				if inWindow(uint16(s), tc.from, tc.to, tc.n) {
					got = append(got, s)
				}
			}
			assert.ElementsMatch(t, tc.live, got)
		})
	}
}

func TestInspect(t *testing.T) {
	sc, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	w, err := engine.New(sc)
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		w.Step()
	}
	names := func(r Record) []string {
		var out []string
		for _, f := range r.Fields {
			out = append(out, f.Name)
		}
		return out
	}
	tests := []struct {
		t      Target
		fields []string
		title  string
	}{
		{Target{Kind: KindDesc, Index: 3}, []string{"state", "addr", "len", "flags", "next"}, "descriptor 3 of rx0"},
		{Target{Kind: KindAvail, Index: 0}, []string{"head", "pending"}, "avail ring slot 0"},
		{Target{Kind: KindUsed, Index: 15}, []string{"id", "len", "pending"}, "used ring slot 15"},
		{Target{Kind: KindPage, Index: 0}, []string{"location", "refcount", "pp_ref_count", "dma_addr", "move"}, "page 0"},
		{Target{Kind: KindCPU, Index: 0}, []string{"busy", "spinning", "doing"}, "CPU 0"},
	}
	for _, tc := range tests {
		t.Run(string(tc.t.Kind), func(t *testing.T) {
			r, err := Inspect(w, 0, tc.t)
			require.NoError(t, err)
			assert.Contains(t, r.Title, tc.title)
			for _, f := range tc.fields {
				assert.Contains(t, names(r), f)
			}
		})
	}
	for _, bad := range []Target{{Kind: KindDesc, Index: 16}, {Kind: KindPage, Index: -1}, {Kind: KindCPU, Index: 1}, {Kind: "disk"}} {
		_, err := Inspect(w, 0, bad)
		assert.ErrorIs(t, err, ErrTarget, "%+v", bad)
	}
}

// worldAt builds a preset's world and runs it for ns of simulated time.
func worldAt(t *testing.T, preset string, ns int64) *engine.World {
	t.Helper()
	sc, err := scenario.LookupPreset(preset)
	require.NoError(t, err)
	w, err := engine.New(sc)
	require.NoError(t, err)
	require.NoError(t, w.RunUntil(sim.Time(ns)))
	return w
}

func TestRatesFollowTheTraffic(t *testing.T) {
	w := worldAt(t, "default", 0)
	var r Rates
	for i := 0; i < 200; i++ {
		require.NoError(t, w.RunFor(50_000))
		r.Sample(w)
	}
	require.Equal(t, RatesLen, r.Len())
	// The default preset sends 50 000 packets/s.
	assert.InEpsilon(t, 50_000, r.Latest()[RxPPS], 0.1)
	// Two page_pool fragments to a page (page_pool_alloc_frag, 7.0): a
	// page recycles once both are back.
	assert.InEpsilon(t, 25_000, r.Latest()[RecycleCache], 0.15, "every page comes back through the alloc cache")
	u := r.Util(r.Len() - 1)
	require.Len(t, u, 1)
	assert.Greater(t, u[0], 0.0)
	assert.LessOrEqual(t, u[0], 1.0)
}

// TestRatesReadThePagePoolStatsByPlace guards the indices rates.go reads
// engine.Stats.PagePool with.
func TestRatesReadThePagePoolStatsByPlace(t *testing.T) {
	for i, want := range map[int]string{
		ppAllocFast: "rx_pp_alloc_fast", ppAllocSlow: "rx_pp_alloc_slow", ppAllocSlowHO: "rx_pp_alloc_slow_ho",
		ppRecycleCached: "rx_pp_recycle_cached", ppRecycleRing: "rx_pp_recycle_ring",
		ppRecycleRingFull: "rx_pp_recycle_ring_full", ppRecycleReleasedRef: "rx_pp_recycle_released_ref",
	} {
		assert.Equal(t, want, pagepool.StatNames[i])
	}
}

// TestDerive: the flow's worked-out series from the counters behind
// them, with every counter (the world's), with a lab's verdict map in
// place of rx_xdp_packets, and with counters missing (NaN).
func TestDerive(t *testing.T) {
	nan := math.NaN()
	series := func(set map[Series]float64) *[NumSeries]float64 {
		var v [NumSeries]float64
		for s := range v {
			v[s] = nan
		}
		for s, x := range set {
			v[s] = x
		}
		return &v
	}

	// The world's: 100 received, 70 through XDP (10 dropped, 5 sent
	// back, 20 redirected of which a cpumap passed 12), 3 socket drops
	// and 2 and 1 of the maps'.
	v := series(map[Series]float64{RxPPS: 100, XDPDrop: 10, XDPTx: 5, XDPRedirect: 20, CpumapPass: 12, SockDrops: 3})
	assert.Equal(t, 70.0, Derive(v, 70, 2, 1))
	assert.Equal(t, 35.0, v[XDPPass], "rx_xdp_packets less the other verdicts")
	assert.Equal(t, 30.0, v[NoXDP], "rx_packets less rx_xdp_packets")
	assert.Equal(t, 8.0, v[RedirectFree], "redirected less what the cpumap passed")
	assert.Equal(t, 6.0, v[SockDrops], "the socket's and the maps' drops")

	// A lab: its program's own XDP_PASS count, no rx_xdp_packets, no
	// XDP_TX counter, no maps.
	v = series(map[Series]float64{RxPPS: 50, XDPPass: 20, XDPDrop: 30, XDPRedirect: 0, SockDrops: 1})
	assert.Equal(t, 50.0, Derive(v, nan, nan, nan), "every verdict counted")
	assert.Equal(t, 20.0, v[XDPPass], "the lab's own count is kept")
	assert.Equal(t, 0.0, v[NoXDP])
	assert.True(t, math.IsNaN(v[RedirectFree]), "no cpumap_passed: no rate")
	assert.Equal(t, 1.0, v[SockDrops])

	// A host with no XDP counters and no socket drops: nothing is made up.
	v = series(map[Series]float64{RxPPS: 50})
	assert.True(t, math.IsNaN(Derive(v, nan, nan, nan)))
	for _, s := range []Series{XDPPass, NoXDP, RedirectFree, SockDrops} {
		assert.True(t, math.IsNaN(v[s]), "%s", s)
	}

	// A difference is never below 0 (a live source's rates are taken
	// over windows that need not line up).
	v = series(map[Series]float64{RxPPS: 10, XDPDrop: 30, XDPTx: 0, XDPRedirect: 5, CpumapPass: 9, SockDrops: 0})
	Derive(v, 20, 0, 0)
	assert.Equal(t, 0.0, v[XDPPass])
	assert.Equal(t, 0.0, v[NoXDP])
	assert.Equal(t, 0.0, v[RedirectFree])
}

// TestChartLinesSayWhatTheySum: a rates chart's legend entry carries its
// first series's vocab name and, for a line that sums several series,
// a help naming every one of them: the tooltip of "rx+host" is not
// rx_drops' alone.
func TestChartLinesSayWhatTheySum(t *testing.T) {
	w := worldAt(t, "default", 0)
	var r Rates
	for range 20 {
		require.NoError(t, w.RunFor(50_000))
		r.Sample(w)
	}
	var s Snapshot
	s.Fill(w, 0)
	l := NewLayout(frame1280W, frame1280H, 1, len(s.CPUs), false)
	help := map[string]string{}
	for _, tx := range l.Texts(0, &s, &r, false) {
		if tx.View == "rates" && tx.Swatch.Kind == SwatchChart {
			label, _, _ := strings.Cut(tx.S, " ")
			help[label] = tx.Name + ": " + tx.Help
		}
	}
	assert.Equal(t, "rx_drops: per second of simulated time, the sum of rx_drops and host_drops", help["rx+host"])
	assert.Equal(t, "flow.alloc_slow: per second of simulated time, the sum of flow.alloc_slow and page_allocs", help["alloc"])
	assert.Equal(t, "rx_packets: per second of simulated time", help["rx"])
}
