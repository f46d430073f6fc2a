// Package tutorials holds ringlab's walkthroughs and the code that reads and
// checks them. A tutorial is a Markdown file with front matter (title,
// level, duration, what you will learn) and steps; each step has prose and
// ```ringlab blocks of line directives: the scenario to apply, how long to
// run, the figures to look at, a question to answer before running, and
// checks that the engine must satisfy. The parsed form is plain data (JSON)
// so a browser can step through it; a Session runs it on the engine,
// deterministically. README.md describes the format for authors.
//
// The ten walkthroughs are embedded (embed.go) in the binary and the
// wasm. A reader's prediction is graded by the kind its question
// declares: yes/no, a choice, a number in a unit, or text (predict.go,
// grade.go). `ringlab tutorial check`, which make test runs, runs every
// tutorial's checks.
package tutorials

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"ringlab/engine/scenario"
)

// Tutorial is one walkthrough as plain data.
type Tutorial struct {
	// Name is the file name without its number and .md
	// ("descriptor-journey"); Number is the file's leading number.
	Name   string `json:"name"`
	Number int    `json:"number"`
	File   string `json:"file"`

	Title    string   `json:"title"`
	Level    string   `json:"level"`    // beginner, intermediate or advanced
	Duration string   `json:"duration"` // as written, "20 min"
	Minutes  int      `json:"minutes"`
	Learn    []string `json:"learn"`
	// Reproduces names the published measurements (docs/published.md R1..R4)
	// the tutorial reproduces.
	Reproduces []string `json:"reproduces,omitempty"`

	Intro string `json:"intro"` // Markdown before the first step
	Steps []Step `json:"steps"`
}

// Step is one step of a tutorial.
type Step struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Line   int    `json:"line"` // of its heading
	// Prose is the step's Markdown with the ringlab blocks taken out.
	Prose      string      `json:"prose"`
	Directives []Directive `json:"directives"`
	// Segments is the step in reading order: prose, then the directives of
	// a ringlab block, then more prose ... so a reader can show the text
	// that follows a block after the block has run.
	Segments []Segment `json:"segments"`
	// Recipe is the step's world as its preset and set directives write
	// it: its preset, or the previous step's recipe, then its sets in
	// order; nil when the step has neither. Scenario is what it builds.
	Recipe   *scenario.Recipe   `json:"recipe,omitempty"`
	Scenario *scenario.Scenario `json:"scenario,omitempty"`
	// Continues is true when the step has no scenario of its own but
	// reads or runs the world the previous step left: a browser that
	// jumps here replays the steps before.
	Continues bool `json:"continues"`
}

// Questions is how many questions the step asks (question directives):
// the reader reveals them by their index, from 0.
func (s *Step) Questions() int {
	n := 0
	for i := range s.Directives {
		if s.Directives[i].Op == OpQuestion {
			n++
		}
	}
	return n
}

// Segment is a run of prose or one ringlab block of a step.
type Segment struct {
	Prose      string `json:"prose,omitempty"`
	Directives []int  `json:"directives,omitempty"` // indexes into Step.Directives
}

// Directive operations.
const (
	OpPreset   = "preset"   // preset NAME: start from a named scenario
	OpSet      = "set"      // set KEY=VALUE: a knob by name (cpus=2, page_pool=off), or a field by JSON path (driver.iommu=true; .cpus=2 the field alone)
	OpRun      = "run"      // run packets=N | duration=D | events=N [trace]
	OpShow     = "show"     // show EXPR, EXPR ... | show GROUP
	OpCheck    = "check"    // check CONDITION
	OpQuestion = "question" // question KIND "TEXT": asked before the step runs (predict.go)
	OpAnswer   = "answer"   // answer [REPLY because] CONDITION: checked when the step has run
	OpMark     = "mark"     // mark NAME: remember every figure as NAME.figure
	OpMeasure  = "measure"  // measure NAME = CONFIG METRIC [warmup=D] [window=D]
	OpCompare  = "compare"  // compare A B METRIC [as NAME] [warmup=D] [window=D]
	OpHost     = "host"     // host IFACE [as NAME]: read a real interface's counters
)

// Directive is one line of a ringlab block, parsed. Text is the line as
// written; the other fields depend on Op.
type Directive struct {
	Line int    `json:"line"`
	Op   string `json:"op"`
	Text string `json:"text"`

	Name  string          `json:"name,omitempty"`  // preset, mark, measure, compare (as), host (as)
	Path  string          `json:"path,omitempty"`  // set: a knob or a JSON path (scenario.ParseChange)
	Value json.RawMessage `json:"value,omitempty"` // set, canonical (scenario.ParseChange)

	Packets    uint64 `json:"packets,omitempty"`     // run
	DurationNS int64  `json:"duration_ns,omitempty"` // run
	Events     uint64 `json:"events,omitempty"`      // run
	Trace      bool   `json:"trace,omitempty"`       // run events=N trace: list each event
	Watch      bool   `json:"watch,omitempty"`       // run ... watch: the browser plays it at a speed to follow

	Exprs    []string `json:"exprs,omitempty"`    // show (expressions or group names), check, answer
	Question string   `json:"question,omitempty"` // question

	// A question's kind of prediction (predict.go), copied onto its
	// answer: yesno, choice (its Options), number (its Unit) or text.
	Kind    string   `json:"kind,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Options []string `json:"options,omitempty"`
	Reply   string   `json:"reply,omitempty"` // answer: the right reply of a yesno or choice question

	Config   string `json:"config,omitempty"`    // measure, compare: preset name or "scenario"
	ConfigB  string `json:"config_b,omitempty"`  // compare
	Metric   string `json:"metric,omitempty"`    // measure, compare
	WarmupNS int64  `json:"warmup_ns,omitempty"` // measure, compare
	WindowNS int64  `json:"window_ns,omitempty"` // measure, compare
	Iface    string `json:"iface,omitempty"`     // host

	exprs []*Expr // parsed Exprs (nil entries for show groups)
}

// Levels a tutorial may declare.
var Levels = []string{"beginner", "intermediate", "advanced"}

// ErrParse is wrapped by every error of a malformed tutorial.
var ErrParse = errors.New("malformed tutorial")

// Error is a problem at a line of a tutorial file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, ErrParse) hold.
func (e *Error) Unwrap() error { return ErrParse }

// ErrorList is every problem found in a file, in line order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the errors, so errors.Is and errors.As see each.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Group names show accepts instead of expressions.
var showGroups = map[string]string{
	"counters":  "the device, page_pool and engine counters (ethtool names)",
	"page_pool": "the 11 page_pool stats, summed over pools",
	"ring":      "every receive virtqueue's indices, num_free and event fields",
	"pages":     "where the pages are",
	"program":   "the XDP program's instructions",
	"scenario":  "the scenario in effect",
	"queues":    "each queue pair's ethtool counters",
	"pools":     "each page_pool's alloc cache, ptr_ring and in-flight pages",
}

// Limits of one run directive: they keep `tutorial check` fast and a
// browser tab responsive.
const (
	MaxRunPackets  = 2_000_000
	MaxRunDuration = 200_000_000 // 200 ms of simulated time, in ns
	MaxRunEvents   = 1_000_000
	MaxTraceEvents = 64 // run events=N trace: one output line per event
	// run ... watch: what a reader can follow at a few events a second.
	MaxWatchEvents  = 200
	MaxWatchPackets = 100
	MaxMeasureNS    = 100_000_000 // warmup + window of a measure, in ns
)

// Compile re-parses the expressions of a tutorial decoded from its JSON
// form, so that a Session can run it: the parsed expressions are not part
// of the JSON. A tutorial from Parse needs no Compile.
func (t *Tutorial) Compile() error {
	var errs ErrorList
	for i := range t.Steps {
		for j := range t.Steps[i].Directives {
			d := &t.Steps[i].Directives[j]
			d.exprs = d.exprs[:0]
			for _, text := range d.Exprs {
				if _, group := showGroups[text]; group && d.Op == OpShow {
					d.exprs = append(d.exprs, nil)
					continue
				}
				parse := ParseExpr
				if d.Op == OpCheck || d.Op == OpAnswer {
					parse = ParseCondition
				}
				e, err := parse(text)
				if err != nil {
					errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: fmt.Sprintf("%s: %v", d.Op, err)})
					continue
				}
				d.exprs = append(d.exprs, e)
			}
			if (d.Op == OpCheck || d.Op == OpAnswer) && len(d.exprs) != 1 {
				errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: d.Op + ": want one condition"})
			}
		}
		// A question's kind, as the parser checks it: a tutorial received
		// as JSON says the same or is refused.
		var q *Directive
		for j := range t.Steps[i].Directives {
			d := &t.Steps[i].Directives[j]
			switch d.Op {
			case OpQuestion:
				if err := checkQuestion(d); err != nil {
					errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: err.Error()})
				}
				q = d
			case OpAnswer:
				if q == nil {
					errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: "answer without a question before it"})
					continue
				}
				if err := pairAnswer(q, d); err != nil {
					errs = append(errs, &Error{File: t.File, Line: d.Line, Msg: err.Error()})
				}
				q = nil
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
