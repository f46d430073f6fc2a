package simsrc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/vocab"
	"ringlab/server/metrics"
)

func TestSimSourceFollowsTheClock(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("default", func() time.Time { return now })
	require.NoError(t, err)
	info := src.Info()
	assert.Equal(t, "sim:default", info.Name)
	assert.Contains(t, info.Counters, "rx_packets")
	assert.Contains(t, info.Counters, "rx_pp_recycle_cached")

	now = now.Add(10 * time.Millisecond)
	a, err := src.Sample()
	require.NoError(t, err)
	assert.Equal(t, int64(10*time.Millisecond), int64(src.World().Now()), "simulated time follows the wall clock")
	// default preset: 50 kpps, so about 500 packets in 10 ms.
	assert.InDelta(t, 500, float64(a.Totals["rx_packets"]), 5)
	require.Len(t, a.Queues, 1)
	assert.Equal(t, a.Totals["rx_packets"], a.Queues[0]["rx_packets"], "per-queue names match the totals'")

	now = now.Add(10 * time.Millisecond)
	b, err := src.Sample()
	require.NoError(t, err)
	assert.Greater(t, b.Totals["rx_packets"], a.Totals["rx_packets"])

	for name := range b.Totals {
		_, ok := vocab.Lookup(name)
		assert.True(t, ok, "%s is in engine/vocab", name)
	}
	require.NoError(t, src.Close())
	_, err = src.Sample()
	assert.ErrorIs(t, err, metrics.ErrClosed)
}

func TestSimSourceBoundsItsWork(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("xdp-drop", func() time.Time { return now })
	require.NoError(t, err)
	now = now.Add(10 * time.Second) // far more than the engine can do in one sample
	start := time.Now()
	s, err := src.Sample()
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "one sample is bounded in wall time")
	assert.LessOrEqual(t, now.Sub(s.Time), MaxLag, "the sample's time stays within MaxLag of the wall clock")
	var spent time.Duration
	for range 20 { // samples in a row: together within the budget's burst and duty
		start := time.Now()
		now = now.Add(10 * time.Millisecond)
		_, err := src.Sample()
		require.NoError(t, err)
		spent += time.Since(start)
	}
	t.Logf("20 samples of xdp-drop in a row took %v", spent)
	// Without the budget: 20 times maxWorkPerSample, 600 ms; with it the
	// burst and half of the time spent, about 200 ms.
	assert.Less(t, spent, 400*time.Millisecond, "the engine's share of a core is bounded")
	assert.Contains(t, src.Info().Notes[len(src.Info().Notes)-1], "slower than real time")
}

// unbounded lifts the work budget, so that a test's clock can jump by
// seconds however slow the machine (the race detector) runs the engine.
func unbounded(s *Source) *Source {
	s.budget = workBudget{duty: 1e6, burst: time.Hour, perSample: time.Hour, perTick: time.Hour, tokens: time.Hour}
	return s
}

// rateBetween is rx_packets per second of sample time between a and b.
func rateBetween(a, b metrics.Sample) float64 {
	return float64(b.Totals["rx_packets"]-a.Totals["rx_packets"]) / b.Time.Sub(a.Time).Seconds()
}

// TestSimSourceRatesWhateverTheSampling: rates taken between samples are
// the preset's 50,000 packets per second whether the samples are a
// second or 20 ms apart.
func TestSimSourceRatesWhateverTheSampling(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("default", func() time.Time { return now })
	require.NoError(t, err)
	unbounded(src)
	prev, err := src.Sample()
	require.NoError(t, err)
	for _, period := range []time.Duration{time.Second, 100 * time.Millisecond, 20 * time.Millisecond} {
		first := prev
		for range 10 {
			now = now.Add(period)
			s, err := src.Sample()
			require.NoError(t, err)
			assert.Equal(t, now, s.Time, "%v: the engine keeps up, so the sample's time is the wall time", period)
			prev = s
		}
		assert.InEpsilon(t, 50_000, rateBetween(first, prev), 0.01, "every %v", period)
	}
}

// TestSimSourceClockAndIdle: the clock advances the world between
// samples, so a Sample after a long interval runs little; after
// IdleAfter without a Sample it rests, and the next Sample skips the
// time nobody read instead of simulating it.
func TestSimSourceClockAndIdle(t *testing.T) {
	now := time.Unix(1000, 0)
	src, err := New("default", func() time.Time { return now })
	require.NoError(t, err)
	unbounded(src).clock = true // ticks by hand below, no goroutine
	a, err := src.Sample()
	require.NoError(t, err)
	for range 200 { // 10 s of clock ticks
		now = now.Add(ClockPeriod)
		src.tick()
	}
	assert.Equal(t, int64(10*time.Second), int64(src.World().Now()), "the clock kept up without a sample")
	b, err := src.Sample()
	require.NoError(t, err)
	assert.InEpsilon(t, 50_000, rateBetween(a, b), 0.01)
	assert.Zero(t, src.Skipped(), "a clock that keeps up skips nothing")

	// Nobody reads for longer than IdleAfter: the clock rests.
	rest := src.World().Now()
	for i := 0; now.Sub(b.Time) < IdleAfter+time.Minute; i++ {
		now = now.Add(time.Second)
		src.tick()
	}
	assert.Less(t, time.Duration(src.World().Now()-rest), IdleAfter+time.Second, "the clock stops after IdleAfter")
	c, err := src.Sample()
	require.NoError(t, err)
	assert.Equal(t, now, c.Time, "the next sample is at the wall time: the idle time was skipped")
	assert.Equal(t, c.Time.Sub(b.Time), time.Duration(src.World().Now()-rest)+src.Skipped(), "between two samples, Time moved by the simulated time and the skipped")
	assert.Len(t, src.Info().Notes, 1, "skipping idle time is no lag")
	for range 20 {
		now = now.Add(ClockPeriod)
		src.tick()
	}
	d, err := src.Sample()
	require.NoError(t, err)
	assert.InEpsilon(t, 50_000, rateBetween(c, d), 0.01, "and the rate after it is the preset's")
}

// TestSimSourceClockGoroutine: Open's clock runs until Close, which
// stops it.
func TestSimSourceClockGoroutine(t *testing.T) {
	src, err := Open("")
	require.NoError(t, err)
	s := src.(*Source)
	assert.Equal(t, "sim", s.Info().Labels.Kind)
	assert.Equal(t, "default", s.Info().Labels.Preset)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		t0 := s.w.Now()
		s.mu.Unlock()
		if t0 > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the clock advances the world without a Sample")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, src.Close())
	select {
	case <-s.done:
	default:
		t.Fatal("Close returned with the clock running")
	}
	_, err = src.Sample()
	assert.ErrorIs(t, err, metrics.ErrClosed)
	assert.NoError(t, src.Close(), "a second Close")
}

func TestSimSourceBadPreset(t *testing.T) {
	_, err := Open("nosuch")
	assert.ErrorContains(t, err, "no preset named")
}

// TestSimSourceCountersPerCPU: a sample carries each CPU's counters
// under the totals' names (World.CPUCounters), which sum to the totals,
// and so do each queue's; sixteen queues on two CPUs squeeze both CPUs' net_rx_action rounds.
func TestSimSourceCountersPerCPU(t *testing.T) {
	s, err := scenario.LookupPreset("xdp-drop")
	require.NoError(t, err)
	s.CPUs, s.Queues, s.Traffic.Flows = 2, 16, 16
	now := time.Unix(1000, 0)
	src, err := newScenario("xdp-drop", s, func() time.Time { return now })
	require.NoError(t, err)
	unbounded(src)
	now = now.Add(2 * time.Millisecond)
	smp, err := src.Sample()
	require.NoError(t, err)

	require.Len(t, smp.CPUs, 2, "one map per CPU")
	sums := map[string]uint64{}
	for _, m := range smp.CPUs {
		for name, v := range m {
			sums[name] += v
		}
	}
	for _, name := range []string{"softnet.processed", "softnet.dropped", "softnet.time_squeeze", "ksoftirqd_wakeups", "context_switches"} {
		assert.Contains(t, sums, name, "every CPU carries %s", name)
	}
	for name, v := range sums {
		total, ok := smp.Totals[name]
		require.True(t, ok, "%s is a total too", name)
		assert.Equal(t, total, v, "%s: the CPUs sum to the total", name)
		_, ok = vocab.Lookup(vocab.CPUCounter(0, name))
		assert.True(t, ok, "engine/vocab names %s per CPU", name)
	}
	for i, m := range smp.CPUs {
		assert.Positive(t, m["softnet.time_squeeze"], "CPU %d: eight instances of 64 run out of netdev_budget's 300", i)
	}

	// Each queue's counters under the totals' names (rx_packets, not
	// rx3_packets), which sum to the totals.
	require.Len(t, smp.Queues, 16, "one map per queue")
	qsums := map[string]uint64{}
	for q, m := range smp.Queues {
		assert.Contains(t, m, "rx_packets", "queue %d", q)
		assert.Contains(t, m, "tx_kicks", "queue %d", q)
		for name, v := range m {
			qsums[name] += v
		}
	}
	for name, v := range qsums {
		assert.Equal(t, smp.Totals[name], v, "%s: the queues sum to the total", name)
	}
	assert.Positive(t, qsums["rx_xdp_drops"])

	// XDP_DROP takes nothing to the stack; the default preset's UDP does.
	def, err := New("default", func() time.Time { return now })
	require.NoError(t, err)
	now = now.Add(10 * time.Millisecond)
	smp, err = def.Sample()
	require.NoError(t, err)
	require.Len(t, smp.CPUs, def.World().Sim.NumCPU(), "every CPU, whatever the preset")
	var processed uint64
	for _, m := range smp.CPUs {
		processed += m["softnet.processed"]
	}
	assert.Positive(t, processed)
	assert.Equal(t, smp.Totals["softnet.processed"], processed)
}
