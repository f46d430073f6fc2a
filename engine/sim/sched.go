package sim

import "fmt"

// The fair scheduler: who of a CPU's tasks runs when (kernel/sched/fair.c).
//
// A task is a thread bound to one CPU: the application reading a socket,
// ksoftirqd/N, the cpumap kthread. It sleeps until Wake
// (try_to_wake_up), is runnable while it waits for its CPU, and runs in
// chunks: each chunk is an event of the task's kind, bracketed by
// CPU.BeginTask and CPU.EndTask. A chunk ends where the kernel's task
// reaches a preemption point (a recvmsg call returning to user space,
// the cpumap kthread's cond_resched after a batch, ksoftirqd's after
// __do_softirq), so the scheduler switches tasks only between chunks:
// the kernel's voluntary preemption (CONFIG_PREEMPT_VOLUNTARY, the
// default of the distributions' server kernels), under which a task in
// the kernel runs on until such a point.
//
// All tasks are nice 0, so a task's virtual runtime advances at the rate
// of its own CPU time. Interrupt time is not a task's: with
// CONFIG_IRQ_TIME_ACCOUNTING the kernel's rq->clock_task leaves it out.
//
//   - CFS (until 6.5): the runnable task with the least vruntime runs; a
//     woken task is placed at no less than min_vruntime less half of
//     sched_latency (place_entity, GENTLE_FAIR_SLEEPERS) and preempts the
//     running one when it is behind it by more than the wakeup
//     granularity (wakeup_preempt_entity); at a tick, the running task
//     is preempted once it ran its slice, sched_latency shared among the
//     runnable (check_preempt_tick).
//   - EEVDF (6.6+): each task has a virtual deadline, its vruntime plus
//     the base slice when it was picked; the eligible task (vruntime at
//     or below the queue's average) with the earliest deadline runs
//     (pick_eevdf). A woken task keeps the lag it left with (PLACE_LAG)
//     and preempts the running one when it would be picked, unless the
//     running task is still within the slice it was picked for
//     (RUN_TO_PARITY). At a tick, a task past its deadline gets a new
//     one and yields (update_deadline).
//
// Slices end at ticks (HZ): without HRTICK the kernel checks them only
// there. Everything here allocates nothing and is copied with the Sim.

// TaskID names a task of a Sim; NoTask is none (an idle CPU).
type TaskID int16

// NoTask is no task.
const NoTask TaskID = -1

// MaxCPUTasks bounds the tasks bound to one CPU.
const MaxCPUTasks = 8

// TaskState is what a task is doing.
type TaskState uint8

// The states of a task.
const (
	TaskSleeping TaskState = iota // waits for Wake (TASK_INTERRUPTIBLE)
	TaskRunnable                  // on its CPU's runqueue, waiting to run
	TaskRunning                   // its CPU's current task (running, or chosen and about to)
)

func (s TaskState) String() string {
	switch s {
	case TaskSleeping:
		return "sleeping"
	case TaskRunnable:
		return "runnable"
	case TaskRunning:
		return "running"
	}
	return "?"
}

// Task is a thread bound to one CPU.
type Task struct {
	Name string
	CPU  int

	kind  Kind // the event that runs one chunk
	arg   uint64
	state TaskState
	// vruntime is the task's virtual runtime (nice 0: its CPU time, plus
	// where placement put it); deadline its EEVDF virtual deadline; vlag
	// its lag when it went to sleep (EEVDF, PLACE_LAG).
	vruntime, deadline, vlag Duration
	// sliceStart is Stats.Runtime when the task was last picked
	// (prev_sum_exec_runtime); protect is RUN_TO_PARITY's: the task
	// keeps the CPU against wakeups until its deadline moves.
	sliceStart Duration
	protect    bool
	since      Time // when it last became runnable (its wait started)
	// hold: the chunk that ended is not a preemption point (EndTaskHold),
	// so the next one runs whatever is due.
	hold bool

	Stats TaskStats
}

// TaskStats count what a task did, as schedstat and perf sched do.
type TaskStats struct {
	Runtime   Duration // sum_exec_runtime: its own CPU time
	Wait      Duration // time runnable but not running (wait_sum), wake-up latency included
	Wakeups   uint64   // times woken from sleep
	Switches  uint64   // times switched in (nr_switches)
	Preempted uint64   // times switched out while runnable (nivcsw)
	MaxWait   Duration // the longest single wait
}

// State is the task's state now.
func (t *Task) State() TaskState { return t.state }

// Vruntime is the task's virtual runtime.
func (t *Task) Vruntime() Duration { return t.vruntime }

// WaitingSince is when the task last became runnable; it means something
// while the task is runnable, or running but not yet begun.
func (t *Task) WaitingSince() Time { return t.since }

// runqueue is one CPU's share of the scheduler: its current task and
// the runnable ones (struct rq, struct cfs_rq).
type runqueue struct {
	curr   TaskID // the current task (running, or chosen and about to run); NoTask when idle
	last   TaskID // the task whose chunk ran last, NoTask after the CPU idled
	queued [MaxCPUTasks]TaskID
	n      int // runnable tasks in queued (curr is not one of them)
	// needResched is TIF_NEED_RESCHED of whatever runs: a task was woken
	// on an idle CPU, or ought to preempt the current one.
	needResched bool
	minVruntime Duration // CFS's min_vruntime
	tick        int64    // the tick the slices were last checked at
	switches    uint64   // context switches
	preempted   Duration // task time pushed back by interrupt work
	// irqPreemptions counts the pieces of interrupt work that preempted
	// a task's chunk; taskPreemptions the tasks switched out while
	// runnable (nivcsw).
	irqPreemptions, taskPreemptions uint64
}

// SchedConfig is a kernel's fair scheduler and its tunables, scaled for
// the CPU count as the kernel scales them (DefaultSched).
type SchedConfig struct {
	EEVDF bool
	// CFS: sysctl_sched_latency, sysctl_sched_min_granularity,
	// sysctl_sched_wakeup_granularity.
	Latency, MinGranularity, WakeupGranularity Duration
	// EEVDF: sysctl_sched_base_slice.
	BaseSlice Duration
	// Tick is 1/HZ: slices are checked at ticks.
	Tick Duration
}

// DefaultSched is the scheduler of a kernel on ncpu CPUs at HZ hz:
// EEVDF from 6.6, CFS before (kernel/sched/fair.c). The tunables are
// the kernel's defaults (6 ms, 0.75 ms, 1 ms; EEVDF's base slice
// 0.75 ms) times 1 + ilog2(min(ncpu, 8)), sched_update_scaling's
// SCHED_TUNABLESCALING_LOG.
func DefaultSched(eevdf bool, ncpu, hz int) SchedConfig {
	f := Duration(1 + ilog2(min(max(ncpu, 1), 8)))
	return SchedConfig{
		EEVDF:             eevdf,
		Latency:           6 * Millisecond * f,
		MinGranularity:    750 * Microsecond * f,
		WakeupGranularity: 1 * Millisecond * f,
		BaseSlice:         750 * Microsecond * f,
		Tick:              Second / Duration(max(hz, 1)),
	}
}

func ilog2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// NewTask binds a new sleeping task to cpu, whose chunks run as events
// of kind k with argument arg. Call it while building, before the Sim
// runs; it panics past MaxCPUTasks on one CPU, a programming error.
func (s *Sim) NewTask(cpu int, name string, k Kind, arg uint64) TaskID {
	n := 0
	for i := range s.tasks {
		if s.tasks[i].CPU == cpu {
			n++
		}
	}
	if n == MaxCPUTasks {
		panic(fmt.Sprintf("sim: more than %d tasks on CPU %d", MaxCPUTasks, cpu))
	}
	s.tasks = append(s.tasks, Task{Name: name, CPU: cpu, kind: k, arg: arg})
	return TaskID(len(s.tasks) - 1)
}

// Task returns task id.
func (s *Sim) Task(id TaskID) *Task { return &s.tasks[id] }

// NumTasks is the number of tasks.
func (s *Sim) NumTasks() int { return len(s.tasks) }

// Current is the CPU's current task, NoTask when it idles.
func (c *CPU) Current() TaskID { return c.rq.curr }

// Runnable is how many of the CPU's tasks wait to run (the current one
// not counted).
func (c *CPU) Runnable() int { return c.rq.n }

// NeedResched is need_resched() on the CPU: a task was woken while it
// idled, or one ought to preempt the current task.
func (c *CPU) NeedResched() bool { return c.rq.needResched }

// Switches is how many context switches the CPU made.
func (c *CPU) Switches() uint64 { return c.rq.switches }

// Preempted is the task time interrupt work pushed back on the CPU.
func (c *CPU) Preempted() Duration { return c.rq.preempted }

// Preemptions counts, on the CPU, the pieces of interrupt work that
// preempted a task's chunk (irq) and the tasks the scheduler switched out
// while they were runnable (task: a reschedule due at a preemption
// point).
func (c *CPU) Preemptions() (irq, task uint64) { return c.rq.irqPreemptions, c.rq.taskPreemptions }

// Wake is try_to_wake_up: task id, asleep, becomes runnable at at, the
// earliest it could run (the waker adds the wake-up's latency when the
// task's CPU is another). It reports whether the task was asleep; a task
// awake already takes the new work in its next chunk. On an idle CPU the
// task becomes current and its chunk is scheduled; otherwise it is
// queued, and need_resched is set when it ought to preempt the current
// task (check_preempt_wakeup).
func (s *Sim) Wake(id TaskID, at Time) bool {
	t := &s.tasks[id]
	if t.state != TaskSleeping {
		return false
	}
	c := &s.cpus[t.CPU]
	t.Stats.Wakeups++
	c.place(t)
	t.since = at
	if c.rq.curr == NoTask {
		// The idle task is always preempted (check_preempt_curr_idle).
		c.rq.curr, t.state = id, TaskRunning
		c.rq.needResched = true
		s.Queue.Schedule(max(at, c.taskUntil), t.kind, t.arg)
		return true
	}
	t.state = TaskRunnable
	c.enqueue(id)
	if c.wakeupPreempt(t) {
		c.rq.needResched = true
	}
	return true
}

// BeginTask starts a chunk of task id, whose event fires at now, with
// bottom halves disabled when bh. It reports false when the chunk must
// not run now: the CPU is busy until later (the event is moved there),
// or the task is preempted at this point (another is made current and
// scheduled), or the task is not the CPU's current one.
func (c *CPU) BeginTask(now Time, id TaskID, bh bool) bool {
	if c.rq.curr != id {
		return false
	}
	t := &c.sim.tasks[id]
	start := max(now, c.irqUntil, c.taskUntil)
	if start > now {
		c.sim.Queue.Schedule(start, t.kind, t.arg)
		return false
	}
	if t.hold {
		t.hold = false
	} else if c.rq.needResched {
		// A preemption point with a reschedule due: __schedule.
		c.rq.needResched = false
		if c.rq.n > 0 {
			t.state, t.since = TaskRunnable, start
			t.Stats.Preempted++
			c.rq.taskPreemptions++
			c.enqueue(id)
			next := c.pick()
			c.setCurr(next, start)
			if next != id {
				nt := &c.sim.tasks[next]
				c.sim.Queue.Schedule(start, nt.kind, nt.arg)
				return false
			}
		}
	}
	if t.since >= 0 && start > t.since {
		w := start.Sub(t.since)
		t.Stats.Wait += w
		t.Stats.MaxWait = max(t.Stats.MaxWait, w)
		c.logWait(id, t.since, start)
	}
	t.since = -1
	c.cursor, c.start, c.busyStart = start, start, c.busy
	c.ctx, c.preempts, c.inWork = CtxTask, false, true
	if bh {
		c.ctx = CtxTaskBH
	}
	c.activity = t.Name
	if c.rq.last != id {
		// context_switch: from the idle task or another.
		c.rq.switches++
		t.Stats.Switches++
		c.Charge(SymSchedule, c.sim.Costs.ContextSwitch)
		c.rq.last = id
	}
	return true
}

// EndTask ends the chunk of the current task begun with BeginTask and
// returns when it ends. more says whether the task has work left: it
// then runs its next chunk (or is preempted there, if a tick found its
// slice used up); otherwise it sleeps until Wake, and the CPU runs the
// next runnable task or idles.
func (c *CPU) EndTask(more bool) Time {
	id := c.rq.curr
	t := &c.sim.tasks[id]
	exec := c.busy - c.busyStart
	c.End()
	end := c.taskUntil
	t.Stats.Runtime += exec
	t.vruntime += exec
	c.updateMinVruntime(t)
	if c.sim.Sched.EEVDF && t.vruntime >= t.deadline {
		// update_deadline: a new slice.
		t.deadline = t.vruntime + c.slice()
		t.protect = false
		if c.rq.n > 0 {
			c.rq.needResched = true
		}
	}
	if more {
		if tk := c.sim.Sched.Tick; tk > 0 {
			if j := int64(end) / int64(tk); j > c.rq.tick {
				c.rq.tick = j
				if c.rq.n > 0 && !c.sim.Sched.EEVDF && c.cfsTickPreempt(t) {
					c.rq.needResched = true
				}
			}
		}
		c.sim.Queue.Schedule(end, t.kind, t.arg)
		return end
	}
	// Asleep: dequeue_entity (EEVDF keeps its lag).
	t.state = TaskSleeping
	if c.sim.Sched.EEVDF {
		c.saveLag(t)
	}
	c.rq.curr = NoTask
	if c.rq.n == 0 {
		c.rq.needResched = false
		c.rq.last = NoTask
		return end
	}
	next := c.pick()
	c.rq.needResched = false
	c.setCurr(next, end)
	nt := &c.sim.tasks[next]
	c.sim.Queue.Schedule(end, nt.kind, nt.arg)
	return end
}

// EndTaskHold ends the current task's chunk like EndTask(true), at a
// point that is not a preemption point: its next chunk runs whatever
// reschedule is due (ksoftirqd between two polls of one __do_softirq,
// with bottom halves disabled).
func (c *CPU) EndTaskHold() Time {
	c.sim.tasks[c.rq.curr].hold = true
	return c.EndTask(true)
}

// setCurr makes next, taken off the runqueue, the current task at at
// (set_next_entity).
func (c *CPU) setCurr(next TaskID, at Time) {
	c.dequeue(next)
	t := &c.sim.tasks[next]
	t.state = TaskRunning
	t.sliceStart = t.Stats.Runtime
	if c.sim.Sched.EEVDF {
		t.protect = true // RUN_TO_PARITY
	}
	c.rq.curr = next
	_ = at
}

func (c *CPU) enqueue(id TaskID) {
	c.rq.queued[c.rq.n] = id
	c.rq.n++
}

func (c *CPU) dequeue(id TaskID) {
	for i := 0; i < c.rq.n; i++ {
		if c.rq.queued[i] == id {
			copy(c.rq.queued[i:c.rq.n], c.rq.queued[i+1:c.rq.n])
			c.rq.n--
			return
		}
	}
}

// slice is the EEVDF slice of a nice-0 task (se->slice, the base slice).
func (c *CPU) slice() Duration { return c.sim.Sched.BaseSlice }

// place is place_entity for a task woken on c.
func (c *CPU) place(t *Task) {
	if c.sim.Sched.EEVDF {
		// PLACE_LAG: the lag it left with, against the average now.
		t.vruntime = c.avgVruntime() - t.vlag
		t.deadline = t.vruntime + c.slice()
		t.protect = false
		return
	}
	// GENTLE_FAIR_SLEEPERS: a sleeper's credit is half of sched_latency.
	v := c.rq.minVruntime - c.sim.Sched.Latency/2
	t.vruntime = max(t.vruntime, v)
}

// saveLag is update_entity_lag at dequeue: the task's lag against the
// average, clamped to its slice's worth (twice the slice, at least a
// tick).
func (c *CPU) saveLag(t *Task) {
	// The average with t still counted (it leaves after).
	sum, n := t.vruntime, 1
	for i := 0; i < c.rq.n; i++ {
		sum += c.sim.tasks[c.rq.queued[i]].vruntime
		n++
	}
	lag := sum/Duration(n) - t.vruntime
	limit := max(2*c.slice(), c.sim.Sched.Tick)
	t.vlag = min(max(lag, -limit), limit)
}

// avgVruntime is avg_vruntime: the average vruntime of the runnable
// tasks, the current one included; with none, the current one's or the
// last known minimum.
func (c *CPU) avgVruntime() Duration {
	var sum Duration
	n := 0
	if c.rq.curr != NoTask {
		sum += c.sim.tasks[c.rq.curr].vruntime
		n++
	}
	for i := 0; i < c.rq.n; i++ {
		sum += c.sim.tasks[c.rq.queued[i]].vruntime
		n++
	}
	if n == 0 {
		return c.rq.minVruntime
	}
	return sum / Duration(n)
}

// eligible is entity_eligible: t's vruntime is at or below the average.
func (c *CPU) eligible(t *Task, avg Duration) bool { return t.vruntime <= avg }

// pick is pick_next_entity among the queued tasks: CFS's leftmost, or
// EEVDF's eligible task with the earliest deadline.
func (c *CPU) pick() TaskID {
	if c.rq.n == 0 {
		return NoTask
	}
	best := c.rq.queued[0]
	if !c.sim.Sched.EEVDF {
		for i := 1; i < c.rq.n; i++ {
			if id := c.rq.queued[i]; c.sim.tasks[id].vruntime < c.sim.tasks[best].vruntime {
				best = id
			}
		}
		return best
	}
	avg := c.avgVruntime()
	best = NoTask
	for i := 0; i < c.rq.n; i++ {
		id := c.rq.queued[i]
		t := &c.sim.tasks[id]
		if !c.eligible(t, avg) {
			continue
		}
		if best == NoTask || t.deadline < c.sim.tasks[best].deadline {
			best = id
		}
	}
	if best == NoTask {
		// None eligible: can only be rounding; take the least vruntime.
		best = c.rq.queued[0]
		for i := 1; i < c.rq.n; i++ {
			if id := c.rq.queued[i]; c.sim.tasks[id].vruntime < c.sim.tasks[best].vruntime {
				best = id
			}
		}
	}
	return best
}

// wakeupPreempt is check_preempt_wakeup: whether woken task w ought to
// preempt the current task.
func (c *CPU) wakeupPreempt(w *Task) bool {
	curr := &c.sim.tasks[c.rq.curr]
	if !c.sim.Sched.EEVDF {
		// wakeup_preempt_entity: w is behind by more than the wakeup
		// granularity.
		return curr.vruntime-w.vruntime > c.sim.Sched.WakeupGranularity
	}
	avg := c.avgVruntime()
	if curr.protect && c.eligible(curr, avg) {
		return false // RUN_TO_PARITY
	}
	if !c.eligible(w, avg) {
		return false
	}
	return !c.eligible(curr, avg) || w.deadline < curr.deadline
}

// cfsTickPreempt is check_preempt_tick for the current task t with
// others runnable: its slice of sched_latency used up, or it is ahead of
// the leftmost task by more than a slice.
func (c *CPU) cfsTickPreempt(t *Task) bool {
	n := Duration(c.rq.n + 1)
	period := c.sim.Sched.Latency
	if n > 8 { // sched_nr_latency
		period = n * c.sim.Sched.MinGranularity
	}
	ideal := period / n
	delta := t.Stats.Runtime - t.sliceStart
	if delta > ideal {
		return true
	}
	if delta < c.sim.Sched.MinGranularity {
		return false
	}
	left := c.sim.tasks[c.pick()].vruntime
	return t.vruntime-left > ideal
}

// updateMinVruntime is update_min_vruntime: min_vruntime follows the
// least vruntime of the runnable tasks and the current one, and never
// goes back.
func (c *CPU) updateMinVruntime(curr *Task) {
	v := curr.vruntime
	for i := 0; i < c.rq.n; i++ {
		v = min(v, c.sim.tasks[c.rq.queued[i]].vruntime)
	}
	c.rq.minVruntime = max(c.rq.minVruntime, v)
}
