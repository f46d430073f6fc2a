package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"ringlab/server/labsrc"
)

// Limits of `ringlab lab run`.
const (
	defaultLabFor = 10 * time.Second
	// labSettle is how long run waits after the sender stopped before the
	// final reading, so the receiver has drained its socket.
	labSettle = 200 * time.Millisecond
)

func labCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "lab",
		Short: "build a lab of namespaces with real XDP, send traffic and read its counters",
		Long: fmt.Sprintf(`A lab is a pair of network namespaces of its own with a real XDP program
on the receiving side (docs/lab.md). SPEC is what follows "lab:" in a
source spec:
  [PROGRAM][,rate=PPS][,size=BYTES][,count=N][,duration=D][,port=P]
programs: %v`, labsrc.Programs),
		RunE: parentRun,
	}
	var o labRunOptions
	run := &cobra.Command{
		Use:   "run [--for D] [--all] [SPEC]",
		Short: "build a lab, send its traffic, print its counters and remove it",
		Long: fmt.Sprintf(`Builds a lab (root only), sends its traffic, prints the counters it read
and removes the lab, also when stopped by SIGINT, SIGTERM or SIGPIPE (its
output piped to head). SPEC is what follows "lab:" in a source spec:
[PROGRAM][,rate=PPS][,size=BYTES][,count=N][,duration=D][,port=P]
programs: %v (docs/lab.md)`, labsrc.Programs),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{c, fmt.Errorf("one SPEC at most, got %q", args)}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return status(o.run(args, c.OutOrStdout(), c.ErrOrStderr()))
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return labsrc.Programs, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		},
	}
	run.Flags().DurationVar(&o.runFor, "for", defaultLabFor, "stop after `D` even if the sender is still sending")
	run.Flags().BoolVar(&o.all, "all", false, "print every counter, zeros included")
	c.AddCommand(run, &cobra.Command{
		Use:   "list",
		Short: "list the lab namespaces on this machine and whether their process runs",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return status(runLabList(c.OutOrStdout(), c.ErrOrStderr()))
		},
	}, &cobra.Command{
		Use:   "clean",
		Short: "remove the namespaces of labs whose process died (root only)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return status(runLabClean(c.OutOrStdout(), c.ErrOrStderr()))
		},
	})
	return c
}

// parentRun is the body of a command that only holds subcommands (lab,
// tutorial): without one it prints its usage to stderr, and "help" is
// its help on stdout.
func parentRun(c *cobra.Command, args []string) error {
	if len(args) > 0 && args[0] == "help" {
		writeHelp(c.OutOrStdout(), c)
		return nil
	}
	if len(args) > 0 {
		fmt.Fprintf(c.ErrOrStderr(), "%s: unknown subcommand %q\n\n", c.CommandPath(), args[0])
	}
	writeHelp(c.ErrOrStderr(), c)
	return exitStatus(exitUsage)
}

func runLabClean(stdout, stderr io.Writer) int {
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

// labRunOptions are `ringlab lab run`'s flags.
type labRunOptions struct {
	runFor time.Duration
	all    bool
}

func (o labRunOptions) run(args []string, stdout, stderr io.Writer) int {
	if o.runFor <= 0 {
		fmt.Fprintln(stderr, "ringlab lab run: --for must be positive")
		return exitUsage
	}
	spec := ""
	if len(args) > 0 {
		spec = args[0]
	}
	c, err := labsrc.ParseSpec(spec)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: %v\n", err)
		return exitUsage
	}
	// The lab is removed however the run ends: SIGINT, SIGTERM, or a
	// stdout that stopped reading (| head). With SIGPIPE notified, a
	// write to a closed pipe returns EPIPE instead of killing the
	// process with the namespaces still up.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	defer stop()
	l, err := labsrc.New(c)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: %v\n", err)
		return exitFail
	}
	names := l.Namespaces()
	out := &stickyWriter{w: stdout}
	code := labReport(ctx, readerGone(ctx, stdout), l, o.runFor, o.all, out, stderr)
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: close: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(out, "removed %s and %s\n", names[0], names[1])
	if out.err != nil {
		fmt.Fprintf(stderr, "ringlab lab run: stdout: %v; stopped and removed %s and %s\n", out.err, names[0], names[1])
		return exitFail
	}
	return code
}

// stickyWriter writes to w until a write fails, then keeps the error and
// writes nothing more.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// pipePollEvery is how often readerGone looks whether ctx is done.
const pipePollEvery = 100 * time.Millisecond

// readerGone returns a channel closed once the reader of w, when w is a
// pipe, has gone (ringlab lab run | head -3: head has its lines), so the
// lab stops then rather than at --for; poll(2) reports POLLERR on a
// pipe's writing end once its reading end is closed. It is nil when w is
// no pipe. The goroutine ends with ctx.
func readerGone(ctx context.Context, w io.Writer) <-chan struct{} {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	gone := make(chan struct{})
	fds := []unix.PollFd{{Fd: int32(f.Fd())}} // POLLERR and POLLHUP need not be asked for
	go func() {
		for ctx.Err() == nil {
			n, err := unix.Poll(fds, int(pipePollEvery/time.Millisecond))
			if err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}

// labReport waits for the sender (or runFor, a signal, or the reader of
// stdout to go) and prints what the lab read.
func labReport(ctx context.Context, readerGone <-chan struct{}, l *labsrc.Lab, runFor time.Duration, all bool, stdout, stderr io.Writer) int {
	info := l.Info()
	fmt.Fprintf(stdout, "%s\n%s\n", info.Name, info.Description)
	for _, n := range info.Notes {
		fmt.Fprintf(stdout, "  note: %s\n", n)
	}
	select {
	case <-l.SenderDone():
	case <-time.After(runFor):
	case <-ctx.Done():
	case <-readerGone:
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
	if runs, ok := s.Totals["xdp_prog_run_count"]; ok {
		fmt.Fprintf(stdout, "the kernel ran the program %d times, %d ns a run (BPF run-time stats, on while the lab ran)\n",
			runs, s.Totals["xdp_prog_time_per_run_ns"])
	}
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
