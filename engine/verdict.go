package engine

import (
	"fmt"
	"math"
	"strings"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// Verdict is what a reproduced row says about the model.
type Verdict string

const (
	// Explained: the figure matches, what limits the run is the
	// published mechanism (for the row and its baseline), and at most
	// one value was fitted on the result.
	Explained Verdict = "explained"
	// Calibrated: the figure matches, but only through values fitted on
	// this result: more than one, or the run is limited by something
	// other than the published mechanism.
	Calibrated Verdict = "calibrated"
	// NotReproduced: the figure does not match (the row says the ratio
	// the model gives), or it matches by another mechanism with nothing
	// fitted on it.
	NotReproduced Verdict = "not reproduced"
)

// Tolerances of Matches. Absolute figures depend on the machine, so a
// baseline is matched more loosely than a ratio between configurations,
// which is what a model must get (docs/published.md).
const (
	RatioTolerance    = 1.25 // a ratio within this factor of the published one
	BaselineTolerance = 1.5  // a baseline's figure within this factor
	ShareTolerance    = 0.1  // a share (0..1) within this, absolute
	// SmallRatio: ratios that small are compared absolutely (a fall to
	// 0.1% of the baseline and to 0 are the same result).
	SmallRatio = 0.05
)

// FittedValue is one value fitted on a published result: a constant of
// the cost table (sim.Fitted), or a field the preset declares fitted
// (scenario.Fit).
type FittedValue struct {
	Name string `json:"name"` // the cost's name, or the field's JSON path
	Row  string `json:"row"`  // the row it was fitted to
	Why  string `json:"why"`
}

// FittedOn lists the values fitted on result id that a run of s uses:
// the cost table's constants fitted on it (unless s overrides them) and
// s's fields declared fitted on it.
func FittedOn(s *scenario.Scenario, id string) []FittedValue {
	var out []FittedValue
	costs := sim.DefaultCosts()
	for _, c := range costs.Table() {
		if _, over := s.Costs[c.Name]; c.Kind == sim.Fitted && c.Fit == id && !over {
			out = append(out, FittedValue{Name: c.Name, Row: fittedRow(c.Source), Why: c.Source})
		}
	}
	for _, f := range s.Fitted {
		if f.Result == id {
			out = append(out, FittedValue{Name: f.Field, Row: f.Row, Why: f.Why})
		}
	}
	return out
}

// fittedRow reads the row a fitted constant's source names: "fitted on R2
// (r2-mtu9000-after ...".
func fittedRow(source string) string {
	_, rest, ok := strings.Cut(source, "(")
	if !ok {
		return ""
	}
	end := strings.IndexAny(rest, " ):")
	if end < 0 {
		return rest
	}
	return rest[:end]
}

// Matches says whether a row's simulated figure matches the published
// one: a share within ShareTolerance; a baseline's figure within
// BaselineTolerance; another row's ratio to its baseline within
// RatioTolerance of the published ratio, in the same direction, or both
// below SmallRatio.
func Matches(r *Row) (bool, string) {
	if r.Unit == "share" {
		d := math.Abs(r.Simulated - r.Published)
		return d <= ShareTolerance, fmt.Sprintf("share %.3f, published %.3f", r.Simulated, r.Published)
	}
	if r.Baseline == "" {
		return within(r.Simulated, r.Published, BaselineTolerance), fmt.Sprintf("%.3g %s, published %.3g (%.2fx)", r.Simulated, r.Unit, r.Published, r.Simulated/r.Published)
	}
	got, want := r.Ratio, r.PublishedRatio
	desc := fmt.Sprintf("ratio %.3g, published %.3g", got, want)
	if math.IsNaN(got) || math.IsNaN(want) {
		return false, desc
	}
	if got < SmallRatio && want < SmallRatio {
		return true, desc
	}
	sameWay := (got > 1) == (want > 1) || within(got, 1, 1.05) && within(want, 1, 1.05)
	return sameWay && within(got, want, RatioTolerance), desc
}

// within reports whether a and b are within a factor f of each other.
func within(a, b, f float64) bool {
	if a <= 0 || b <= 0 {
		return a == b
	}
	return math.Abs(math.Log(a/b)) <= math.Log(f)
}

// MechanismCheck is the comparison of what limits a row's run (and its
// baseline's) with the published mechanism.
type MechanismCheck struct {
	Applies bool `json:"applies"` // the row names a resource (not counters, not unknown)
	Holds   bool `json:"holds"`   // the row's limit and its baseline's are the published ones
	// Expected is the published mechanism, as the row declares it.
	Expected string `json:"expected"`
}

// MechanismHolds says whether limit is the resource mechanism names:
// a kind ("cpu", "ring") or kind:name ("cpu:cpu1", "lock:zone->lock").
// applies is false for scenario.MechanismCounters and MechanismUnknown.
func MechanismHolds(mechanism string, limit Limit) (holds, applies bool) {
	switch mechanism {
	case scenario.MechanismCounters, scenario.MechanismUnknown, "":
		return false, false
	}
	kind, name, named := strings.Cut(mechanism, ":")
	return limit.Kind == kind && (!named || limit.Name == name), true
}

// Judge gives r its verdict; base is its baseline row (nil for a
// baseline). The rule is Matches, MechanismHolds and the count of
// values fitted on the result:
//
//   - the figure does not match: not reproduced;
//   - it matches, the mechanism holds (or the result is counters) and at
//     most one value was fitted: explained;
//   - it matches with more than one fitted value, or with one or more
//     while the mechanism does not hold, or the source names no
//     mechanism and something was fitted: calibrated;
//   - it matches by another mechanism (or with none named) and nothing
//     was fitted: not reproduced.
func Judge(r *Row, base *Row) {
	var desc string
	r.Match, desc = Matches(r)
	holds, applies := MechanismHolds(r.Mechanism, r.Limit)
	if base != nil && applies {
		bh, _ := MechanismHolds(base.Mechanism, base.Limit)
		holds = holds && bh
	}
	r.Check = MechanismCheck{Applies: applies, Holds: holds, Expected: r.Mechanism}
	mechOK := holds || r.Mechanism == scenario.MechanismCounters
	n := len(r.Fitted)
	var names []string
	for _, f := range r.Fitted {
		names = append(names, f.Name)
	}
	var fitted string
	switch n {
	case 0:
		fitted = "nothing fitted on " + r.ID
	case 1:
		fitted = fmt.Sprintf("one value fitted on %s (%s)", r.ID, names[0])
	default:
		fitted = fmt.Sprintf("%d values fitted on %s (%s)", n, r.ID, strings.Join(names, ", "))
	}
	limit := r.limitText(base)
	switch {
	case !r.Match:
		r.Verdict, r.Why = NotReproduced, fmt.Sprintf("%s: beyond the tolerance; %s", desc, limit)
	case mechOK && n <= 1:
		r.Verdict, r.Why = Explained, fmt.Sprintf("%s; %s; %s", desc, limit, fitted)
	case n >= 1:
		r.Verdict, r.Why = Calibrated, fmt.Sprintf("%s only through %s; %s", desc, fitted, limit)
	default:
		r.Verdict, r.Why = NotReproduced, fmt.Sprintf("%s, but by another mechanism: %s; %s", desc, limit, fitted)
	}
}

// ringNeeds says, for a row whose published mechanism is the ring's
// capacity, what that mechanism needs and what the run gave. A ring
// holding fewer buffers than the NAPI budget runs dry inside a poll:
// virtnet_receive takes up to budget used buffers and refills only after
// its loop (try_fill_recv), so a poll that takes every posted buffer
// leaves the device none until it ends, and a vDPA device drops what
// arrives meanwhile; TCP answers each loss by halving its window. The
// run's polls say how close it came: the frames a poll took on average
// against the buffers, and the frames that found none. Empty when the
// run gives too little to say it.
func (r *Row) ringNeeds() string {
	u := &r.Usage
	if r.Unit != "Gbit/s" || u.RingBuffers <= 0 || u.FramesPerPoll <= 0 {
		return ""
	}
	s := fmt.Sprintf(" (a ring of %d buffers limits a stream where it runs dry: virtnet_receive refills only after its loop", u.RingBuffers)
	if u.Budget > u.RingBuffers {
		s += fmt.Sprintf(", and %d buffers are fewer than the budget of %d, so a poll that takes them all leaves the device none until it ends", u.RingBuffers, u.Budget)
	}
	return s + fmt.Sprintf("; here a poll took %.1f frames on average and %d frames found no buffer over the window)", u.FramesPerPoll, u.RingDrops)
}

// limitText says what limits the row (and its baseline) against the
// published mechanism.
func (r *Row) limitText(base *Row) string {
	switch r.Mechanism {
	case scenario.MechanismCounters:
		return "a counter result (" + r.Limit.Name + " limits the run)"
	case scenario.MechanismUnknown, "":
		return r.Limit.Name + " limits the run; the source names no mechanism"
	}
	own, _ := MechanismHolds(r.Mechanism, r.Limit)
	s := fmt.Sprintf("%s limits the run", r.Limit.Name)
	if own {
		s += ", as published (" + r.Mechanism + ")"
	} else {
		s += ", the published mechanism is " + r.Mechanism
		if kind, _, _ := strings.Cut(r.Mechanism, ":"); kind == ResRing {
			s += r.ringNeeds()
		}
	}
	if base != nil {
		if bh, _ := MechanismHolds(base.Mechanism, base.Limit); !bh {
			s += fmt.Sprintf("; its baseline is limited by %s, not %s", base.Limit.Name, base.Mechanism)
		}
	}
	return s
}
