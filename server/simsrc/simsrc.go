// Package simsrc is the "sim" metric source: an engine world running
// natively, advanced with the wall clock, sampled like a real interface.
package simsrc

import (
	"encoding/json"
	"fmt"
	"strings"
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
	// maxWorkPerSample bounds the wall time one Sample spends simulating,
	// so a fast preset cannot starve the server: when the engine cannot
	// keep up with real time, simulated time falls behind, and a note says
	// so.
	maxWorkPerSample = 30 * time.Millisecond
	// maxLag is how far simulated time may fall behind before the source
	// stops trying to catch up (it then runs slower than real time).
	maxLag = 200 * time.Millisecond
)

// Source runs one world.
type Source struct {
	mu      sync.Mutex
	w       *engine.World
	preset  string
	now     func() time.Time
	start   time.Time
	lagged  bool
	closed  bool
	names   []string
	noteLag string
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
	s.mu.Lock()
	defer s.mu.Unlock()
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

// Sample implements metrics.Source.
func (s *Source) Sample() (metrics.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return metrics.Sample{}, metrics.ErrClosed
	}
	if err := s.advance(); err != nil {
		return metrics.Sample{}, err
	}
	out := metrics.Sample{Time: s.now(), Totals: map[string]uint64{}}
	for _, c := range s.w.Totals() {
		out.Totals[c.Name] = c.Value
	}
	for i, q := range s.w.Queues() {
		m := make(map[string]uint64, len(q))
		for _, c := range q {
			m[unqueue(c.Name, i)] = c.Value
		}
		out.Queues = append(out.Queues, m)
	}
	v, err := json.Marshal(view(s.w))
	if err != nil {
		return metrics.Sample{}, err
	}
	out.View = v
	return out, nil
}

// unqueue turns rx0_packets into rx_packets (metrics.Sample names per-queue
// counters like totals).
func unqueue(name string, q int) string {
	for _, dir := range []string{"rx", "tx"} {
		p := fmt.Sprintf("%s%d_", dir, q)
		if strings.HasPrefix(name, p) {
			return dir + "_" + strings.TrimPrefix(name, p)
		}
	}
	return name
}

// Close implements metrics.Source.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// World returns the world (for tests).
func (s *Source) World() *engine.World { return s.w }

// View is the ring and page state the browser's views draw.
type View struct {
	TimeNS int64            `json:"time_ns"`
	Mode   string           `json:"mode"`
	Queues []QueueView      `json:"queues"`
	Pages  map[string]int64 `json:"pages"`
	CPUs   []CPUView        `json:"cpus"`
}

// QueueView is one receive virtqueue.
type QueueView struct {
	Size       int    `json:"size"`
	AvailIdx   uint16 `json:"avail_idx"`
	UsedIdx    uint16 `json:"used_idx"`
	LastUsed   uint16 `json:"last_used"`
	NumFree    int    `json:"num_free"`
	UsedEvent  uint16 `json:"used_event"`
	AvailEvent uint16 `json:"avail_event"`
	// Slots has one letter per descriptor: f free, a available, d taken
	// by the device, u used (returned, not yet reclaimed).
	Slots string `json:"slots"`
}

// CPUView is one CPU.
type CPUView struct {
	Utilisation float64 `json:"utilisation"`
	Activity    string  `json:"activity"`
}

func view(w *engine.World) View {
	v := View{TimeNS: int64(w.Now()), Mode: w.Driver.Mode(), Pages: w.Pages()}
	for _, rq := range w.Driver.RQ {
		q := rq.VQ
		var b strings.Builder
		for i := 0; i < q.Size(); i++ {
			b.WriteByte("fadu"[q.Slot(uint16(i))&3])
		}
		v.Queues = append(v.Queues, QueueView{
			Size: q.Size(), AvailIdx: q.AvailIdx(), UsedIdx: q.UsedIdx(), LastUsed: q.LastUsed(),
			NumFree: q.NumFree(), UsedEvent: q.UsedEvent(), AvailEvent: q.AvailEvent(), Slots: b.String(),
		})
	}
	el := w.Now().Sub(0)
	for i := 0; i < w.Sim.NumCPU(); i++ {
		c := w.Sim.CPU(i)
		v.CPUs = append(v.CPUs, CPUView{Utilisation: c.Utilisation(el), Activity: c.Activity()})
	}
	return v
}
