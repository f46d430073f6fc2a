package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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
	f, err := os.Open(arg)
	if err != nil {
		return scenario.Scenario{}, err
	}
	defer f.Close()
	s, err := scenario.Decode(io.LimitReader(f, maxScenarioBytes))
	if err != nil {
		return scenario.Scenario{}, fmt.Errorf("%s: %w", arg, err)
	}
	return s, nil
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	packets := fs.Uint64("packets", 0, "run until the driver has received `N` packets (default 1000000 unless --duration)")
	duration := fs.Duration("duration", 0, "run for `D` of simulated time (e.g. 10ms)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	object := fs.String("xdp-object", "", "run the XDP program of a compiled ELF `FILE` in the interpreter")
	progName := fs.String("xdp-program", "", "with --xdp-object: the program `NAME` in the object (default: the first)")
	trace := fs.Int("trace", 0, "first print the first `N` events, each with the counters and page locations it changed")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ringlab run [--packets N | --duration D] [--trace N] [--json] [--xdp-object FILE [--xdp-program NAME]] FILE|PRESET\n\n")
		fmt.Fprintf(stderr, "Runs a scenario headless and prints a summary: simulated time, packets,\nrates, CPU utilisation, the driver's counters, the page_pool stats and\nwhere the pages are. With --trace, the first events come first, one a\nline (in the JSON, as \"trace\").\n\nPresets: %s\n\nFlags:\n", strings.Join(scenario.PresetNames(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "ringlab run: want exactly one scenario file or preset name")
		fs.Usage()
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
	s, err := loadScenario(fs.Arg(0))
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
	w, err := engine.NewWithXDP(s, spec)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitUsage
	}
	start := time.Now()
	var events []engine.TraceEvent
	err = w.Trace(*trace, func(e engine.TraceEvent) {
		if *asJSON {
			events = append(events, e)
		} else {
			fmt.Fprintln(stdout, e)
		}
	})
	if *trace > 0 && !*asJSON {
		fmt.Fprintln(stdout)
	}
	// The trace's events count towards the run: --packets and --duration
	// are from the start.
	if err == nil && *duration > 0 {
		err = w.RunUntil(sim.Time(duration.Nanoseconds()))
	} else if err == nil {
		n := *packets
		if n == 0 {
			n = defaultRunPackets
		}
		if got := w.Received(); got < n {
			err = w.RunPackets(n - got)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitFail
	}
	wall := time.Since(start)
	sum := w.Summarize()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := struct {
			engine.Summary
			Trace []engine.TraceEvent `json:"trace,omitempty"`
		}{sum, events}
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "ringlab run: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	printSummary(stdout, sum, wall)
	return exitOK
}

// loadObject reads an XDP ELF object.
func loadObject(path string) (*bpf.CollectionSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	spec, err := bpf.LoadELF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

func printSummary(w io.Writer, s engine.Summary, wall time.Duration) {
	fmt.Fprintf(w, "scenario %s (%s receive buffers)\n", s.Scenario, s.Mode)
	fmt.Fprintf(w, "simulated %s, %d packets, %.3f Mpps, %.3f Gbit/s (%d events in %s of wall time)\n",
		time.Duration(s.SimTimeNS), s.Packets, s.PPS/1e6, s.Gbps, s.Events, wall.Round(time.Millisecond))
	fmt.Fprint(w, "cpu utilisation:")
	for i, u := range s.CPUs {
		fmt.Fprintf(w, " cpu%d %.0f%%", i, u*100)
	}
	fmt.Fprintln(w)
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

func runReproduce(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ringlab reproduce [--json]\n\nRuns every published configuration of docs/published.md (R1..R4) and prints\nthe published figure, the simulated one, and each configuration's ratio to\nits baseline next to the published ratio.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlagsOnly(fs, args, stderr, "ringlab reproduce"); !ok {
		return code
	}
	rows, err := engine.Reproduce(func(i, n int, r scenario.Reproduction) {
		fmt.Fprintf(stderr, "ringlab reproduce: [%d/%d] %s %s %s\n", i+1, n, r.ID, r.Config, r.Metric)
	})
	if err != nil {
		fmt.Fprintf(stderr, "ringlab reproduce: %v\n", err)
		return exitFail
	}
	if *asJSON {
		type row struct {
			ID             string   `json:"id"`
			Config         string   `json:"config"`
			Baseline       string   `json:"baseline"`
			Unit           string   `json:"unit"`
			Metric         string   `json:"metric"`
			Published      float64  `json:"published"`
			Simulated      float64  `json:"simulated"`
			Ratio          *float64 `json:"ratio"`
			PublishedRatio *float64 `json:"published_ratio"`
		}
		out := make([]row, 0, len(rows))
		for _, r := range rows {
			out = append(out, row{r.ID, r.Config, r.Baseline, r.Unit, r.Metric, r.Published, r.Simulated, finite(r.Ratio), finite(r.PublishedRatio)})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "ringlab reproduce: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "id\tconfig\tmetric\tunit\tpublished\tsimulated\tratio\tpublished ratio\t")
	for _, r := range rows {
		ratio, pr := "", ""
		if r.Baseline != "" {
			ratio, pr = fmtRatio(r.Ratio), fmtRatio(r.PublishedRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.ID, r.Config, r.Metric, r.Unit, fmtFig(r.Published), fmtFig(r.Simulated), ratio, pr)
	}
	tw.Flush()
	return exitOK
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
