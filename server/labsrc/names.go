package labsrc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NamePrefix starts the name of every network namespace a lab creates. The
// whole name is NamePrefix + "PID-START-SEQ-SIDE": the creating process's
// pid and start time (clock ticks after boot, /proc/PID/stat field 22),
// so that a namespace whose creator has died, even if its pid was reused,
// can be told from one of a live lab; a sequence number of the lab within
// that process; and "a" (the sender's side) or "b" (the receiver's, where
// the XDP program runs).
const NamePrefix = "ringlab-lab-"

// netnsDir is where named network namespaces are bind-mounted, as
// iproute2 and vishvananda/netns do it (/var/run/netns is the same place).
const netnsDir = "/run/netns"

// Sides of a lab.
const (
	sideA = 'a' // the sender
	sideB = 'b' // the receiver: the XDP program and the receiving socket
)

// owner identifies a process across pid reuse.
type owner struct {
	pid   int
	start uint64 // starttime of /proc/PID/stat
}

// nsName is a parsed namespace name.
type nsName struct {
	owner
	seq  uint64
	side byte
}

func (n nsName) String() string {
	return fmt.Sprintf("%s%d-%d-%d-%c", NamePrefix, n.pid, n.start, n.seq, n.side)
}

// parseNSName parses a name made by nsName.String; ok is false for any
// other name, with or without the prefix.
func parseNSName(s string) (n nsName, ok bool) {
	rest, found := strings.CutPrefix(s, NamePrefix)
	if !found {
		return nsName{}, false
	}
	f := strings.Split(rest, "-")
	if len(f) != 4 || len(f[3]) != 1 || (f[3][0] != sideA && f[3][0] != sideB) {
		return nsName{}, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	seq, err3 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || pid <= 0 {
		return nsName{}, false
	}
	n = nsName{owner: owner{pid: pid, start: start}, seq: seq, side: f[3][0]}
	if n.String() != s { // no leading zeros or signs: one spelling per name
		return nsName{}, false
	}
	return n, true
}

// procRoot is where /proc is (tests point it elsewhere).
var procRoot = "/proc"

// procStart returns the start time of process pid (field 22 of
// /proc/PID/stat, clock ticks after boot).
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatStart(string(b))
}

// parseStatStart reads starttime out of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so fields are counted after the last ')'.
func parseStatStart(line string) (uint64, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat line without a command name: %q", line)
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3 (state)
	const startField = 22
	if len(f) < startField-2 {
		return 0, fmt.Errorf("stat line with %d fields, want at least %d", len(f)+2, startField)
	}
	return strconv.ParseUint(f[startField-3], 10, 64)
}

// self returns this process as an owner.
func self() (owner, error) {
	pid := os.Getpid()
	start, err := procStart(pid)
	if err != nil {
		return owner{}, fmt.Errorf("lab: start time of this process: %w", err)
	}
	return owner{pid: pid, start: start}, nil
}

// dead reports whether o has exited: its pid is gone or now belongs to a
// process that started at another time. When /proc cannot say (an error
// other than "no such file"), o is taken to be alive, so that a namespace
// is never removed from under a lab that may still run.
func (o owner) dead() bool {
	start, err := procStart(o.pid)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return start != o.start
}

// NamespaceOwner says who made a lab namespace: the creating process's pid
// and whether it still runs. ok is false for a name that is not a lab
// namespace name.
func NamespaceOwner(name string) (pid int, alive bool, ok bool) {
	n, ok := parseNSName(name)
	if !ok {
		return 0, false, false
	}
	return n.pid, !n.dead(), true
}
