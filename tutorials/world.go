package tutorials

import (
	"fmt"
	"strings"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// A tutorial's world, read once for every reader: a Session runs it
// step by step (run.go), the playground shows step N's world in its own
// pane (package play), and a workshop room folds a tutorial step of its
// log into the configuration it builds. They all read a run directive
// with Directive.Run and the way to step N's world with Tutorial.PathTo.

// RunUnit is what a run directive counts.
type RunUnit int

// Units of a run.
const (
	RunEvents  RunUnit = iota // events=N
	RunPackets                // packets=N: until N more packets are received
	RunTime                   // duration=D: N ns of simulated time
)

// RunSpec is a run directive read: N of Unit. Trace lists each event (events
// only); Watch asks a browser to play it at a speed to follow (events or
// packets).
type RunSpec struct {
	Unit  RunUnit
	N     uint64
	Trace bool
	Watch bool
}

// Run reads a run directive; another directive runs nothing (N 0).
func (d *Directive) Run() RunSpec {
	switch {
	case d.Op != OpRun:
		return RunSpec{}
	case d.Packets > 0:
		return RunSpec{Unit: RunPackets, N: d.Packets, Watch: d.Watch}
	case d.DurationNS > 0:
		return RunSpec{Unit: RunTime, N: uint64(d.DurationNS)}
	}
	return RunSpec{Unit: RunEvents, N: d.Events, Trace: d.Trace, Watch: d.Watch}
}

// On runs r on w; trace hears each event of a traced run.
func (r RunSpec) On(w *engine.World, trace func(engine.TraceEvent)) error {
	switch r.Unit {
	case RunPackets:
		return w.RunPackets(r.N)
	case RunTime:
		return w.RunFor(sim.Duration(r.N))
	}
	if r.Trace {
		return w.Trace(int(r.N), trace)
	}
	for n := uint64(0); n < r.N && w.Step(); n++ {
	}
	return w.Err()
}

// Path is how step n's world is reached: built from the scenario of the
// last step up to n that has one (index From), then every run of the
// steps from that one to n, in order. A step without a scenario of its
// own continues the previous step's world.
type Path struct {
	From     int                // -1: no step up to n has a scenario
	Scenario *scenario.Scenario // nil when From is -1
	Runs     []PathRun
}

// PathRun is one run of a path, with the index of its step.
type PathRun struct {
	Step int
	RunSpec
}

// PathTo returns the path to step n's world (n from 1; past the ends,
// the path of the nearest step).
func (t *Tutorial) PathTo(n int) Path {
	n = min(max(n, 0), len(t.Steps))
	p := Path{From: -1}
	for i := n - 1; i >= 0; i-- {
		if t.Steps[i].Scenario != nil {
			p.From, p.Scenario = i, t.Steps[i].Scenario
			break
		}
	}
	if p.From < 0 {
		return p
	}
	for i := p.From; i < n; i++ {
		for j := range t.Steps[i].Directives {
			if d := &t.Steps[i].Directives[j]; d.Op == OpRun {
				p.Runs = append(p.Runs, PathRun{Step: i, RunSpec: d.Run()})
			}
		}
	}
	return p
}

// Describe says in words what step n's world is (p, its path): the
// recipe of the step it is built from (its preset, then every set since
// it): "Tutorial 3 (...), step 2: preset r2-mtu9000-after; set
// kernel=6.1."
func (t *Tutorial) Describe(p Path, n int) string {
	var b strings.Builder
	if t.Number == 0 { // a lesson (lesson.go)
		fmt.Fprintf(&b, "Lesson (%s), step %d: ", t.Title, n)
	} else {
		fmt.Fprintf(&b, "Tutorial %d (%s), step %d: ", t.Number, t.Title, n)
	}
	if p.From < 0 {
		b.WriteString("no scenario.")
		return b.String()
	}
	st := &t.Steps[p.From]
	if st.Number != n {
		fmt.Fprintf(&b, "step %d's world, run on: ", st.Number)
	}
	if st.Recipe == nil {
		b.WriteString("the step's scenario.")
		return b.String()
	}
	b.WriteString("preset " + st.Recipe.Preset)
	var sets []string
	for _, ch := range st.Recipe.Changes {
		sets = append(sets, ch.String())
	}
	if len(sets) > 0 {
		b.WriteString("; set " + strings.Join(sets, ", "))
	}
	b.WriteString(".")
	if len(sets) == 0 {
		if p, err := scenario.LookupPreset(st.Recipe.Preset); err == nil && p.Description != "" {
			b.WriteString(" " + p.Description)
		}
	}
	return b.String()
}
