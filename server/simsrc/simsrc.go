// Package simsrc is the "sim" metric source: an engine world running
// natively, advanced with the wall clock, sampled like a real interface.
// A clock goroutine of its own advances the world between samples; a
// sample's time is the wall time its simulated clock stands for, so its
// rates are the world's whoever reads it how often; it uses at most half
// a core (MaxDuty). Each sample carries the engine's counters per CPU
// too (World.CPUCounters).
package simsrc

import (
	"fmt"
	"sync"
	"time"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/server/metrics"
)

// Limits of the live simulation.
const (
	// DefaultPreset is what "sim" runs without an argument.
	DefaultPreset = "default"
	// stepChunk is how much simulated time runs between wall-clock checks.
	stepChunk = 50 * sim.Microsecond
	// ClockPeriod is how often the source's clock advances the world when
	// nothing reads it, so that simulated time keeps up with the wall
	// clock between samples however far apart they are (a Prometheus
	// scrape every 15 s, a client at 1 Hz): a Sample then only runs the
	// last part of a period.
	ClockPeriod = 50 * time.Millisecond
	// MaxDuty is the share of one core the engine may use, the clock's
	// ticks and the samples together, measured over time with a bucket of
	// at most workBurst: a preset the engine cannot run in real time
	// costs half a core while it is read, however often, and nothing once
	// the clock rests. The default preset needs about 1 % natively (a
	// second of it simulates in 8 ms), 22 % under the race detector.
	MaxDuty   = 0.5
	workBurst = 100 * time.Millisecond
	// maxWorkPerSample bounds the wall time one Sample spends simulating,
	// so a fast preset cannot hold the server up.
	maxWorkPerSample = 30 * time.Millisecond
	// MaxLag is how far simulated time may fall behind the wall clock
	// before the source gives up on the backlog: it then moves its origin
	// forward (the world runs slower than real time, and a note says so).
	MaxLag = 500 * time.Millisecond
	// IdleAfter is how long the clock runs without a Sample; then it
	// rests, and the next Sample skips the time nobody read (no note: the
	// engine kept up while it ran).
	IdleAfter = 5 * time.Minute
)

// Source runs one world whose simulated time follows the wall clock:
// sim time t stands for the wall time origin+t. A Sample first runs the
// world to the wall time now (within maxWorkPerSample) and reports
// Time = origin + simulated time, so the rates taken between two
// samples are the world's own, whoever reads it how often. Like every
// metrics.Source it is used by one goroutine at a time; Open also starts
// its clock, a goroutine of its own that shares the world with Sample
// under mu (StartClock).
type Source struct {
	preset string
	now    func() time.Time
	names  []string
	labels metrics.Labels
	mode   string

	mu       sync.Mutex // the world and the clock's state, shared with the clock goroutine
	w        *engine.World
	origin   time.Time // the wall time of simulated time 0
	last     time.Time // wall time of the last advance
	lastRead time.Time // wall time of the last Sample
	lagged   bool
	skipped  time.Duration // wall time the origin moved forward by
	clock    bool          // StartClock was called
	closed   bool
	budget   workBudget
	read     engine.Readout // the last reading, reused

	quit chan struct{} // closed by Close when the clock runs
	done chan struct{} // closed when the clock goroutine ends
}

// Open opens "sim" or "sim:PRESET" and starts its clock.
func Open(arg string) (metrics.Source, error) {
	s, err := New(arg, time.Now)
	if err != nil {
		return nil, err
	}
	s.StartClock(ClockPeriod)
	return s, nil
}

// New runs preset (DefaultPreset when empty) with now as the wall clock.
// Its world advances only when sampled until StartClock.
func New(preset string, now func() time.Time) (*Source, error) {
	if preset == "" {
		preset = DefaultPreset
	}
	s, err := scenario.LookupPreset(preset)
	if err != nil {
		return nil, err
	}
	return newScenario(preset, s, now)
}

// newScenario runs s under the preset name preset (New's, and tests' with
// a preset changed).
func newScenario(preset string, s scenario.Scenario, now func() time.Time) (*Source, error) {
	w, err := engine.New(s)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", preset, err)
	}
	t := now()
	src := &Source{w: w, preset: preset, now: now, origin: t, last: t, lastRead: t, mode: w.Driver.Mode(),
		budget: workBudget{duty: MaxDuty, burst: workBurst, perSample: maxWorkPerSample, perTick: ClockPeriod, tokens: workBurst}}
	src.labels = metrics.Labels{Kind: "sim", Preset: preset}
	if s.XDP != nil {
		src.labels.Program = s.XDP.Program
	}
	w.Read(&src.read, engine.PartTotals)
	for _, f := range src.read.Figures {
		src.names = append(src.names, f.Name)
	}
	return src, nil
}

// StartClock starts the goroutine that advances the world every period
// while the source is read (a Sample in the last IdleAfter); Close stops
// it. Call it at most once.
func (s *Source) StartClock(period time.Duration) {
	s.mu.Lock()
	s.clock = true
	s.mu.Unlock()
	s.quit, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
				s.tick()
			}
		}
	}()
}

// tick is one step of the clock.
func (s *Source) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	wall := s.now()
	if wall.Sub(s.lastRead) > IdleAfter {
		return // nobody reads: rest until the next Sample
	}
	s.advance(wall, s.budget.perTick)
}

// workBudget is the engine's share of a core: tokens of wall time, refilled
// at duty per second of real time up to burst, spent by the work done.
type workBudget struct {
	duty      float64
	burst     time.Duration
	perSample time.Duration // at most this much in one Sample
	perTick   time.Duration // at most this much in one clock tick
	tokens    time.Duration
	refilled  time.Time // real time of the last refill
}

// take returns the work allowed now, at most limit.
func (b *workBudget) take(real time.Time, limit time.Duration) time.Duration {
	if !b.refilled.IsZero() {
		b.tokens = min(b.burst, b.tokens+time.Duration(b.duty*float64(real.Sub(b.refilled))))
	}
	b.refilled = real
	return max(0, min(limit, b.tokens))
}

// spend takes d of work off the tokens.
func (b *workBudget) spend(d time.Duration) { b.tokens -= d }

// Info implements metrics.Source.
func (s *Source) Info() metrics.SourceInfo {
	s.mu.Lock()
	lagged := s.lagged
	s.mu.Unlock()
	notes := []string{"simulated: counters come from the engine's clock and cost table, its simulated time following the wall clock"}
	if lagged {
		notes = append(notes, "the engine runs this preset slower than real time here: simulated time lags the wall clock, and rates are per second of wall time")
	}
	return metrics.SourceInfo{
		Name:        "sim:" + s.preset,
		Description: fmt.Sprintf("the ringlab engine running preset %s (%s receive buffers)", s.preset, s.mode),
		Counters:    append([]string(nil), s.names...),
		Notes:       notes,
		Labels:      s.labels,
	}
}

// advance runs the world towards the wall time wall, for at most limit of
// real time and what the budget allows. While the clock runs, a gap since the last advance longer
// than MaxLag (the clock rested, the process was stopped) is skipped:
// the origin moves forward by it. A backlog the engine cannot work off
// (it runs slower than real time) is kept within MaxLag the same way,
// and marks the source lagged. Called with s.mu held.
func (s *Source) advance(wall time.Time, limit time.Duration) error {
	if gap := wall.Sub(s.last); s.clock && gap > MaxLag {
		s.origin = s.origin.Add(gap)
		s.skipped += gap
	}
	s.last = wall
	target := sim.Time(wall.Sub(s.origin).Nanoseconds())
	start := time.Now()
	deadline := start.Add(s.budget.take(start, limit))
	defer func() { s.budget.spend(time.Since(start)) }()
	for s.w.Now() < target && time.Now().Before(deadline) {
		next := min(s.w.Now().Add(stepChunk), target)
		if err := s.w.RunUntil(next); err != nil {
			return err
		}
	}
	if lag := time.Duration(target - s.w.Now()); lag > MaxLag {
		s.origin = s.origin.Add(lag - MaxLag)
		s.skipped += lag - MaxLag
		s.lagged = true
	}
	return nil
}

// sampleParts are the readout's parts a Sample reports: the totals,
// each queue's counters and each CPU's.
const sampleParts = engine.PartTotals | engine.PartQueues | engine.PartCPUCounters

// Sample implements metrics.Source: the world's readout (engine.World.Read,
// every number under its engine/vocab name), totals, per queue and per
// CPU (the engine's softnet_stat columns and its own NET_RX, ksoftirqd
// and scheduler counters, each summing to its total) keyed as their
// totals are (metrics.Sample), at Time = the wall time its simulated
// clock stands for. It allocates the maps it returns (one per queue and
// per CPU) and the readout's per-queue and per-CPU names.
func (s *Source) Sample() (metrics.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return metrics.Sample{}, metrics.ErrClosed
	}
	wall := s.now()
	s.lastRead = wall
	if err := s.advance(wall, s.budget.perSample); err != nil {
		return metrics.Sample{}, err
	}
	s.w.Read(&s.read, sampleParts)
	out := metrics.Sample{Time: s.origin.Add(time.Duration(s.w.Now())), Totals: map[string]uint64{},
		Queues: make([]map[string]uint64, len(s.read.Stats.Queues)), CPUs: make([]map[string]uint64, s.w.Sim.NumCPU())}
	// per is the map of one queue's or CPU's counters.
	per := func(ms []map[string]uint64, i int) map[string]uint64 {
		if ms[i] == nil {
			ms[i] = map[string]uint64{}
		}
		return ms[i]
	}
	for _, f := range s.read.Figures {
		switch f.Part {
		case engine.PartTotals:
			out.Totals[f.Name] = uint64(f.Value)
		case engine.PartQueues:
			per(out.Queues, f.Index)[f.Total] = uint64(f.Value)
		case engine.PartCPUCounters:
			per(out.CPUs, f.Index)[f.Total] = uint64(f.Value)
		}
	}
	return out, nil
}

// Close implements metrics.Source: it stops the clock.
func (s *Source) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if !already && s.quit != nil {
		close(s.quit)
		<-s.done
	}
	return nil
}

// Skipped is how much wall time the source has skipped rather than
// simulated, in all: rests, stops and backlogs beyond MaxLag. Between two
// samples, their Time advanced by the simulated time plus what was
// skipped meanwhile.
func (s *Source) Skipped() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// World returns the world (for tests; not while the clock runs).
func (s *Source) World() *engine.World { return s.w }
