package view

import (
	"strconv"
	"strings"

	"ringlab/engine"
	"ringlab/engine/sim"
)

// Who runs when: each CPU's lane draws the last LaneWindowNs of its
// record (sim.CPU.Slices), as `perf sched timehist` or KernelShark would:
// the tasks' chunks, the interrupt work over them, and under them the
// waits of tasks runnable and not running. Idle is left blank.

// LaneWindowNs is the span of simulated time a CPU lane draws, ending
// now. A NAPI poll of one queue takes 5 to 30 µs in the presets, the
// application's recvmsg chunk as much, a hard interrupt's entry 1.5 µs,
// and a UDP flood that hands NET_RX to ksoftirqd switches between it and
// the reader every 40 µs or so: 200 µs holds several of each. Over the
// 230 px of a lane's timeline in the grid (the canvas of a 1280x720
// window) to the 540 px of a stack 800 px wide, that is 0.9 to 0.4 µs a
// pixel, so a hard interrupt is still a pixel or two wide. A CPU keeps
// sim.LogSlices slices, which span more than 500 µs on the busiest CPU
// of any preset (TestLaneWindowIsKept).
const LaneWindowNs = 200_000

// LaneTickNs is the spacing of the faint marks across a lane's timeline.
const LaneTickNs = 50_000

// LaneKind is what a slice of a lane is, for its colour.
type LaneKind uint8

// The kinds of slices.
const (
	// LaneIRQ: a hard interrupt handler (sim.CtxIRQ).
	LaneIRQ LaneKind = iota
	// LaneSoftirq: a softirq at an interrupt's exit or at
	// local_bh_enable, NET_RX on top of whatever ran (sim.CtxSoftirq).
	LaneSoftirq
	// LaneKsoftirqd: a chunk of ksoftirqd/N: NET_RX in a thread, under
	// the scheduler.
	LaneKsoftirqd
	// LaneTask: a chunk of another task: the application reading a
	// socket (app/N), the cpumap kthread (cpumap/N).
	LaneTask
	// LaneWait: a task runnable and not running (sim.CtxWait).
	LaneWait
	// LaneSteal: the host ran its vhost worker on the vCPU's host CPU
	// and the guest ran nothing (sim.CtxSteal; scenario host.vhost).
	LaneSteal
	NumLaneKinds
)

// LaneKindNames name the kinds, as the CPU view's legend writes them.
var LaneKindNames = [NumLaneKinds]string{
	LaneIRQ:       "irq",
	LaneSoftirq:   "softirq",
	LaneKsoftirqd: "ksoftirqd",
	LaneTask:      "task",
	LaneWait:      "wait",
	LaneSteal:     "steal",
}

// Interrupt reports whether k is interrupt work, drawn over the task it
// preempted.
func (k LaneKind) Interrupt() bool { return k == LaneIRQ || k == LaneSoftirq }

// Over reports whether k is drawn over the tasks' chunks: interrupt work,
// and the host's steal, which stops whatever the guest was running.
func (k LaneKind) Over() bool { return k.Interrupt() || k == LaneSteal }

// LaneSlice is one slice of a CPU's lane.
type LaneSlice struct {
	// Start and End are simulated ns, clipped to the window
	// [CPUView.LaneFrom, Snapshot.Now].
	Start, End int64
	// Len is the slice's length up to now, before the window clipped its
	// start: a task's chunk includes the interrupt work that preempted
	// it, as the chunk's slice is stretched over it.
	Len  int64
	Kind LaneKind
	// Of is the kind of the task a wait is of (LaneKsoftirqd or
	// LaneTask), for its colour; for the other slices, Kind.
	Of LaneKind
	// BH: a task's chunk run with bottom halves disabled (ksoftirqd's
	// __do_softirq, the cpumap kthread's batch: sim.CtxTaskBH).
	BH bool
	// Task names the task ("app/0", "ksoftirqd/0", "cpumap/1"); "" for
	// interrupt work.
	Task string
}

// fillLane reads CPU c's slices of the window ending at now into v.Lane,
// with the waits still going on; buf is scratch for the engine's slices.
// It allocates only when the lane holds more slices than before.
func (v *CPUView) fillLane(w *engine.World, c *sim.CPU, now sim.Time, buf []sim.Slice) []sim.Slice {
	from := now - LaneWindowNs
	v.LaneFrom = int64(from)
	v.Lane = v.Lane[:0]
	buf = c.Slices(max(from, 0), buf[:0])
	ksoft := w.Net.Ksoftirqd(c.ID)
	ntask := sim.TaskID(w.Sim.NumTasks())
	for _, x := range buf {
		if x.Start >= now {
			continue // work the CPU's cursor ran ahead to
		}
		l := LaneSlice{Start: int64(max(x.Start, from)), End: int64(min(x.End, now)), Len: int64(min(x.End, now) - x.Start)}
		if x.Task >= 0 && x.Task < ntask {
			l.Task = w.Sim.Task(x.Task).Name
		}
		taskKind := LaneTask
		if x.Task == ksoft {
			taskKind = LaneKsoftirqd
		}
		switch x.Ctx {
		case sim.CtxIRQ:
			l.Kind = LaneIRQ
		case sim.CtxSoftirq:
			l.Kind = LaneSoftirq
		case sim.CtxWait:
			l.Kind = LaneWait
		case sim.CtxSteal:
			l.Kind = LaneSteal
		default:
			l.Kind, l.BH = taskKind, x.Ctx == sim.CtxTaskBH
		}
		l.Of = l.Kind
		if l.Kind == LaneWait {
			l.Of = taskKind
		}
		v.Lane = append(v.Lane, l)
	}
	// A wait is recorded when the task begins to run: the tasks runnable
	// now wait still, since they last became runnable.
	for id := sim.TaskID(0); id < ntask; id++ {
		t := w.Sim.Task(id)
		if t.CPU != c.ID || t.State() != sim.TaskRunnable || t.WaitingSince() >= now {
			continue
		}
		of := LaneTask
		if id == ksoft {
			of = LaneKsoftirqd
		}
		since := t.WaitingSince()
		v.Lane = append(v.Lane, LaneSlice{Start: int64(max(since, from)), End: int64(now), Len: int64(now - since),
			Kind: LaneWait, Of: of, Task: t.Name})
	}
	return buf
}

// Describe says what the slice is, for the tip of the pointer over it:
// "softirq (NET_RX at an interrupt's exit) 25.3 µs, 120 µs ago",
// "app/0 ran 29.9 µs, until now", "ksoftirqd/0 waited 1.2 ms, 10 µs ago".
// now is the snapshot's time.
func (l *LaneSlice) Describe(now int64) string {
	var s string
	d := FormatNs(l.Len)
	switch l.Kind {
	case LaneIRQ:
		s = "hard interrupt " + d
	case LaneSoftirq:
		s = "softirq (NET_RX at an interrupt's exit) " + d
	case LaneKsoftirqd:
		s = l.Task + " ran " + d + " (NET_RX in a thread)"
	case LaneTask:
		s = l.Task + " ran " + d
		if l.BH {
			s += " (bottom halves off)"
		}
	case LaneWait:
		s = l.Task + " waited " + d + " (runnable, not running)"
	case LaneSteal:
		s = "stolen " + d + " (the host ran its vhost worker on this vCPU's host CPU)"
	}
	if l.End >= now {
		return s + ", until now"
	}
	return s + ", " + FormatNs(now-l.End) + " ago"
}

// LaneGeom is where a CPU lane draws, left to right: the CPU's name, the
// busy-share bar with the share written on it, the work the CPU began
// last, and the timeline of the last LaneWindowNs, now at its right edge.
// The timeline's run row holds the tasks' chunks with the interrupt work
// over them; the thin wait row under it, the waits.
type LaneGeom struct {
	Lane     Rect
	Bar      Rect
	Activity Rect // where the work begun last is written
	Timeline Rect // the run and wait rows; zero when the lane has no room
	Run      Rect
	Wait     Rect
}

// Lane geometry.
const (
	laneNameW     = 40            // "CPU0" and a gap: where the bar starts
	laneBarW      = 56            // the bar: room for "100%"
	laneActivityW = 15 * GlyphAdv // "next device irq"
	laneGap       = 8             // between the bar, the activity and the timeline
	laneMinTimeW  = 60            // a timeline narrower is not drawn
	laneMinRunH   = 3             // nor one whose run row is lower
	laneWaitH     = 3             // the wait row
	laneHitSlack  = 1.5           // px around a slice that still hit it
	laneWaitSlack = 3             // px above and below the wait row that hit it
)

// CPULaneGeom returns the geometry of a lane drawn in rectangle lane
// (PaneLayout.CPULane).
func CPULaneGeom(lane Rect) LaneGeom {
	g := LaneGeom{Lane: lane}
	inner := max(0, lane.H-4)
	g.Bar = Rect{lane.X + laneNameW, lane.Y + 2, max(0, min(laneBarW, lane.W-laneNameW)), inner}
	ax := g.Bar.X + g.Bar.W + laneGap
	right := lane.X + lane.W
	tx := ax + laneActivityW + laneGap
	if right-tx < laneMinTimeW || inner < laneMinRunH+1+laneWaitH {
		g.Activity = Rect{ax, lane.Y, max(0, right-ax), lane.H}
		return g
	}
	g.Activity = Rect{ax, lane.Y, laneActivityW, lane.H}
	g.Timeline = Rect{tx, lane.Y + 2, right - tx, inner}
	g.Run = Rect{tx, g.Timeline.Y, g.Timeline.W, inner - laneWaitH - 1}
	g.Wait = Rect{tx, g.Timeline.Y + inner - laneWaitH, g.Timeline.W, laneWaitH}
	return g
}

// X is where simulated time t falls on the timeline of the window that
// starts at from (CPUView.LaneFrom).
func (g *LaneGeom) X(t, from int64) float64 {
	return g.Timeline.X + float64(t-from)/LaneWindowNs*g.Timeline.W
}

// Span is where slice l is drawn on the timeline: its left edge and its
// width, at least a pixel.
func (g *LaneGeom) Span(l *LaneSlice, from int64) (x, w float64) {
	x0, x1 := g.X(l.Start, from), g.X(l.End, from)
	return x0, max(1, x1-x0)
}

// LaneHit is the slice of a CPU lane under the pointer.
type LaneHit struct {
	Pane, CPU int
	Slice     LaneSlice
}

// SliceAt finds the slice of a CPU lane drawn at (x, y), in the
// snapshots drawn (one per pane): in the run row the interrupt work drawn
// over a task's chunk, else the chunk; in the wait row (and a few pixels
// around it: it is thin) a wait. A slice a pixel wide is hit a pixel
// around it. HitTest still says KindCPU there: a click inspects the CPU.
func (l *Layout) SliceAt(x, y float64, snaps []*Snapshot) (LaneHit, bool) {
	for i := range l.Panes {
		if i >= len(snaps) || snaps[i] == nil {
			break
		}
		p, s := &l.Panes[i], snaps[i]
		if !p.CPUs.Contains(x, y) {
			continue
		}
		for c := range s.CPUs {
			g := CPULaneGeom(p.CPULane(c, len(s.CPUs)))
			if g.Timeline.W == 0 || !g.Lane.Contains(x, y) {
				continue
			}
			v := &s.CPUs[c]
			k := -1
			switch {
			case y >= g.Run.Y && y < g.Run.Y+g.Run.H:
				if k = v.sliceAt(&g, x, interruptRow); k < 0 {
					k = v.sliceAt(&g, x, taskRow)
				}
			case y >= g.Wait.Y-laneWaitSlack && y < g.Wait.Y+g.Wait.H+laneWaitSlack:
				k = v.sliceAt(&g, x, waitRow)
			}
			if k >= 0 {
				return LaneHit{Pane: i, CPU: c, Slice: v.Lane[k]}, true
			}
		}
	}
	return LaneHit{}, false
}

// The layers of a lane, for the hit test.
const (
	interruptRow = iota // irq, softirq and steal, drawn over the tasks
	taskRow
	waitRow
)

// sliceAt returns the index of the slice of layer row nearest x (within
// laneHitSlack pixels; the last drawn of those at the same distance), or
// -1.
func (v *CPUView) sliceAt(g *LaneGeom, x float64, row int) int {
	best, bestD := -1, laneHitSlack
	for k := len(v.Lane) - 1; k >= 0; k-- {
		l := &v.Lane[k]
		switch {
		case l.Kind == LaneWait:
			if row != waitRow {
				continue
			}
		case l.Kind.Over() != (row == interruptRow) || row == waitRow:
			continue
		}
		x0, w := g.Span(l, v.LaneFrom)
		if d := max(x0-x, x-(x0+w), 0); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// The CPU view's title: the lanes' window and the legend of their
// colours, each kind's name after a space for its swatch. The window is
// written in ms: ASCII, so Fit, which counts bytes, cuts the title where
// TextWidth says it ends.
var (
	cpuTitlePrefix = "CPUs, " + strconv.FormatFloat(LaneWindowNs/1e6, 'f', -1, 64) + " ms:"
	cpuTitle       = func() string {
		s := cpuTitlePrefix
		for _, n := range LaneKindNames {
			s += legendGap + n
		}
		return s
	}()
)

// legendGap comes before each legend entry: its swatch goes there.
const legendGap = "   "

var cpuTitleHelp = "Each CPU's lane: its busy share over the last sample (the bar), the work it began last, " +
	"and who ran when over the last " + FormatNs(LaneWindowNs) + " of simulated time, now at the right: hard interrupts, softirqs " +
	"(NET_RX at an interrupt's exit), ksoftirqd (NET_RX in a thread), tasks (the application app/N, the cpumap " +
	"kthread cpumap/N, darker with bottom halves off); blank is idle. The thin line under a lane is a task " +
	"runnable and not running, in the colour of the task that waits. Steal is time the host ran its vhost " +
	"worker on the vCPU's host CPU (a scenario's host.vhost): the guest ran nothing then."

// LaneLegend is an entry of the CPU view's legend, in its title line: the
// swatch drawn in the space before the kind's name.
type LaneLegend struct {
	Kind   LaneKind
	Swatch Rect
}

// CPULegend returns the legend's entries the title keeps at this width
// (the first n), each with where its swatch goes: a square, or for the
// waits a line as thin as theirs.
func (p *PaneLayout) CPULegend() (e [NumLaneKinds]LaneLegend, n int) {
	r := p.CPUs
	if r.H < SectionTitleH {
		return e, 0
	}
	title := Fit(cpuTitle, r.W)
	s := cpuTitlePrefix
	for k := LaneKind(0); k < NumLaneKinds; k++ {
		s += legendGap
		x := r.X + TextWidth(s) // where the name starts
		s += LaneKindNames[k]
		if !strings.HasPrefix(title, s) {
			break // Fit cut it
		}
		sw := Rect{x - SwatchW + 1, r.Y + 1 + 3, SwatchW - 3, 8}
		if k == LaneWait {
			sw = Rect{sw.X, r.Y + 1 + 6, sw.W, laneWaitH}
		}
		e[n] = LaneLegend{Kind: k, Swatch: sw}
		n++
	}
	return e, n
}
