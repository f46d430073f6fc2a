// Command ringlab serves the playground, streams metrics from a backend and
// runs the engine headless. Run `ringlab help` for the subcommands.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"ringlab/internal/bench"
	"ringlab/internal/cli"
)

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// Exit statuses (internal/cli's).
const (
	exitOK    = cli.ExitOK
	exitFail  = cli.ExitFail  // the command ran and failed
	exitUsage = cli.ExitUsage // bad arguments or bad input
)

func commands() []command {
	return []command{
		{"help", "show this help, or the help of a subcommand", runHelp},
		{"run", "run a scenario or preset headless and print a summary", runRun},
		{"reproduce", "reproduce the published results (R1..R4) and compare", runReproduce},
		{"preset", "list the presets, or print one as a scenario file", runPreset},
		{"bench", "run the performance cases and say which targets hold", bench.Run},
		{"serve", "serve the playground, live metrics, workshop rooms and /metrics", runServe},
		{"lab", "build a lab of namespaces with real XDP, send traffic and read its counters", runLab},
		{"tutorial", "list, run and check the walkthroughs in tutorials/", runTutorial},
		{"numbers", "say what a number is: its name, unit, kind and meaning", runNumbers},
		{"version", "print the version and build information", runVersion},
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "-help" {
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ringlab: unknown command %q\n\n", name)
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `ringlab: a playground for the Linux receive path

Usage: ringlab <command> [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun `ringlab help <command>` for a command's flags.\n")
}

func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if c.name == "help" {
				usage(stdout)
				return exitOK
			}
			return c.run([]string{"-h"}, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ringlab help: unknown command %q\n", args[0])
	return exitUsage
}

// parseFlagsOnly parses the flags of a subcommand that takes no
// arguments. ok is false when the caller should return code: exitOK after
// -h (the usage was printed), exitUsage after a bad flag or an argument,
// which it names as cmd's.
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer, cmd string) (code int, ok bool) {
	return cli.ParseFlagsOnly(fs, args, stderr, cmd)
}
