package sim

import (
	"fmt"
	"math/rand/v2"
)

// MaxCPUs bounds the number of simulated CPUs.
const MaxCPUs = 64

// Sim bundles what a simulated machine shares: the event queue, the CPUs
// and the cost table. The world built from a scenario owns one.
type Sim struct {
	Queue *Queue
	Costs Costs
	cpus  []CPU
	// tasks are every CPU's threads (sched.go), Sched the scheduler they
	// share their CPUs under.
	tasks []Task
	Sched SchedConfig
	err   error // the first internal error (Fail)
}

// New returns a simulation with ncpu CPUs at time 0 and the given costs.
func New(ncpu int, costs Costs) (*Sim, error) {
	if ncpu < 1 || ncpu > MaxCPUs {
		return nil, fmt.Errorf("sim: %d CPUs: want 1..%d", ncpu, MaxCPUs)
	}
	s := &Sim{Queue: NewQueue(1024), Costs: costs, Sched: DefaultSched(true, ncpu, 1000)}
	s.cpus = make([]CPU, ncpu)
	for i := range s.cpus {
		s.cpus[i] = CPU{ID: i, sim: s, rq: runqueue{curr: NoTask, last: NoTask}, log: newCPULog()}
	}
	return s, nil
}

// CPU returns CPU i. It panics when i is out of range, a programming error.
func (s *Sim) CPU(i int) *CPU { return &s.cpus[i] }

// NumCPU is the number of CPUs.
func (s *Sim) NumCPU() int { return len(s.cpus) }

// Now is the time of the current event.
func (s *Sim) Now() Time { return s.Queue.Now() }

// NewRand returns a generator seeded with seed. The engine never uses the
// global math/rand: every source of randomness comes from here, so a seed
// reproduces a run.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(NewPCG(seed))
}
