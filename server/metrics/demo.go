package metrics

import (
	"math"
	"time"
)

// DemoKind is the registry name of the demo source.
const DemoKind = "demo"

// demoQueues is how many receive queues the demo source pretends to have.
const demoQueues = 2

// demoRates[i] is the mean per-second growth of FakeCounters[i] on queue 0
// of the demo source; queue q grows (q+1) times as fast.
var demoRates = []float64{50_000, 75_000_000, 20, 400, 50_000, 1_000, 49_000, 48_500}

// demoWobble is the period of the demo's rate oscillation, so charts move.
const demoWobble = 20 * time.Second

// Demo is a STAND-IN source until the engine-backed "sim" source exists:
// synthetic counters that grow with wall time at fixed rates with a slow
// oscillation. Nothing is simulated; it only lets the page and the protocol
// be exercised.
type Demo struct {
	start  time.Time
	now    func() time.Time
	closed bool
}

// OpenDemo is the demo source's Opener; it takes no argument.
func OpenDemo(arg string) (Source, error) {
	return &Demo{start: time.Now(), now: time.Now}, nil
}

// Info implements Source.
func (d *Demo) Info() SourceInfo {
	return SourceInfo{
		Name:        DemoKind,
		Description: "stand-in synthetic counters growing at fixed rates (not a simulation; use --source sim once it is built)",
		Counters:    append([]string(nil), FakeCounters...),
		Notes:       []string{"demo data: the numbers mean nothing"},
		Labels:      Labels{Kind: DemoKind},
	}
}

// Sample implements Source. Each counter is the integral of a rate
// r*(1+0.5*sin(wt)), so it never decreases.
func (d *Demo) Sample() (Sample, error) {
	if d.closed {
		return Sample{}, ErrClosed
	}
	now := d.now()
	t := now.Sub(d.start).Seconds()
	w := 2 * math.Pi / demoWobble.Seconds()
	integral := t + 0.5*(1-math.Cos(w*t))/w
	s := Sample{Time: now, Totals: make(map[string]uint64, len(FakeCounters)), Queues: make([]map[string]uint64, demoQueues)}
	for q := range s.Queues {
		s.Queues[q] = make(map[string]uint64, len(FakeCounters))
		for i, name := range FakeCounters {
			v := uint64(demoRates[i] * float64(q+1) * integral)
			s.Queues[q][name] = v
			s.Totals[name] += v
		}
	}
	return s, nil
}

// Close implements Source.
func (d *Demo) Close() error {
	d.closed = true
	return nil
}
