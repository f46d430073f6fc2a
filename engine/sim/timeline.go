package sim

// What a CPU did, piece by piece: the record `perf sched timehist` or
// KernelShark would draw, a lane per CPU. Each piece of work a CPU ends
// is a Slice (contiguous pieces of the same owner merge), and each wait
// of a runnable task is one too; the newest LogSlices are kept in a ring
// per CPU, so a view reads the last window without the engine
// allocating.

// LogSlices is how many slices a CPU keeps: a NAPI poll, a task's chunk
// or a wait each, merged when contiguous; at a few per 10 µs of a busy
// CPU, a couple of ms of history.
const LogSlices = 512

// CtxWait is a Slice's context for a task's wait: runnable (woken or
// preempted) and not running; CtxSteal for a span the host ran another
// thread on the vCPU's host CPU (CPU.Steal). Neither is a context work
// runs in.
const (
	CtxWait  = numContexts
	CtxSteal = numContexts + 1
)

// Slice is a span of a CPU's time: work in a context (Task the task it
// ran for, NoTask for interrupt work), or a task's wait (CtxWait). An
// interrupt that preempts a task's chunk is recorded over it, and the
// chunk's slice ends that much later: draw the task first, the
// interrupt on top.
type Slice struct {
	Start, End Time
	Ctx        Context
	Task       TaskID
}

// cpuLog is a CPU's ring of slices.
type cpuLog struct {
	s    []Slice // LogSlices long once the CPU is built
	next int     // where the next slice goes
	n    int     // slices held
	// lastTask is the index of the newest task slice, for the stretch an
	// interrupt that preempts it makes; -1 when none is held.
	lastTask int
}

func newCPULog() cpuLog { return cpuLog{s: make([]Slice, LogSlices), lastTask: -1} }

// add records x, merging it into the newest slice when it continues it
// (same context and task, starting where that one ends).
func (l *cpuLog) add(x Slice) {
	if x.End <= x.Start {
		return
	}
	if l.n > 0 {
		last := &l.s[(l.next+LogSlices-1)%LogSlices]
		if last.Ctx == x.Ctx && last.Task == x.Task && last.End == x.Start {
			last.End = x.End
			return
		}
	}
	if l.lastTask == l.next {
		l.lastTask = -1 // overwritten
	}
	l.s[l.next] = x
	if x.Ctx != CtxIRQ && x.Ctx != CtxSoftirq && x.Ctx != CtxWait && x.Ctx != CtxSteal {
		l.lastTask = l.next
	}
	l.next = (l.next + 1) % LogSlices
	l.n = min(l.n+1, LogSlices)
}

// stretch moves the newest task slice's end d later: an interrupt
// preempted it.
func (l *cpuLog) stretch(d Duration) {
	if l.lastTask >= 0 {
		l.s[l.lastTask].End = l.s[l.lastTask].End.Add(d)
	}
}

// copyFrom copies src's slices into l's ring.
func (l *cpuLog) copyFrom(src *cpuLog) {
	s := l.s
	*l = *src
	l.s = s
	copy(l.s, src.s)
}

// Slices appends to buf the CPU's slices that end after from, in the
// order they were recorded (a piece of work when it ended, a wait when
// the task began to run). O(slices kept).
func (c *CPU) Slices(from Time, buf []Slice) []Slice {
	l := &c.log
	start := (l.next + LogSlices - l.n) % LogSlices
	for i := 0; i < l.n; i++ {
		x := l.s[(start+i)%LogSlices]
		if x.End > from {
			buf = append(buf, x)
		}
	}
	return buf
}

// logWait records task t's wait from since to start, when it was one.
func (c *CPU) logWait(id TaskID, since, start Time) {
	if since >= 0 && start > since {
		c.log.add(Slice{Start: since, End: start, Ctx: CtxWait, Task: id})
	}
}
