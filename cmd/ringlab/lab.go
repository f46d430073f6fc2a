package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"ringlab/server/labsrc"
)

// Limits of `ringlab lab run`.
const (
	defaultLabFor = 10 * time.Second
	// labSettle is how long run waits after the sender stopped before the
	// final reading, so the receiver has drained its socket.
	labSettle = 200 * time.Millisecond
)

func runLab(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintf(stderr, `Usage: ringlab lab run [--for D] [SPEC]
       ringlab lab list
       ringlab lab clean

run    builds a lab (root only), sends its traffic, prints the counters it read
       and removes the lab. SPEC is what follows "lab:" in a source spec:
       [PROGRAM][,rate=PPS][,size=BYTES][,count=N][,duration=D][,port=P]
       programs: %v (docs/lab.md)
list   lists the lab namespaces on this machine and whether their process runs
clean  removes the namespaces of labs whose process died (root only)
`, labsrc.Programs)
	}
	if len(args) == 0 {
		usage()
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "-help":
		usage()
		return exitOK
	case "run":
		return runLabRun(args[1:], stdout, stderr)
	case "list":
		return runLabList(stdout, stderr)
	case "clean":
		removed, err := labsrc.CleanLeftovers()
		for _, n := range removed {
			fmt.Fprintf(stdout, "removed %s\n", n)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ringlab lab clean: %v\n", err)
			return exitFail
		}
		if len(removed) == 0 {
			fmt.Fprintln(stdout, "no leftover lab namespaces")
		}
		return exitOK
	}
	fmt.Fprintf(stderr, "ringlab lab: unknown subcommand %q\n\n", args[0])
	usage()
	return exitUsage
}

func runLabList(stdout, stderr io.Writer) int {
	names, err := labsrc.Namespaces()
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab list: %v\n", err)
		return exitFail
	}
	if len(names) == 0 {
		fmt.Fprintln(stdout, "no lab namespaces")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, n := range names {
		pid, alive, ok := labsrc.NamespaceOwner(n)
		state := "not a lab name: left alone"
		switch {
		case ok && alive:
			state = fmt.Sprintf("process %d runs", pid)
		case ok:
			state = fmt.Sprintf("process %d is gone: `ringlab lab clean` removes it", pid)
		}
		fmt.Fprintf(tw, "%s\t%s\n", n, state)
	}
	tw.Flush()
	return exitOK
}

func runLabRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lab run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFor := fs.Duration("for", defaultLabFor, "stop after `D` even if the sender is still sending")
	all := fs.Bool("all", false, "print every counter, zeros included")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "ringlab lab run: one SPEC at most, got %q\n", fs.Args())
		return exitUsage
	}
	if *runFor <= 0 {
		fmt.Fprintln(stderr, "ringlab lab run: --for must be positive")
		return exitUsage
	}
	c, err := labsrc.ParseSpec(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := labsrc.New(c)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: %v\n", err)
		return exitFail
	}
	names := l.Namespaces()
	code := labReport(ctx, l, *runFor, *all, stdout, stderr)
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: close: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "removed %s and %s\n", names[0], names[1])
	return code
}

// labReport waits for the sender (or runFor, or a signal) and prints what
// the lab read.
func labReport(ctx context.Context, l *labsrc.Lab, runFor time.Duration, all bool, stdout, stderr io.Writer) int {
	info := l.Info()
	fmt.Fprintf(stdout, "%s\n%s\n", info.Name, info.Description)
	for _, n := range info.Notes {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	select {
	case <-l.SenderDone():
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	time.Sleep(labSettle)
	s, err := l.Sample()
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: %v\n", err)
		return exitFail
	}
	c := l.Config()
	fmt.Fprintf(stdout, "\nsent %d packets of %d bytes at %.0f pps (asked %d); %d send errors, %d writes retried on a full ring, %d dropped by lab-a\n",
		s.Totals["lab_sent_packets"], c.Size, l.SenderRate(), c.Rate, s.Totals["lab_send_errors"],
		s.Totals["lab_send_blocked"], s.Totals["lab_a_tx_dropped"])
	fmt.Fprintf(stdout, "the program counted %d of them: pass %d, drop %d, tx %d, redirect %d, aborted %d; %d other frames\n",
		s.Totals["xdp_packets_counted"], s.Totals["xdp_pass"], s.Totals["xdp_drop"], s.Totals["xdp_tx"],
		s.Totals["xdp_redirect"], s.Totals["xdp_aborted"], s.Totals["xdp_other_packets"])
	fmt.Fprintf(stdout, "the receiving socket got %d\n\n", s.Totals["lab_received_packets"])
	order := slices.Clone(info.Counters)
	for n := range s.Totals {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, n := range order {
		v, ok := s.Totals[n]
		if !ok || (v == 0 && !all) {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t\n", n, v)
	}
	tw.Flush()
	return exitOK
}
