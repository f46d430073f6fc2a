package engine

import (
	"fmt"
	"strings"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// TraceEvent describes one event of the world: its number, when it fired,
// its handler and argument (a receive queue, a CPU), and what it changed.
type TraceEvent struct {
	Seq     uint64   `json:"seq"`
	At      sim.Time `json:"at_ns"`
	Handler string   `json:"handler"`
	Arg     uint64   `json:"arg"`
	Target  string   `json:"target"`  // what Arg names: "rx0" (a receive queue), "cpu1", or "[Arg]"
	Changes []Change `json:"changes"` // counters in Totals order, ring indices per receive queue, pages per location
	// Say is what the event did, in a sentence (narrate.go).
	Say string `json:"say"`
	// Funcs are the kernel functions it stands for (engine/kernel's
	// table): its handler's, then those that count what it changed.
	Funcs []string `json:"funcs"`
}

// Change is a figure an event moved: a counter, a receive ring's index
// (rq0.avail_idx, rq0.last_avail, rq0.used_idx, rq0.last_used,
// rq0.num_free) or the pages in a location (pages.skb), each under its
// engine/vocab name.
type Change struct {
	Name string `json:"name"`
	From int64  `json:"from"`
	To   int64  `json:"to"`
}

// String is the event on one line, for a transcript:
// "#12 16.352us napi poll rx0: rx_packets 0->1, pages.skb 0->1".
func (e TraceEvent) String() string { return e.Head() + ": " + e.ChangeList() }

// Head is the event without its changes: "#12 16.352us napi poll rx0".
func (e TraceEvent) Head() string {
	return fmt.Sprintf("#%d %.3fus %s %s", e.Seq, float64(e.At)/1e3, e.Handler, e.Target)
}

// ChangeList is what the event changed, "rx_packets 0->1, pages.skb 0->1",
// or "nothing counted".
func (e TraceEvent) ChangeList() string {
	if len(e.Changes) == 0 {
		return "nothing counted"
	}
	var b strings.Builder
	for i, c := range e.Changes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d->%d", c.Name, c.From, c.To)
	}
	return b.String()
}

// Trace runs up to n events, one at a time, and calls fn with each one's
// description. It stops early when the world runs out of events or stops
// (the error says why). It reads every counter around each event, so it is
// for transcripts and teaching, not for speed.
func (w *World) Trace(n int, fn func(TraceEvent)) error {
	before := w.traceFigures(nil)
	var after []Change
	for range n {
		var ev TraceEvent
		var ok bool
		ev, after, ok = w.stepTraced(before, after[:0])
		if !ok {
			break
		}
		fn(ev)
		before, after = after, before
	}
	return w.Err()
}

// StepTraced runs one event like Step and describes it; ok is false when
// there was none or the world stopped.
func (w *World) StepTraced() (ev TraceEvent, ok bool) {
	ev, _, ok = w.stepTraced(w.traceFigures(nil), nil)
	return ev, ok
}

// stepTraced runs one event, given the figures before it, and returns its
// description and the figures after it (appended to after).
func (w *World) stepTraced(before, after []Change) (TraceEvent, []Change, bool) {
	k, arg, ok := w.Sim.Queue.PeekKind()
	if !ok || !w.Step() {
		return TraceEvent{}, after, false
	}
	after = w.traceFigures(after)
	q := w.Sim.Queue
	ev := TraceEvent{Seq: q.Fired(), At: w.Now(), Handler: q.KindName(k), Arg: arg, Target: q.ArgName(k, arg)}
	// The figures line up: which there are depends only on how the world
	// was built (its queues, pools, cpumap, devmap), never on an event.
	d := deltas{}
	for i, f := range after {
		if f.To != before[i].To {
			ev.Changes = append(ev.Changes, Change{f.Name, before[i].To, f.To})
			d[f.Name] = f.To - before[i].To
		}
	}
	ev.Funcs = w.funcsOf(&ev, q.Cites(k), d)
	ev.Say = w.narrate(&ev, d)
	return ev, after, true
}

// traceFigures appends every total, each receive ring's indices and the
// page count of every location to out, each as a Change with only To set.
func (w *World) traceFigures(out []Change) []Change {
	for _, c := range w.Totals() {
		out = append(out, Change{Name: c.Name, To: int64(c.Value)})
	}
	for i, rq := range w.Driver.RQ {
		q := rq.VQ
		for _, f := range [...]struct {
			name string
			v    int64
		}{
			{"avail_idx", int64(q.AvailIdx())}, {"last_avail", int64(q.DeviceLastAvail())},
			{"used_idx", int64(q.UsedIdx())}, {"last_used", int64(q.LastUsed())},
			{"num_free", int64(q.NumFree())},
		} {
			out = append(out, Change{Name: vocab.Ring(i, f.name), To: f.v})
		}
	}
	counts := w.Mem.Counts()
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		out = append(out, Change{Name: vocab.Pages(l.String()), To: counts[l]})
	}
	return out
}
