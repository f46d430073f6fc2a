// Package cli holds the command-line conventions the ringlab binaries
// (cmd/ringlab, cmd/ringlab-bench) share: exit statuses, GNU-style flags
// (spf13/pflag) of a command that takes no arguments, and flags given as
// lists.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitFail  = 1 // the command ran and failed
	ExitUsage = 2 // bad arguments or bad input
)

// ParseFlagsOnly parses the flags of a command that takes no arguments.
// ok is false when the caller should return code: ExitOK after -h or
// --help (fs.Usage printed the help, to stdout), ExitUsage after a bad
// flag or an argument, which it names on stderr as cmd's.
func ParseFlagsOnly(fs *pflag.FlagSet, args []string, stderr io.Writer, cmd string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK, false
		}
		fmt.Fprintf(stderr, "%s: %v\nRun `%s --help` for its usage.\n", cmd, err, cmd)
		return ExitUsage, false
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", cmd, fs.Arg(0))
		return ExitUsage, false
	}
	return ExitOK, true
}

// ListFlag is a flag that may be repeated or given a comma-separated list.
type ListFlag []string

func (l *ListFlag) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated values of v.
func (l *ListFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// RepeatFlag is a flag that may be repeated, each value taken whole (a
// source spec has commas of its own: lab:xdp_drop,rate=1000).
type RepeatFlag []string

func (l *RepeatFlag) String() string { return strings.Join(*l, " ") }

// Set adds v.
func (l *RepeatFlag) Set(v string) error {
	if v = strings.TrimSpace(v); v != "" {
		*l = append(*l, v)
	}
	return nil
}

// Type names a ListFlag's value in help (pflag.Value).
func (l *ListFlag) Type() string { return "list" }

// Type names a RepeatFlag's value in help (pflag.Value).
func (l *RepeatFlag) Type() string { return "value" }
