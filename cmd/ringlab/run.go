package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ringlab/engine"
	"ringlab/engine/bpf"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// Limits of a headless run.
const (
	defaultRunPackets = 1_000_000
	maxRunPackets     = 1 << 40
	maxTraceEvents    = 100_000 // --trace: a transcript to read, not a log to store
	maxScenarioBytes  = 1 << 20
	// minInterval bounds --interval from below: a line per microsecond of
	// simulated time is already hundreds of lines per millisecond run.
	minInterval = sim.Duration(time.Microsecond)
)

// loadScenario reads a scenario file, or a preset when arg names one.
func loadScenario(arg string) (scenario.Scenario, error) {
	if s, err := scenario.LookupPreset(arg); err == nil {
		return s, nil
	}
	if !strings.ContainsAny(arg, "./") && !strings.HasSuffix(arg, ".json") {
		if _, err := os.Stat(arg); err != nil {
			return scenario.Scenario{}, fmt.Errorf("%q is neither a preset (%s) nor a file", arg, strings.Join(scenario.PresetNames(), ", "))
		}
	}
	b, err := readInput(arg, maxScenarioBytes, "a scenario")
	if err != nil {
		return scenario.Scenario{}, err
	}
	s, err := scenario.DecodeBytes(b)
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("%s: %w", arg, err)
	}
	return s, nil
}

// readInput reads a file the command line names: a regular file (a named
// pipe or a device would block the read, or never end it) of at most max
// bytes, refused as too large rather than cut short.
func readInput(path string, max int64, what string) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading waits for a writer otherwise.
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s), so not %s", path, st.Mode().Type(), what)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, larger than the %d (%d MiB) %s may have", path, st.Size(), max, max>>20, what)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // it grew while we read it
		return nil, fmt.Errorf("%s: larger than the %d (%d MiB) %s may have", path, max, max>>20, what)
	}
	return b, nil
}

// runOptions are `ringlab run`'s flags.
type runOptions struct {
	packets  uint64
	duration time.Duration
	json     bool
	object   string
	progName string
	trace    int
	costs    bool
	sets     setFlags
	interval time.Duration
	progress *bool // nil: on a terminal only
	pcap     pcapOptions
}

func runCommand() *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:               "run [--packets N | --duration D] [--set KEY=VALUE ...] [--trace N | --interval D] [--json] [--xdp-object FILE [--xdp-program NAME]] [--pcap FILE [--pcap-rate PPS] [--pcap-verbose] [--pcap-out FILE]] [--progress] FILE|PRESET",
		Short:             "run a scenario or preset headless and print a summary",
		Long:              runHelp + "\n" + setHelp + "\nKnobs: " + strings.Join(scenario.KnobKeys(), ", ") + "\n\nPresets: " + strings.Join(scenario.PresetNames(), ", "),
		ValidArgsFunction: completePresets(1),
		RunE: func(c *cobra.Command, args []string) error {
			return status(o.run(args, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	fs := c.Flags()
	fs.Uint64Var(&o.packets, "packets", 0, "run until the driver has received at least `N` packets (one NAPI poll may take a few more; default 1000000 unless --duration)")
	fs.DurationVar(&o.duration, "duration", 0, "run for `D` of simulated time (e.g. 10ms)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of tables")
	fs.StringVar(&o.object, "xdp-object", "", "run the XDP program of a compiled ELF `FILE` in the interpreter")
	fs.StringVar(&o.progName, "xdp-program", "", "with --xdp-object: the program `NAME` in the object (default: the first)")
	fs.IntVar(&o.trace, "trace", 0, "first print the first `N` events, each with the counters and page locations it changed")
	fs.BoolVar(&o.costs, "costs", false, "also print the cost table the run used: each constant's value, default, kind (sourced, estimate, fitted) and source")
	fs.Var(&o.sets, "set", "set a knob or the scenario field at a JSON path, `KEY=VALUE`, before running (repeatable; see above)")
	fs.DurationVar(&o.interval, "interval", 0, "every `D` of simulated time, print the interval's counters as a JSON line (--json: the summary follows as one more)")
	fs.StringVar(&o.pcap.file, "pcap", "", "feed the frames of a capture `FILE` (pcap or pcapng, Ethernet) through the device, driver and XDP program instead of the scenario's traffic, and report each frame's fate")
	fs.Float64Var(&o.pcap.rate, "pcap-rate", 0, "with --pcap: the frames arrive evenly at `PPS` packets per second (default: at their captured times)")
	fs.BoolVar(&o.pcap.verbose, "pcap-verbose", false, "with --pcap: one line per frame (its fate, verdict, drop reason, what the program read and wrote); in --json, every frame's record")
	fs.StringVar(&o.pcap.out, "pcap-out", "", "with --pcap: write every frame to `FILE` as pcapng, its fate, verdict and drop reason in its comment")
	c.MarkFlagFilename("pcap", "pcap", "pcapng", "cap")
	c.MarkFlagFilename("pcap-out", "pcapng")
	progress := fs.Bool("progress", false, "show the run's progress on stderr even when it is not a terminal (--progress=false: not even on one)")
	c.MarkFlagFilename("xdp-object", "o")
	c.PreRun = func(c *cobra.Command, _ []string) {
		if c.Flags().Changed("progress") {
			o.progress = progress
		}
	}
	return c
}

// runHelp is what `ringlab help run` says first.
const runHelp = `Runs a scenario headless and prints a summary: simulated time, packets,
rates, CPU utilisation, what limits the run (the rule ringlab reproduce
uses, over the run's last four fifths), the driver's counters (with
drops.NAME, the drops by reason: the kernel's skb_drop_reason name at the
scenario's kernel, else the model's), the reasons it dropped for with what
that kernel does there (in the JSON, "drop_reasons"), the page_pool stats
and where the pages are. With --trace, the first events come first, one a
line (in the JSON, as "trace"). With --costs, the cost table follows:
each constant sourced (a benchmark, a commit text), an estimate, or fitted
on one published result; the fields a preset fitted are always listed.

With --interval D, every D of simulated time prints one JSON object on a
line (as iperf3's -i with -J): start_ns, end_ns, the packets the driver
received in it, their rate (pps), the counters that moved by how much and
the gauges at its end; the text summary follows, or with --json the
summary as one more line. A long run shows its progress on stderr when
stderr is a terminal (or with --progress); never on stdout.

With --pcap FILE, a capture's frames (pcap or pcapng, Ethernet) replace
the scenario's traffic: each arrives at its captured time (or evenly at
--pcap-rate PPS), with its captured size and bytes, on the queue its
flow hashes to, and goes through the host, the driver and the XDP
program as a generated frame does. The run lasts until every frame is
delivered or dropped (at most --duration, by default a second past the
last arrival); a table of the frames by fate (delivered, dropped,
transmitted, redirected, pending), by XDP verdict and by drop reason
comes first. --pcap-verbose adds one line per frame (in --json, every
frame's record): its flow, queue, fate, verdict, reason, and the bytes
the program read and wrote (offsets from the frame's first byte).
--pcap-out FILE writes every frame as captured to a pcapng file, its
fate, verdict and reason in its comment (tcpdump -v, Wireshark's
pkt_comment). A malformed or truncated capture is refused with the byte
offset of the record at fault.
`

func (o *runOptions) run(args []string, stdout, stderr io.Writer) int {
	packets, duration, asJSON, object, progName, trace, showCosts, sets := &o.packets, &o.duration, &o.json, &o.object, &o.progName, &o.trace, &o.costs, o.sets
	if len(args) != 1 {
		fmt.Fprintln(stderr, "ringlab run: want exactly one scenario file or preset name")
		fmt.Fprintln(stderr, "Run `ringlab run --help` for its usage.")
		return exitUsage
	}
	if *packets > 0 && *duration > 0 {
		fmt.Fprintln(stderr, "ringlab run: --packets and --duration are exclusive")
		return exitUsage
	}
	if *packets > maxRunPackets {
		fmt.Fprintf(stderr, "ringlab run: --packets %d: at most %d\n", *packets, uint64(maxRunPackets))
		return exitUsage
	}
	if *duration < 0 {
		fmt.Fprintln(stderr, "ringlab run: --duration must be positive")
		return exitUsage
	}
	if *trace < 0 || *trace > maxTraceEvents {
		fmt.Fprintf(stderr, "ringlab run: --trace %d: want 0..%d events\n", *trace, maxTraceEvents)
		return exitUsage
	}
	if o.interval < 0 || o.interval > 0 && o.interval < time.Duration(minInterval) {
		fmt.Fprintf(stderr, "ringlab run: --interval %s: want at least %s of simulated time\n", o.interval, time.Duration(minInterval))
		return exitUsage
	}
	if o.interval > 0 && *trace > 0 {
		fmt.Fprintln(stderr, "ringlab run: --interval and --trace are exclusive (both print the run's events as they come)")
		return exitUsage
	}
	if msg := o.checkPcapFlags(); msg != "" {
		fmt.Fprintln(stderr, "ringlab run: "+msg)
		return exitUsage
	}
	rec, err := recipeOf(args[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitUsage
	}
	s, err := buildRecipe(rec, sets)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitUsage
	}
	var spec *bpf.CollectionSpec
	if *object != "" {
		if spec, err = loadObject(*object); err != nil {
			fmt.Fprintf(stderr, "ringlab run: %v\n", err)
			return exitUsage
		}
		x := scenario.XDP{}
		if s.XDP != nil {
			x = *s.XDP
		}
		x.Program = *progName
		s.XDP = &x
	} else if *progName != "" {
		fmt.Fprintln(stderr, "ringlab run: --xdp-program needs --xdp-object")
		return exitUsage
	}
	if o.pcap.file != "" {
		return o.runPcap(s, spec, stdout, stderr)
	}
	w, err := engine.NewWithXDP(s, spec)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitUsage
	}
	boundGarbage()
	start := time.Now()
	// Trace events are written as they run, never held: the largest
	// scenario's first events describe thousands of pages each. In the
	// JSON the trace comes first, the summary's fields after it.
	traced := 0
	if *asJSON && *trace > 0 {
		io.WriteString(stdout, "{\n  \"trace\": [")
	}
	err = w.Trace(*trace, func(e engine.TraceEvent) {
		if *asJSON {
			b, _ := json.MarshalIndent(e, "    ", "  ")
			if traced > 0 {
				io.WriteString(stdout, ",")
			}
			io.WriteString(stdout, "\n    ")
			stdout.Write(b)
		} else {
			fmt.Fprintln(stdout, e)
		}
		traced++
	})
	if *asJSON && *trace > 0 {
		io.WriteString(stdout, "\n  ],")
	}
	if *trace > 0 && !*asJSON {
		fmt.Fprintln(stdout)
	}
	if err == nil {
		err = xdpLooped(w)
	}
	// The trace's events count towards the run: --packets and --duration
	// are from the start.
	// What limits the run is read over its last four fifths, past the
	// start (slow start, the first refill) that a run of a few packets
	// would otherwise be all about.
	n, end := *packets, sim.Time(duration.Nanoseconds())
	if n == 0 && end == 0 {
		n = defaultRunPackets
	}
	r := &runner{w: w, progress: newProgress(stderr, o.progress, n, end), every: sim.Duration(o.interval), out: stdout}
	// The first interval counts from nothing: the world's first refill,
	// done as it is made, is the run's too.
	r.next, r.last = w.Now().Add(r.every), intervalMark{at: w.Now()}
	var mark engine.UsageMark
	if err == nil && end > 0 {
		err = r.runUntil(max(w.Now(), end/5))
		mark = w.MarkUsage()
		if err == nil {
			err = r.runUntil(end)
		}
	} else if err == nil {
		err = r.runPackets(max(w.Received(), n/5))
		mark = w.MarkUsage()
		if err == nil {
			err = r.runPackets(n)
		}
	}
	if err == nil {
		err = r.finish()
	} else {
		r.progress.clear()
	}
	if err != nil {
		if *asJSON && *trace > 0 {
			io.WriteString(stdout, "\n  \"error\": "+strconv.Quote(err.Error())+"\n}\n")
		}
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitFail
	}
	wall := time.Since(start)
	sum := w.Summarize()
	limit := engine.LimitOf(w.UsageBetween(mark, w.MarkUsage()))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := struct {
			engine.Summary
			Limit  engine.Limit   `json:"limit"`
			Fitted []scenario.Fit `json:"fitted,omitempty"`
			Costs  []costRow      `json:"costs,omitempty"`
		}{Summary: sum, Limit: limit, Fitted: s.Fitted}
		if *showCosts {
			out.Costs = costRows(w)
		}
		if o.interval > 0 {
			// JSON lines: the summary is one more.
			b, err := json.Marshal(out)
			if err != nil {
				fmt.Fprintf(stderr, "ringlab run: %v\n", err)
				return exitFail
			}
			fmt.Fprintf(stdout, "%s\n", b)
			return exitOK
		}
		if *trace > 0 {
			// The object is open: its fields follow the trace.
			b, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				fmt.Fprintf(stderr, "ringlab run: %v\n", err)
				return exitFail
			}
			stdout.Write(b[1:]) // without its "{"
			io.WriteString(stdout, "\n")
			return exitOK
		}
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "ringlab run: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	printSummary(stdout, sum, wall, limit, "the run's last four fifths")
	printFitted(stdout, &w.Scenario)
	if *showCosts {
		printCosts(stdout, costRows(w))
	}
	return exitOK
}

// costRow is one cost constant as a run used it.
type costRow struct {
	Name      string `json:"name"`
	NS        int64  `json:"ns"`
	DefaultNS int64  `json:"default_ns"`
	// Kind is the default's: sourced, estimate or fitted (on Fit).
	Kind   string `json:"kind"`
	Fit    string `json:"fit,omitempty"`
	Source string `json:"source"`
	// Override is set when the scenario overrides the constant: "fitted
	// on R1 (r1-upstream)" when it declares the override fitted, else
	// its cost_notes.
	Override string `json:"override,omitempty"`
}

// costRows lists the world's cost table, overrides marked.
func costRows(w *engine.World) []costRow {
	s := &w.Scenario
	var out []costRow
	for _, c := range w.Sim.Costs.Table() {
		r := costRow{Name: c.Name, NS: int64(c.Value), DefaultNS: int64(c.Default), Kind: c.Kind.String(), Fit: c.Fit, Source: c.Source}
		if _, ok := s.Costs[c.Name]; ok {
			r.Override = "override: " + s.CostNotes
			for _, f := range s.Fitted {
				if f.Field == "costs."+c.Name {
					r.Override = fmt.Sprintf("fitted on %s (%s): %s", f.Result, f.Row, f.Why)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// printFitted says which of the scenario's fields are fitted, not
// sourced.
func printFitted(w io.Writer, s *scenario.Scenario) {
	if len(s.Fitted) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfitted, not sourced (the scenario's \"fitted\"):")
	for _, f := range s.Fitted {
		fmt.Fprintf(w, "  %s on %s (%s): %s\n", f.Field, f.Result, f.Row, f.Why)
	}
}

// printCosts prints the cost table: value, kind, and where it comes from.
func printCosts(w io.Writer, rows []costRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ncost\tns\tkind\tsource")
	for _, r := range rows {
		kind := r.Kind
		if r.Fit != "" {
			kind += " on " + r.Fit
		}
		if r.Override != "" {
			kind = fmt.Sprintf("override (default %d ns, %s)", r.DefaultNS, kind)
		}
		src := r.Source
		if r.Override != "" {
			src = r.Override
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.Name, r.NS, kind, src)
	}
	tw.Flush()
}

// setHelp is what `ringlab help run` says about --set.
const setHelp = `--set KEY=VALUE sets one of the page's knobs by name, with the consequences
the kernel forces (cpus=1 moves what pointed past the last CPU; page_pool=off
goes back to page_frag with ring-mapped DMA); the knobs are listed below.
Any other KEY is a field's JSON path as in docs/scenario.md
(traffic.size, driver.iommu, xdp.args.cpu, costs.dma_map_iommu,
traffic.sizes.0), which sets that field alone; a leading dot spells the
field a knob shares its name with (.cpus=1). VALUE is JSON (9000, true,
[64,1500], {"size":128}: an object merges into the one it replaces, and an
object, array or null is always the field's); a bare word is a string, so
kernel=6.10 is "6.10" and not the number 6.1. The sets apply in order and
the result is validated once, so changes that only make sense together can
be made together; an error names the --set at fault and its place. Setting
a field the preset declares fitted drops that declaration (see "fitted" in
ringlab preset NAME). The preset and the sets are a recipe, written the same
in a page's link (?recipe=PRESET+KEY=VALUE+...), a room and a tutorial.
Example: ringlab run --set kernel=6.0 --set mtu=4000 --set traffic.size=4014 r2-mtu9000-after
`

// setFlags collects --set KEY=VALUE, in order: the changes of the run's
// recipe (scenario.Recipe), read by scenario.ParseChange.
type setFlags []string

func (f *setFlags) String() string { return strings.Join(*f, " ") }

// Type names --set's value in help (pflag.Value).
func (f *setFlags) Type() string { return "KEY=VALUE" }

func (f *setFlags) Set(v string) error {
	*f = append(*f, v)
	return nil
}

// recipeOf is the recipe a run builds: the preset or scenario file arg
// names, then the --set changes in order. An error names the --set at
// fault and its place.
func recipeOf(arg string, sets []string) (scenario.Recipe, error) {
	r := scenario.Recipe{Preset: arg}
	if !slices.Contains(scenario.PresetNames(), arg) {
		s, err := loadScenario(arg)
		if err != nil {
			return r, err
		}
		r = scenario.Recipe{Scenario: &s}
	}
	for i, kv := range sets {
		c, err := scenario.ParseChange(kv)
		if err != nil {
			return r, fmt.Errorf("--set %s (change %d): %w", kv, i+1, err)
		}
		r.Changes = append(r.Changes, c)
	}
	return r, nil
}

// buildRecipe builds the run's scenario (scenario.Recipe.Build), a change
// refused named as the --set it came from.
func buildRecipe(r scenario.Recipe, sets []string) (scenario.Scenario, error) {
	s, err := r.Build()
	if ce, ok := errors.AsType[*scenario.ChangeError](err); ok && ce.Index < len(sets) {
		return s, fmt.Errorf("--set %s (change %d): %w", sets[ce.Index], ce.Index+1, ce.Err)
	}
	return s, err
}

// loadObject reads an XDP ELF object.
func loadObject(path string) (*bpf.CollectionSpec, error) {
	b, err := readInput(path, bpf.MaxELFSize, "an ELF object")
	if err != nil {
		return nil, err
	}
	spec, err := bpf.LoadELF(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// boundGarbage sets a soft memory limit once the world is built: what a
// run allocates afterwards (a trace's every event) is garbage, and Go's
// collector otherwise lets it grow to the live heap's size again
// (GOGC=100), 2.3 GB more for the largest scenario's 2.3 GB world. The
// limit is the world and an eighth (at least 128 MiB) more; GOMEMLIMIT,
// when set, wins.
func boundGarbage() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := int64(ms.HeapAlloc)
	debug.SetMemoryLimit(live + max(live/8, 128<<20))
}

// xdpLooped is an error once a queue's XDP program ran out of its
// instruction budget: a loop the kernel's verifier would refuse, which
// the interpreter stops after bpf's budget on every packet (each one
// then counted an XDP_ABORTED drop), so the run would take minutes to
// say nothing else.
func xdpLooped(w *engine.World) error {
	for i, rq := range w.Driver.RQ {
		if f := rq.LastFault; f.Faulted() && f.Reason == bpf.FaultBudget {
			return fmt.Errorf("the XDP program on queue %d ran out of its instruction budget (%d instructions on one packet, %s): it loops, and the kernel's verifier would refuse it", i, bpf.DefaultBudget, f)
		}
	}
	return nil
}

// printSummary prints the run's summary; over says which part of the run
// the limit was read over.
func printSummary(w io.Writer, s engine.Summary, wall time.Duration, limit engine.Limit, over string) {
	fmt.Fprintf(w, "scenario %s (%s receive buffers)\n", s.Scenario, s.Mode)
	fmt.Fprintf(w, "simulated %s, %d packets, %.3f Mpps, %.3f Gbit/s (%d events in %s of wall time)\n",
		time.Duration(s.SimTimeNS), s.Packets, s.PPS/1e6, s.Gbps, s.Events, wall.Round(time.Millisecond))
	fmt.Fprint(w, "cpu utilisation:")
	for i, u := range s.CPUs {
		fmt.Fprintf(w, " cpu%d %.0f%%", i, u*100)
	}
	fmt.Fprintln(w)
	for i, cs := range s.CPUList {
		fmt.Fprintf(w, "cpu%d:", i)
		for _, c := range cs {
			fmt.Fprintf(w, " %s %d", c.Name, c.Value)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "limited by (over %s): %s\n", over, limit.Why)
	for _, f := range s.XDPFaults {
		fmt.Fprintf(w, "XDP program aborted (last fault): %s\n", f)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ncounter\tvalue")
	for _, c := range s.CounterList {
		if strings.HasPrefix(c.Name, "rx_pp_") {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	if len(s.Drops) > 0 {
		fmt.Fprintln(tw, "\ndropped for\tpackets\tin the kernel")
		for _, d := range s.Drops {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", d.Name, d.Count, d.Kernel)
		}
	}
	fmt.Fprintln(tw, "\npage_pool\tvalue")
	for _, c := range s.PagePoolList {
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	fmt.Fprintln(tw, "\npages in\tcount")
	locs := make([]string, 0, len(s.Pages))
	for l := range s.Pages {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	for _, l := range locs {
		if s.Pages[l] != 0 {
			fmt.Fprintf(tw, "%s\t%d\n", l, s.Pages[l])
		}
	}
	tw.Flush()
}

// finite returns &v, or nil (JSON null) for NaN.
func finite(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// fmtRatio prints a ratio, or "-" when it is undefined.
func fmtRatio(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.3g", v)
}

func fmtFig(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
