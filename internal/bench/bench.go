// Package bench is `ringlab-bench`: the performance cases of
// BENCHMARKS.md, each measured and held to its target: the engine natively
// and in WebAssembly, the server under 1000 WebSocket clients (a `ringlab
// serve` child), the host source's cost, and the page in Chromium.
package bench

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/internal/cli"
)

// Defaults and limits of `ringlab-bench`.
const (
	defaultBenchPackets = 3_000_000 // packets per timed run of a preset
	defaultBenchRuns    = 5         // timed runs per preset; the median is reported
	quickBenchPackets   = 500_000   // the same with --quick
	quickBenchRuns      = 1
	benchWarmup         = 200_000 // packets run before timing: rings, pools and caches reach steady state
	maxBenchPackets     = 1 << 32
	maxBenchRuns        = 100
	// memoryRunPackets is how long the memory case runs before the heap is
	// measured: long enough for every ring, pool and skb cache to fill.
	memoryRunPackets = 200_000
	// defaultWebDir is where `make wasm` leaves the page with the
	// WebAssembly build, relative to the repository root.
	defaultWebDir = "web"
	// wasmFile is the raw WebAssembly build in the web directory.
	wasmFile = "main.wasm"
)

// benchResult is one row of `ringlab-bench`. Value is nil when the case was
// not measured (Note says why); Holds is nil when there is nothing to
// compare.
type benchResult struct {
	Name   string   `json:"name"`
	Value  *float64 `json:"value"`
	Unit   string   `json:"unit"`
	Target string   `json:"target"`
	Holds  *bool    `json:"holds"`
	Note   string   `json:"note,omitempty"`
}

// benchCase is one performance target: a row of BENCHMARKS.md's table.
type benchCase struct {
	name   string
	unit   string
	target string
	// atLeast / atMost: the target as a bound on the value (one of them).
	atLeast, atMost float64
	// run returns the value, or a negative value with a note when the
	// case cannot run here (a missing build artifact, no Chromium).
	run func(b *benchRun) (value float64, note string, err error)
	// browser: the case uses the browser the run shares; it is closed
	// before a case that does not, so that it does not run beside them.
	browser bool
}

type benchOptions struct {
	packets uint64
	runs    int
	quick   bool   // shorter runs: fewer clients, fewer seconds, one page load
	web     string // the page's directory, with `make wasm`'s output
	stderr  io.Writer
}

// benchRun is one `ringlab-bench`: its options and the measurements that
// feed several rows (the server load gives three, the native rate of
// xdp-drop is also the wasm case's reference), each made once.
type benchRun struct {
	benchOptions
	native      map[string]presetRate // by preset, measured in this run
	serverOnce  once[serverLoad]
	browserOnce once[*browserEnv]
}

// once is a measurement made on first use and kept for the run.
type once[T any] struct {
	done bool
	v    T
	err  error
}

func (o *once[T]) get(f func() (T, error)) (T, error) {
	if !o.done {
		o.v, o.err = f()
		o.done = true
	}
	return o.v, o.err
}

// progress prints a line about a long case on stderr.
func (b *benchRun) progress(format string, args ...any) {
	fmt.Fprintf(b.stderr, "ringlab-bench:   "+format+"\n", args...)
}

// presetRate is the median rate of an engine preset in Mpps and its note.
type presetRate struct {
	mpps float64
	note string
}

// nativeRate measures an engine preset's rate once per run.
func (b *benchRun) nativeRate(preset string) (float64, string, error) {
	if r, ok := b.native[preset]; ok {
		return r.mpps, r.note, nil
	}
	v, note, err := benchPresetRate(preset, b.benchOptions)
	if err == nil {
		b.native[preset] = presetRate{v, note}
	}
	return v, note, err
}

// benchCases lists the cases in the order BENCHMARKS.md lists them.
func benchCases() []benchCase {
	preset := func(name string) func(*benchRun) (float64, string, error) {
		return func(b *benchRun) (float64, string, error) { return b.nativeRate(name) }
	}
	return []benchCase{
		{name: "engine-xdp-drop", unit: "Mpps", target: ">= 24", atLeast: 24, run: preset("xdp-drop")},
		{name: "engine-xdp-pass", unit: "Mpps", target: ">= 8", atLeast: 8, run: preset("xdp-pass")},
		{name: "engine-cpumap", unit: "Mpps", target: ">= 8", atLeast: 8, run: preset("cpumap")},
		{name: "engine-allocs-per-packet", unit: "allocs/packet", target: "0", atMost: 0, run: benchAllocs},
		{name: "engine-memory-4x4096", unit: "MiB", target: "<= 128", atMost: 128, run: benchMemory},
		{name: "wasm-engine-xdp-drop", unit: "fraction of native", target: ">= 0.33", atLeast: 1.0 / 3, run: benchWasmEngine, browser: true},
		{name: "wasm-size-gzip", unit: "MiB", target: "<= 4", atMost: 4, run: benchWasmSize},
		{name: "page-load-first-frame", unit: "s", target: "<= 2", atMost: 2, run: benchPageLoad, browser: true},
		{name: "draw-default-view", unit: "fraction of empty scene fps", target: ">= 0.85", atLeast: 0.85, run: benchDrawing, browser: true},
		{name: "server-1000-clients-p99", unit: "ms", target: "<= 100", atMost: 100, run: serverRow(serverP99)},
		{name: "server-1000-clients-lost", unit: "snapshots", target: "0", atMost: 0, run: serverRow(serverLost)},
		{name: "server-1000-clients-memory", unit: "MiB", target: "<= 300", atMost: 300, run: serverRow(serverMemory)},
		{name: "host-source-10hz-cpu", unit: "% of one core", target: "<= 2", atMost: 2, run: benchHostSource},
	}
}

// selectCases keeps the cases whose name is, or starts with, one of only
// (all of them when only is empty). A name that matches nothing is an
// error.
func selectCases(cases []benchCase, only []string) ([]benchCase, error) {
	if len(only) == 0 {
		return cases, nil
	}
	var out []benchCase
	for _, c := range cases {
		for _, o := range only {
			if strings.HasPrefix(c.name, o) {
				out = append(out, c)
				break
			}
		}
	}
	for _, o := range only {
		if !slices.ContainsFunc(cases, func(c benchCase) bool { return strings.HasPrefix(c.name, o) }) {
			names := make([]string, len(cases))
			for i, c := range cases {
				names[i] = c.name
			}
			return nil, fmt.Errorf("--only %s: no case is named so or starts so (cases: %s)", o, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// Run is ringlab-bench: it parses args (the flags), runs the cases asked
// for and prints them, and returns the exit status.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("ringlab-bench", pflag.ContinueOnError)
	fs.SortFlags = false
	asJSON := fs.Bool("json", false, "print a JSON array of {name, value, unit, target, holds, note} instead of a table")
	packets := fs.Uint64("packets", defaultBenchPackets, "simulated `N` packets per timed run of an engine preset (--quick: 500000)")
	runs := fs.Int("runs", defaultBenchRuns, "timed `R` runs per engine preset; the median is reported (--quick: 1)")
	quick := fs.Bool("quick", false, "short runs: 100 WebSocket clients for 3 s, one page load, a few seconds per browser and host case")
	var only cli.ListFlag
	fs.Var(&only, "only", "run only the `cases` whose names are, or start with, one of these, comma-separated (e.g. server,host-source)")
	web := fs.String("web", defaultWebDir, "the page's `directory`, where `make wasm` left main.wasm, main.wasm.gz and wasm_exec.js")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: ringlab-bench [--json] [--quick] [--only CASE,...] [--packets N] [--runs R] [--web DIR]\n\n"+
			"Runs the performance cases of BENCHMARKS.md, prints each value next to\n"+
			"its target and says which targets hold: the engine natively, the\n"+
			"server under 1000 WebSocket clients (a `ringlab serve` child on\n"+
			"loopback: the ringlab beside this binary, else on PATH), the host\n"+
			"source's CPU cost, and, when Chromium is found\n"+
			"and `make wasm` has run, the page in the browser. Engine rates are\n"+
			"simulated packets per second of wall time on one core: run on an\n"+
			"otherwise idle machine, from the repository root. The full run takes\n"+
			"about three minutes; progress goes to stderr.\n\nFlags:\n")
		fmt.Fprint(stdout, fs.FlagUsages())
	}
	if code, ok := cli.ParseFlagsOnly(fs, args, stderr, "ringlab-bench"); !ok {
		return code
	}
	if *quick && !fs.Changed("packets") {
		*packets = quickBenchPackets
	}
	if *quick && !fs.Changed("runs") {
		*runs = quickBenchRuns
	}
	if *packets < 1 || *packets > maxBenchPackets {
		fmt.Fprintf(stderr, "ringlab-bench: --packets %d: want 1..%d\n", *packets, uint64(maxBenchPackets))
		return cli.ExitUsage
	}
	if *runs < 1 || *runs > maxBenchRuns {
		fmt.Fprintf(stderr, "ringlab-bench: --runs %d: want 1..%d\n", *runs, maxBenchRuns)
		return cli.ExitUsage
	}
	cases, err := selectCases(benchCases(), only)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab-bench: %v\n", err)
		return cli.ExitUsage
	}
	o := benchOptions{packets: *packets, runs: *runs, quick: *quick, web: *web, stderr: stderr}
	results, failed := measureAll(cases, o)
	code := cli.ExitOK
	if failed > 0 {
		fmt.Fprintf(stderr, "ringlab-bench: %d cases failed (their notes say how)\n", failed)
		code = cli.ExitFail
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			fmt.Fprintf(stderr, "ringlab-bench: %v\n", err)
			return cli.ExitFail
		}
		return code
	}
	printBench(stdout, results)
	return code
}

// measureAll runs the cases in order. A case that fails gets a row without
// a value whose note starts "failed: ", and the others still run; failed
// counts them.
func measureAll(cases []benchCase, o benchOptions) (out []benchResult, failed int) {
	b := &benchRun{benchOptions: o, native: map[string]presetRate{}}
	defer b.close()
	out = make([]benchResult, 0, len(cases))
	for _, c := range cases {
		r := benchResult{Name: c.name, Unit: c.unit, Target: c.target}
		if !c.browser {
			b.closeBrowser()
		}
		fmt.Fprintf(o.stderr, "ringlab-bench: %s\n", c.name)
		v, note, err := c.run(b)
		if err != nil {
			fmt.Fprintf(o.stderr, "ringlab-bench: %s: %v\n", c.name, err)
			failed++
			v, note = -1, failedPrefix+err.Error()
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
	return out, failed
}

// failedPrefix starts the note of a case that failed.
const failedPrefix = "failed: "

// close releases what the run kept for several rows.
func (b *benchRun) close() {
	if b.browserOnce.done && b.browserOnce.v != nil {
		b.browserOnce.v.close()
	}
}

// closeBrowser closes the shared browser, if one runs; the page stays
// served for a later case.
func (b *benchRun) closeBrowser() {
	if b.browserOnce.done && b.browserOnce.v != nil {
		b.browserOnce.v.closeBrowser()
	}
}

func printBench(w io.Writer, results []benchResult) {
	fmt.Fprintf(w, "ringlab-bench on %s/%s, %d CPUs (GOMAXPROCS %d), %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tvalue\tunit\ttarget\tholds")
	for _, r := range results {
		v, holds := "-", "-"
		if r.Value != nil {
			v = formatValue(*r.Value)
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

// formatValue prints three significant digits, and large values whole.
func formatValue(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// warmWorld builds a preset's world and runs it to steady state
// (benchWarmup packets), so that what is timed next is the steady state.
func warmWorld(name string) (*engine.World, error) {
	s, err := scenario.LookupPreset(name)
	if err != nil {
		return nil, err
	}
	w, err := engine.New(s)
	if err != nil {
		return nil, err
	}
	return w, w.RunPackets(benchWarmup)
}

// benchPresetRate builds a preset, runs it to steady state, then times
// o.runs runs of o.packets packets and returns the median rate in
// simulated Mpps per second of wall time. The garbage collector is kept
// out of the timed runs' way by collecting before each.
func benchPresetRate(name string, o benchOptions) (float64, string, error) {
	w, err := warmWorld(name)
	if err != nil {
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
func benchAllocs(r *benchRun) (float64, string, error) {
	var allocs, packets uint64
	for _, name := range []string{"xdp-drop", "xdp-pass", "cpumap"} {
		w, err := warmWorld(name)
		if err != nil {
			return 0, "", err
		}
		var a, b runtime.MemStats
		before := w.Received()
		runtime.ReadMemStats(&a)
		if err := w.RunPackets(min(r.packets, 1_000_000)); err != nil {
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
func benchMemory(*benchRun) (float64, string, error) {
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

// benchWasmSize gzips main.wasm (built by `make wasm`) when it is there.
func benchWasmSize(r *benchRun) (float64, string, error) {
	wasmPath := filepath.Join(r.web, wasmFile)
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
