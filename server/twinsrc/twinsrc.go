// Package twinsrc is the "twin" metric source: a real source (a host
// interface, a lab) next to an engine world whose traffic follows the rate
// and frame size measured on it, so that predicted and measured counters
// can be read side by side: the engine's under predicted_NAME
// (vocab.Predicted) next to the real NAME, each read from its world's
// readout (engine.World.Read). docs/lab.md ("Twin") says
// more.
package twinsrc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"ringlab/engine"
	"ringlab/engine/bpf"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
)

// Kind is the registry kind of the twin.
const Kind = "twin"

// Rebuilds is the twin's own counter: the times it rebuilt its world
// (engine/vocab's twin group).
const Rebuilds = "twin_rebuilds"

// Limits of the twin.
const (
	// MinRebuild bounds how often the world is rebuilt for a new rate or
	// size, in the real source's time.
	MinRebuild = 2 * time.Second
	// RateTolerance is the relative change of the measured packet rate
	// that rebuilds the world.
	RateTolerance = 0.10
	// SizeTolerance is the change of the measured average frame size, in
	// bytes, that rebuilds the world.
	SizeTolerance = 8
	// MeasureWindow is the shortest interval of the real source's time a
	// rate is measured over: samples taken close together (two scrapes
	// in a row) would give noise, not rates.
	MeasureWindow = 500 * time.Millisecond
	// MinPPS is the measured rate below which the engine idles (its
	// predicted counters stand still): a scenario rate of 0 would mean
	// "as fast as the device goes".
	MinPPS = 1.0
	// maxWorkPerSample bounds the wall time one Sample spends simulating
	// (the engine runs 1 s of 20 kpps in about 7 ms, of 280 kpps in about
	// 85 ms on the 2-core machines, so a Sample a second keeps up with
	// the lab). maxBacklog is how far simulated time may fall behind the
	// real source's before the twin gives up on the backlog: the world
	// then goes on from where it is, and a note says it runs slower than
	// real time.
	maxWorkPerSample = 50 * time.Millisecond
	maxBacklog       = time.Second
	stepChunk        = 50 * sim.Microsecond
)

// rateCounters are the (packets, bytes) counter pairs the twin measures
// traffic with, in order of preference: the lab's own flow as its program
// counted it (whole frames), then the interface's received packets.
var rateCounters = [][2]string{
	{"xdp_packets_counted", "xdp_bytes_counted"},
	{"rx_packets", "rx_bytes"},
}

// ErrNoRealSource is returned for "twin" without a source to follow.
var ErrNoRealSource = errors.New("twin: name the real source to follow, e.g. twin:host:eth0 or twin:lab:xdp_drop")

// OpenWith returns the registry's opener of "twin:SPEC": it opens SPEC
// through the registry reg returns (called at open time, so the twin can
// be registered in the registry it uses) and follows it.
func OpenWith(reg func() metrics.Registry) metrics.Opener {
	return func(arg string) (metrics.Source, error) {
		if arg == "" {
			return nil, ErrNoRealSource
		}
		if kind, _, _ := strings.Cut(arg, ":"); kind == Kind {
			return nil, fmt.Errorf("twin: a twin cannot follow another twin (%q)", arg)
		}
		base, err := BaseScenario(arg)
		if err != nil {
			return nil, err
		}
		real, err := reg().Open(arg)
		if err != nil {
			return nil, err
		}
		t, err := New(real, base, time.Now)
		if err != nil {
			real.Close()
			return nil, err
		}
		return t, nil
	}
}

// BaseScenario is the scenario the twin's engine starts from for the real
// source spec: the engine's defaults (virtio_net in 2026: a 256-entry ring,
// mergeable buffers from page_pool) with the lab's XDP program when spec
// is a lab. Only the traffic's rate and size change afterwards.
func BaseScenario(spec string) (scenario.Scenario, error) {
	s := scenario.Default()
	s.Name = "twin"
	kind, arg, _ := strings.Cut(spec, ":")
	if kind != "lab" {
		return s, nil
	}
	c, err := labsrc.ParseSpec(arg)
	if err != nil {
		return scenario.Scenario{}, err
	}
	s.Traffic.DstPort = labsrc.FlowPort
	s.XDP = &scenario.XDP{Program: c.Program}
	switch c.Program {
	case bpf.NameDropUDPPort:
		s.XDP.Args = map[string]string{"port": fmt.Sprint(c.Port)}
	case bpf.NameRedirectCPU:
		s.CPUs = 2
		s.XDP.Args = map[string]string{"mode": "hash"}
	}
	return s, s.Validate()
}

// Source is a twin. Like every metrics.Source it is used by one goroutine
// at a time; it owns real and uses it from Sample only.
type Source struct {
	real metrics.Source
	base scenario.Scenario
	now  func() time.Time // the wall clock, only to bound work per Sample

	w       *engine.World     // nil while idle
	wStart  time.Time         // real-source time at which w's clock was 0
	carried map[string]uint64 // totals of the worlds before w
	pps     float64           // w's traffic; 0 while idle
	size    int
	built   time.Time       // real-source time of the last (re)build; zero before
	mark    *metrics.Sample // start of the measuring window
	pair    [2]string       // the counters measured
	names   []string        // engine totals that are predicted
	read    engine.Readout  // the world's last readout, reused

	rebuilds uint64
	lagged   bool
	info     metrics.SourceInfo
	closed   bool
}

// New follows real with an engine built from base; now is the wall clock
// that bounds the work of one Sample. It takes one sample of real to know
// its counters. On error real is left open.
func New(real metrics.Source, base scenario.Scenario, now func() time.Time) (*Source, error) {
	w, err := engine.New(base) // also checks base before anything is read
	if err != nil {
		return nil, fmt.Errorf("twin: %w", err)
	}
	first, err := real.Sample()
	if err != nil {
		return nil, fmt.Errorf("twin: first sample of %s: %w", real.Info().Name, err)
	}
	t := &Source{real: real, base: base, now: now, carried: map[string]uint64{}, mark: &first}
	ri := real.Info()
	have := map[string]bool{}
	for _, n := range ri.Counters {
		have[n] = true
	}
	for n := range first.Totals {
		have[n] = true
	}
	for _, p := range rateCounters {
		if have[p[0]] && have[p[1]] {
			t.pair = p
			break
		}
	}
	if t.pair[0] == "" {
		return nil, fmt.Errorf("twin: %s has neither rx_packets and rx_bytes nor xdp_packets_counted and xdp_bytes_counted to measure", ri.Name)
	}
	for _, f := range t.totals(w) {
		// The engine's drops by reason are predicted whether the real
		// source counts that reason or not: the model's reasons beside
		// the kernel's (a lab's, from skb:kfree_skb).
		if have[f.Name] || strings.HasPrefix(f.Name, vocab.DropsPrefix) {
			t.names = append(t.names, f.Name)
		}
	}
	sort.Strings(t.names)

	counters := slices.Clone(ri.Counters)
	for _, n := range t.names {
		counters = append(counters, vocab.Predicted(n))
	}
	counters = append(counters, Rebuilds)
	prog := "no XDP program"
	if base.XDP != nil {
		prog = base.XDP.Program
	}
	notes := append(slices.Clone(ri.Notes),
		fmt.Sprintf("%s* are the engine's counters (%s, %s receive buffers from %s, %d-entry ring, %s), its traffic following %s and %s measured on %s, rebuilt at most every %v when they change by %.0f%% or %d bytes",
			vocab.PredictedPrefix, base.Name, base.Mode(), base.Driver.BufferSource, base.RingSize, prog, t.pair[0], t.pair[1], ri.Name, MinRebuild, RateTolerance*100, SizeTolerance),
		vocab.PredictedPrefix+"* count from when the twin opened, the real counters from when the interface came up: compare rates, not totals",
	)
	if strings.HasPrefix(ri.Name, "lab") {
		notes = append(notes, "the engine models a virtio_net guest; the lab is a veth pair: the same traffic, another driver")
	}
	t.info = metrics.SourceInfo{
		Name:        Kind + ":" + ri.Name,
		Description: fmt.Sprintf("%s next to the ringlab engine driven with the rate and frame size measured on it", ri.Name),
		Counters:    counters,
		Notes:       notes,
		Labels:      metrics.Labels{Kind: Kind, Device: ri.Labels.Device, Program: ri.Labels.Program, Follows: ri.Labels.Kind},
	}
	return t, nil
}

// Info implements metrics.Source.
func (t *Source) Info() metrics.SourceInfo {
	i := t.info
	i.Counters = slices.Clone(i.Counters)
	i.Notes = slices.Clone(i.Notes)
	if t.lagged {
		i.Notes = append(i.Notes, "the engine runs this traffic slower than real time here: predicted counters lag")
	}
	return i
}

// Traffic returns the rate (packets per second) and frame size the engine
// runs now; 0, 0 while it idles.
func (t *Source) Traffic() (pps float64, size int) {
	return t.pps, t.size
}

// Sample implements metrics.Source: the real source's sample as it is
// (its queues and CPUs included), plus predicted_NAME for each engine
// counter the real source also has, and twin_rebuilds. Predictions are
// totals only: the engine's CPUs are not the host's, so a prediction per
// queue or per CPU would set unlike things side by side. An error of the
// real source is returned as it is.
func (t *Source) Sample() (metrics.Sample, error) {
	if t.closed {
		return metrics.Sample{}, metrics.ErrClosed
	}
	r, err := t.real.Sample()
	if err != nil {
		return metrics.Sample{}, err
	}
	if pps, size, ok := t.measure(r); ok {
		if err := t.follow(pps, size, r.Time); err != nil {
			return metrics.Sample{}, err
		}
	}
	if err := t.advance(r.Time); err != nil {
		return metrics.Sample{}, err
	}

	out := metrics.Sample{Time: r.Time, Totals: make(map[string]uint64, len(r.Totals)+len(t.names)+1), Queues: r.Queues, CPUs: r.CPUs}
	for k, v := range r.Totals {
		out.Totals[k] = v
	}
	now := map[string]uint64{}
	if t.w != nil {
		for _, f := range t.totals(t.w) {
			now[f.Name] = uint64(f.Value)
		}
	}
	for _, n := range t.names {
		out.Totals[vocab.Predicted(n)] = t.carried[n] + now[n]
	}
	out.Totals[Rebuilds] = t.rebuilds
	return out, nil
}

// totals is w's readout of its totals (engine.PartTotals), every counter
// under its engine/vocab name, in t's reused readout.
func (t *Source) totals(w *engine.World) []engine.Figure {
	w.Read(&t.read, engine.PartTotals)
	return t.read.Figures
}

// measure returns the packet rate and average frame size over the window
// that r closes; ok is false while the window is shorter than
// MeasureWindow, and when a counter went backwards (the interface was
// reset: a new window starts at r).
func (t *Source) measure(r metrics.Sample) (pps float64, size int, ok bool) {
	p := t.mark
	dt := r.Time.Sub(p.Time)
	p0, p1 := p.Totals[t.pair[0]], r.Totals[t.pair[0]]
	b0, b1 := p.Totals[t.pair[1]], r.Totals[t.pair[1]]
	if p1 < p0 || b1 < b0 {
		t.mark = &r
		return 0, 0, false
	}
	if dt < MeasureWindow {
		return 0, 0, false
	}
	t.mark = &r
	pps = float64(p1-p0) / dt.Seconds()
	if p1 > p0 {
		size = int(math.Round(float64(b1-b0) / float64(p1-p0)))
	}
	return pps, size, true
}

// follow rebuilds the world when the measured traffic moved away from the
// world's by more than the tolerances, at most once per MinRebuild.
func (t *Source) follow(pps float64, size int, at time.Time) error {
	idle := pps < MinPPS
	if idle && t.w == nil {
		return nil
	}
	if !t.built.IsZero() && at.Sub(t.built) < MinRebuild {
		return nil
	}
	size = clampSize(size, t.base.MTU)
	if !idle && t.w != nil &&
		math.Abs(pps-t.pps) <= RateTolerance*t.pps && absInt(size-t.size) <= SizeTolerance {
		return nil
	}
	// Retire the running world: its counts carry on in the totals.
	if t.w != nil {
		for _, f := range t.totals(t.w) {
			t.carried[f.Name] += uint64(f.Value)
		}
		t.w, t.pps, t.size = nil, 0, 0
	}
	t.built = at
	t.rebuilds++
	if idle {
		return nil
	}
	s := t.base
	s.Traffic.RatePPS = pps
	s.Traffic.Size = size
	s.Traffic.Sizes = nil
	w, err := engine.New(s)
	if err != nil {
		return fmt.Errorf("twin: engine at %.0f pps of %d bytes: %w", pps, size, err)
	}
	t.w, t.wStart, t.pps, t.size = w, at, pps, size
	return nil
}

// clampSize keeps a measured average inside what a scenario accepts.
func clampSize(size, mtu int) int {
	return min(max(size, scenario.MinFrame), mtu+14)
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// advance runs the world to the real source's time, bounded in wall time.
func (t *Source) advance(at time.Time) error {
	if t.w == nil {
		return nil
	}
	target := sim.Time(at.Sub(t.wStart).Nanoseconds())
	deadline := t.now().Add(maxWorkPerSample)
	for t.w.Now() < target {
		next := min(t.w.Now().Add(stepChunk), target)
		if err := t.w.RunUntil(next); err != nil {
			return fmt.Errorf("twin: engine: %w", err)
		}
		if t.now().After(deadline) {
			break
		}
	}
	if backlog := time.Duration(target - t.w.Now()); backlog > maxBacklog {
		t.wStart = t.wStart.Add(backlog)
		t.lagged = true
	}
	return nil
}

// Close implements metrics.Source: it closes the real source.
func (t *Source) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.w = nil
	return t.real.Close()
}
