package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/cli"
	"ringlab/internal/testenv"
	"ringlab/internal/wasmbuild"
)

// The server load case starts `ringlab serve` from its own binary; a test
// binary is not ringlab, so the tests build it once (go build
// ringlab/cmd/ringlab) and start that.
var (
	ringlabOnce sync.Once
	ringlabBin  string
	ringlabErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ringlab-bench-")
	if err != nil {
		panic(err)
	}
	selfCommand = func(args ...string) (*exec.Cmd, error) {
		ringlabOnce.Do(func() {
			ringlabBin = filepath.Join(dir, "ringlab")
			out, err := exec.Command("go", "build", "-o", ringlabBin, "ringlab/cmd/ringlab").CombinedOutput()
			if err != nil {
				ringlabErr = fmt.Errorf("go build ringlab/cmd/ringlab: %v\n%s", err, out)
			}
		})
		if ringlabErr != nil {
			return nil, ringlabErr
		}
		return exec.Command(ringlabBin, args...), nil
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run is `ringlab-bench args...`.
func run(args []string, stdout, stderr io.Writer) int { return Run(args, stdout, stderr) }

// benchJSON runs `ringlab-bench --json args...` and returns its rows by
// name, in order.
func benchJSON(t *testing.T, args ...string) ([]benchResult, map[string]benchResult) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"--json"}, args...), &out, &errb)
	t.Logf("stderr:\n%s", errb.String())
	require.Equal(t, cli.ExitOK, code, errb.String())
	var got []benchResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	byName := map[string]benchResult{}
	for _, r := range got {
		byName[r.Name] = r
	}
	return got, byName
}

// measured returns the row's value, failing when it has none.
func measured(t *testing.T, r benchResult) float64 {
	t.Helper()
	require.NotNil(t, r.Value, "%s was not measured: %s", r.Name, r.Note)
	require.NotNil(t, r.Holds, r.Name)
	assert.False(t, math.IsNaN(*r.Value) || math.IsInf(*r.Value, 0), r.Name)
	t.Logf("%s = %g %s (%s)", r.Name, *r.Value, r.Unit, r.Note)
	return *r.Value
}

// A short bench of the engine cases: only the cases asked for are listed,
// each with a value or a note saying why not.
func TestBenchJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine presets")
	}
	got, byName := benchJSON(t, "--only", "engine,wasm-size", "--packets", "2000", "--runs", "1")
	var want []string
	for _, c := range benchCases() {
		if strings.HasPrefix(c.name, "engine") || c.name == "wasm-size-gzip" {
			want = append(want, c.name)
		}
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
		assert.NotEmpty(t, r.Unit, r.Name)
		assert.NotEmpty(t, r.Target, r.Name)
		if r.Value == nil {
			assert.Nil(t, r.Holds, r.Name)
			assert.True(t, strings.HasPrefix(r.Note, "not measured"), "%s: a case that could not run says why: %q", r.Name, r.Note)
		}
	}
	assert.Equal(t, want, names, "the selected cases, in BENCHMARKS.md's order")
	for _, name := range []string{"engine-xdp-drop", "engine-xdp-pass", "engine-cpumap"} {
		assert.Greater(t, measured(t, byName[name]), 0.0, name)
	}
	// The count is the process's: tests running beside this one allocate
	// too, so one stray allocation in 6000 packets is not the engine's.
	// engine/TestSteadyStateDoesNotAllocate holds the engine to exactly 0.
	assert.Less(t, measured(t, byName["engine-allocs-per-packet"]), 0.01, "the steady state allocates")
	measured(t, byName["engine-memory-4x4096"])
	assert.True(t, *byName["engine-memory-4x4096"].Holds, "memory budget")
}

func TestBenchTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine presets")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--only", "engine-allocs,wasm-size", "--packets", "1000", "--runs", "1"}, &out, &errb)
	require.Equal(t, cli.ExitOK, code, errb.String())
	assert.Contains(t, out.String(), "engine-allocs-per-packet")
	assert.Contains(t, out.String(), "wasm-size-gzip")
	assert.NotContains(t, out.String(), "engine-xdp-drop", "--only leaves the other cases out")
	assert.Contains(t, errb.String(), "ringlab-bench: engine-allocs-per-packet", "progress goes to stderr")
}

// The server load case in quick mode against a real `ringlab serve`
// child: every delivery is timed, losses are counted, the server's memory
// is its own. The values are checked for sense, not against the targets.
func TestBenchServerLoadQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and 100 WebSocket clients")
	}
	_, byName := benchJSON(t, "--quick", "--only", "server")
	p99 := measured(t, byName["server-1000-clients-p99"])
	assert.Greater(t, p99, 0.0, "a delivery takes time")
	assert.Less(t, p99, 60_000.0, "p99 in ms: under a minute")
	assert.Contains(t, byName["server-1000-clients-p99"].Note, "100 clients at 10 Hz for 3s")
	lost := measured(t, byName["server-1000-clients-lost"])
	assert.GreaterOrEqual(t, lost, 0.0)
	assert.Equal(t, math.Trunc(lost), lost, "snapshots are whole")
	assert.Regexp(t, `over [1-9][0-9]* snapshots x 100 clients`, byName["server-1000-clients-lost"].Note)
	if runtime.GOOS == "linux" {
		mib := measured(t, byName["server-1000-clients-memory"])
		assert.Greater(t, mib, 1.0, "the server's RSS in MiB")
		assert.Less(t, mib, 16384.0, "the server's RSS in MiB")
	}
}

// The host source case in quick mode, on this machine's interfaces.
func TestBenchHostSourceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("samples the host's interfaces for 3 s")
	}
	_, byName := benchJSON(t, "--quick", "--only", "host-source")
	r := byName["host-source-10hz-cpu"]
	if r.Value == nil {
		testenv.Missing(t, "host source case: "+r.Note)
	}
	share := measured(t, r)
	assert.GreaterOrEqual(t, share, 0.0)
	assert.LessOrEqual(t, share, 100.0*float64(runtime.NumCPU()), "a share of one core, in %")
	assert.Regexp(t, `at 10 Hz for 2s \([1-9][0-9]* samples\)`, r.Note)
}

// The browser cases in quick mode on a page built for the test.
func TestBenchBrowserQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	if testenv.Race {
		// make test runs this test again without -race (see the Makefile);
		// under the detector it would only slow a minute of browser time.
		t.Skip("the browser cases run in make test's run without -race")
	}
	testenv.RequireChromium(t)
	web := pageDir(t)
	_, byName := benchJSON(t, "--quick", "--web", web, "--only", "wasm-engine,page-load,draw")
	load := measured(t, byName["page-load-first-frame"])
	assert.Greater(t, load, 0.0, "seconds to the first frame")
	assert.Less(t, load, 120.0, "seconds to the first frame")
	ratio := measured(t, byName["draw-default-view"])
	assert.Greater(t, ratio, 0.0, "the view draws frames")
	assert.Less(t, ratio, 10.0, "a ratio of frame rates")
	wasm := measured(t, byName["wasm-engine-xdp-drop"])
	assert.Greater(t, wasm, 0.0, "the wasm engine runs packets")
	assert.Less(t, wasm, 10.0, "a fraction of the native rate")
}

// Without the wasm build, the browser cases say what to run.
func TestBenchBrowserWithoutWasm(t *testing.T) {
	_, byName := benchJSON(t, "--web", t.TempDir(), "--only", "page-load")
	r := byName["page-load-first-frame"]
	assert.Nil(t, r.Value)
	if testenv.ChromiumPath() != "" {
		assert.Contains(t, r.Note, "run `make wasm` first")
	} else {
		assert.Contains(t, r.Note, "needs Chromium")
	}
}

// pageDir is a copy of web/ with main.wasm built for the test, as `make
// wasm` leaves it.
func pageDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	entries, err := os.ReadDir(filepath.Join(root, "web"))
	require.NoError(t, err)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, ".go") || strings.HasPrefix(name, "main.wasm") || name == "wasm_exec.js" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, "web", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	require.NoError(t, wasmbuild.Build(root, dir))
	return dir
}

func TestBenchOnlyAndFailures(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, cli.ExitUsage, run([]string{"--only", "engine,nope"}, &out, &errb))
	assert.Contains(t, errb.String(), "--only nope: no case")
	assert.Contains(t, errb.String(), "server-1000-clients-p99", "the error lists the cases")
	assert.Empty(t, out.String())

	// A case that fails gets a note; the others still run.
	cases := []benchCase{
		{name: "a", unit: "s", target: "<= 1", atMost: 1, run: func(*benchRun) (float64, string, error) { return 0, "", errors.New("boom") }},
		{name: "b", unit: "s", target: "<= 1", atMost: 1, run: func(*benchRun) (float64, string, error) { return 2, "two", nil }},
	}
	res, failed := measureAll(cases, benchOptions{stderr: io.Discard})
	assert.Equal(t, 1, failed)
	require.Len(t, res, 2)
	assert.Nil(t, res[0].Value)
	assert.Equal(t, failedPrefix+"boom", res[0].Note)
	require.NotNil(t, res[1].Value)
	assert.Equal(t, 2.0, *res[1].Value)
	assert.False(t, *res[1].Holds)
}

func TestParseSnapshotHead(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 4, 200_000_123, time.UTC)
	tests := []struct {
		name    string
		msg     string
		wantSeq uint64
		ok      bool
	}{
		{"the hub's encoding", `{"type":"snapshot","seq":42,"time":"2026-03-01T09:00:04.200000123Z","source":"sim","counters":{}}`, 42, true},
		{"fields in another order", `{"seq":7,"type":"snapshot","source":"sim","time":"2026-03-01T09:00:04.200000123Z"}`, 7, true},
		{"a hello", `{"type":"hello","schema":1}`, 0, false},
		{"not JSON", `snapshot`, 0, false},
		{"a broken time", `{"type":"snapshot","seq":3,"time":"yesterday"}`, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, got, ok := parseSnapshotHead([]byte(tc.msg))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.wantSeq, seq)
			if tc.ok {
				assert.True(t, at.Equal(got), "%v", got)
			}
		})
	}
}

func TestTallyCountsGapsAndPercentiles(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	lats := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	clients := []*loadClient{
		{seqs: []uint64{5, 6, 7, 8}, lat: lats(4, ms(10))},
		{seqs: []uint64{5, 7, 8}, lat: lats(3, ms(20))},                    // lost 6
		{seqs: []uint64{6, 7}, lat: []time.Duration{ms(30), ms(400)}},      // lost 5 and 8
		{err: errors.New("dial: refused")},                                 // lost all four
		{seqs: []uint64{5, 6, 7, 8}, lat: []time.Duration{1, 2, 3, ms(5)}}, // in order
	}
	var l serverLoad
	l.tally(clients)
	assert.Equal(t, uint64(4), l.sent, "seqs 5..8")
	assert.Equal(t, uint64(1+2+4), l.lost)
	assert.Equal(t, 3, l.lossyClients)
	assert.Equal(t, 1, l.failed)
	assert.EqualError(t, l.firstFailure, "dial: refused")
	assert.Equal(t, 13, l.deliveries)
	assert.Equal(t, ms(10), l.p50)
	assert.Equal(t, ms(400), l.p99)
	assert.Equal(t, ms(400), l.max)
}

func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero runs", []string{"--runs", "0"}, "--runs 0"},
		{"zero packets", []string{"--packets", "0"}, "--packets 0"},
		{"an argument", []string{"xdp-drop"}, `unexpected argument "xdp-drop"`},
		{"a bad flag", []string{"--nope"}, "ringlab-bench: unknown flag: --nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, cli.ExitUsage, run(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), tc.want)
			assert.Empty(t, out.String())
		})
	}
	for _, help := range []string{"-h", "--help"} {
		var out, errb bytes.Buffer
		assert.Equal(t, cli.ExitOK, run([]string{help}, &out, &errb))
		assert.Contains(t, out.String(), "Usage: ringlab-bench", "help goes to stdout")
		assert.Contains(t, out.String(), "  --only cases", "flags with two dashes")
		assert.Empty(t, errb.String())
	}
}
