package sim

// CPU is one simulated processor with its own timeline, and the contexts
// the kernel runs on it: hard interrupts, softirqs and tasks.
//
// Work on a CPU is bracketed by a Begin and End; in between, Charge
// advances the CPU's cursor by the cost of each operation. What a piece
// of work waits for depends on its context, as in the kernel:
//
//   - Interrupt work (Begin, BeginIRQ: a hard interrupt, or a softirq run
//     at its exit, irq_exit -> invoke_softirq) runs when it falls due,
//     after any interrupt work already on the CPU, and ahead of the task
//     that was running: that task's committed work is pushed back by the
//     interrupt's duration (it was preempted).
//   - Task work (BeginTask: a process, or a kernel thread such as
//     ksoftirqd/N or the cpumap kthread) runs when the CPU has neither
//     interrupt work nor another chunk of task work left, and only when
//     the scheduler (sched.go) has made the task the CPU's current one.
//     A task that disables bottom halves for a chunk (local_bh_disable:
//     ksoftirqd running __do_softirq, the cpumap kthread's batch) is not
//     pushed back by softirqs: they wait for the chunk to end, as they
//     wait for local_bh_enable.
//
// The engine runs a piece of work whole when its event fires and lets the
// cursor run ahead of the event queue; a task's chunks are kept short (one
// recvmsg call, one batch) so that what an interrupt pushes back is little.
//
// The zero value is not usable; CPUs come from New (Sim.CPU).
type CPU struct {
	ID int

	sim    *Sim
	cursor Time // where the current piece of work has got to
	// irqUntil is when the interrupt work committed so far ends (and the
	// chunk of a task with bottom halves disabled); taskUntil when the
	// current task's committed chunk ends, pushed back by every piece of
	// interrupt work that preempted it.
	irqUntil  Time
	taskUntil Time
	// The piece of work begun: its context, its start, the busy time
	// before it, and whether it preempts the task's chunk (interrupt work
	// that starts before taskUntil).
	ctx       Context
	start     Time
	busyStart Duration
	preempts  bool
	inWork    bool // between a Begin and its End
	stolen    Duration

	busy      Duration // total time spent working, including spinning
	spin      Duration // part of busy spent waiting for locks
	transfers uint64   // cache lines this CPU pulled from another CPU
	activity  string   // what the CPU is doing, for inspection
	// prof is busy by symbol: every Charge adds to one row, so the rows
	// sum to busy. A fixed array: one add per charge, copied with the CPU.
	prof Profile
	// ctxBusy is busy by context (ContextBusy).
	ctxBusy [numContexts]Duration

	rq  runqueue // the tasks of this CPU and who runs (sched.go)
	log cpuLog   // who ran when, the last LogSlices pieces (timeline.go)
}

// Context is what a piece of a CPU's work runs as.
type Context uint8

// The contexts, as /proc/stat splits a CPU's time.
const (
	// CtxIRQ: a hard interrupt handler. Nothing but another interrupt
	// runs before it ends.
	CtxIRQ Context = iota
	// CtxSoftirq: a softirq run at an interrupt's exit or at
	// local_bh_enable (NET_RX on top of whatever ran): for who waits for
	// whom, interrupt work like CtxIRQ.
	CtxSoftirq
	// CtxTask: a task's own work, which interrupts preempt.
	CtxTask
	// CtxTaskBH: a task's work with bottom halves disabled: interrupts
	// wait for it (the engine charges a hard interrupt's entry where the
	// work that takes it runs).
	CtxTaskBH
	numContexts
)

func (x Context) String() string {
	switch x {
	case CtxIRQ:
		return "irq"
	case CtxSoftirq:
		return "softirq"
	case CtxTask:
		return "task"
	case CtxTaskBH:
		return "task (bh off)"
	}
	return "?"
}

// Begin starts a piece of interrupt work that is ready at t (BeginIRQ
// without a label) and returns when it actually starts.
func (c *CPU) Begin(t Time) Time {
	if t < c.irqUntil {
		t = c.irqUntil
	}
	c.cursor, c.start, c.busyStart, c.ctx = t, t, c.busy, CtxIRQ
	c.preempts = t < c.taskUntil
	c.inWork = true
	return t
}

// BeginIRQ is Begin with a label saying what the work is ("interrupt"),
// shown when a CPU is inspected.
func (c *CPU) BeginIRQ(t Time, what string) Time {
	c.activity = what
	return c.Begin(t)
}

// BeginSoftirq is BeginIRQ for a softirq run at an interrupt's exit (or
// at local_bh_enable): the same interrupt work for who waits for whom,
// told apart in ContextBusy and the CPU's record.
func (c *CPU) BeginSoftirq(t Time, what string) Time {
	t = c.BeginIRQ(t, what)
	c.ctx = CtxSoftirq
	return t
}

// BeginActivity is BeginIRQ: interrupt work with a label.
func (c *CPU) BeginActivity(t Time, what string) Time { return c.BeginIRQ(t, what) }

// Charge advances the cursor by d of busy time spent in the kernel
// function sym, and adds d to sym's row of the CPU's profile. Negative d
// is ignored. Every cost a CPU pays goes through Charge: the profile's
// rows sum to Busy.
func (c *CPU) Charge(sym Sym, d Duration) {
	if d <= 0 {
		return
	}
	c.cursor = c.cursor.Add(d)
	c.busy += d
	c.prof[sym&(profSlots-1)] += d
}

// Profile is the CPU's busy time so far by symbol (the simulated perf
// top's counts); its sum is Busy.
func (c *CPU) Profile() Profile { return c.prof }

// Now is the CPU's cursor: the time the current work has reached.
func (c *CPU) Now() Time { return c.cursor }

// End finishes the current piece of work and returns when the CPU is
// free of it. Interrupt work that started inside the task's committed
// chunk pushes that chunk's end back by its own duration.
func (c *CPU) End() Time {
	c.inWork = false
	d := c.busy - c.busyStart
	c.ctxBusy[c.ctx] += d
	switch c.ctx {
	case CtxIRQ, CtxSoftirq:
		if c.cursor > c.irqUntil {
			c.irqUntil = c.cursor
		}
		if c.preempts {
			c.taskUntil = c.taskUntil.Add(d)
			c.rq.preempted += d
			c.rq.irqPreemptions++
			c.preempts = false
			c.log.stretch(d)
		}
		c.log.add(Slice{Start: c.start, End: c.cursor, Ctx: c.ctx, Task: NoTask})
	case CtxTaskBH:
		c.irqUntil = max(c.irqUntil, c.cursor)
		c.taskUntil = max(c.taskUntil, c.cursor)
		c.log.add(Slice{Start: c.start, End: c.cursor, Ctx: c.ctx, Task: c.rq.curr})
	default:
		c.taskUntil = max(c.taskUntil, c.cursor)
		c.log.add(Slice{Start: c.start, End: c.cursor, Ctx: c.ctx, Task: c.rq.curr})
	}
	return c.BusyUntil()
}

// Steal is the host running another thread on this vCPU's host CPU from
// start to end (the steal column of /proc/stat): the guest runs nothing
// then, interrupts included, since the vCPU that would take them is not
// running. Work the CPU had committed past start ends that much later,
// and work that falls due in [start, end) waits for end; a piece of work
// under way whose cursor is past start is pushed back with it. The
// engine calls it when it learns of the host's run, which may be after
// the guest's work over that span was placed: like an interrupt's, the
// push keeps the time right and moves what that work did a little.
func (c *CPU) Steal(start, end Time) {
	if end <= start {
		return
	}
	d := end.Sub(start)
	if c.taskUntil > start {
		c.log.stretch(d) // the task's chunk it interrupted ends later
	}
	push := func(u *Time) {
		if *u > start {
			*u = u.Add(d)
		} else {
			*u = end
		}
	}
	push(&c.irqUntil)
	push(&c.taskUntil)
	if c.inWork && c.cursor > start {
		c.cursor = c.cursor.Add(d)
	}
	c.stolen += d
	c.log.add(Slice{Start: start, End: end, Ctx: CtxSteal, Task: NoTask})
}

// Stolen is the time the host ran another thread on this vCPU's host CPU
// (Steal).
func (c *CPU) Stolen() Duration { return c.stolen }

// BusyUntil is when the CPU finishes what it has been given.
func (c *CPU) BusyUntil() Time { return max(c.irqUntil, c.taskUntil) }

// IRQUntil is when the interrupt work given to the CPU ends.
func (c *CPU) IRQUntil() Time { return c.irqUntil }

// Busy is the total busy time so far (spinning included).
func (c *CPU) Busy() Duration { return c.busy }

// ContextBusy is the busy time so far spent in context x.
func (c *CPU) ContextBusy(x Context) Duration {
	if x >= numContexts {
		return 0
	}
	return c.ctxBusy[x]
}

// Spin is the part of Busy spent waiting for locks.
func (c *CPU) Spin() Duration { return c.spin }

// Transfers counts cache lines this CPU had to pull from another CPU.
func (c *CPU) Transfers() uint64 { return c.transfers }

// Activity is the label of the last work begun with BeginIRQ or of the
// task whose chunk began last.
func (c *CPU) Activity() string { return c.activity }

// Costs is the cost table of the CPU's simulation.
func (c *CPU) Costs() *Costs { return &c.sim.Costs }

// Utilisation is the busy share of the elapsed time, in [0, 1].
func (c *CPU) Utilisation(elapsed Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	u := float64(c.busy) / float64(elapsed)
	if u > 1 {
		u = 1
	}
	return u
}
