package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"text/tabwriter"
	"time"

	"ringlab/engine"
	"ringlab/engine/scenario"
)

// Defaults and limits of `ringlab bench`.
const (
	defaultBenchPackets = 3_000_000 // packets per timed run of a preset
	defaultBenchRuns    = 5         // timed runs per preset; the median is reported
	benchWarmup         = 200_000   // packets run before timing: rings, pools and caches reach steady state
	maxBenchPackets     = 1 << 32
	maxBenchRuns        = 100
	// memoryRunPackets is how long the memory case runs before the heap is
	// measured: long enough for every ring, pool and skb cache to fill.
	memoryRunPackets = 200_000
	// wasmPath is where `make wasm` leaves the WebAssembly build.
	wasmPath = "web/main.wasm"
)

// notMeasuredHere is the note of a case ringlab bench cannot run.
const notMeasuredHere = "not measured here: needs the browser/server"

// benchResult is one row of `ringlab bench`. Value is nil when the case was
// not measured; Holds is nil when there is nothing to compare.
type benchResult struct {
	Name   string   `json:"name"`
	Value  *float64 `json:"value"`
	Unit   string   `json:"unit"`
	Target string   `json:"target"`
	Holds  *bool    `json:"holds"`
	Note   string   `json:"note,omitempty"`
}

// benchCase is one case of the table: run measures it, or is nil
// when it needs the browser or the server.
type benchCase struct {
	name   string
	unit   string
	target string
	// atLeast / atMost: the target as a bound on the value (one of them).
	atLeast, atMost float64
	// run returns the value, or a negative value with a note when the
	// case cannot run (a missing build artifact).
	run func(o benchOptions) (value float64, note string, err error)
}

type benchOptions struct {
	packets uint64
	runs    int
	stderr  io.Writer
}

// benchCases lists the cases in the order.
func benchCases() []benchCase {
	preset := func(name string) func(benchOptions) (float64, string, error) {
		return func(o benchOptions) (float64, string, error) { return benchPresetRate(name, o) }
	}
	return []benchCase{
		{name: "engine-xdp-drop", unit: "Mpps", target: ">= 24", atLeast: 24, run: preset("xdp-drop")},
		{name: "engine-xdp-pass", unit: "Mpps", target: ">= 8", atLeast: 8, run: preset("xdp-pass")},
		{name: "engine-cpumap", unit: "Mpps", target: ">= 8", atLeast: 8, run: preset("cpumap")},
		{name: "engine-allocs-per-packet", unit: "allocs/packet", target: "0", atMost: 0, run: benchAllocs},
		{name: "engine-memory-4x4096", unit: "MiB", target: "<= 128", atMost: 128, run: benchMemory},
		{name: "wasm-engine-xdp-drop", unit: "fraction of native", target: ">= 0.33", atLeast: 1.0 / 3},
		{name: "wasm-size-gzip", unit: "MiB", target: "<= 4", atMost: 4, run: benchWasmSize},
		{name: "page-load-first-frame", unit: "s", target: "<= 2", atMost: 2},
		{name: "draw-default-view", unit: "fraction of empty scene fps", target: ">= 0.85", atLeast: 0.85},
		{name: "server-1000-clients-p99", unit: "ms", target: "<= 100", atMost: 100},
		{name: "server-1000-clients-lost", unit: "snapshots", target: "0", atMost: 0},
		{name: "server-1000-clients-memory", unit: "MiB", target: "<= 300", atMost: 300},
		{name: "host-source-10hz-cpu", unit: "% of one core", target: "<= 2", atMost: 2},
	}
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array of {name, value, unit, target, holds, note} instead of a table")
	packets := fs.Uint64("packets", defaultBenchPackets, "simulated `N` packets per timed run of an engine preset")
	runs := fs.Int("runs", defaultBenchRuns, "timed `R` runs per engine preset; the median is reported")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: ringlab bench [--json] [--packets N] [--runs R]\n\n"+
			"Runs the performance cases of BENCHMARKS.md that need neither a browser nor\n"+
			"the server, prints each value next to its target and says which targets\n"+
			"hold. Engine rates are simulated packets per second of wall time on one\n"+
			"core: run on an otherwise idle machine.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "ringlab bench: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *packets < 1 || *packets > maxBenchPackets {
		fmt.Fprintf(stderr, "ringlab bench: --packets %d: want 1..%d\n", *packets, uint64(maxBenchPackets))
		return exitUsage
	}
	if *runs < 1 || *runs > maxBenchRuns {
		fmt.Fprintf(stderr, "ringlab bench: --runs %d: want 1..%d\n", *runs, maxBenchRuns)
		return exitUsage
	}
	o := benchOptions{packets: *packets, runs: *runs, stderr: stderr}
	results, err := measureAll(benchCases(), o)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab bench: %v\n", err)
		return exitFail
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			fmt.Fprintf(stderr, "ringlab bench: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	printBench(stdout, results)
	return exitOK
}

// measureAll runs every case that can run here.
func measureAll(cases []benchCase, o benchOptions) ([]benchResult, error) {
	out := make([]benchResult, 0, len(cases))
	for _, c := range cases {
		r := benchResult{Name: c.name, Unit: c.unit, Target: c.target}
		if c.run == nil {
			r.Note = notMeasuredHere
			out = append(out, r)
			continue
		}
		fmt.Fprintf(o.stderr, "ringlab bench: %s\n", c.name)
		v, note, err := c.run(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		r.Note = note
		if v >= 0 { // a negative value: the case could not run here, note says why
			holds := v <= c.atMost
			if c.atLeast > 0 {
				holds = v >= c.atLeast
			}
			r.Value, r.Holds = &v, &holds
		}
		out = append(out, r)
	}
	return out, nil
}

func printBench(w io.Writer, results []benchResult) {
	fmt.Fprintf(w, "ringlab bench on %s/%s, %d CPUs (GOMAXPROCS %d), %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tvalue\tunit\ttarget\tholds")
	for _, r := range results {
		v, holds := "-", "-"
		if r.Value != nil {
			v = fmt.Sprintf("%.3g", *r.Value)
			holds = "no"
			if *r.Holds {
				holds = "yes"
			}
		}
		if r.Note != "" {
			holds += " (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, v, r.Unit, r.Target, holds)
	}
	tw.Flush()
}

// benchPresetRate builds a preset, runs it to steady state, then times
// o.runs runs of o.packets packets and returns the median rate in
// simulated Mpps per second of wall time. The garbage collector is kept
// out of the timed runs' way by collecting before each.
func benchPresetRate(name string, o benchOptions) (float64, string, error) {
	s, err := scenario.LookupPreset(name)
	if err != nil {
		return 0, "", err
	}
	w, err := engine.New(s)
	if err != nil {
		return 0, "", err
	}
	if err := w.RunPackets(benchWarmup); err != nil {
		return 0, "", err
	}
	rates := make([]float64, 0, o.runs)
	for i := 0; i < o.runs; i++ {
		runtime.GC()
		before := w.Received()
		start := time.Now()
		if err := w.RunPackets(o.packets); err != nil {
			return 0, "", err
		}
		wall := time.Since(start)
		rates = append(rates, float64(w.Received()-before)/wall.Seconds()/1e6)
	}
	sort.Float64s(rates)
	return rates[len(rates)/2], fmt.Sprintf("median of %d runs, %.3g..%.3g", len(rates), rates[0], rates[len(rates)-1]), nil
}

// benchAllocs runs every engine preset of the rate cases after a warm-up
// and counts heap allocations per packet received.
func benchAllocs(o benchOptions) (float64, string, error) {
	var allocs, packets uint64
	for _, name := range []string{"xdp-drop", "xdp-pass", "cpumap"} {
		s, err := scenario.LookupPreset(name)
		if err != nil {
			return 0, "", err
		}
		w, err := engine.New(s)
		if err != nil {
			return 0, "", err
		}
		if err := w.RunPackets(benchWarmup); err != nil {
			return 0, "", err
		}
		var a, b runtime.MemStats
		before := w.Received()
		runtime.ReadMemStats(&a)
		if err := w.RunPackets(min(o.packets, 1_000_000)); err != nil {
			return 0, "", err
		}
		runtime.ReadMemStats(&b)
		allocs += b.Mallocs - a.Mallocs
		packets += w.Received() - before
	}
	return float64(allocs) / float64(packets), "xdp-drop, xdp-pass, cpumap after warm-up", nil
}

// memoryScenario is the memory case: the xdp-drop preset with 4 queues on 4
// CPUs and 4096-entry receive and send rings.
func memoryScenario() (scenario.Scenario, error) {
	s, err := scenario.LookupPreset("xdp-drop")
	if err != nil {
		return s, err
	}
	s.Name = "memory-4x4096"
	s.CPUs, s.Queues = 4, 4
	s.RingSize, s.TxRingSize = 4096, 4096
	return s, s.Validate()
}

// benchMemory builds the memory case's world, runs it until every ring has
// been filled and used, and returns the Go heap it holds (live heap after
// a collection, minus the heap before it was built).
func benchMemory(o benchOptions) (float64, string, error) {
	s, err := memoryScenario()
	if err != nil {
		return 0, "", err
	}
	base := liveHeap()
	w, err := engine.New(s)
	if err != nil {
		return 0, "", err
	}
	if err := w.RunPackets(memoryRunPackets); err != nil {
		return 0, "", err
	}
	used := liveHeap() - base
	runtime.KeepAlive(w)
	return float64(used) / (1 << 20), "live heap after a collection, world built and run", nil
}

func liveHeap() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// benchWasmSize gzips web/main.wasm (built by `make wasm`) when it is
// there.
func benchWasmSize(benchOptions) (float64, string, error) {
	b, err := os.ReadFile(wasmPath)
	if errors.Is(err, os.ErrNotExist) {
		return -1, "not measured: run `make wasm` first (" + wasmPath + ")", nil
	}
	if err != nil {
		return 0, "", err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return 0, "", err
	}
	if _, err := zw.Write(b); err != nil {
		return 0, "", err
	}
	if err := zw.Close(); err != nil {
		return 0, "", err
	}
	return float64(buf.Len()) / (1 << 20), fmt.Sprintf("%s, %d bytes raw, gzip -9", wasmPath, len(b)), nil
}
