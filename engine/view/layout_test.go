package view

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// The canvas sizes the page gives the game: the frame's size in a
// 1280x720 window (the side panel beside it) and in one 800 px wide (the
// panel under it); the height is the page's or, when more, what the
// layout wants.
const (
	frame1280W, frame1280H = 898, 560
	frame800W, frame800H   = 770, 560
)

// paneWorld is a world with its snapshot and rates, sampled as the
// controller samples them.
type paneWorld struct {
	snap  Snapshot
	rates Rates
	xdp   bool
}

func runPane(t *testing.T, preset string, ns int64) *paneWorld {
	t.Helper()
	w := worldAt(t, preset, 0)
	p := &paneWorld{xdp: w.Scenario.XDP != nil}
	for i := int64(0); i < 60; i++ {
		require.NoError(t, w.RunFor(sim.Duration(ns/60)))
		p.rates.Sample(w)
	}
	p.snap.Fill(w, 0)
	return p
}

// checkLayout checks what every layout must hold: the views inside the
// canvas and apart, every text inside its view and no two texts
// overlapping, the flow's boxes apart.
func checkLayout(t *testing.T, l *Layout, panes []*paneWorld, what string) {
	t.Helper()
	canvas := Rect{0, 0, l.W, l.H}
	var views []Rect
	for i, p := range l.Panes {
		for name, r := range map[string]Rect{"ring": p.Ring, "flow": p.Flow, "cpus": p.CPUs, "pages": p.Pages, "rates": p.Rates} {
			require.Positive(t, r.W, "%s: pane %d's %s has no width", what, i, name)
			require.Positive(t, r.H, "%s: pane %d's %s has no height", what, i, name)
			assert.True(t, r.Within(canvas), "%s: pane %d's %s %+v leaves the canvas", what, i, name, r)
			views = append(views, r)
		}
		assert.GreaterOrEqual(t, p.Flow.W, FlowMinW, "%s: pane %d's flow is narrower than it can be read", what, i)
		assert.GreaterOrEqual(t, p.Flow.H, FlowMinH, "%s: pane %d's flow is shorter than it can be read", what, i)
		g := NewFlowGeom(p.Flow)
		for a := FlowNode(0); a < NumFlowNodes; a++ {
			assert.True(t, g.Nodes[a].Within(p.Flow), "%s: flow box %s leaves the view", what, a.Label())
			for b := a + 1; b < NumFlowNodes; b++ {
				assert.False(t, g.Nodes[a].Overlaps(g.Nodes[b]), "%s: flow boxes %s and %s overlap", what, a.Label(), b.Label())
			}
		}
	}
	for a := range views {
		for b := a + 1; b < len(views); b++ {
			assert.False(t, views[a].Overlaps(views[b]), "%s: views %+v and %+v overlap", what, views[a], views[b])
		}
	}
	var all []Text
	for i := range l.Panes {
		if i >= len(panes) {
			break
		}
		all = append(all, l.Texts(i, &panes[i].snap, &panes[i].rates, panes[i].xdp)...)
	}
	require.NotEmpty(t, all)
	for a := range all {
		ra := all[a].Rect()
		assert.True(t, ra.Within(canvas), "%s: %q leaves the canvas", what, all[a].S)
		for b := a + 1; b < len(all); b++ {
			if ra.Overlaps(all[b].Rect()) {
				t.Errorf("%s: %s %q at %+v overlaps %s %q at %+v", what, all[a].View, all[a].S, ra, all[b].View, all[b].S, all[b].Rect())
			}
		}
		if n := all[a].Name; n != "" {
			_, ok := vocab.Lookup(n)
			assert.True(t, ok, "%s: %q names %s, which engine/vocab does not know", what, all[a].S, n)
		}
	}
}

// TestLabelsNeverOverlap lays the canvas out at the sizes the page gives
// it (1280x720, 800 px wide, compare mode in both) and at every width
// from 640 to 1900, for the teaching preset, a 1024-entry ring, XDP and
// several CPUs, and checks that no two texts overlap and every view and
// its legend is there.
func TestLabelsNeverOverlap(t *testing.T) {
	worlds := map[string]*paneWorld{
		"default":           runPane(t, "default", 400_000),
		"r2-mtu9000-after":  runPane(t, "r2-mtu9000-after", 400_000),
		"cpumap":            runPane(t, "cpumap", 400_000),
		"r4-page-alloc-2fl": runPane(t, "r4-page-alloc-2flows", 400_000),
	}
	pairs := [][2]string{{"default", "r2-mtu9000-after"}, {"cpumap", "default"}, {"r4-page-alloc-2fl", "r2-mtu9000-after"}}
	ncpu := 0
	for _, p := range worlds {
		ncpu = max(ncpu, len(p.snap.CPUs))
	}
	type size struct {
		w, h  float64
		panes int
		want  Form
	}
	sizes := []size{
		{frame1280W, frame1280H, 1, FormGrid},
		{frame800W, frame800H, 1, FormStack},
		{frame1280W, frame1280H, 2, FormColumns},
		{frame800W, frame800H, 2, FormRows},
	}
	for w := 640.0; w <= 1900; w += 63 {
		sizes = append(sizes, size{w, 560, 1, ""}, size{w, 560, 2, ""})
	}
	for _, sz := range sizes {
		for _, pair := range pairs {
			l := NewLayout(sz.w, sz.h, sz.panes, ncpu, false)
			if sz.want != "" {
				require.Equal(t, sz.want, l.Form, "%vx%v, %d panes", sz.w, sz.h, sz.panes)
			}
			// The page gives the canvas the height the layout wants.
			if l.WantH > sz.h {
				l = NewLayout(sz.w, l.WantH, sz.panes, ncpu, false)
			}
			panes := []*paneWorld{worlds[pair[0]], worlds[pair[1]]}[:sz.panes]
			checkLayout(t, &l, panes, fmt.Sprintf("%s %vx%v, %d panes (%s, %s)", l.Form, sz.w, l.H, sz.panes, pair[0], pair[1]))
			for _, rv := range []RingView{{Mode: RingLinear}, {Mode: RingCircle}, {Mode: RingLinear, Slots: 8, From: 1000, Fixed: true}} {
				l.Ring = rv
				checkLayout(t, &l, panes, fmt.Sprintf("%s %vx%v, %d panes, ring %+v", l.Form, sz.w, l.H, sz.panes, rv))
			}
		}
	}
}

// TestGridFitsA1280Window: at 1280x720 the page's frame is 898x560, and
// the grid needs no more (with up to two CPUs).
func TestGridFitsA1280Window(t *testing.T) {
	for ncpu := 1; ncpu <= 2; ncpu++ {
		l := NewLayout(frame1280W, frame1280H, 1, ncpu, false)
		assert.Equal(t, FormGrid, l.Form)
		assert.LessOrEqual(t, l.WantH, float64(frame1280H), "%d CPUs", ncpu)
	}
	// Narrower, the views stack and want more height than a window has.
	l := NewLayout(frame800W, frame800H, 1, 2, false)
	assert.Equal(t, FormStack, l.Form)
	assert.Greater(t, l.WantH, float64(frame800H))
	p := l.Panes[0]
	assert.Less(t, p.Ring.Y, p.Flow.Y, "stacked: the ring over the flow")
	assert.Less(t, p.Flow.Y, p.CPUs.Y)
	assert.Less(t, p.CPUs.Y, p.Pages.Y)
	assert.Less(t, p.Pages.Y, p.Rates.Y)
	assert.InDelta(t, frame800W-2*gap, p.Flow.W, 1, "stacked: each view takes the width")
}

// TestRing1024IsReadable: a 1024-entry ring (the R2 presets) is drawn as
// lines whose slots are at least MinSlotPx wide, with slot indices under
// them, wherever it is laid out; zooming in writes the heads on the
// slots, zooming out never goes below MinSlotPx, and a fixed window
// starts where it was put.
func TestRing1024IsReadable(t *testing.T) {
	p := runPane(t, "r2-mtu9000-after", 400_000)
	q := &p.snap.Queue
	require.Equal(t, 1024, q.Size)
	for _, sz := range [][3]float64{{frame1280W, frame1280H, 1}, {frame800W, 1300, 1}, {frame1280W, 1200, 2}, {frame800W, 2600, 2}} {
		l := NewLayout(sz[0], sz[1], int(sz[2]), 2, true)
		for pane := range l.Panes {
			pl := &l.Panes[pane]
			sh := pl.RingShape(q, RingView{})
			require.True(t, sh.Linear, "%v: auto draws 1024 entries as lines", sz)
			g := sh.Line
			assert.GreaterOrEqual(t, g.SlotW, float64(autoSlotPx), "%v: slots on screen", sz)
			assert.GreaterOrEqual(t, g.N, 32, "%v: the window shows a good part of the ring", sz)
			idx := 0
			for _, tx := range pl.ringTexts(nil, q, 1, RingView{}) {
				if strings.HasPrefix(tx.Help, "slot index") {
					idx++
				}
			}
			assert.GreaterOrEqual(t, idx, 4, "%v: indices are written under the slots", sz)
			// The driver's next used slot is in the window.
			_, in := g.Pos(int(q.LastUsed) % q.Size)
			assert.True(t, in, "%v: the window follows last_used", sz)

			// Zoomed in as far as it goes, every live head in the window is
			// written on its slot, four digits included (a 1024-entry
			// ring's heads go to 1023).
			in8 := RingView{Slots: MinWindow}
			zoomed := pl.RingShape(q, in8).Line
			assert.Equal(t, MinWindow, zoomed.N)
			live := 0
			for k := 0; k < zoomed.N; k++ {
				s := (zoomed.From + k) % zoomed.Size
				if q.AvailLive(s) {
					live++
				}
				if q.UsedLive(s) {
					live++
				}
			}
			heads := 0
			for _, tx := range pl.ringTexts(nil, q, 1, in8) {
				if tx.Tone == ToneOnSlot {
					heads++
				}
			}
			require.Positive(t, live, "%v: the window following last_used holds live entries", sz)
			assert.Equal(t, live, heads, "%v: zoomed in, the heads are written on the slots", sz)
			out := pl.RingShape(q, RingView{Slots: 4096}).Line
			assert.GreaterOrEqual(t, out.SlotW, float64(MinSlotPx), "%v: zoomed out as far as it goes", sz)
			assert.Greater(t, out.N, g.N, "%v: zooming out shows more", sz)
			fixed := pl.RingShape(q, RingView{Slots: 64, From: 1000, Fixed: true}).Line
			assert.Equal(t, 1000, fixed.From)
			_, in = fixed.Pos(3)
			assert.True(t, in, "a window from 1000 wraps past the ring's end")
		}
	}
	// A 16-entry ring stays a circle, unless asked.
	d := runPane(t, "default", 100_000)
	l := NewLayout(frame1280W, frame1280H, 1, 1, false)
	assert.False(t, l.Panes[0].RingShape(&d.snap.Queue, RingView{}).Linear)
	assert.True(t, l.Panes[0].RingShape(&d.snap.Queue, RingView{Mode: RingLinear}).Linear)
	assert.False(t, l.Panes[0].RingShape(q, RingView{Mode: RingCircle}).Linear, "a circle when asked, even of 1024")
}

func TestLayoutHitTestFindsWhatWhereReports(t *testing.T) {
	all := []*Snapshot{&runPane(t, "default", 200_000).snap, &runPane(t, "xdp-drop", 200_000).snap, &runPane(t, "r2-mtu9000-after", 200_000).snap}
	for _, panes := range []int{1, 2} {
		for _, size := range [][2]float64{{1040, 700}, {1400, 900}, {800, 1300}, {frame1280W, frame1280H}} {
			for _, rv := range []RingView{{}, {Mode: RingLinear}, {Mode: RingLinear, Slots: 8, From: 5, Fixed: true}} {
				for first := 0; first+panes <= len(all); first++ {
					l := NewLayout(size[0], size[1], panes, 2, false)
					l.Ring = rv
					snaps := all[first : first+panes]
					for pane := 0; pane < panes; pane++ {
						q := &snaps[pane].Queue
						n := q.Size
						slots := []int{0, n / 2, n - 1, 1, n - 2}
						if sh := l.Panes[pane].RingShape(q, rv); sh.Linear {
							g := sh.Line
							slots = []int{g.From, (g.From + g.N/2) % n, (g.From + g.N - 1) % n, (g.From + 1) % n, (g.From + 2) % n}
							_, _, ok := l.Where(Target{KindDesc, pane, (g.From + g.N) % n}, snaps)
							assert.Equal(t, g.N == n, ok, "a slot past the window is not drawn")
						}
						for _, tg := range []Target{
							{KindDesc, pane, slots[0]}, {KindDesc, pane, slots[1]}, {KindDesc, pane, slots[2]},
							{KindAvail, pane, slots[3]}, {KindUsed, pane, slots[4]},
							{KindPage, pane, 0}, {KindPage, pane, 17}, {KindCPU, pane, 0},
						} {
							x, y, ok := l.Where(tg, snaps)
							require.True(t, ok, "%+v at %v, %d panes, ring %+v", tg, size, panes, rv)
							assert.Equal(t, tg, l.HitTest(x, y, snaps), "%+v at %v, %d panes, ring %+v", tg, size, panes, rv)
						}
					}
					assert.Equal(t, Target{}, l.HitTest(1, 1, snaps), "the header holds nothing")
				}
			}
		}
	}
}

func TestFormatRateIsShort(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0/s"}, {-3, "0/s"}, {12.4, "12/s"}, {999, "999/s"}, {999.6, "1.00k/s"}, {50_412, "50.4k/s"}, {889_800, "890k/s"},
		{2_561_000, "2.56M/s"}, {12_345_678, "12.3M/s"}, {999_999_999, "1.00G/s"}} {
		got := FormatRate(tc.v)
		assert.Equal(t, tc.want, got, "%v", tc.v)
		assert.LessOrEqual(t, len(got), flowRateLen, "%v", tc.v)
	}
}
