// Package simsrc is the "sim" metric source: an engine world running
// natively, advanced with the wall clock, sampled like a real interface.
package simsrc

import (
	"fmt"
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
	// maxWorkPerSample bounds the wall time one Sample spends simulating,
	// so a fast preset cannot starve the server: when the engine cannot
	// keep up with real time, simulated time falls behind, and a note says
	// so.
	maxWorkPerSample = 30 * time.Millisecond
	// maxLag is how far simulated time may fall behind before the source
	// stops trying to catch up (it then runs slower than real time).
	maxLag = 200 * time.Millisecond
)

// Source runs one world. Like every metrics.Source it is used by one
// goroutine at a time.
type Source struct {
	w       *engine.World
	preset  string
	now     func() time.Time
	start   time.Time
	lagged  bool
	closed  bool
	names   []string
	noteLag string

	stats engine.Stats     // the last reading, reused
	buf   []engine.Counter // named counters, reused
}

// Open opens "sim" or "sim:PRESET".
func Open(arg string) (metrics.Source, error) {
	return New(arg, time.Now)
}

// New runs preset (DefaultPreset when empty) with now as the wall clock.
func New(preset string, now func() time.Time) (*Source, error) {
	if preset == "" {
		preset = DefaultPreset
	}
	s, err := scenario.LookupPreset(preset)
	if err != nil {
		return nil, err
	}
	w, err := engine.New(s)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", preset, err)
	}
	src := &Source{w: w, preset: preset, now: now, start: now()}
	for _, c := range w.Totals() {
		src.names = append(src.names, c.Name)
	}
	return src, nil
}

// Info implements metrics.Source.
func (s *Source) Info() metrics.SourceInfo {
	notes := []string{"simulated: counters come from the engine's clock and cost table, advanced with the wall clock"}
	if s.noteLag != "" {
		notes = append(notes, s.noteLag)
	}
	return metrics.SourceInfo{
		Name:        "sim:" + s.preset,
		Description: fmt.Sprintf("the ringlab engine running preset %s (%s receive buffers)", s.preset, s.w.Driver.Mode()),
		Counters:    append([]string(nil), s.names...),
		Notes:       notes,
	}
}

// advance runs the world towards the wall clock.
func (s *Source) advance() error {
	wall := s.now()
	target := sim.Time(wall.Sub(s.start).Nanoseconds())
	if lag := time.Duration(target - s.w.Now()); lag > maxLag {
		// Give up on the backlog: run at the speed the machine allows.
		target = s.w.Now().Add(sim.Duration(maxLag))
		if !s.lagged {
			s.lagged = true
			s.noteLag = "the engine runs this preset slower than real time here: simulated time lags the wall clock"
		}
	}
	deadline := time.Now().Add(maxWorkPerSample)
	for s.w.Now() < target {
		next := s.w.Now().Add(stepChunk)
		if next > target {
			next = target
		}
		if err := s.w.RunUntil(next); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return nil
}

// Sample implements metrics.Source: the world's typed counters
// (engine.Stats), named as the engine names them, totals and per queue.
func (s *Source) Sample() (metrics.Sample, error) {
	if s.closed {
		return metrics.Sample{}, metrics.ErrClosed
	}
	if err := s.advance(); err != nil {
		return metrics.Sample{}, err
	}
	s.w.ReadStats(&s.stats)
	out := metrics.Sample{Time: s.now(), Totals: map[string]uint64{}}
	s.buf = s.stats.Totals(s.buf)
	for _, c := range s.buf {
		out.Totals[c.Name] = c.Value
	}
	for i := range s.stats.Queues {
		s.buf = s.stats.Queues[i].Counters(s.buf)
		m := make(map[string]uint64, len(s.buf))
		for _, c := range s.buf {
			m[c.Name] = c.Value
		}
		out.Queues = append(out.Queues, m)
	}
	return out, nil
}

// Close implements metrics.Source.
func (s *Source) Close() error {
	s.closed = true
	return nil
}

// World returns the world (for tests).
func (s *Source) World() *engine.World { return s.w }
