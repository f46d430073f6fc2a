package view

import (
	"fmt"
	"strconv"
	"strings"
)

// Op is what a command does to the world. Commands only ever advance it;
// changing the configuration starts a new run (a new State) instead.
type Op byte

// The ops, with the letter that stands for them in a URL.
const (
	OpEvents  Op = 'e' // run N events
	OpPackets Op = 'p' // run until the driver received N more packets
	OpTime    Op = 't' // run N ns of simulated time
)

// Command is one entry of the log: an op and its count. It is plain data,
// written "e12" (twelve events), "p1" (one packet), "t5000" (5 µs).
type Command struct {
	Op Op
	N  uint64
}

// Limits of a log read from outside.
const (
	MaxLogLen  = 4096    // commands
	MaxCommand = 1 << 40 // N of one command
)

// String writes the command as in a URL.
func (c Command) String() string { return string(c.Op) + strconv.FormatUint(c.N, 10) }

// ParseCommand reads a command written by String.
func ParseCommand(s string) (Command, error) {
	if len(s) < 2 {
		return Command{}, fmt.Errorf("%w: command %q: want an op letter (e, p, t) and a count", ErrParam, s)
	}
	op := Op(s[0])
	switch op {
	case OpEvents, OpPackets, OpTime:
	default:
		return Command{}, fmt.Errorf("%w: command %q: unknown op %q (want e, p or t)", ErrParam, s, s[0])
	}
	n, err := strconv.ParseUint(s[1:], 10, 64)
	if err != nil || n == 0 || n > MaxCommand {
		return Command{}, fmt.Errorf("%w: command %q: want a count from 1 to %d", ErrParam, s, uint64(MaxCommand))
	}
	return Command{op, n}, nil
}

// Log is the commands applied since a run started, in order.
type Log []Command

// Append adds c, merging it into the last command when running both in a
// row is the same as running their sum: events and time merge; packets do
// not (one event may receive several packets, so p1 p1 may differ from p2).
func (l Log) Append(c Command) Log {
	if c.N == 0 {
		return l
	}
	if n := len(l); n > 0 && l[n-1].Op == c.Op && c.Op != OpPackets && l[n-1].N+c.N <= MaxCommand {
		l[n-1].N += c.N
		return l
	}
	return append(l, c)
}

// String writes the log as in a URL: commands joined by dots.
func (l Log) String() string {
	var b strings.Builder
	for i, c := range l {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(c.String())
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
		return nil, fmt.Errorf("%w: log of %d commands: at most %d", ErrParam, len(parts), MaxLogLen)
	}
	l := make(Log, 0, len(parts))
	for i, p := range parts {
		c, err := ParseCommand(p)
		if err != nil {
			return nil, fmt.Errorf("log entry %d: %w", i, err)
		}
		l = append(l, c)
	}
	return l, nil
}
