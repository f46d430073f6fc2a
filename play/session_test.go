package play

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/scenario"
	"ringlab/engine/view"
	"ringlab/engine/virtq"
)

func TestParamsSetAndGet(t *testing.T) {
	for _, p := range Params() {
		for _, v := range p.Options {
			t.Run(p.Key+"="+v, func(t *testing.T) {
				s := scenario.Default()
				if p.Key == "mode" && v == scenario.ModeBig {
					s.XDP = nil
				}
				require.NoError(t, SetParam(&s, p.Key, v))
				if err := s.Validate(); err != nil {
					t.Skipf("a valid value that makes the default scenario invalid: %v", err)
				}
				got, err := GetParam(&s, p.Key)
				require.NoError(t, err)
				assert.Equal(t, v, got)
			})
		}
	}
	numbers := map[string]string{"mtu": "9000", "pool_size": "512", "rate_pps": "12345.5", "size": "256",
		"netdev_budget": "600", "netdev_budget_usecs": "4000", "sched_latency_ns": "12000000", "base_slice_ns": "3000000"}
	for k, v := range numbers {
		t.Run(k+"="+v, func(t *testing.T) {
			s := scenario.Default()
			require.NoError(t, SetParam(&s, k, v))
			got, err := GetParam(&s, k)
			require.NoError(t, err)
			assert.Equal(t, v, got)
		})
	}
}

func TestSetParamConsequences(t *testing.T) {
	s := scenario.Default()
	require.NoError(t, SetParam(&s, "vhost_cpu", "napi"))
	require.NoError(t, SetParam(&s, "cpus", "2"))
	require.NoError(t, SetParam(&s, "queues", "2"))
	require.NotNil(t, s.Host)
	assert.Equal(t, []int{0, 1}, s.Host.Vhost, "each queue's worker follows its NAPI's vCPU")
	require.NoError(t, s.Validate())
	require.NoError(t, SetParam(&s, "vhost_cpu", "own"))
	assert.Nil(t, s.Host, "every worker on a host CPU of its own")

	s = scenario.Default()
	require.NoError(t, SetParam(&s, "page_pool", Off))
	assert.Equal(t, scenario.SourcePageFrag, s.Driver.BufferSource)
	assert.Equal(t, scenario.DMARing, s.Driver.DMA, "without page_pool the ring maps")
	require.NoError(t, s.Validate())

	s = scenario.Default()
	require.NoError(t, SetParam(&s, "mode", scenario.ModeBig))
	assert.Equal(t, scenario.ModeBig, s.Mode())
	assert.Equal(t, scenario.SourcePage, s.Driver.BufferSource, "big mode never uses page_pool")
	require.NoError(t, s.Validate())

	s = scenario.Default()
	require.NoError(t, SetParam(&s, "cpus", "2"))
	require.NoError(t, SetParam(&s, "xdp", "xdp_redirect_cpu"))
	assert.Equal(t, []int{1}, s.XDP.CpumapCPUs)
	require.NoError(t, SetParam(&s, "cpus", "1"))
	assert.Equal(t, []int{0}, s.XDP.CpumapCPUs, "a dangling cpumap CPU moves to one that exists")
	require.NoError(t, s.Validate())

	s = scenario.Default()
	require.NoError(t, SetParam(&s, "queues", "4"))
	assert.Equal(t, 4, s.Traffic.Flows, "every queue gets a flow")
}

func TestSetParamErrors(t *testing.T) {
	tests := []struct {
		key, value, want string
	}{
		{"ring_size", "100", "power of two"},
		{"ring_size", "x", "whole number"},
		{"cpus", "0", "want 1..64"},
		{"mode", "huge", "small, big or mergeable"},
		{"page_pool", "yes", "on or off"},
		{"rate_pps", "-1", "0..1e9"},
		{"rate_pps", "NaN", "not a number"},
		{"xdp", "xdp_nope", "not a library program"},
		{"colour", "red", "unknown parameter"},
		{"netdev_budget", "0", "want 1..1000000"},
		{"base_slice_ns", "-1", "want 0..1000000000"},
		{"vhost_cpu", "3", "want own or napi"},
	}
	for _, tc := range tests {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			s := scenario.Default()
			err := SetParam(&s, tc.key, tc.value)
			require.ErrorIs(t, err, ErrParam)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Premapped DMA and fragments need page_pool.
	s := scenario.Default()
	require.NoError(t, SetParam(&s, "page_pool", Off))
	assert.ErrorContains(t, SetParam(&s, "dma_premap", On), "page_pool on first")
	assert.ErrorContains(t, SetParam(&s, "frags", On), "page_pool on first")
	s = scenario.Default()
	require.NoError(t, SetParam(&s, "mtu", "9000"))
	assert.ErrorContains(t, SetParam(&s, "mode", scenario.ModeSmall), "MTU of at most 1500")
}

func TestLogAppendAndParse(t *testing.T) {
	var l Log
	l = l.Append(Step{UnitEvent, 3})
	l = l.Append(Step{UnitEvent, 2})
	l = l.Append(Step{UnitPacket, 1})
	l = l.Append(Step{UnitPacket, 1})
	l = l.Append(Step{UnitNs, 1000})
	l = l.Append(Step{UnitNs, 500})
	assert.Equal(t, "e5.p1.p1.t1500", l.String(), "events and time merge, packets do not")
	l = l.Append(Step{})
	assert.Equal(t, "e5.p1.p1.t1500.e1", l.String(), "a step's defaults: one event")
	got, err := ParseLog(l.String())
	require.NoError(t, err)
	assert.Equal(t, l, got)

	for _, bad := range []string{"x1", "e", "e0", "e-1", "e1..e2", "p99999999999999", "e1.q2"} {
		_, err := ParseLog(bad)
		assert.ErrorIs(t, err, ErrParam, bad)
	}
	empty, err := ParseLog("")
	require.NoError(t, err)
	assert.Empty(t, empty)
}

func bpfObject(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "engine", "bpf", "testdata", name))
	require.NoError(t, err)
	return b
}

func TestStateRoundTrip(t *testing.T) {
	custom := scenario.Default()
	custom.Name = "mine"
	custom.RingSize = 64
	custom.Traffic.RatePPS = 1000
	withObj, err := DefaultConfig().WithObject("xdp filter.o", bpfObject(t, "xdp_filter.o"))
	require.NoError(t, err)
	tests := []struct {
		name string
		st   State
	}{
		{"bare", State{A: DefaultConfig(), Speed: -1}},
		{"preset and speed", State{A: Config{Preset: "xdp-drop"}, Speed: 0}},
		{"parameters in order", State{A: Config{Preset: "default", Set: []KV{{"ring_size", "64"}, {"page_pool", "off"}, {"rate_pps", "2500.5"}}}, Speed: 10}},
		{"log", State{A: DefaultConfig(), Log: Log{{UnitEvent, 120}, {UnitPacket, 1}, {UnitPacket, 1}, {UnitNs, 5000}}, Speed: 2}},
		{"compare", State{A: Config{Preset: "r3-napi-local-off"}, B: &Config{Preset: "r3-napi-local-on", Set: []KV{{"ring_size", "256"}}}, Log: Log{{UnitEvent, 7}}, Speed: 100}},
		{"whole scenario", State{A: Config{Scenario: &custom}, Speed: -1}},
		{"xdp object", State{A: withObj, Log: Log{{UnitPacket, 3}}, Speed: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.st.Encode()
			got, err := DecodeState(q)
			require.NoError(t, err, q)
			assert.Equal(t, tc.st, got, q)
			assert.Equal(t, q, got.Encode(), "encoding is canonical")
			again, err := DecodeState("?" + q + "&bench=view")
			require.NoError(t, err)
			assert.Equal(t, got, again, "a leading ? and the page's own keys are ignored")
		})
	}
	assert.Contains(t, tests[6].st.Encode(), "recipe=default+xdp=object:xdp_filter.o&", "object names are kept link-safe")
}

func TestDecodeStateErrors(t *testing.T) {
	tests := []struct{ q, want string }{
		{"colour=red", "unknown key"},
		{"preset=nope", "no preset named"},
		{"preset=default&scenario=e30", "exclusive"},
		{"set=ring_size", "not KEY:VALUE"},
		{"set=ring_size:64,ring_size:32", "given twice"},
		{"set=ring_size:63", "power of two"},
		{"log=e1.z2", "unknown unit"},
		{"cmp=2", "want 1"},
		{"b.set=mtu:9000", "unknown key"},
		{"speed=-3", "speed"},
		{"preset=default&preset=xdp-drop", "given 2 times"},
		{"scenario=!!!", "base64url"},
		{"scenario=eyJjcHVzIjowfQ", "cpus"},
		{"obj=AAAA", "without xdp=object"},
		{"set=xdp:object%3Ax.o", "bytes are missing"},
		{"set=xdp:object%3Ax.o&obj=AAAA", "XDP object"},
		{"recipe=default&preset=default", "recipe and preset are exclusive"},
		{"recipe=default&set=mtu:1500", "recipe and set are exclusive"},
		{"recipe=nope", "no preset named"},
		{"recipe=default+ring_size", `recipe: change 1 (ring_size=): "ring_size": want KEY=VALUE`},
		{"recipe=default+mtu=1500+ring_size=63", `recipe: change 2 (ring_size=63): ring_size="63": want a power of two`},
		{"recipe=default+traffic.sise=1", `recipe: change 1 (traffic.sise=1): traffic.sise: the scenario has no field "sise"`},
		{"recipe=default+xdp=object:x.o", "bytes are missing"},
		{"recipe=default&obj=AAAA", "without xdp=object"},
		{"cmp=1&b.recipe=default+cpus=0", "compare: play: bad parameter: b.recipe: change 1 (cpus=0)"},
	}
	for _, tc := range tests {
		t.Run(tc.q, func(t *testing.T) {
			_, err := DecodeState(tc.q)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestOldLinks: a link written before recipes (preset=, scenario=,
// set=KEY:VALUE,...) opens the same run as the recipe= link it is
// written as now, and a link's recipe spells its changes as --set does.
func TestOldLinks(t *testing.T) {
	custom := scenario.Default()
	custom.RingSize = 64
	js, err := json.Marshal(custom)
	require.NoError(t, err)
	b64 := base64.RawURLEncoding.EncodeToString(js)
	for _, tc := range []struct{ old, now string }{
		{"preset=default", "recipe=default"},
		{"preset=default&set=ring_size:64,page_pool:off,rate_pps:2500.5&speed=10", "recipe=default+ring_size=64+page_pool=off+rate_pps=2500.5&speed=10"},
		{"preset=cpumap&set=kernel:6.10&log=e12", "recipe=cpumap+kernel=6.10&log=e12"},
		{"scenario=" + b64 + "&set=mtu:4000", "recipe=scenario:" + b64 + "+mtu=4000"},
		{"preset=r3-napi-local-off&cmp=1&b.set=kernel:6.5", "recipe=r3-napi-local-off&cmp=1&b.recipe=r3-napi-local-off+kernel=6.5"},
		{"set=ring_size:32", "recipe=default+ring_size=32"},
	} {
		t.Run(tc.old, func(t *testing.T) {
			old, err := DecodeState(tc.old)
			require.NoError(t, err)
			assert.Equal(t, tc.now, old.Encode())
			now, err := DecodeState(tc.now)
			require.NoError(t, err)
			assert.Equal(t, old, now)
			a, err := old.A.Build()
			require.NoError(t, err)
			b, err := now.A.Build()
			require.NoError(t, err)
			assert.Equal(t, a, b, "the same world")
		})
	}
	// Any recipe a CLI takes is a link: raw paths, JSON values, strings
	// with spaces.
	st, err := DecodeState("recipe=" + url.QueryEscape(`default .cpus=1 traffic={"size":128} description="a b"`))
	require.NoError(t, err)
	s, err := st.A.Build()
	require.NoError(t, err)
	assert.Equal(t, 128, s.Traffic.Size)
	assert.Equal(t, "a b", s.Description)
	assert.Equal(t, `recipe=default+.cpus=1+traffic=%7B%22size%22:128%7D+description=%22a+b%22`, st.Encode())
}

func FuzzDecodeState(f *testing.F) {
	f.Add("recipe=default+ring_size=64+traffic.sizes=%5B64,128%5D&log=e12.p1&speed=10")
	f.Add("recipe=scenario:e30+cpus=2&cmp=1&b.recipe=xdp-drop")
	f.Add("preset=default&set=ring_size:64&log=e12.p1&speed=10")
	f.Add("cmp=1&b.set=kernel:6.4&log=t5000")
	f.Add("scenario=e30&log=p3")
	f.Fuzz(func(t *testing.T, q string) {
		st, err := DecodeState(q)
		if err != nil {
			return
		}
		// Whatever decodes encodes to a link that decodes to the same.
		again, err := DecodeState(st.Encode())
		require.NoError(t, err, st.Encode())
		assert.Equal(t, st.Encode(), again.Encode())
	})
}

// runAll works through everything queued in budgets of budget events.
func runAll(t *testing.T, s *Session, budget int) {
	t.Helper()
	for i := 0; s.Busy(); i++ {
		require.Less(t, i, 10_000_000, "the session never finishes")
		s.Work(budget)
	}
	s.Refresh()
}

func metrics(s *Session, pane int) map[string]float64 {
	out := map[string]float64{}
	for _, m := range s.Panes[pane].Metrics.Figures {
		out[m.Name] = m.Value
	}
	return out
}

func TestReplayIsDeterministic(t *testing.T) {
	st := State{
		A:     Config{Preset: "default", Set: []KV{{"ring_size", "32"}}},
		B:     &Config{Preset: "default", Set: []KV{{"ring_size", "32"}, {"page_pool", "off"}}},
		Log:   Log{{UnitEvent, 37}, {UnitPacket, 5}, {UnitPacket, 1}, {UnitNs, 200_000}, {UnitEvent, 1}},
		Speed: -1,
	}
	var want map[string]float64
	var wantB map[string]float64
	var wantSnap view.Snapshot
	for _, budget := range []int{1, 3, 64, 1 << 20} {
		t.Run("budget "+strconv.Itoa(budget), func(t *testing.T) {
			s, err := NewSession(st)
			require.NoError(t, err)
			runAll(t, s, budget)
			require.NoError(t, s.Panes[0].World.Check())
			require.NoError(t, s.Panes[1].World.Check())
			got, gotB := metrics(s, 0), metrics(s, 1)
			assert.Equal(t, s.Panes[0].World.Now(), s.Panes[1].World.Now(), "B runs in lockstep with A")
			if want == nil {
				want, wantB = got, gotB
				wantSnap = cloneSnap(&s.Panes[0].Snap)
				return
			}
			assert.Equal(t, want, got)
			assert.Equal(t, wantB, gotB)
			assert.Equal(t, wantSnap, cloneSnap(&s.Panes[0].Snap))
		})
	}
	assert.NotEqual(t, want["page_allocs"], wantB["page_allocs"], "different configurations give different counters")
}

func cloneSnap(s *view.Snapshot) view.Snapshot {
	c := *s
	c.Queue.Desc = append([]view.DescView(nil), s.Queue.Desc...)
	c.Queue.Avail = append([]uint16(nil), s.Queue.Avail...)
	c.Queue.Used = append([]virtq.UsedElem(nil), s.Queue.Used...)
	c.Pages.Map = append([]mem.Loc(nil), s.Pages.Map...)
	c.CPUs = append([]view.CPUView(nil), s.CPUs...)
	return c
}

// TestPlayedRunReplays is what a shared link relies on: a run driven by
// play (in whatever chunks the frames allowed) and steps gives the same
// world as the replay of its log.
func TestPlayedRunReplays(t *testing.T) {
	s, err := NewSession(State{A: Config{Preset: "cpumap"}, B: &Config{Preset: "cpumap", Set: []KV{{"kernel", "6.4"}}}, Speed: -1})
	require.NoError(t, err)
	for _, n := range []uint64{3, 1, 17, 250, 2} {
		s.Play(n, 100) // budget-limited, as a slow frame would be
		s.Work(7)
	}
	s.Do(Step{UnitPacket, 10})
	s.Do(Step{UnitEvent, 1})
	runAll(t, s, 50)
	link := s.State().Encode()

	st, err := DecodeState(link)
	require.NoError(t, err)
	r, err := NewSession(st)
	require.NoError(t, err)
	runAll(t, r, 1000)
	assert.Equal(t, metrics(s, 0), metrics(r, 0), link)
	assert.Equal(t, metrics(s, 1), metrics(r, 1), link)
}

func TestSessionReconfigure(t *testing.T) {
	s, err := NewSession(State{A: DefaultConfig(), Speed: -1})
	require.NoError(t, err)
	s.Do(Step{UnitEvent, 50})
	runAll(t, s, 1000)
	require.NoError(t, s.SetCompare(true))
	runAll(t, s, 1000)
	assert.Equal(t, s.Panes[0].World.Now(), s.Panes[1].World.Now(), "B catches up with A")
	assert.Equal(t, metrics(s, 0), metrics(s, 1), "same configuration, same counters")

	require.NoError(t, s.Set(1, "kernel", "6.4"))
	runAll(t, s, 1000)
	assert.Equal(t, s.Panes[0].World.Now(), s.Panes[1].World.Now())
	assert.Len(t, s.Log(), 1, "changing B keeps the log")

	require.Error(t, s.Set(0, "ring_size", "17"))
	assert.Len(t, s.Log(), 1, "a refused change changes nothing")
	require.NoError(t, s.Set(0, "ring_size", "64"))
	assert.Empty(t, s.Log(), "changing A starts again")
	assert.Zero(t, int64(s.Panes[0].World.Now()))
	st := s.State()
	assert.Equal(t, []KV{{"ring_size", "64"}}, st.A.Set)
	assert.Equal(t, []KV{{"kernel", "6.4"}}, st.B.Set)

	require.NoError(t, s.SetCompare(false))
	assert.Len(t, s.Panes, 1)
	assert.Nil(t, s.State().B)
}

func TestSessionWithObject(t *testing.T) {
	c, err := DefaultConfig().WithObject("xdp_filter.o", bpfObject(t, "xdp_filter.o"))
	require.NoError(t, err)
	s, err := NewSession(State{A: c, Speed: -1})
	require.NoError(t, err)
	s.Do(Step{UnitPacket, 20})
	runAll(t, s, 1000)
	m := metrics(s, 0)
	assert.GreaterOrEqual(t, m["rx_packets"], 20.0)
	assert.Equal(t, m["rx_packets"], m["rx_xdp_packets"], "every packet went through the loaded program")
	v, err := c.Value("xdp")
	require.NoError(t, err)
	assert.Equal(t, "object:xdp_filter.o", v)

	_, err = DefaultConfig().WithObject("tc.o", bpfObject(t, "tc_prog.o"))
	assert.ErrorContains(t, err, "not an XDP program", "the interpreter's error reaches the page")
	_, err = DefaultConfig().WithObject("junk.o", []byte("not an ELF file"))
	assert.ErrorContains(t, err, `XDP object "junk.o": not an ELF object: it is text`)

	c2, err := c.With("xdp", "xdp_drop")
	require.NoError(t, err)
	assert.Nil(t, c2.Object, "picking a library program drops the object")
}

// TestSessionEventLog: pane A logs the events it runs one at a time or a
// few per call, each with what it changed; fast runs are not logged, and
// the log keeps the newest EventLogSize.
func TestSessionEventLog(t *testing.T) {
	s, err := NewSession(State{A: DefaultConfig(), Speed: -1})
	require.NoError(t, err)
	a := s.Panes[0]
	s.Do(Step{UnitEvent, 1})
	runAll(t, s, 1000)
	require.Len(t, a.Events, 1)
	assert.Equal(t, uint64(1), a.Events[0].Seq)
	assert.Equal(t, "napi poll", a.Events[0].Handler)

	s.Do(Step{UnitPacket, 1})
	runAll(t, s, 1000)
	require.Greater(t, len(a.Events), 1)
	last := a.Events[len(a.Events)-1]
	assert.Equal(t, a.World.Sim.Queue.Fired(), last.Seq, "every event of a one-packet step is logged")
	var got uint64
	for _, e := range a.Events {
		for _, c := range e.Changes {
			if c.Name == "rx_packets" {
				got += uint64(c.To - c.From)
			}
		}
	}
	assert.Equal(t, a.World.Received(), got, "the logged changes account for every packet so far")

	n := len(a.Events)
	fired := a.World.Sim.Queue.Fired()
	assert.Equal(t, EventLogBatch+1, s.Play(EventLogBatch+1, 1000))
	assert.Len(t, a.Events, n, "a fast run is not logged")
	assert.Equal(t, fired+EventLogBatch+1, a.World.Sim.Queue.Fired())

	for range 3 {
		s.Play(EventLogBatch, 1000)
	}
	require.Len(t, a.Events, EventLogSize, "the log keeps the newest")
	assert.Equal(t, a.World.Sim.Queue.Fired(), a.Events[EventLogSize-1].Seq)
	for i := 1; i < EventLogSize; i++ {
		assert.Equal(t, a.Events[i-1].Seq+1, a.Events[i].Seq)
	}
}
