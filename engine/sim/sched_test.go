package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busyTask is a task that runs chunks of cost each while work is left,
// recording when each chunk ran.
type busyTask struct {
	s      *Sim
	id     TaskID
	cost   Duration
	chunks int // chunks left; <0: forever
	ran    []Time
}

func (b *busyTask) run(now Time, _ uint64) {
	c := b.s.CPU(b.s.Task(b.id).CPU)
	if !c.BeginTask(now, b.id, false) {
		return
	}
	b.ran = append(b.ran, c.Now())
	c.Charge(SymTCPRecvmsg, b.cost)
	if b.chunks > 0 {
		b.chunks--
	}
	c.EndTask(b.chunks != 0)
}

func newBusy(t *testing.T, s *Sim, cpu int, name string, cost Duration, chunks int) *busyTask {
	t.Helper()
	b := &busyTask{s: s, cost: cost, chunks: chunks}
	k := s.Queue.RegisterArg(name, "cpu", b.run)
	b.id = s.NewTask(cpu, name, k, uint64(cpu))
	return b
}

func schedSim(t *testing.T, eevdf bool) *Sim {
	t.Helper()
	s, err := New(1, DefaultCosts())
	require.NoError(t, err)
	s.Sched = DefaultSched(eevdf, 1, 1000)
	s.Costs.ContextSwitch = 0 // times below are the tasks' own
	return s
}

// switches lists the times at which the CPU changed from running one task
// to the other, given each task's chunk start times.
func runs(a, b *busyTask) (aRuns, bRuns int) {
	i, j, last := 0, 0, 0
	for i < len(a.ran) || j < len(b.ran) {
		if j == len(b.ran) || (i < len(a.ran) && a.ran[i] < b.ran[j]) {
			if last != 1 {
				aRuns++
				last = 1
			}
			i++
		} else {
			if last != 2 {
				bRuns++
				last = 2
			}
			j++
		}
	}
	return aRuns, bRuns
}

// DefaultSched scales the kernel's tunables by 1 + ilog2(min(ncpu, 8))
// (sched_update_scaling, SCHED_TUNABLESCALING_LOG).
func TestDefaultSchedScalesWithCPUs(t *testing.T) {
	for _, tc := range []struct {
		ncpu int
		f    Duration
	}{{1, 1}, {2, 2}, {4, 3}, {8, 4}, {64, 4}} {
		c := DefaultSched(false, tc.ncpu, 1000)
		assert.Equal(t, 6*Millisecond*tc.f, c.Latency, "%d CPUs", tc.ncpu)
		assert.Equal(t, 750*Microsecond*tc.f, c.MinGranularity)
		assert.Equal(t, Millisecond*tc.f, c.WakeupGranularity)
		assert.Equal(t, 750*Microsecond*tc.f, c.BaseSlice)
	}
	assert.Equal(t, 4*Millisecond, DefaultSched(true, 1, 250).Tick, "HZ=250")
}

// try_to_wake_up on an idle CPU: the task runs when it is woken for, and
// need_resched holds until it does (the idle task is always preempted).
func TestWakeOnIdleCPU(t *testing.T) {
	s := schedSim(t, false)
	a := newBusy(t, s, 0, "a", 10*Microsecond, 1)
	assert.True(t, s.Wake(a.id, 5000))
	assert.False(t, s.Wake(a.id, 6000), "a woken task is not woken twice")
	assert.True(t, s.CPU(0).NeedResched())
	assert.Equal(t, a.id, s.CPU(0).Current())
	s.Queue.RunUntil(Time(Millisecond))
	require.Equal(t, []Time{5000}, a.ran)
	assert.False(t, s.CPU(0).NeedResched())
	assert.Equal(t, TaskSleeping, s.Task(a.id).State(), "its work done, it sleeps")
	assert.Equal(t, NoTask, s.CPU(0).Current(), "and the CPU idles")
	assert.Equal(t, Duration(10*Microsecond), s.Task(a.id).Stats.Runtime)
	assert.Equal(t, uint64(1), s.CPU(0).Switches())
}

// Interrupt work that falls due while a task's chunk runs preempts it
// (irq_exit -> invoke_softirq runs before the task resumes): the chunk
// ends later by the interrupt's duration; the task's own time is not
// charged for it. Work with bottom halves disabled (local_bh_disable)
// holds softirqs off until it ends.
func TestInterruptPreemptsATask(t *testing.T) {
	for _, bh := range []bool{false, true} {
		s := schedSim(t, false)
		c := s.CPU(0)
		var id TaskID
		var end Time
		k := s.Queue.Register("t", func(now Time, _ uint64) {
			require.True(t, c.BeginTask(now, id, bh))
			c.Charge(SymTCPRecvmsg, 100*Microsecond)
			end = c.EndTask(false)
		})
		id = s.NewTask(0, "t", k, 0)
		s.Wake(id, 0)
		s.Queue.Step()
		require.Equal(t, Time(100*Microsecond), end)
		// A softirq at 30 us for 20 us.
		start := c.BeginIRQ(Time(30*Microsecond), "softirq")
		c.Charge(SymNetRxAction, 20*Microsecond)
		c.End()
		if bh {
			assert.Equal(t, Time(100*Microsecond), start, "bh off: the softirq waits for the chunk")
			assert.Equal(t, Time(120*Microsecond), c.BusyUntil())
			continue
		}
		assert.Equal(t, Time(30*Microsecond), start, "it runs when it falls due")
		assert.Equal(t, Time(120*Microsecond), c.BusyUntil(), "the task's chunk ends 20 us later")
		assert.Equal(t, Duration(20*Microsecond), c.Preempted())
		assert.Equal(t, Duration(100*Microsecond), s.Task(id).Stats.Runtime, "interrupt time is not the task's")
	}
}

// CFS (until 6.5): two CPU-bound tasks share a CPU in slices of
// sched_latency / 2 (check_preempt_tick, at ticks); a task that slept
// long comes back at min_vruntime less half of sched_latency
// (place_entity, GENTLE_FAIR_SLEEPERS) and, behind the running task by
// more than the wakeup granularity, preempts it at its next preemption
// point (check_preempt_wakeup).
func TestCFSSlicesAndWakeupPreemption(t *testing.T) {
	s := schedSim(t, false)
	a := newBusy(t, s, 0, "a", 10*Microsecond, -1)
	b := newBusy(t, s, 0, "b", 10*Microsecond, -1)
	s.Wake(a.id, 0)
	s.Wake(b.id, 0)
	s.Queue.RunUntil(Time(60 * Millisecond))
	ar, br := runs(a, b)
	// 60 ms in slices of 3 ms (latency 6 ms, two tasks), noticed at the
	// first tick past them: 3 to 4 ms, 15 to 20 runs.
	assert.InDelta(t, ar, br, 1, "they alternate")
	assert.GreaterOrEqual(t, ar+br, 15)
	assert.LessOrEqual(t, ar+br, 21)
	ta, tb := s.Task(a.id).Stats, s.Task(b.id).Stats
	assert.InDelta(t, float64(ta.Runtime), float64(tb.Runtime), float64(4*Millisecond), "fair shares")
	assert.InDelta(t, float64(3*Millisecond), float64(ta.MaxWait), float64(Millisecond+20*Microsecond), "each waits one slice")

	// A sleeper woken now preempts whoever runs at its next chunk.
	w := newBusyAfter(t, s, "w")
	woke := s.Queue.Now()
	s.Wake(w.id, woke)
	assert.True(t, s.CPU(0).NeedResched(), "placed 3 ms behind, beyond the 1 ms granularity")
	s.Queue.RunUntil(woke.Add(100 * Microsecond))
	require.NotEmpty(t, w.ran)
	assert.Less(t, w.ran[0].Sub(woke), Duration(20*Microsecond), "within the running task's chunk")
}

// newBusyAfter adds a task once the Sim has run: tasks are bound before a
// world runs, but the scheduler takes them at any time.
func newBusyAfter(t *testing.T, s *Sim, name string) *busyTask {
	return newBusy(t, s, 0, name, 10*Microsecond, 1)
}

// EEVDF (6.6+): the eligible task with the earliest deadline runs
// (pick_eevdf); two CPU-bound tasks alternate a base slice at a time
// (update_deadline at ticks); a woken task does not preempt one still
// within the slice it was picked for (RUN_TO_PARITY), however long it
// slept.
func TestEEVDFSlicesAndRunToParity(t *testing.T) {
	s := schedSim(t, true)
	a := newBusy(t, s, 0, "a", 10*Microsecond, -1)
	b := newBusy(t, s, 0, "b", 10*Microsecond, -1)
	s.Wake(a.id, 0)
	s.Wake(b.id, 0)
	s.Queue.RunUntil(Time(30 * Millisecond))
	ar, br := runs(a, b)
	// A 0.75 ms slice, renewed at the first tick past it: runs of about
	// a jiffy, some 15 each in 30 ms.
	assert.Greater(t, ar+br, 20, "runs of about a slice each")
	ta, tb := s.Task(a.id).Stats, s.Task(b.id).Stats
	assert.InDelta(t, float64(ta.Runtime), float64(tb.Runtime), float64(2*Millisecond), "fair shares")

	w := newBusyAfter(t, s, "w")
	curr := s.CPU(0).Current()
	// Right after a pick the current task is protected.
	for s.CPU(0).Current() == curr {
		s.Queue.Step()
	}
	s.Wake(w.id, s.Queue.Now())
	assert.False(t, s.CPU(0).NeedResched(), "RUN_TO_PARITY: no preemption within the slice")
	s.Queue.RunUntil(s.Queue.Now().Add(3 * Millisecond))
	require.NotEmpty(t, w.ran, "it runs once the slice ends")
}

// A task's chunks are bracketed: a stale event (the task is not the CPU's
// current one) runs nothing.
func TestBeginTaskOfAnotherTask(t *testing.T) {
	s := schedSim(t, false)
	a := newBusy(t, s, 0, "a", 10*Microsecond, 1)
	b := newBusy(t, s, 0, "b", 10*Microsecond, 1)
	s.Wake(a.id, 0)
	assert.False(t, s.CPU(0).BeginTask(0, b.id, false))
}

// The CPU's record of who ran when (perf sched timehist's lane): a task's
// chunk, an interrupt over it with the chunk's slice stretched by the
// interrupt's length, and a woken task's wait while another ran.
func TestCPURecordsWhoRanWhen(t *testing.T) {
	s := schedSim(t, false)
	c := s.CPU(0)
	a := newBusy(t, s, 0, "a", 100*Microsecond, 1)
	b := newBusy(t, s, 0, "b", 10*Microsecond, 1)
	s.Wake(a.id, 0)
	s.Queue.Step() // a runs [0, 100 us)
	s.Wake(b.id, Time(10*Microsecond))
	c.BeginSoftirq(Time(30*Microsecond), "net_rx_action")
	c.Charge(SymNetRxAction, 20*Microsecond)
	c.End()
	s.Queue.RunUntil(Time(Millisecond))
	got := c.Slices(0, nil)
	require.Len(t, got, 4)
	assert.Equal(t, Slice{Start: 0, End: Time(120 * Microsecond), Ctx: CtxTask, Task: a.id}, got[0], "a's chunk, pushed back by the softirq")
	assert.Equal(t, Slice{Start: Time(30 * Microsecond), End: Time(50 * Microsecond), Ctx: CtxSoftirq, Task: NoTask}, got[1])
	assert.Equal(t, Slice{Start: Time(10 * Microsecond), End: Time(120 * Microsecond), Ctx: CtxWait, Task: b.id}, got[2], "b waited from its wake-up until a's chunk ended")
	assert.Equal(t, Slice{Start: Time(120 * Microsecond), End: Time(130 * Microsecond), Ctx: CtxTask, Task: b.id}, got[3])
	assert.Empty(t, c.Slices(Time(200*Microsecond), nil), "nothing ended after 200 us")
	assert.Equal(t, Duration(20*Microsecond), c.ContextBusy(CtxSoftirq))
}

// Steal time: the host runs another thread (a vhost worker) on the
// vCPU's host CPU, and the guest runs nothing then. A task's chunk the
// steal falls in ends that much later, interrupt work that falls due in
// the steal waits for its end, and the span is recorded and counted as
// the steal column of /proc/stat counts it.
func TestStealStopsTheVCPU(t *testing.T) {
	s := schedSim(t, false)
	c := s.CPU(0)
	a := newBusy(t, s, 0, "a", 100*Microsecond, 1)
	s.Wake(a.id, 0)
	s.Queue.Step() // a runs [0, 100 us)
	c.Steal(Time(20*Microsecond), Time(50*Microsecond))
	assert.Equal(t, Time(130*Microsecond), c.BusyUntil(), "a's chunk ends 30 us later")
	assert.Equal(t, Duration(30*Microsecond), c.Stolen())

	// An interrupt due at 200 us, inside a steal from 190 to 260 us,
	// runs at its end.
	c.Steal(Time(190*Microsecond), Time(260*Microsecond))
	start := c.BeginIRQ(Time(200*Microsecond), "vring_interrupt")
	c.Charge(SymNetRxAction, 5*Microsecond)
	c.End()
	assert.Equal(t, Time(260*Microsecond), start, "the vCPU that would take it does not run")
	assert.Equal(t, Duration(100*Microsecond), c.Stolen())
	assert.Equal(t, Duration(100*Microsecond), s.Task(a.id).Stats.Runtime, "stolen time is not the task's")
	assert.Equal(t, Duration(105*Microsecond), c.Busy(), "nor the CPU's busy time")

	var steals []Slice
	for _, x := range c.Slices(0, nil) {
		if x.Ctx == CtxSteal {
			steals = append(steals, x)
		}
	}
	assert.Equal(t, []Slice{
		{Start: Time(20 * Microsecond), End: Time(50 * Microsecond), Ctx: CtxSteal, Task: NoTask},
		{Start: Time(190 * Microsecond), End: Time(260 * Microsecond), Ctx: CtxSteal, Task: NoTask},
	}, steals)
	c.Steal(Time(300*Microsecond), Time(300*Microsecond))
	assert.Equal(t, Duration(100*Microsecond), c.Stolen(), "an empty span steals nothing")
}
