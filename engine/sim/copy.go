package sim

import (
	"fmt"
	"math/rand/v2"
)

// CopyFrom makes s's state src's: the clock, the pending events and every
// CPU's timeline. s must have been built like src (New with the same CPU
// count, the same handlers registered in the same order), since an event
// names its handler by its Kind: s keeps its own handlers, which belong to
// its own components.
//
// This is how a world is checkpointed (engine.World.Clone): build a twin,
// then copy each component's state into it. Each CopyFrom in the engine
// copies the whole value and then puts back what is the copy's own (its
// links to other components, and its slices, whose contents it copies), so
// that a field added later is copied too; a test checks that a copy shares
// no memory with its source.
func (s *Sim) CopyFrom(src *Sim) error {
	if len(s.cpus) != len(src.cpus) {
		return fmt.Errorf("sim: copy: %d CPUs into %d", len(src.cpus), len(s.cpus))
	}
	if err := s.Queue.CopyFrom(src.Queue); err != nil {
		return err
	}
	if len(s.tasks) != len(src.tasks) {
		return fmt.Errorf("sim: copy: %d tasks into %d", len(src.tasks), len(s.tasks))
	}
	s.Costs = src.Costs
	s.Sched = src.Sched
	copy(s.tasks, src.tasks)
	s.err = src.err
	for i := range s.cpus {
		c := src.cpus[i]
		c.sim = s
		c.log = s.cpus[i].log
		c.log.copyFrom(&src.cpus[i].log)
		s.cpus[i] = c
	}
	return nil
}

// CopyFrom makes q's state src's: time, sequence, pending events and
// counts. The handlers stay q's; both must have registered the same kinds
// under the same names.
func (q *Queue) CopyFrom(src *Queue) error {
	if len(q.handlers) != len(src.handlers) {
		return fmt.Errorf("sim: copy: %d handlers registered, %d in the copy", len(src.handlers), len(q.handlers))
	}
	for k, name := range src.names {
		if q.names[k] != name {
			return fmt.Errorf("sim: copy: handler %d is %q, %q in the copy", k, name, q.names[k])
		}
	}
	own := *q
	*q = *src
	q.handlers, q.names, q.argPrefix, q.cites = own.handlers, own.names, own.argPrefix, own.cites
	q.heap = append(own.heap[:0], src.heap...)
	return nil
}

// NewPCG returns the generator NewRand wraps, for a component that copies
// its state: a PCG is two words, and copying the value copies the
// stream's position.
func NewPCG(seed uint64) *rand.PCG { return rand.NewPCG(seed, seed^0x9e3779b97f4a7c15) }
