package view

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// floodScenario is tutorial 10's step 5: a UDP flood of 64-byte
// datagrams at 6 Mpps from a vDPA device into one CPU, kernel 6.4, where
// the application reads them: NET_RX goes to ksoftirqd/0, which takes
// turns with app/0 under the scheduler.
func floodScenario(t *testing.T) scenario.Scenario {
	t.Helper()
	sc, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	for _, kv := range [][2]string{
		{"kernel", `"6.4"`}, {"ring_size", "256"}, {"device.kind", `"vdpa"`},
		{"consumer", `{"cpu": 0, "context": "process", "cost_ns": 300}`},
		{"traffic", `{"kind": "udp_stream", "proto": "udp", "flows": 1, "rate_pps": 6000000, "dst_port": 9, "size": 64}`},
	} {
		sc, err = scenario.SetText(sc, kv[0], kv[1])
		require.NoError(t, err, kv[0])
	}
	require.Equal(t, 1, sc.CPUs)
	return sc
}

// oneCPUScenario is the R2 preset on one CPU: interrupts, NET_RX at
// their exit and the application, on CPU 0.
func oneCPUScenario(t *testing.T) scenario.Scenario {
	t.Helper()
	sc, err := scenario.LookupPreset("r2-mtu1500-before")
	require.NoError(t, err)
	sc.CPUs, sc.Consumer.CPU = 1, 0
	return sc
}

func worldOf(t *testing.T, sc scenario.Scenario, ns int64) *engine.World {
	t.Helper()
	w, err := engine.New(sc)
	require.NoError(t, err)
	require.NoError(t, w.RunUntil(sim.Time(ns)))
	return w
}

// checkLane checks what every lane must hold: the window ends now and
// is LaneWindowNs long, every slice lies in it and is not empty, a slice
// is at least as long as what the window shows of it, a task's slice
// names its task, interrupt work names none, and the lane holds each of
// the engine's slices that end in the window.
func checkLane(t *testing.T, w *engine.World, s *Snapshot, i int) {
	t.Helper()
	v := &s.CPUs[i]
	assert.Equal(t, s.Now-LaneWindowNs, v.LaneFrom)
	for _, l := range v.Lane {
		assert.GreaterOrEqual(t, l.Start, v.LaneFrom, "%+v starts in the window", l)
		assert.LessOrEqual(t, l.End, s.Now, "%+v ends by now", l)
		assert.Less(t, l.Start, l.End, "%+v is not empty", l)
		assert.GreaterOrEqual(t, l.Len, l.End-l.Start, "%+v", l)
		require.Less(t, l.Kind, NumLaneKinds)
		if l.Kind.Interrupt() {
			assert.Empty(t, l.Task, "%+v: interrupt work is no task's", l)
			assert.Equal(t, l.Kind, l.Of)
		} else {
			assert.NotEmpty(t, l.Task, "%+v names its task", l)
		}
		if l.Kind == LaneKsoftirqd || (l.Kind == LaneWait && l.Of == LaneKsoftirqd) {
			assert.Equal(t, fmt.Sprintf("ksoftirqd/%d", i), l.Task)
		}
	}
	recorded := 0
	for _, x := range w.Sim.CPU(i).Slices(sim.Time(max(v.LaneFrom, 0)), nil) {
		if int64(x.Start) < s.Now {
			recorded++
		}
	}
	ongoing := 0
	for id := 0; id < w.Sim.NumTasks(); id++ {
		if tk := w.Sim.Task(sim.TaskID(id)); tk.CPU == i && tk.State() == sim.TaskRunnable && int64(tk.WaitingSince()) < s.Now {
			ongoing++
		}
	}
	assert.Len(t, v.Lane, recorded+ongoing, "the engine's slices in the window, and the waits going on")
}

// kinds counts a lane's slices by kind and task.
func kinds(v *CPUView) map[string]int {
	m := map[string]int{}
	for _, l := range v.Lane {
		m[LaneKindNames[l.Kind]+" "+l.Task]++
	}
	return m
}

// TestLaneShowsWhoRanWhen: the snapshot carries each CPU's last 200 µs,
// clipped to the window: under a UDP flood on one CPU, ksoftirqd/0's
// NET_RX with bottom halves off, app/0's reads and the waits of each
// while the other runs; on the R2 preset on one CPU, hard interrupts,
// NET_RX at their exit, and app/0.
func TestLaneShowsWhoRanWhen(t *testing.T) {
	w := worldOf(t, floodScenario(t), 5_000_000)
	var s Snapshot
	s.Fill(w, 0)
	require.Len(t, s.CPUs, 1)
	checkLane(t, w, &s, 0)
	got := kinds(&s.CPUs[0])
	t.Logf("flood, 5 ms: %v", got)
	assert.Positive(t, got["ksoftirqd ksoftirqd/0"], "ksoftirqd runs NET_RX")
	assert.Positive(t, got["task app/0"], "the reader runs")
	assert.Positive(t, got["wait ksoftirqd/0"], "ksoftirqd waits while the reader runs")
	assert.Positive(t, got["wait app/0"], "the reader waits while ksoftirqd runs")
	for _, l := range s.CPUs[0].Lane {
		if l.Kind == LaneKsoftirqd {
			assert.True(t, l.BH, "ksoftirqd runs __do_softirq with bottom halves off")
		}
	}

	w = worldOf(t, oneCPUScenario(t), 5_000_000)
	s.Fill(w, 0)
	checkLane(t, w, &s, 0)
	got = kinds(&s.CPUs[0])
	t.Logf("r2-mtu1500-before on one CPU, 5 ms: %v", got)
	assert.Positive(t, got["irq "], "the device's interrupts")
	assert.Positive(t, got["softirq "], "NET_RX at their exit")
	assert.Positive(t, got["task app/0"])

	// Two CPUs: each lane is its own CPU's.
	w = worldAt(t, "r2-mtu1500-before", 5_000_000)
	s.Fill(w, 0)
	require.Len(t, s.CPUs, 2)
	for i := range s.CPUs {
		checkLane(t, w, &s, i)
	}
	assert.Positive(t, kinds(&s.CPUs[1])["task app/1"], "the application reads on CPU 1")
	assert.Zero(t, kinds(&s.CPUs[1])["softirq "], "NET_RX runs on CPU 0")
}

// TestLaneClipsToTheWindow: a slice that began before the window is cut
// at its start and keeps its length, one that the CPU's cursor ran past
// now is cut at now, and a wait going on (recorded only once its task
// runs) is drawn up to now.
func TestLaneClipsToTheWindow(t *testing.T) {
	w := worldOf(t, floodScenario(t), 0)
	app := sim.NoTask
	for id := 0; id < w.Sim.NumTasks(); id++ {
		if w.Sim.Task(sim.TaskID(id)).Name == "app/0" {
			app = sim.TaskID(id)
		}
	}
	require.NotEqual(t, sim.NoTask, app)
	var s Snapshot
	var cutStart, cutEnd, ongoing bool
	for w.Now() < 12_000_000 && !(cutStart && cutEnd && ongoing) {
		require.True(t, w.Step())
		if w.Now() < LaneWindowNs {
			continue
		}
		s.Fill(w, 0)
		v := &s.CPUs[0]
		for _, l := range v.Lane {
			if l.Start == v.LaneFrom && l.Len > l.End-l.Start {
				cutStart = true
			}
		}
		for _, x := range w.Sim.CPU(0).Slices(w.Now(), nil) {
			if x.Start < w.Now() { // runs past now: drawn up to now
				for _, l := range v.Lane {
					if l.Start == int64(max(x.Start, sim.Time(v.LaneFrom))) && l.End == s.Now {
						cutEnd = true
					}
				}
			}
		}
		if tk := w.Sim.Task(app); tk.State() == sim.TaskRunnable && tk.WaitingSince() < w.Now() {
			last := v.Lane[len(v.Lane)-1]
			assert.Equal(t, LaneSlice{Start: max(int64(tk.WaitingSince()), v.LaneFrom), End: s.Now, Len: s.Now - int64(tk.WaitingSince()),
				Kind: LaneWait, Of: LaneTask, Task: "app/0"}, last)
			ongoing = true
		}
		checkLane(t, w, &s, 0)
	}
	assert.True(t, cutStart, "a slice begun before the window")
	assert.True(t, cutEnd, "a slice that runs past now")
	assert.True(t, ongoing, "app/0 waiting now")
}

// TestLaneWindowIsKept: the engine keeps enough slices for the window:
// on every preset, each CPU's record reaches back past the window's
// start (or holds everything since the start).
func TestLaneWindowIsKept(t *testing.T) {
	full, least, leastAt := 0, int64(1<<62), ""
	for _, name := range scenario.PresetNames() {
		w := worldAt(t, name, 3_000_000)
		for i := 0; i < w.Sim.NumCPU(); i++ {
			all := w.Sim.CPU(i).Slices(0, nil)
			if len(all) < sim.LogSlices {
				continue
			}
			full++
			if span := int64(w.Now() - all[0].Start); span < least {
				least, leastAt = span, fmt.Sprintf("%s CPU %d", name, i)
			}
			assert.LessOrEqual(t, int64(all[0].Start), int64(w.Now())-LaneWindowNs,
				"%s: CPU %d keeps %d slices, from %d ns", name, i, len(all), all[0].Start)
		}
	}
	t.Logf("%d CPUs kept %d slices; the shortest record, %s's, spans %s", full, sim.LogSlices, leastAt, FormatNs(least))
}

// TestFillAllocatesNothing: refreshing a snapshot of a running world
// allocates nothing once its lanes have held their most slices.
func TestFillAllocatesNothing(t *testing.T) {
	for _, sc := range []scenario.Scenario{floodScenario(t), oneCPUScenario(t)} {
		w := worldOf(t, sc, 0)
		var s Snapshot
		step := func() {
			require.NoError(t, w.RunFor(10_000))
			s.Fill(w, 0)
		}
		for i := 0; i < 300; i++ { // 3 ms
			step()
		}
		// Fill alone, between runs of the world (which allocate nothing in
		// steady state either: engine/alloc_test.go).
		total := 0.0
		for i := 0; i < 200; i++ {
			require.NoError(t, w.RunFor(10_000))
			total += testing.AllocsPerRun(1, func() { s.Fill(w, 0) })
		}
		assert.Zero(t, total, "%s: allocations in 200 fills", sc.Name)
	}
}

// TestSliceAtFindsWhatIsDrawn: the hit test finds the slice drawn under
// the pointer: interrupt work over the task it preempted, the task where
// no interrupt is, a wait in the thin row under them; and the tip says
// what it is.
func TestSliceAtFindsWhatIsDrawn(t *testing.T) {
	for _, sc := range []scenario.Scenario{floodScenario(t), oneCPUScenario(t)} {
		w := worldOf(t, sc, 5_000_000)
		var s Snapshot
		s.Fill(w, 0)
		snaps := []*Snapshot{&s}
		for _, size := range [][2]float64{{frame1280W, frame1280H}, {frame800W, 1300}} {
			l := NewLayout(size[0], size[1], 1, 1, false)
			g := CPULaneGeom(l.Panes[0].CPULane(0, 1))
			require.Positive(t, g.Timeline.W, "%v: the lane has a timeline", size)
			v := &s.CPUs[0]
			found := map[LaneKind]bool{}
			covered := func(x float64) bool { // an interrupt is drawn near x
				for k := range v.Lane {
					if v.Lane[k].Kind.Interrupt() {
						x0, w := g.Span(&v.Lane[k], v.LaneFrom)
						if x >= x0-laneHitSlack-1 && x <= x0+w+laneHitSlack+1 {
							return true
						}
					}
				}
				return false
			}
			for k := range v.Lane {
				sl := &v.Lane[k]
				x0, wd := g.Span(sl, v.LaneFrom)
				y := g.Run.Y + g.Run.H/2
				if sl.Kind == LaneWait {
					y = g.Wait.Y + 1
				}
				for x := x0 + 0.5; x < x0+wd; x++ {
					if wd < 3 || (sl.Kind == LaneTask || sl.Kind == LaneKsoftirqd) && covered(x) {
						continue
					}
					hit, ok := l.SliceAt(x, y, snaps)
					require.True(t, ok, "%v: %+v at (%.1f, %.1f)", size, *sl, x, y)
					if sl.Kind == LaneWait {
						assert.Equal(t, LaneWait, hit.Slice.Kind)
					} else {
						assert.Equal(t, *sl, hit.Slice, "%v: at (%.1f, %.1f)", size, x, y)
					}
					found[sl.Kind] = true
					break
				}
			}
			t.Logf("%s at %v: found %v", sc.Name, size, found)
			if sc.Name == oneCPUScenario(t).Name {
				assert.True(t, found[LaneSoftirq] && found[LaneTask], "%v", found)
			} else {
				assert.True(t, found[LaneKsoftirqd] && found[LaneTask] && found[LaneWait], "%v", found)
			}
			_, ok := l.SliceAt(g.Bar.X+1, g.Bar.Y+1, snaps)
			assert.False(t, ok, "the bar is no slice")
			assert.Equal(t, Target{Kind: KindCPU}, l.HitTest(g.Run.X+g.Run.W/2, g.Run.Y+1, snaps), "a click on the lane inspects the CPU")
		}
	}
}

func TestLaneSliceDescribe(t *testing.T) {
	const now = 5_000_000
	for _, tc := range []struct {
		l    LaneSlice
		want string
	}{
		{LaneSlice{Start: now - 130_000, End: now - 128_500, Len: 1500, Kind: LaneIRQ}, "hard interrupt 1.5 µs, 128.5 µs ago"},
		{LaneSlice{Start: now - 120_000, End: now - 99_900, Len: 20_100, Kind: LaneSoftirq}, "softirq (NET_RX at an interrupt's exit) 20.1 µs, 99.9 µs ago"},
		{LaneSlice{Start: now - 40_000, End: now - 26_240, Len: 13_760, Kind: LaneKsoftirqd, BH: true, Task: "ksoftirqd/0"}, "ksoftirqd/0 ran 13.76 µs (NET_RX in a thread), 26.24 µs ago"},
		{LaneSlice{Start: now - 12_000, End: now, Len: 12_000, Kind: LaneTask, Task: "app/1"}, "app/1 ran 12 µs, until now"},
		{LaneSlice{Start: now - 30_000, End: now - 20_000, Len: 10_000, Kind: LaneTask, BH: true, Task: "cpumap/1"}, "cpumap/1 ran 10 µs (bottom halves off), 20 µs ago"},
		{LaneSlice{Start: now - LaneWindowNs, End: now, Len: 1_200_000, Kind: LaneWait, Of: LaneKsoftirqd, Task: "ksoftirqd/0"}, "ksoftirqd/0 waited 1.2 ms (runnable, not running), until now"},
	} {
		assert.Equal(t, tc.want, tc.l.Describe(now))
	}
}

// TestCPULegendIsInTheTitle: the legend's swatches sit in the spaces of
// the CPU view's title before each kind's name, inside the view, apart
// from every other text; a narrow view keeps the entries its title does.
func TestCPULegendIsInTheTitle(t *testing.T) {
	p := runPane(t, "default", 100_000)
	for w := 400.0; w <= 1900; w += 50 {
		for _, panes := range []int{1, 2} {
			l := NewLayout(w, 2000, panes, 1, false)
			pl := &l.Panes[0]
			texts := pl.cpuTexts(nil, &p.snap, &p.rates)
			require.NotEmpty(t, texts)
			title := texts[0]
			e, n := pl.CPULegend()
			if TextWidth(cpuTitle) <= pl.CPUs.W {
				assert.Equal(t, int(NumLaneKinds), n, "%v: the whole legend fits", w)
			}
			for _, en := range e[:n] {
				assert.True(t, en.Swatch.Within(title.Rect()), "%v: %s's swatch in the title", w, LaneKindNames[en.Kind])
				assert.True(t, en.Swatch.Within(pl.CPUs), "%v: in the view", w)
				for _, o := range texts[1:] {
					assert.False(t, en.Swatch.Overlaps(o.Rect()), "%v: %s's swatch over %q", w, LaneKindNames[en.Kind], o.S)
				}
				// The name after the swatch is written in the title.
				s := []rune(title.S) // a glyph a rune
				off := int((en.Swatch.X + en.Swatch.W + 2 - title.X) / GlyphAdv)
				name := LaneKindNames[en.Kind]
				require.LessOrEqual(t, off+len(name), len(s), "%v", w)
				assert.Equal(t, name, string(s[off:off+len(name)]), "%v", w)
				assert.Equal(t, "   ", string(s[off-3:off]), "%v: the swatch is drawn in blanks", w)
			}
		}
	}
}

// TestLabelsNeverOverlapWithLanes is TestLabelsNeverOverlap for worlds
// whose lanes are busy with tasks: the flood and R2 on one CPU.
func TestLabelsNeverOverlapWithLanes(t *testing.T) {
	flood := runPaneOf(t, floodScenario(t), 5_000_000)
	one := runPaneOf(t, oneCPUScenario(t), 5_000_000)
	for w := 640.0; w <= 1900; w += 63 {
		for _, panes := range []int{1, 2} {
			l := NewLayout(w, 560, panes, 1, false)
			if l.WantH > 560 {
				l = NewLayout(w, l.WantH, panes, 1, false)
			}
			checkLayout(t, &l, []*paneWorld{flood, one}[:panes], fmt.Sprintf("%s %vx%v, %d panes", l.Form, w, l.H, panes))
		}
	}
}

// runPaneOf is runPane for a scenario.
func runPaneOf(t *testing.T, sc scenario.Scenario, ns int64) *paneWorld {
	t.Helper()
	w := worldOf(t, sc, 0)
	p := &paneWorld{xdp: w.Scenario.XDP != nil}
	for i := int64(0); i < 60; i++ {
		require.NoError(t, w.RunFor(sim.Duration(ns/60)))
		p.rates.Sample(w)
	}
	p.snap.Fill(w, 0)
	return p
}
