package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// TestEveryHandlerCitesKernelFunctions: in every preset, each registered
// handler names the kernel functions it stands for, all in engine/kernel's
// table (a hardware device's landing of frames is the only one with none:
// no kernel runs it).
func TestEveryHandlerCitesKernelFunctions(t *testing.T) {
	for _, cc := range cloneCases(t) {
		w, err := New(cc.s)
		require.NoError(t, err)
		q := w.Sim.Queue
		for k := range q.Kinds() {
			name := q.KindName(sim.Kind(k))
			cites := q.Cites(sim.Kind(k))
			if name == "host lands frames" && cc.s.Device.Kind != scenario.DeviceVhost {
				assert.Empty(t, cites, "%s: %s", cc.name, name)
				continue
			}
			assert.NotEmpty(t, cites, "%s: handler %q cites no kernel function", cc.name, name)
			for _, f := range cites {
				_, ok := kernel.LookupFunc(f)
				assert.True(t, ok, "%s: handler %q cites %s, which engine/kernel's table lacks", cc.name, name, f)
			}
		}
	}
}

// TestCountedInIsInTheTable: every function the vocabulary says counts a
// counter is in engine/kernel's table, and every counter it names exists.
func TestCountedInIsInTheTable(t *testing.T) {
	for name, f := range vocab.Counted() {
		_, ok := kernel.LookupFunc(f)
		assert.True(t, ok, "%s is counted in %s, which engine/kernel's table lacks", name, f)
		_, ok = vocab.Lookup(strings.ReplaceAll(name, "N", "0"))
		assert.True(t, ok, "vocab counts %s in %s but has no such number", name, f)
	}
}

// TestKernelTableIsTheCodesCitations: every function of engine/kernel's
// table is cited in a comment of the engine's code (under its name or its
// older one): the table holds what the engine models, nothing else.
func TestKernelTableIsTheCodesCitations(t *testing.T) {
	var code strings.Builder
	require.NoError(t, filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			p == filepath.Join("kernel", "funcs.go") || p == filepath.Join("vocab", "funcs.go") {
			return err
		}
		b, err := os.ReadFile(p)
		code.Write(b)
		return err
	}))
	src := code.String()
	for _, f := range kernel.Funcs() {
		cited := strings.Contains(src, f.Name) || f.Was != "" && strings.Contains(src, f.Was)
		assert.True(t, cited, "%s (%s) is in the table but no engine code cites it", f.Name, f.File)
	}
}

// TestEventsSayWhatTheyDid: every event of every preset says what it did
// in a sentence and names kernel functions of the table; the same run
// says the same.
func TestEventsSayWhatTheyDid(t *testing.T) {
	for _, cc := range cloneCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			w, err := New(cc.s)
			require.NoError(t, err)
			again, err := New(cc.s)
			require.NoError(t, err)
			evs, evs2 := runTraced(t, w, traceCheckEvents), runTraced(t, again, traceCheckEvents)
			require.Equal(t, evs, evs2, "the same run, the same words")
			handlers := map[string]string{}
			for _, ev := range evs {
				require.True(t, strings.HasSuffix(ev.Say, "."), "%s", ev.Say)
				require.NotContains(t, ev.Say, " on "+ev.Target+".", "a handler without words: %s", ev.Say)
				hw := ev.Handler == "host lands frames" && cc.s.Device.Kind != scenario.DeviceVhost
				if !hw {
					require.NotEmpty(t, ev.Funcs, "%s names no kernel function", ev.Head())
				}
				for _, f := range ev.Funcs {
					k, ok := kernel.LookupFunc(f)
					require.True(t, ok, "%s names %s, which engine/kernel's table lacks", ev.Head(), f)
					if cc.s.Device.Kind != scenario.DeviceVhost {
						require.False(t, strings.HasPrefix(k.File, "drivers/vhost/"), "%s on a %s device names vhost-net's %s: hardware runs no kernel code for it", ev.Head(), cc.s.Device.Kind, f)
					}
				}
				handlers[ev.Handler] = ev.Say
			}
			for h, say := range handlers {
				t.Logf("%s: %s", h, say)
			}
		})
	}
}

// TestWatchFuncFindsWhatTheTraceNames: for every function the first
// events of a preset name (2000, 200 under the race detector), a watch
// on a fresh world stops at the first
// event the trace names it in; a function no event of the world can run
// is refused.
func TestWatchFuncFindsWhatTheTraceNames(t *testing.T) {
	for _, cc := range cloneCases(t) {
		t.Run(cc.name, func(t *testing.T) {
			w, err := New(cc.s)
			require.NoError(t, err)
			first := map[string]uint64{}
			for _, ev := range runTraced(t, w, 2*traceCheckEvents/3) {
				for _, f := range ev.Funcs {
					if _, ok := first[f]; !ok {
						first[f] = ev.Seq
					}
				}
			}
			for f, seq := range first {
				w, err := New(cc.s)
				require.NoError(t, err)
				fw, err := w.WatchFunc(f)
				require.NoError(t, err, f)
				for {
					ran, ok := fw.Step()
					require.True(t, ok, "%s: the world ran out before event %d", f, seq)
					if ran {
						break
					}
				}
				assert.Equal(t, seq, w.Sim.Queue.Fired(), "%s: the watch stops at the event the trace first names it in", f)
			}
		})
	}
	s, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	_, err = w.WatchFunc("receive_big")
	assert.ErrorContains(t, err, "no event of this world runs receive_big")
	_, err = w.WatchFunc("printk")
	assert.ErrorContains(t, err, "not a kernel function the engine models")
}

// The Events panel narrates who runs when: NET_RX preempting the reader
// on its CPU, __do_softirq handing NET_RX to ksoftirqd, ksoftirqd's own
// polls, and the scheduler switching tasks at a preemption point. A UDP
// flood on one CPU has them: on 6.4 NET_RX goes to ksoftirqd and stays
// there (tutorial 10, step 5); on 7.0 a slower flood's interrupts
// preempt the reader.
func TestEventsNarrateWhoRunsWhen(t *testing.T) {
	wants := []string{"woke ksoftirqd", "a thread the scheduler shares", "preempted the task running there", "the scheduler switched to another task"}
	seen := map[string]bool{}
	for _, k := range []struct {
		kernel string
		pps    float64
		size   int
	}{{"6.4", 6e6, 64}, {"7.0", 3e6, 1514}} {
		w := preset(t, "default", func(s *scenario.Scenario) {
			s.Kernel, s.CPUs, s.RingSize = k.kernel, 1, 256
			s.Device.Kind = scenario.DeviceVDPA
			s.Consumer = scenario.Consumer{CPU: 0, Context: scenario.FreeProcess, CostNs: 300}
			s.Traffic = scenario.Traffic{Kind: scenario.TrafficUDPStream, Proto: "udp", Flows: 1, RatePPS: k.pps, DstPort: 9, Size: k.size}
		})
		require.NoError(t, w.Trace(20_000, func(ev TraceEvent) {
			for _, want := range wants {
				if strings.Contains(ev.Say, want) {
					seen[want] = true
				}
			}
		}))
	}
	for _, want := range wants {
		assert.True(t, seen[want], "no event says %q", want)
	}
}
