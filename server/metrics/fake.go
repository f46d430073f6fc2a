package metrics

import (
	"strings"
	"sync"
	"time"
)

// FakeCounters are the kernel counter names a Fake reports, in order.
var FakeCounters = []string{"rx_packets", "rx_bytes", "rx_drops", "rx_kicks", "rx_xdp_packets", "rx_xdp_drops", "rx_pp_alloc_fast", "rx_pp_recycle_cached"}

// fakeSteps[i] is how much FakeCounters[i] grows on queue 0 per Sample;
// queue q grows by (q+1) times as much.
var fakeSteps = []uint64{100, 150_000, 1, 3, 100, 2, 98, 97}

// FakeEpoch is the Time of a Fake's sample 0.
var FakeEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// FakeInterval is the simulated time between two Fake samples.
const FakeInterval = 100 * time.Millisecond

// Fake is a deterministic Source for tests: its n-th Sample (from 1) reports
// time FakeEpoch + n*FakeInterval, queue q's counter i equal to
// n*fakeSteps[i]*(q+1) (so queue 0's rx_packets is 100*n) and totals the
// sum over queues. Beyond metrics.Source's rule it locks: a test calls its
// controls (Fail, Samples, Tries, Closed) while the server samples it.
type Fake struct {
	mu      sync.Mutex
	name    string
	queues  int
	n       uint64
	closed  bool
	failing error
	tries   uint64 // Sample calls, failed ones included
}

// NewFake returns a Fake named name with the given number of queues (at
// least 1).
func NewFake(name string, queues int) *Fake {
	return &Fake{name: name, queues: max(queues, 1)}
}

// OpenFake is an Opener for a registry: "fake" or "fake:NAME" opens a
// two-queue Fake named "fake" or "fake:NAME".
func OpenFake(arg string) (Source, error) {
	name := "fake"
	if arg != "" {
		name += ":" + arg
	}
	return NewFake(name, 2), nil
}

// Info implements Source. Its labels are its name's: kind before the
// first colon, device after it ("fake:x" is kind fake, device x).
func (f *Fake) Info() SourceInfo {
	kind, dev, _ := strings.Cut(f.name, ":")
	return SourceInfo{
		Name:        f.name,
		Description: "deterministic test counters that grow by fixed steps per sample",
		Counters:    append([]string(nil), FakeCounters...),
		Notes:       []string{"for tests only"},
		Labels:      Labels{Kind: kind, Device: dev},
	}
}

// Sample implements Source.
func (f *Fake) Sample() (Sample, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.closed {
		return Sample{}, ErrClosed
	}
	if f.failing != nil {
		return Sample{}, f.failing
	}
	f.n++
	s := Sample{
		Time:   FakeEpoch.Add(time.Duration(f.n) * FakeInterval),
		Totals: make(map[string]uint64, len(FakeCounters)),
		Queues: make([]map[string]uint64, f.queues),
	}
	for q := range s.Queues {
		s.Queues[q] = make(map[string]uint64, len(FakeCounters))
		for i, name := range FakeCounters {
			v := f.n * fakeSteps[i] * uint64(q+1)
			s.Queues[q][name] = v
			s.Totals[name] += v
		}
	}
	return s, nil
}

// Close implements Source.
func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// Closed reports whether Close was called.
func (f *Fake) Closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Samples returns how many samples were taken.
func (f *Fake) Samples() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Tries returns how many times Sample was called, failures included.
func (f *Fake) Tries() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

// Fail makes every later Sample return err (nil: succeed again).
func (f *Fake) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = err
}
