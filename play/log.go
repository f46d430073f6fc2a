package play

import (
	"fmt"
	"strconv"
	"strings"
)

// Unit is what a step counts.
type Unit string

// The units, with the letter that stands for each in a link's log.
const (
	UnitEvent  Unit = "event"  // events of the world: 'e'
	UnitPacket Unit = "packet" // packets the driver receives: 'p'
	UnitNs     Unit = "ns"     // simulated nanoseconds: 't'
)

// letter is the unit's letter in a link; 0 for an unknown unit.
func (u Unit) letter() byte {
	switch u {
	case UnitEvent, "":
		return 'e'
	case UnitPacket:
		return 'p'
	case UnitNs:
		return 't'
	}
	return 0
}

func unitOf(letter byte) (Unit, bool) {
	switch letter {
	case 'e':
		return UnitEvent, true
	case 'p':
		return UnitPacket, true
	case 't':
		return UnitNs, true
	}
	return "", false
}

// Step is the command that advances a world: N events, N packets received
// by the driver, or N ns of simulated time. Commands only ever advance a
// world; a change of configuration starts a new run (a new State). It is
// the one form of a step everywhere: the page's step message, the room's
// step command, and an entry of a link's log, written "e12" (twelve
// events), "p1" (one packet), "t5000" (5 µs).
type Step struct {
	Unit Unit   // "" is UnitEvent
	N    uint64 // 0 is 1
}

// Limits of a step and of a log read from outside.
const (
	MaxLogLen = 4096    // steps in a link's log
	MaxStep   = 1 << 40 // N of one step
)

// unit returns s's unit with the default filled in.
func (s Step) unit() Unit {
	if s.Unit == "" {
		return UnitEvent
	}
	return s.Unit
}

// count returns N with the default filled in.
func (s Step) count() uint64 { return max(s.N, 1) }

// String writes the step as in a link: the unit's letter and the count.
func (s Step) String() string { return string(s.unit().letter()) + strconv.FormatUint(s.count(), 10) }

// ParseStep reads a step written by String.
func ParseStep(s string) (Step, error) {
	if len(s) < 2 {
		return Step{}, fmt.Errorf("%w: step %q: want a unit letter (e, p, t) and a count", ErrParam, s)
	}
	u, ok := unitOf(s[0])
	if !ok {
		return Step{}, fmt.Errorf("%w: step %q: unknown unit %q (want e, p or t)", ErrParam, s, s[0])
	}
	n, err := strconv.ParseUint(s[1:], 10, 64)
	if err != nil || n == 0 || n > MaxStep {
		return Step{}, fmt.Errorf("%w: step %q: want a count from 1 to %d", ErrParam, s, uint64(MaxStep))
	}
	return Step{u, n}, nil
}

// Log is the steps applied since a run started, in order.
type Log []Step

// Append adds s, merging it into the last step when running both in a
// row is the same as running their sum: events and time merge; packets do
// not (one event may receive several packets, so p1 p1 may differ from p2).
func (l Log) Append(s Step) Log {
	s = Step{s.unit(), s.count()}
	if n := len(l); n > 0 && l[n-1].Unit == s.Unit && s.Unit != UnitPacket && l[n-1].N+s.N <= MaxStep {
		l[n-1].N += s.N
		return l
	}
	return append(l, s)
}

// String writes the log as in a link: steps joined by dots.
func (l Log) String() string {
	var b strings.Builder
	for i, s := range l {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// ParseLog reads a log written by String.
func ParseLog(s string) (Log, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > MaxLogLen {
		return nil, fmt.Errorf("%w: log of %d steps: at most %d", ErrParam, len(parts), MaxLogLen)
	}
	l := make(Log, 0, len(parts))
	for i, p := range parts {
		st, err := ParseStep(p)
		if err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		l = append(l, st)
	}
	return l, nil
}
