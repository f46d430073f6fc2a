// Command ringlab serves the playground, streams metrics from a backend and
// runs the engine headless. Run `ringlab help` for the subcommands.
//
// The command line follows GNU habits, as ip, bpftool, perf and iperf3
// do (spf13/cobra and spf13/pflag): flags go before or after the
// arguments, long flags take two dashes (--packets 1000 or
// --packets=1000), help goes to stdout when asked for (-h, --help,
// `ringlab help CMD`) and to stderr after a usage error. One tree of
// commands and flags gives the help, the shell completion (`ringlab
// completion bash|zsh|fish`) and the man page (`ringlab man`).
//
// The commands: run (a capture replayed with --pcap: pcap.go), reproduce,
// preset, serve, lab, tutorial, numbers, version, completion, man and
// help. The benchmarks are another binary, cmd/ringlab-bench, so that
// this one does not link chromedp. Go optimises this binary with the
// default.pgo beside this file, a CPU profile of the engine's preset
// benchmarks that `make pgo` remakes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"ringlab/internal/cli"
)

// Exit statuses (internal/cli's).
const (
	exitOK    = cli.ExitOK
	exitFail  = cli.ExitFail  // the command ran and failed
	exitUsage = cli.ExitUsage // bad arguments or bad input
)

// commands are the subcommands, in the order help lists them. Each call
// builds them anew: their flags hold the values of one command line.
func commands() []*cobra.Command {
	return []*cobra.Command{
		runCommand(),
		reproduceCommand(),
		presetCommand(),
		serveCommand(),
		labCommand(),
		tutorialCommand(),
		numbersCommand(),
		versionCommand(),
		completionCommand(),
		manCommand(),
		{
			// bench moved to a binary of its own, so that ringlab does
			// not link the browser driver its page cases need.
			Use:                "bench",
			Hidden:             true,
			DisableFlagParsing: true,
			RunE: func(c *cobra.Command, _ []string) error {
				fmt.Fprintln(c.ErrOrStderr(), "ringlab bench is now ringlab-bench, a binary of its own: make bench builds and runs it (go run ./cmd/ringlab-bench)")
				return exitStatus(exitUsage)
			},
		},
	}
}

func init() {
	cobra.EnableCommandSorting = false // commands() is in the order help lists them
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// newRoot builds the command tree writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "ringlab",
		Short: "a playground for the Linux receive path",
		Long: "ringlab serves the playground page, streams metrics from a backend,\n" +
			"runs the engine headless and builds labs of real XDP in namespaces.",
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		CompletionOptions:     cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(c *cobra.Command, args []string) error {
			// Only without a command: cobra refuses an unknown one itself.
			if showVersion {
				fmt.Fprintln(c.OutOrStdout(), versionLine())
				return nil
			}
			writeHelp(c.ErrOrStderr(), c)
			return exitStatus(exitUsage)
		},
	}
	// Not cobra's own --version: its output goes through text/template,
	// whose reflection keeps every method of every type in the binary.
	root.Flags().BoolVarP(&showVersion, "version", "V", false, "print the version and build information (as the version command does)")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(c.OutOrStdout(), c) })
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{c, err} })
	root.SetHelpCommand(helpCommand(root))
	root.AddCommand(commands()...)
	for _, c := range root.Commands() {
		setDefaults(c)
	}
	return root
}

// setDefaults gives c and its subcommands what every ringlab command has.
func setDefaults(c *cobra.Command) {
	c.DisableFlagsInUseLine = true
	c.Flags().SortFlags = false
	for _, s := range c.Commands() {
		setDefaults(s)
	}
}

// dispatch runs the command line args and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(longDashes(root, args))
	c, err := root.ExecuteC()
	var st exitStatus
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &ue):
		c = ue.cmd
	}
	// A bad flag, an unknown command or argument.
	fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), err)
	fmt.Fprintf(stderr, "Run `%s --help` for its usage.\n", c.CommandPath())
	return exitUsage
}

// exitStatus is a command's exit status as an error: the command has
// said why on stderr.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// status turns a command's exit status into Execute's error.
func status(code int) error {
	if code == exitOK {
		return nil
	}
	return exitStatus(code)
}

// usageError is a bad flag or argument of cmd.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// body adapts a command written as a function of its arguments returning
// an exit status.
func body(run func(args []string, stdout, stderr io.Writer) int) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		return status(run(args, c.OutOrStdout(), c.ErrOrStderr()))
	}
}

// noArgs refuses arguments, naming the first.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{c, fmt.Errorf("unexpected argument %q", args[0])}
	}
	return nil
}

// maxArgs refuses more than n arguments, saying what one is.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return usageError{c, fmt.Errorf("at most %d %s, got %q", n, what, args)}
		}
		return nil
	}
}

// helpCmd is `ringlab help [COMMAND ...]`: the help of the root or of a
// command, on stdout.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND [SUBCOMMAND]]",
		Short: "show this help, or the help of a command",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				fmt.Fprintf(c.ErrOrStderr(), "ringlab help: unknown command %q\n", strings.Join(args, " "))
				return exitStatus(exitUsage)
			}
			writeHelp(c.OutOrStdout(), target)
			return nil
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			target, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, s := range target.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name()+"\t"+s.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// writeHelp prints c's help: its usage lines (a command with subcommands
// has one per subcommand), its description, its subcommands and its
// flags, each flag with two dashes.
func writeHelp(w io.Writer, c *cobra.Command) {
	fmt.Fprintf(w, "Usage: %s\n", strings.Join(usageLines(c), "\n       "))
	if c.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.Long, "\n"))
	} else if c.Short != "" {
		fmt.Fprintf(w, "\n%s%s.\n", strings.ToUpper(c.Short[:1]), c.Short[1:])
	}
	if subs := available(c); len(subs) > 0 {
		fmt.Fprint(w, "\nCommands:\n")
		for _, s := range c.Commands() {
			if !c.HasParent() && s.Name() == "help" { // cobra keeps it off the available ones
				subs = append(subs, s)
			}
		}
		for _, s := range subs {
			fmt.Fprintf(w, "  %-12s%s\n", s.Name(), s.Short)
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", c.LocalFlags().FlagUsages())
	}
	if !c.HasParent() {
		fmt.Fprint(w, "\nRun `ringlab help COMMAND` (or `ringlab COMMAND --help`) for a command's flags.\n")
	}
}

// usageLines are c's synopses: its own, or its subcommands' when it has
// some and nothing to run without them.
func usageLines(c *cobra.Command) []string {
	subs := available(c)
	if len(subs) == 0 || !c.HasParent() {
		if !c.HasParent() {
			return []string{c.CommandPath() + " COMMAND [flags] [arguments]"}
		}
		return []string{c.UseLine()}
	}
	var out []string
	for _, s := range subs {
		out = append(out, s.UseLine())
	}
	return out
}

// available lists c's subcommands a user may run, help excepted.
func available(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			out = append(out, s)
		}
	}
	return out
}

// singleDashLong is a flag written with Go's flag package's one dash
// (-packets 1000, -json=true): a word of two letters or more.
var singleDashLong = regexp.MustCompile(`^-([a-z][a-z0-9-]+)(=.*)?$`)

// longDashes rewrites -name as --name where name is a long flag of some
// ringlab command, so command lines written for the one-dash parser
// ringlab had before keep their meaning. Nothing after "--" changes; no
// ringlab flag has a one-letter name that such a word could also group.
func longDashes(root *cobra.Command, args []string) []string {
	long := map[string]bool{"help": true, "version": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if m := singleDashLong.FindStringSubmatch(a); m != nil && long[m[1]] {
			a = "-" + a
		}
		out[i] = a
	}
	return out
}
