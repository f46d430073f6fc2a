// Package sim is the engine's clock: virtual nanoseconds, an event queue
// ordered by (time, sequence), simulated CPUs with their own timelines,
// contended resources (locks and cache lines) and the cost table.
//
// Nothing here reads the wall clock, starts a goroutine or uses global
// randomness: a Sim advances only when its owner calls Step or RunUntil, and
// randomness comes from a generator seeded by the caller (NewRand). Two runs
// with the same inputs produce the same sequence of events.
//
// How work takes time. An event fires at its time t on the event queue. A
// handler that does work on a CPU brackets it by context: interrupt work
// with CPU.BeginIRQ(t), which starts at t or when the CPU's interrupt
// work so far ends, and preempts the task whose chunk is running (its
// end moves back by the interrupt's duration); a task's chunk with
// CPU.BeginTask, when the fair scheduler (sched.go) has made the task
// current and the CPU is free. Each operation then advances the CPU's
// cursor by its cost (CPU.Charge, from the Costs table); End or EndTask
// records the finish. A Lock serialises holders across CPUs: a holder
// whose critical section would overlap another's waits, and the wait is
// spent spinning (busy), as a spinlock spins. A CacheLine charges a
// transfer when the CPU touching it changes. Contention is therefore not
// written down anywhere: it appears when several CPUs use the same
// resource.
//
// Tasks sleep until Sim.Wake (try_to_wake_up) and share their CPU under
// the kernel's fair scheduler, CFS until 6.5 and EEVDF from 6.6
// (sched.go: slices, wakeup preemption, need_resched). Every cost a CPU
// pays goes through CPU.Charge(sym, d), which also adds d to the CPU's
// profile, a fixed array indexed by Sym (sym.go), one slot per kernel
// function perf would show.
//
// The cost table. Time is virtual and advances only through the Queue;
// every cost comes from Costs, and costs.go lists each constant with its
// kind and source: Sourced, an Estimate, or Fitted on one published
// result, which it names (docs/costs.md is generated from it). A
// scenario may override a cost; an override fitted on a result is
// declared in the scenario's "fitted" with the row it was fitted on (no
// preset has one today: R4's buddy_per_page is fitted in the table
// itself).
//
// Fail is a world's one sink of internal errors (the first sticks;
// components hold no error of their own). docs/internals.md tells how
// time works across the engine and where a CPU's time is charged.
package sim

// Time is an instant of virtual time, in nanoseconds since the start of the
// simulation.
type Time int64

// Duration is a span of virtual time in nanoseconds.
type Duration int64

// Common durations.
const (
	Nanosecond  Duration = 1
	Microsecond          = 1000 * Nanosecond
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
)

// Add returns t+d.
func (t Time) Add(d Duration) Time { return t + Time(d) }

// Sub returns t-u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / float64(Second) }
