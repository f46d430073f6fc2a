package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/vocab"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunJSONHasTheDocumentedKeys(t *testing.T) {
	code, out, errs := runCLI("run", "--packets", "2000", "--json", "cpumap")
	require.Equal(t, exitOK, code, errs)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	for _, k := range []string{"sim_time_ns", "packets", "pps", "gbps", "cpus", "counters", "queues", "page_pool", "pages"} {
		assert.Contains(t, got, k)
	}
	var s struct {
		Packets  uint64            `json:"packets"`
		CPUs     []float64         `json:"cpus"`
		Counters map[string]uint64 `json:"counters"`
		PagePool map[string]uint64 `json:"page_pool"`
		Queues   []map[string]uint64
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.GreaterOrEqual(t, s.Packets, uint64(2000))
	assert.Len(t, s.CPUs, 2)
	assert.Equal(t, s.Counters["rx_packets"], s.Counters["rx_xdp_redirects"])
	assert.Len(t, s.PagePool, 11)
	require.Len(t, s.Queues, 1)
	assert.Equal(t, s.Counters["rx_packets"], s.Queues[0]["rx0_packets"])
}

func TestRunTextAndDuration(t *testing.T) {
	code, out, errs := runCLI("run", "--duration", "1ms", "xdp-drop")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "rx_xdp_drops")
	assert.Contains(t, out, "rx_pp_recycle_cached")
	assert.Contains(t, out, "simulated 1ms")
}

// TestRunNamesDropsByTheKernelsReasons: the summary lists each reason the
// run dropped for under its name at the scenario's kernel, with what that
// kernel does there, in the text and the JSON, and the counters carry
// drops.NAME: a flooded vhost-net tap queue is FULL_RING on 7.0 and the
// model's tap_queue_full on 5.15, where tun_net_xmit's kfree_skb has no
// reason.
func TestRunNamesDropsByTheKernelsReasons(t *testing.T) {
	for _, tc := range []struct{ kernel, name, says string }{
		{"7.0", "FULL_RING", "tun_net_xmit: kfree_skb_reason(skb, SKB_DROP_REASON_FULL_RING)"},
		{"5.15", "tap_queue_full", "no reason before 5.17"},
	} {
		args := []string{"run", "--packets", "3000", "--set", "rate_pps=20000000", "--set", "kernel=" + tc.kernel}
		code, out, errs := runCLI(append(args, "default")...)
		require.Equal(t, exitOK, code, errs)
		assert.Regexp(t, `(?m)^`+tc.name+` +\d+ +`+regexp.QuoteMeta(tc.kernel+": "), out)
		assert.Contains(t, out, tc.says)
		code, out, errs = runCLI(append(args, "--json", "default")...)
		require.Equal(t, exitOK, code, errs)
		var s struct {
			Counters map[string]uint64 `json:"counters"`
			Drops    []struct {
				Name   string `json:"name"`
				Count  uint64 `json:"count"`
				Kernel string `json:"kernel"`
			} `json:"drop_reasons"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		require.Len(t, s.Drops, 1, "the host's queue is all that drops")
		assert.Equal(t, tc.name, s.Drops[0].Name)
		assert.Equal(t, s.Counters["host_drops"], s.Drops[0].Count)
		assert.Equal(t, s.Counters[vocab.Drops(tc.name)], s.Drops[0].Count)
		assert.Contains(t, s.Drops[0].Kernel, tc.says)
	}
}

// TestRunSaysWhatLimitsIt: the summary names the resource that limits the
// run (engine.LimitOf over its last four fifths), in the text and the
// JSON: the NAPI CPU at line rate for xdp-drop; for R2 at MTU 9000 the
// NAPI CPU before the fix (building 19-descriptor big buffers in
// add_recvbuf_big, and the protocol's receive and ACKs in NET_RX) and
// the reader's after it.
func TestRunSaysWhatLimitsIt(t *testing.T) {
	code, out, errs := runCLI("run", "--packets", "20000", "xdp-drop")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "limited by (over the run's last four fifths): cpu0 busy")

	limit := func(args ...string) map[string]any {
		code, out, errs := runCLI(append([]string{"run", "--packets", "100000", "--json"}, args...)...)
		require.Equal(t, exitOK, code, errs)
		var got struct{ Limit map[string]any }
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		return got.Limit
	}
	before := limit("r2-mtu9000-before")
	assert.Equal(t, "cpu0", before["name"])
	assert.Contains(t, before["why"], "NAPI rx0")
	after := limit("r2-mtu9000-after")
	assert.Equal(t, "cpu1", after["name"])
	assert.Contains(t, after["why"], "consumer")
}

// TestRunTrace: --trace prints the first events, one a line, before the
// summary (in the JSON, as "trace"), and the run still ends where asked.
func TestRunTrace(t *testing.T) {
	code, out, errs := runCLI("run", "--trace", "5", "--packets", "100", "default")
	require.Equal(t, exitOK, code, errs)
	lines := strings.Split(out, "\n")
	require.Greater(t, len(lines), 6)
	for i := range 5 {
		assert.True(t, strings.HasPrefix(lines[i], fmt.Sprintf("#%d ", i+1)), "line %d: %q", i, lines[i])
	}
	// vhost-net writes the first frame and publishes it with the second,
	// at the end of its run (vhost_net_signal_used).
	assert.Contains(t, lines[1], "host lands frames rx0: rq0.last_avail 0->1")
	assert.Contains(t, lines[2], "host lands frames rx0: host_used_publishes 0->1, rq0.last_avail 1->2, rq0.used_idx 0->2")
	assert.Equal(t, "", lines[5])
	assert.Contains(t, lines[6], "scenario default")
	assert.Contains(t, out, "simulated ")
	assert.Contains(t, out, ", 100 packets,")

	code, out, errs = runCLI("run", "--trace", "40", "--packets", "100", "--json", "xdp-drop")
	require.Equal(t, exitOK, code, errs)
	var s struct {
		Packets uint64 `json:"packets"`
		Trace   []struct {
			Seq     uint64 `json:"seq"`
			Handler string `json:"handler"`
			Changes []struct {
				Name     string `json:"name"`
				From, To int64
			} `json:"changes"`
		} `json:"trace"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Len(t, s.Trace, 40)
	assert.Equal(t, uint64(40), s.Trace[39].Seq)
	assert.GreaterOrEqual(t, s.Packets, uint64(100), "--packets counts from the start, the trace included")
}

func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"traffic": {"size": "big"}}`), 0o644))
	unknown := filepath.Join(dir, "unknown.json")
	require.NoError(t, os.WriteFile(unknown, []byte(`{"ringsize": 8}`), 0o644))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no scenario", []string{"run"}, "exactly one"},
		{"unknown preset", []string{"run", "nosuch"}, `"nosuch" is neither a preset`},
		{"missing file", []string{"run", "./nope.json"}, "no such file"},
		{"wrong type", []string{"run", bad}, "traffic.size"},
		{"unknown field", []string{"run", unknown}, "ringsize: unknown field"},
		{"both limits", []string{"run", "--packets", "5", "--duration", "1ms", "default"}, "exclusive"},
		{"object refused", []string{"run", "--xdp-object", "../../engine/bpf/testdata/xdp_tailcall.o", "xdp-pass"}, "FnTailCall"},
		{"program without object", []string{"run", "--xdp-program", "x", "xdp-pass"}, "needs --xdp-object"},
		{"negative trace", []string{"run", "--trace", "-1", "default"}, "--trace -1: want 0..100000"},
		{"huge trace", []string{"run", "--trace", "100001", "default"}, "--trace 100001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Contains(t, errs, tc.want)
		})
	}
}

// TestRunSet: --set changes the scenario through its JSON paths, in
// order; a bare word is a string for a string field (kernel=6.10 is not
// the number 6.1), a number stays a number.
func TestRunSet(t *testing.T) {
	code, out, errs := runCLI("run", "--packets", "200", "--json",
		"--set", "kernel=6.10", "--set", "driver.buffer_source=page_frag", "--set", "driver.dma=ring",
		"--set", "mtu=9000", "--set", "traffic.size=4014", "--set", `traffic={"flows": 2}`, "default")
	require.Equal(t, exitOK, code, errs)
	var s struct {
		Packets  uint64            `json:"packets"`
		Counters map[string]uint64 `json:"counters"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.GreaterOrEqual(t, s.Packets, uint64(200))
	assert.Zero(t, s.Counters["rx_pp_alloc_fast"], "page_frag, not page_pool")

	sets := []string{"kernel=6.10", "mtu=9000", "traffic.size=9014", "driver.buffer_source=page_frag", "driver.dma=ring"}
	r, err := recipeOf("default", sets)
	require.NoError(t, err)
	assert.Equal(t, "default "+strings.Join(sets, " "), r.String(), "the recipe spells its changes as --set does")
	sc, err := buildRecipe(r, sets)
	require.NoError(t, err)
	assert.Equal(t, "6.10", sc.Kernel)
	assert.Equal(t, 9000, sc.MTU)
	assert.Equal(t, "page_frag", sc.Driver.BufferSource)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "traffic.sise=1"}, `--set traffic.sise=1 (change 1): traffic.sise: the scenario has no field "sise"`},
		{[]string{"--set", "mtu=1500", "--set", "ring_size=100"}, `--set ring_size=100 (change 2): ring_size="100": want a power of two`},
		{[]string{"--set", ".ring_size=100"}, "--set .ring_size=100 (change 1): ring_size: 100: want a power of two"},
		{[]string{"--set", "mtu=big"}, `--set mtu=big (change 1): mtu="big": not a whole number`},
		{[]string{"--set", ".mtu=big"}, "--set .mtu=big (change 1): mtu: the value big is not JSON"},
		{[]string{"--set", "kernel=6.99"}, `--set kernel=6.99 (change 1): kernel="6.99": kernel version 6.99`},
		{[]string{"--set", "mtu"}, `"mtu": want KEY=VALUE`},
		{[]string{"--set", "=1"}, `"=1": want KEY=VALUE`},
	} {
		code, out, errs := runCLI(append(append([]string{"run", "--packets", "10"}, tc.args...), "default")...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Empty(t, out)
		assert.Contains(t, errs, tc.want)
	}
}

// TestRunCostsShowKinds: --costs prints each constant's kind, and an
// override the preset declares fitted says on what; the fitted fields are
// listed without --costs too.
func TestRunCostsShowKinds(t *testing.T) {
	// A scenario file that fits two values on R1, as its presets once
	// did (no preset fits a field now).
	sc, err := scenario.LookupPreset("r1-upstream")
	require.NoError(t, err)
	sc.Driver.IOMMU, sc.Features.AccessPlatform = true, true
	sc.Costs = map[string]int64{"dma_map_iommu": 4000}
	sc.Consumer.CostNs = 1000
	sc.Fitted = []scenario.Fit{
		{Field: "costs.dma_map_iommu", Result: "R1", Row: "r1-upstream", Why: "puts upstream at its figure"},
		{Field: "consumer.cost_ns", Result: "R1", Row: "r1-page-pool", Why: "puts page_pool at its figure"},
	}
	js, err := json.Marshal(sc)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "fitted.json")
	require.NoError(t, os.WriteFile(file, js, 0o644))

	code, out, errs := runCLI("run", "--packets", "200", file)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "fitted, not sourced")
	assert.Contains(t, out, "consumer.cost_ns on R1 (r1-page-pool)")
	assert.NotContains(t, out, "vhost_desc", "the table needs --costs")

	code, out, errs = runCLI("run", "--packets", "200", "--costs", file)
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `buddy_per_page +180 +fitted on R4 +fitted on R4 \(r4-page-alloc-2flows`, out)
	assert.Regexp(t, `atomic +5 +sourced +bench_page_pool_simple`, out)
	assert.Regexp(t, `dma_map_iommu +4000 +override \(default 100 ns, sourced\) +fitted on R1 \(r1-upstream\)`, out)

	code, out, errs = runCLI("run", "--packets", "200", "--costs", "--json", file)
	require.Equal(t, exitOK, code, errs)
	var s struct {
		Fitted []struct{ Field, Result, Row string }
		Costs  []struct {
			Name      string `json:"name"`
			NS        int64  `json:"ns"`
			DefaultNS int64  `json:"default_ns"`
			Kind      string `json:"kind"`
			Fit       string `json:"fit"`
			Override  string `json:"override"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Len(t, s.Fitted, 2)
	kinds := map[string]string{}
	for _, c := range s.Costs {
		kinds[c.Name] = c.Kind + c.Fit
		if c.Name == "dma_map_iommu" {
			assert.Equal(t, int64(4000), c.NS)
			assert.Equal(t, int64(100), c.DefaultNS)
			assert.Contains(t, c.Override, "fitted on R1")
		}
	}
	assert.Equal(t, "fittedR4", kinds["buddy_per_page"])
	assert.Equal(t, "estimate", kinds["kick_vmexit"])
}

func TestRunELFObject(t *testing.T) {
	code, out, errs := runCLI("run", "--packets", "500", "--json", "--xdp-object", "../../engine/bpf/testdata/xdp_filter.o", "xdp-pass")
	require.Equal(t, exitOK, code, errs)
	var s struct{ Counters map[string]uint64 }
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	assert.Equal(t, s.Counters["rx_packets"], s.Counters["rx_xdp_packets"])
}

// TestPresetListNamesKernels: each preset is listed with the kernel it
// runs on, the published results on the kernel of their date.
func TestPresetListNamesKernels(t *testing.T) {
	code, out, errs := runCLI("preset")
	require.Equal(t, exitOK, code, errs)
	kernelOf := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 3, line)
		kernelOf[f[0]] = f[2]
	}
	for name, want := range map[string]string{
		"default": "7.0", "r1-upstream": "6.4", "r2-mtu9000-before": "6.0", "r2-mtu9000-after": "6.1",
		"r3-napi-local-off": "6.4", "r3-napi-local-on": "6.5", "r4-page-pool-same-cpu": "4.17",
	} {
		assert.Equal(t, want, kernelOf[name], name)
	}
	code, out, errs = runCLI("preset", "r1-upstream")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, `"kernel": "6.4"`)
}

// TestRunXDPObjectNotELF: --xdp-object of a file that is no ELF object
// (its C source, a text file) says so and names the file.
func TestRunXDPObjectNotELF(t *testing.T) {
	src := filepath.Join(t.TempDir(), "prog.c")
	require.NoError(t, os.WriteFile(src, []byte("int prog(void *ctx) { return 2; }\n"), 0o644))
	code, out, errs := runCLI("run", "--xdp-object", src, "xdp-drop")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "ringlab run: "+src+`: not an ELF object: it is text, starting "int prog(void *ctx) { re"`)
	assert.NotContains(t, errs, "EOF")
}

// intervalLines parses the JSON lines of --interval --json: the
// intervals, then the summary.
func intervalLines(t *testing.T, out string) ([]intervalLine, map[string]json.RawMessage) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2, out)
	var ivs []intervalLine
	for _, l := range lines[:len(lines)-1] {
		var iv intervalLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&iv), l)
		ivs = append(ivs, iv)
	}
	var sum map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), "the summary is the last line")
	return ivs, sum
}

// TestRunInterval: --interval D prints, as JSON lines, intervals of D
// that tile the run from 0 to its end, whose packets and counters add up
// to the summary's; the summary is the same as without --interval.
func TestRunInterval(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		every    int64
		wantLast int64 // the last interval's end; 0: the run's
	}{
		{"by duration", []string{"--duration", "1ms", "--interval", "100us"}, 100_000, 1_000_000},
		{"by packets", []string{"--packets", "5000", "--interval", "200us"}, 200_000, 0},
		{"one interval longer than the run", []string{"--packets", "500", "--interval", "1s"}, 1e9, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(append([]string{"run", "xdp-drop", "--json"}, tc.args...)...)
			require.Equal(t, exitOK, code, errs)
			ivs, sum := intervalLines(t, out)
			var s struct {
				SimTimeNS int64             `json:"sim_time_ns"`
				Packets   uint64            `json:"packets"`
				Counters  map[string]uint64 `json:"counters"`
			}
			raw, _ := json.Marshal(sum)
			require.NoError(t, json.Unmarshal(raw, &s))
			var packets uint64
			counters := map[string]uint64{}
			for i, iv := range ivs {
				if i == 0 {
					assert.Zero(t, iv.StartNS, "the first interval starts the run")
				} else {
					assert.Equal(t, ivs[i-1].EndNS, iv.StartNS, "interval %d starts where %d ended", i, i-1)
				}
				if i < len(ivs)-1 {
					assert.Equal(t, tc.every, iv.EndNS-iv.StartNS, "interval %d lasts --interval", i)
				} else {
					assert.LessOrEqual(t, iv.EndNS-iv.StartNS, tc.every, "the last is cut where the run ends")
				}
				assert.InDelta(t, float64(iv.Packets)/(float64(iv.EndNS-iv.StartNS)/1e9), iv.PPS, 1e-6*iv.PPS+1e-9)
				packets += iv.Packets
				for k, v := range iv.Counters {
					counters[k] += v
				}
			}
			assert.Equal(t, s.SimTimeNS, ivs[len(ivs)-1].EndNS, "the last interval ends the run")
			if tc.wantLast != 0 {
				assert.Equal(t, tc.wantLast, s.SimTimeNS)
			}
			assert.Equal(t, s.Packets, packets, "the intervals' packets add up to the run's")
			for k, v := range s.Counters {
				if d, ok := vocab.Lookup(k); ok && d.Kind == vocab.Counter {
					assert.Equal(t, v, counters[k], "the intervals' %s add up to the run's", k)
				}
			}
			assert.Positive(t, counters["rx_xdp_drops"])

			code, plain, errs := runCLI(append([]string{"run", "xdp-drop", "--json"}, tc.args[:2]...)...)
			require.Equal(t, exitOK, code, errs)
			var want, got map[string]any
			require.NoError(t, json.Unmarshal([]byte(plain), &want))
			require.NoError(t, json.Unmarshal(raw, &got))
			assert.Equal(t, want, got, "the same run as without --interval")
		})
	}

	t.Run("text", func(t *testing.T) {
		code, out, errs := runCLI("run", "--duration", "300us", "--interval", "100us", "xdp-drop")
		require.Equal(t, exitOK, code, errs)
		lines := strings.Split(out, "\n")
		for _, l := range lines[:3] {
			assert.True(t, json.Valid([]byte(l)), "an interval line: %s", l)
		}
		assert.True(t, strings.HasPrefix(lines[3], "scenario xdp-drop"), "the text summary follows: %s", lines[3])
	})
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "100ns"}, "--interval 100ns: want at least 1µs"},
		{[]string{"--interval", "-1ms"}, "--interval -1ms"},
		{[]string{"--interval", "1ms", "--trace", "5"}, "--interval and --trace are exclusive"},
	} {
		code, out, errs := runCLI(append([]string{"run", "xdp-drop"}, bad.args...)...)
		assert.Equal(t, exitUsage, code, bad.args)
		assert.Empty(t, out)
		assert.Contains(t, errs, bad.want)
	}
}

// TestRunProgress: a run shows its progress on stderr when asked (or on a
// terminal, which a test's buffer is not), from 0% to 100%, and its
// stdout is the same JSON as without.
func TestRunProgress(t *testing.T) {
	code, out, errs := runCLI("run", "xdp-drop", "--packets", "300000", "--json", "--progress")
	require.Equal(t, exitOK, code, errs)
	var s struct{ Packets uint64 }
	require.NoError(t, json.Unmarshal([]byte(out), &s), "stdout is the JSON alone")
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	assert.Regexp(t, `^ringlab run: 0 of 300000 packets \(0%\), 0s simulated, `, lines[0])
	assert.Regexp(t, fmt.Sprintf(`^ringlab run: %d of 300000 packets \(100%%\), [0-9.]+ms simulated, `, s.Packets), lines[len(lines)-1])
	assert.NotContains(t, errs, "\r", "not a terminal: a line each time")

	code, _, errs = runCLI("run", "--duration", "2ms", "--progress", "xdp-drop")
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `(?m)^ringlab run: 2ms of 2ms simulated \(100%\), \d+ packets, `, errs)

	for _, args := range [][]string{{"--packets", "3000"}, {"--packets", "3000", "--progress=false"}} {
		code, _, errs = runCLI(append([]string{"run", "xdp-drop"}, args...)...)
		require.Equal(t, exitOK, code)
		assert.Empty(t, errs, "no progress into a file unless asked: %v", args)
	}
}
