package tutorials

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/vocab"
)

// fakeHost reads an interface the way the server's host source does, with
// fixed figures that grow on each reading: the tutorials' host checks
// must hold on it.
func fakeHost() HostFunc {
	n := 0.0
	return func(iface string) (map[string]float64, error) {
		if iface != "lo" {
			return nil, fmt.Errorf("no such interface %s", iface)
		}
		n++
		return map[string]float64{
			"rx_packets": 1000 * n, "tx_packets": 1000 * n, "rx_bytes": 64000 * n, "tx_bytes": 64000 * n,
			"ethtool_count": 0, "page_pools": 0, "softnet.processed": 500 * n,
		}, nil
	}
}

// TestEmbeddedTutorials is what `ringlab tutorial check` does: every
// embedded tutorial parses, and every step runs with every check holding.
func TestEmbeddedTutorials(t *testing.T) {
	all, err := All()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 9)
	if testing.Short() {
		// Two under -short (the race detector's pass); make test's second
		// pass and `ringlab tutorial check` run them all.
		all = all[:2]
	}
	cache := NewCache()
	for _, tt := range all {
		t.Run(tt.Name, func(t *testing.T) {
			assert.NotEmpty(t, tt.Title)
			assert.NotEmpty(t, tt.Learn)
			r := Run(tt, Options{Host: fakeHost(), Cache: cache})
			for _, f := range r.Failures() {
				t.Error(f)
			}
			assert.Zero(t, r.Skipped, "with a host to read, nothing is skipped")
			assert.Positive(t, r.Checks)
			checks := 0
			for _, st := range tt.Steps {
				for _, d := range st.Directives {
					if d.Op == OpCheck || d.Op == OpAnswer {
						checks++
					}
				}
			}
			assert.Equal(t, checks, r.Checks, "every check and answer was evaluated")
		})
	}
}

// TestTutorialsAreDeterministic runs one tutorial twice and wants the same
// report, byte for byte.
func TestTutorialsAreDeterministic(t *testing.T) {
	tt, err := Find("descriptor-journey")
	require.NoError(t, err)
	a, err := json.Marshal(Run(tt, Options{}))
	require.NoError(t, err)
	b, err := json.Marshal(Run(tt, Options{}))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))
}

func parseT(t *testing.T, body string) *Tutorial {
	t.Helper()
	tt, err := Parse("tutorials/98-test.md", []byte(tut(body)))
	require.NoError(t, err)
	return tt
}

func TestFailedCheckNamesFileAndLine(t *testing.T) {
	tt := parseT(t, block3("preset default", "run packets=10", "check rx_packets > 1000000", "check rx_pakets > 0", "check rx_packets > 0"))
	r := Run(tt, Options{})
	assert.Equal(t, 2, r.Failed)
	assert.Equal(t, 3, r.Checks)
	f := r.Failures()
	require.Len(t, f, 2)
	assert.Contains(t, f[0], "tutorials/98-test.md:13: step 1: fail check rx_packets > 1000000")
	assert.Contains(t, f[1], "tutorials/98-test.md:14:")
	assert.Contains(t, f[1], "unknown name rx_pakets (did you mean rx_packets?)")
}

func TestHostWithoutReaderIsSkipped(t *testing.T) {
	tt := parseT(t, block3("preset default", "host lo as h", "check h.rx_packets >= 0", "check rx_packets >= 0"))
	r := Run(tt, Options{})
	assert.Zero(t, r.Failed)
	assert.Equal(t, 2, r.Skipped, "the host directive and its check")
	assert.Equal(t, 1, r.Checks)

	r = Run(tt, Options{Host: func(string) (map[string]float64, error) { return nil, errors.New("no lo here") }})
	assert.Zero(t, r.Failed)
	assert.Equal(t, 2, r.Skipped)
	assert.Contains(t, r.Steps[0].Items[1].Error, "no lo here")

	r = Run(tt, Options{Host: fakeHost()})
	assert.Zero(t, r.Failed)
	assert.Zero(t, r.Skipped)
}

func TestAnswerIsEvaluatedAfterTheStep(t *testing.T) {
	tt := parseT(t, block3("preset default", `question number(packets) "how many?"`, "answer rx_packets >= 100", "run packets=100"))
	r := Run(tt, Options{})
	require.Zero(t, r.Failed, r.Failures())
	it := r.Steps[0].Items[2]
	assert.Equal(t, OpAnswer, it.Op)
	assert.Equal(t, StatusOK, it.Status)
}

func TestStepsContinueTheWorld(t *testing.T) {
	src := block3("preset default", "run packets=10", "mark a", "check rx_packets >= 10") +
		"## Step 2: more\n```ringlab\nrun packets=10\ncheck rx_packets >= a.rx_packets + 10\ncheck a.rx_packets >= 10\n```\n" +
		"## Step 3: fresh\n```ringlab\nset ring_size=32\ncheck rx_packets == 0\ncheck rq0.size == 32\n```\n"
	tt := parseT(t, src)
	assert.True(t, tt.Steps[1].Continues)
	r := Run(tt, Options{})
	assert.Zero(t, r.Failed, r.Failures())
}

func TestSessionStopsAfterAFailedAction(t *testing.T) {
	// A measure of a metric the engine does not know fails as an action;
	// the parser does not know it either, so build the directive by hand.
	tt := parseT(t, block3("preset default", "measure x = scenario tx_mpps", "check rx_packets >= 0")+
		"## Step 2: after\n```ringlab\nrun packets=1\ncheck rx_packets >= 1\n```\n")
	tt.Steps[0].Directives[1].Metric = "no_such_metric"
	r := Run(tt, Options{})
	require.Equal(t, 1, r.Failed)
	assert.Equal(t, StatusError, r.Steps[0].Items[1].Status)
	assert.Contains(t, r.Steps[0].Items[1].Error, `unknown metric "no_such_metric"`)
	for _, it := range r.Steps[1].Items {
		assert.Equal(t, StatusSkip, it.Status, "steps after a failed action do not run")
		assert.Contains(t, it.Error, "tutorials/98-test.md:12 failed")
	}
}

func TestShowGroupsAndFunctions(t *testing.T) {
	tt := parseT(t, block3(`preset xdp-drop`, `set xdp={"program": "xdp_drop_udp_port"}`, "run packets=100",
		"show counters, page_pool, ring, pages, program, scenario, queues, pools",
		`check map("udp_drop", 0) == 9`,
		`check map("udp_drop", 0, 8) == rx_xdp_drops`,
		`check published("r1-page-pool", "goodput_gbps") == 9.74`))
	var out bytes.Buffer
	r := Run(tt, Options{})
	require.Zero(t, r.Failed, r.Failures())
	WriteStep(&out, &tt.Steps[0], &r.Steps[0], true)
	text := out.String()
	for _, want := range []string{
		"rx_xdp_drops = ", "rx_pp_recycle_cached = ", "rq0.avail_idx = ", "pages.virtqueue = ",
		"xdp_drop_udp_port: 48 instructions, 392 bytes", "FnMapLookupElem", "xdp: xdp_drop_udp_port",
		"rx0_packets = ", "pool0.cache = ", "ok    check map(\"udp_drop\", 0) == 9   [9 == 9]",
	} {
		assert.Contains(t, text, want)
	}
}

func TestMapAndPublishedErrors(t *testing.T) {
	tt := parseT(t, block3("preset default", "run packets=1",
		`check map("x", 0) == 0`, `check published("default", "tx_mpps") > 0`))
	r := Run(tt, Options{})
	f := strings.Join(r.Failures(), "\n")
	assert.Contains(t, f, "no XDP program is attached")
	assert.Contains(t, f, "not in the published table")

	tt = parseT(t, block3("preset xdp-drop", "run packets=1", `check map("nope", 0) == 0`, `check map("udp", 0.5) == 0`))
	f = strings.Join(Run(tt, Options{}).Failures(), "\n")
	assert.Contains(t, f, "the program has no such map")
	assert.Contains(t, f, "want a whole key and offset")
}

func TestStepWithoutWorld(t *testing.T) {
	// Measurements need no world: a first step may compare presets.
	tt := parseT(t, "## Step 1: s\n```ringlab\nmeasure x = default tx_mpps warmup=1ms window=1ms\ncompare default small-ring delivered_gbps as c warmup=1ms window=1ms\ncheck x >= 0\ncheck c.ratio > 0\n```\n")
	assert.False(t, tt.Steps[0].Continues)
	r := Run(tt, Options{})
	assert.Zero(t, r.Failed, r.Failures())

	// Reading a counter does need one.
	_, err := Parse("f.md", []byte(tut("## Step 1: s\n```ringlab\nmeasure x = default tx_mpps\ncheck x >= rx_packets\n```\n")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "f.md:8: step 1 runs or reads the world but no step so far has a scenario")
}

func TestCacheSharesMeasurements(t *testing.T) {
	tt := parseT(t, block3("preset default", "measure a = default tx_mpps warmup=1ms window=1ms",
		"measure b = default tx_mpps warmup=1ms window=1ms", "check a == b"))
	c := NewCache()
	r := Run(tt, Options{Cache: c})
	require.Zero(t, r.Failed, r.Failures())
	assert.Len(t, c.m, 1)
}

func TestSegmentsKeepReadingOrder(t *testing.T) {
	tt := parseT(t, "## Step 1: s\n\nfirst\n\n```ringlab\npreset default\ncheck rx_packets >= 0\n```\n\nsecond\n\n```ringlab\nrun packets=1\ncheck rx_packets >= 1\n```\n\nthird\n")
	var out bytes.Buffer
	r := Run(tt, Options{})
	WriteStep(&out, &tt.Steps[0], &r.Steps[0], true)
	text := out.String()
	i1, i2, i3 := strings.Index(text, "first"), strings.Index(text, "second"), strings.Index(text, "third")
	p, c := strings.Index(text, "> preset default"), strings.Index(text, "> run packets=1")
	assert.True(t, i1 < p && p < i2 && i2 < c && c < i3, text)
}

// TestReadmeDocumentsEveryName keeps README.md's table of names in step
// with the names the engine provides.
func TestReadmeDocumentsEveryName(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	for _, d := range FigureDocs() {
		assert.Contains(t, string(readme), d[0])
	}
	for g := range showGroups {
		assert.Contains(t, string(readme), "`"+g+"`", "show group %s", g)
	}
	for _, m := range Metrics {
		assert.Contains(t, string(readme), "`"+m+"`")
	}
	for name := range funcs {
		assert.Contains(t, string(readme), "`"+name+"(")
	}
}

// TestFigureNamesExist checks that the documented namespaces are what a
// world provides.
func TestFigureNamesExist(t *testing.T) {
	tt := parseT(t, block3("preset xdp-drop", "run packets=10", "check rx_packets > 0"))
	s := NewSession(tt, Options{})
	s.RunStep()
	for _, name := range []string{
		"rx_packets", "rx0_kicks", "rx_pp_alloc_fast", "interrupts", "napi_polls", "host_starved", "page_allocs",
		"zone_lock_contended", "stack_delivered", "tcp_rcv_coalesce", "socket_queued", "socket_skbs", "socket_truesize",
		"packet_socket_clones", "frag_list_skbs", "refill_work_runs", "refill_work_retries", "time_ns", "time_us", "packets", "pps", "mpps", "gbps", "delivered_gbps",
		"events", "mode", "big_packets_num_skbfrags", "rq0.size", "rq0.num_free", "rq0.avail_idx", "rq0.used_idx",
		"rq0.last_used", "rq0.used_event", "rq0.avail_event", "rq0.avail_flags", "rq0.used_flags", "rq0.num_added",
		"rq0.free_head", "rq0.callbacks_disabled", "rq0.event_idx", "rq0.posted_buffers", "rq0.posted_descriptors",
		"rq0.descs_per_buffer", "rq0.indirect", "rq0.ewma", "rq0.mergeable_buf_len", "rq0.min_buf_len", "rq0.irqs", "rq0.napi_polls", "rq0.refills",
		"rq0.alloc_fails", "rq0.linearized", "rq0.copied", "rq0.coalesced", "rq0.big_built", "rq0.frag_list", "rq0.xdp_aborted", "rq0.length_errors",
		"rq0.host_packets", "rq0.host_buffers", "rq0.host_drops", "rq0.host_too_big", "rq0.host_starved",
		"rq0.host_wakeups", "rq0.host_interrupts", "sq0.size", "sq0.num_free", "sq0.avail_idx", "sq0.used_idx",
		"pool0.cache", "pool0.ring", "pool0.ring_size", "pool0.pool_size", "pool0.inflight", "pool0.hold_cnt",
		"pool0.release_cnt", "pool0.alloc_fast", "pool0.recycle_released_ref", "pages.buddy", "pages.virtqueue",
		"cpu0.util", "cpu0.perf._raw_spin_lock", "cpu0.perf.page_pool_refill_alloc_cache", "xdp.program", "xdp.insns", "xdp.bytes", "cost.vhost_desc", "scenario.ring_size",
		"scenario.traffic.size", "scenario.features.mrg_rxbuf",
	} {
		_, err := s.Lookup(name)
		assert.NoError(t, err, name)
	}
}

// TestJSONRoundTrip sends a tutorial through its JSON form, as a browser
// or a workshop room would, and runs it to the same report.
func TestJSONRoundTrip(t *testing.T) {
	tt, err := Find("xdp-verdicts")
	require.NoError(t, err)
	raw, err := json.Marshal(tt)
	require.NoError(t, err)
	var back Tutorial
	require.NoError(t, json.Unmarshal(raw, &back))
	require.NoError(t, back.Compile())
	want, err := json.Marshal(Run(tt, Options{}))
	require.NoError(t, err)
	got, err := json.Marshal(Run(&back, Options{}))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	back.Steps[0].Directives[2].Exprs = []string{"rx_packets +"}
	err = back.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tutorials/05-xdp-verdicts.md:")
}

// TestEveryFigureIsInTheVocabulary: what a check can read of a world is
// named as the page, the traces and /metrics name it (engine/vocab).
func TestEveryFigureIsInTheVocabulary(t *testing.T) {
	for _, preset := range []string{"cpumap", "devmap", "big-9000", "xdp-tx"} {
		tt := parseT(t, block3("preset "+preset, "run packets=10", "check rx_packets > 0"))
		s := NewSession(tt, Options{})
		s.RunStep()
		for name, v := range worldFigures(s.World()) {
			d, ok := vocab.Lookup(name)
			if !assert.True(t, ok, "%s (preset %s) is not in engine/vocab", name, preset) {
				continue
			}
			if !strings.Contains(d.Name, "*") { // scenario.* holds words and numbers
				assert.Equal(t, d.Kind == vocab.Text, v.Kind == KindString, "%s: a text in the vocabulary is a string here", name)
			}
		}
	}
}
