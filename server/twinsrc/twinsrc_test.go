package twinsrc

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/vocab"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
)

// registry is what the twin opens real sources through in these tests.
func registry() metrics.Registry {
	r := metrics.Registry{"fake": metrics.OpenFake}
	r[Kind] = OpenWith(registry)
	return r
}

func TestTwinFollowsTheFake(t *testing.T) {
	real, err := metrics.OpenFake("")
	require.NoError(t, err)
	base, err := BaseScenario("fake")
	require.NoError(t, err)
	// A clock that never moves: the bound on the wall time a Sample may
	// spend simulating (maxWorkPerSample) never cuts a sample short, so
	// the predictions do not depend on how busy the machine is.
	stopped := time.Now()
	tw, err := New(real, base, func() time.Time { return stopped })
	require.NoError(t, err)
	info := tw.Info()
	assert.Equal(t, "twin:fake", info.Name)
	assert.Equal(t, metrics.Labels{Kind: Kind, Follows: "fake"}, info.Labels, "a twin is labelled by what it follows")
	for _, n := range metrics.FakeCounters {
		assert.Contains(t, info.Counters, n, "the real counters")
		assert.Contains(t, info.Counters, vocab.Predicted(n), "and the engine's beside them")
	}
	assert.Contains(t, info.Counters, "twin_rebuilds")

	// The Fake's two queues grow by 100+200 packets and 150000+300000
	// bytes per 100 ms sample: 3000 pps of 1500-byte frames. Sample 1
	// was taken at open; the first window closes at sample 6.
	var samples []metrics.Sample
	for range 16 { // samples 2..17
		s, err := tw.Sample()
		require.NoError(t, err)
		samples = append(samples, s)
		if len(samples) == 4 {
			assert.Zero(t, s.Totals["twin_rebuilds"], "nothing measured before MeasureWindow")
		}
	}
	pps, size := tw.Traffic()
	assert.InDelta(t, 3000, pps, 0.001)
	assert.Equal(t, 1500, size)

	last := samples[len(samples)-1]
	assert.Equal(t, uint64(17)*300, last.Totals["rx_packets"], "real counters pass through unchanged")
	assert.Equal(t, uint64(1), last.Totals["twin_rebuilds"], "built once, at the first measurement")
	// The world started at sample 6 and has run 11 intervals of 100 ms
	// at 3000 pps since.
	assert.InDelta(t, 3300, float64(last.Totals["predicted_rx_packets"]), 30)
	assert.InDelta(t, 3300*1500, float64(last.Totals["predicted_rx_bytes"]), 30*1500)
	for i := 6; i < len(samples); i++ {
		d := samples[i].Totals["predicted_rx_packets"] - samples[i-1].Totals["predicted_rx_packets"]
		assert.InDelta(t, 300, float64(d), 2, "predicted rate equals the measured one (sample %d)", i+2)
	}

	require.NoError(t, tw.Close())
	_, err = tw.Sample()
	assert.ErrorIs(t, err, metrics.ErrClosed)
}

func TestTwinPassesErrorsOn(t *testing.T) {
	f := metrics.NewFake("fake", 1)
	tw, err := New(f, scenario.Default(), time.Now)
	require.NoError(t, err)
	_, err = tw.Sample()
	require.NoError(t, err)
	boom := errors.New("interface vanished")
	f.Fail(boom)
	_, err = tw.Sample()
	assert.ErrorIs(t, err, boom)
	f.Fail(nil)
	_, err = tw.Sample()
	assert.NoError(t, err, "and recovers when the real source does")
	require.NoError(t, tw.Close())
	assert.True(t, f.Closed(), "Close closes the real source")
	require.NoError(t, tw.Close(), "once")
}

// scripted is a real source whose rate and frame size the test sets.
type scripted struct {
	at          time.Time
	pps         float64
	size        uint64
	pkts, bytes uint64
	failing     error
	softnet     bool // softnet_stat's counters too, per CPU, as a host's
}

func (s *scripted) Info() metrics.SourceInfo {
	i := metrics.SourceInfo{Name: "scripted", Counters: []string{"rx_packets", "rx_bytes", "rx_xdp_drops", "not_in_the_engine"}}
	if s.softnet {
		i.Counters = append(i.Counters, "softnet.processed", "softnet.time_squeeze")
	}
	return i
}

// step advances the script by d at the current rate.
func (s *scripted) step(d time.Duration) {
	n := uint64(s.pps * d.Seconds())
	s.at = s.at.Add(d)
	s.pkts += n
	s.bytes += n * s.size
}

func (s *scripted) Sample() (metrics.Sample, error) {
	if s.failing != nil {
		return metrics.Sample{}, s.failing
	}
	smp := metrics.Sample{Time: s.at, Totals: map[string]uint64{
		"rx_packets": s.pkts, "rx_bytes": s.bytes, "rx_xdp_drops": 0, "not_in_the_engine": 7,
	}}
	if s.softnet { // CPU 1 offline, CPU 2 takes a third of the packets
		smp.Totals["softnet.processed"], smp.Totals["softnet.time_squeeze"] = s.pkts, 5
		smp.CPUs = []map[string]uint64{
			{"softnet.processed": s.pkts - s.pkts/3, "softnet.time_squeeze": 5},
			{},
			{"softnet.processed": s.pkts / 3, "softnet.time_squeeze": 0},
		}
	}
	return smp, nil
}

func (s *scripted) Close() error { return nil }

func TestTwinRebuildsBoundedAndKeepsTotalsGrowing(t *testing.T) {
	real := &scripted{at: time.Unix(1000, 0), pps: 10_000, size: 64}
	tw, err := New(real, scenario.Default(), time.Now)
	require.NoError(t, err)
	info := tw.Info()
	assert.Contains(t, info.Counters, "predicted_rx_xdp_drops")
	assert.NotContains(t, info.Counters, "predicted_not_in_the_engine")
	assert.NotContains(t, info.Counters, "predicted_rx_kicks", "only names the real source has")

	prev := uint64(0)
	sample := func(d time.Duration) metrics.Sample {
		t.Helper()
		real.step(d)
		s, err := tw.Sample()
		require.NoError(t, err)
		p := s.Totals["predicted_rx_packets"]
		require.GreaterOrEqual(t, p, prev, "predicted totals never go back, rebuilds included")
		prev = p
		return s
	}
	s := sample(100 * time.Millisecond)
	assert.Equal(t, uint64(0), s.Totals["twin_rebuilds"], "not measured yet")
	s = sample(400 * time.Millisecond)
	assert.Equal(t, uint64(1), s.Totals["twin_rebuilds"])
	pps, size := tw.Traffic()
	assert.InDelta(t, 10_000, pps, 1)
	assert.Equal(t, 64, size)

	// Small wobble: no rebuild.
	real.pps = 10_500
	s = sample(3 * time.Second)
	assert.Equal(t, uint64(1), s.Totals["twin_rebuilds"], "5%% is within the tolerance")

	// The rate doubles: one rebuild, then no other before MinRebuild.
	real.pps, real.size = 20_000, 256
	s = sample(MeasureWindow)
	assert.Equal(t, uint64(2), s.Totals["twin_rebuilds"])
	pps, size = tw.Traffic()
	assert.InDelta(t, 20_000, pps, 1)
	assert.Equal(t, 256, size)
	real.pps = 40_000
	for range 10 { // 1 s < MinRebuild
		s = sample(100 * time.Millisecond)
	}
	assert.Equal(t, uint64(2), s.Totals["twin_rebuilds"], "at most one rebuild per MinRebuild")
	before := s.Totals["predicted_rx_packets"]
	for range 15 {
		s = sample(100 * time.Millisecond)
	}
	assert.Equal(t, uint64(3), s.Totals["twin_rebuilds"])
	pps, _ = tw.Traffic()
	assert.InDelta(t, 40_000, pps, 1)
	assert.Greater(t, s.Totals["predicted_rx_packets"], before)

	// Silence: the engine idles and its counters stand still.
	real.pps = 0
	sample(3 * time.Second)
	idle := sample(100 * time.Millisecond)
	pps, size = tw.Traffic()
	assert.Zero(t, pps)
	assert.Zero(t, size)
	later := sample(time.Second)
	assert.Equal(t, idle.Totals["predicted_rx_packets"], later.Totals["predicted_rx_packets"])

	// Sizes outside what a scenario takes are clamped.
	real.pps, real.size = 1000, 20
	sample(3 * time.Second)
	_, size = tw.Traffic()
	assert.Equal(t, scenario.MinFrame, size)
}

func TestTwinCounterReset(t *testing.T) {
	real := &scripted{at: time.Unix(1000, 0), pps: 1000, size: 100}
	tw, err := New(real, scenario.Default(), time.Now)
	require.NoError(t, err)
	real.step(time.Second)
	_, err = tw.Sample()
	require.NoError(t, err)
	real.pkts, real.bytes = 0, 0 // the interface was recreated
	real.step(time.Second)
	_, err = tw.Sample()
	require.NoError(t, err, "a counter going back is not measured, not an error")
	pps, _ := tw.Traffic()
	assert.InDelta(t, 1000, pps, 1)
}

func TestTwinSpecErrors(t *testing.T) {
	reg := registry()
	cases := []struct {
		spec string
		is   error
		says string
	}{
		{"twin", ErrNoRealSource, "twin:host:eth0"},
		{"twin:", ErrNoRealSource, "name the real source"},
		{"twin:twin:fake", nil, "cannot follow another twin"},
		{"twin:nosuch", metrics.ErrUnknownKind, `unknown source kind "nosuch"`},
		{"twin:lab:xdp_bogus", labsrc.ErrBadSpec, "not one the lab runs"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := reg.Open(tc.spec)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

func TestBaseScenario(t *testing.T) {
	s, err := BaseScenario("host:eth0")
	require.NoError(t, err)
	assert.Nil(t, s.XDP)
	for _, tc := range []struct{ spec, prog string }{
		{"lab", "xdp_count_proto"},
		{"lab:xdp_drop,rate=50000", "xdp_drop"},
		{"lab:xdp_tx", "xdp_tx"},
		{"lab:xdp_drop_udp_port,port=53", "xdp_drop_udp_port"},
		{"lab:xdp_redirect_cpu", "xdp_redirect_cpu"},
	} {
		s, err := BaseScenario(tc.spec)
		require.NoError(t, err, tc.spec)
		require.NotNil(t, s.XDP, tc.spec)
		assert.Equal(t, tc.prog, s.XDP.Program, tc.spec)
		assert.Equal(t, labsrc.FlowPort, s.Traffic.DstPort, tc.spec)
	}
	s, err = BaseScenario("lab:xdp_drop_udp_port,port=53")
	require.NoError(t, err)
	assert.Equal(t, "53", s.XDP.Args["port"])
}

func TestTwinRefusesASourceWithoutRates(t *testing.T) {
	_, err := New(noRates{}, scenario.Default(), time.Now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "neither rx_packets and rx_bytes")
}

type noRates struct{}

func (noRates) Info() metrics.SourceInfo { return metrics.SourceInfo{Name: "norates"} }
func (noRates) Sample() (metrics.Sample, error) {
	return metrics.Sample{Time: time.Unix(1, 0), Totals: map[string]uint64{"x": 1}}, nil
}
func (noRates) Close() error { return nil }

func TestTwinSaysWhenTheEngineCannotKeepUp(t *testing.T) {
	wall := time.Unix(0, 0)
	slow := func() time.Time { // every look at the clock finds 100 ms gone
		wall = wall.Add(100 * time.Millisecond)
		return wall
	}
	real := &scripted{at: time.Unix(1000, 0), pps: 100_000, size: 64}
	tw, err := New(real, scenario.Default(), slow)
	require.NoError(t, err)
	real.step(time.Second)
	_, err = tw.Sample()
	require.NoError(t, err)
	for range 3 {
		real.step(5 * time.Second)
		s, err := tw.Sample()
		require.NoError(t, err)
		assert.Less(t, s.Totals["predicted_rx_packets"], uint64(100_000), "one chunk of work per Sample")
	}
	notes := tw.Info().Notes
	assert.Contains(t, notes[len(notes)-1], "slower than real time")
}

// TestTwinPassesCPUsThrough: the real source's per-CPU counters pass
// through as they are; the engine's predictions of them are totals only
// (its CPUs are not the host's).
func TestTwinPassesCPUsThrough(t *testing.T) {
	real := &scripted{at: time.Unix(1000, 0), pps: 10_000, size: 64, softnet: true}
	tw, err := New(real, scenario.Default(), time.Now)
	require.NoError(t, err)
	assert.Contains(t, tw.Info().Counters, "predicted_softnet.processed")
	var s metrics.Sample
	for range 30 { // 3 s: measured, built, run
		real.step(100 * time.Millisecond)
		s, err = tw.Sample()
		require.NoError(t, err)
	}
	want, err := real.Sample()
	require.NoError(t, err)
	assert.Equal(t, want.CPUs, s.CPUs, "the real CPUs, unchanged")
	assert.Positive(t, s.Totals["predicted_softnet.processed"], "the engine predicts the sum")
	for i, m := range s.CPUs {
		for name := range m {
			assert.NotContains(t, name, vocab.PredictedPrefix, "CPU %d: no prediction per CPU", i)
		}
	}

	plain, err := New(&scripted{at: time.Unix(1000, 0), pps: 10_000, size: 64}, scenario.Default(), time.Now)
	require.NoError(t, err)
	s, err = plain.Sample()
	require.NoError(t, err)
	assert.Nil(t, s.CPUs, "none when the real source has none")
}
