package engine

import (
	"fmt"
	"strings"

	"ringlab/engine/sim"
	"ringlab/engine/virtionet"
)

// DefaultLivenessWindow is how long CheckLiveness lets a world with frames
// waiting go without progress before it calls it stalled: 10 ms of
// simulated time, thousands of times an interrupt's or a kick's latency.
const DefaultLivenessWindow = 10 * sim.Millisecond

// LivenessError is what stops a world CheckLiveness finds stalled: frames
// wait on a queue and, for Window of simulated time (or for ever, when no
// event is left to run), the driver received no packet from it and its
// host wrote none into the ring. Queues says where each stalled queue's
// two sides stand.
type LivenessError struct {
	Scenario string
	Event    uint64       // events run when it was found
	At       sim.Time     // when it was found
	Since    sim.Time     // the stalled queues' last progress (the earliest)
	Window   sim.Duration // 0 when no event was left
	Received uint64       // rx_packets so far, every queue
	Queues   []string
	// Tasks names the tasks that were runnable for TaskStall and never
	// ran (a CPU whose runnable work never runs).
	Tasks []string
	// Kernel is true when every stalled queue is in the kernel's own
	// deadlock, not a lost wakeup of the model's: mergeable buffers, a
	// next frame larger than all the posted buffers hold, and fewer free
	// descriptors than virtnet_receive waits for before it refills (so no
	// refill, no kick, and the host waits for good). A small ring with
	// 64 KiB GSO frames gets there; the kernel has no way out either.
	Kernel bool
}

func (e *LivenessError) Error() string {
	how := fmt.Sprintf("nothing received for %d ns", e.At.Sub(e.Since))
	if e.Window == 0 {
		how = "no event left to run"
	}
	what := "stalled"
	if e.Kernel {
		what = "is in the kernel's own deadlock"
	}
	if len(e.Queues) == 0 {
		return fmt.Sprintf("scenario %q stalled at %d ns (event %d): runnable tasks never ran: %s",
			e.Scenario, e.At, e.Event, strings.Join(e.Tasks, "; "))
	}
	return fmt.Sprintf("scenario %q %s at %d ns (event %d): frames wait, %s since %d ns (%d packets received in all); %s",
		e.Scenario, what, e.At, e.Event, how, e.Since, e.Received, strings.Join(e.Queues, "; "))
}

// TaskStall is how long CheckLiveness lets a task wait runnable before it
// calls its CPU stalled: the fair scheduler runs each of a few runnable
// tasks within sched_latency (CFS: 6 ms times 1 + ilog2 of the CPUs, at
// most 24 ms) or a few slices (EEVDF), so 100 ms is far past any fair
// wait.
const TaskStall = 100 * sim.Millisecond

// liveness is the state of CheckLiveness: per receive queue, its last
// progress and the counters it was read from.
type liveness struct {
	window sim.Duration
	q      []queueProgress
}

type queueProgress struct {
	since    sim.Time // last progress
	received uint64   // the driver's rx_packets
	written  uint64   // frames the host wrote into the ring
	fails    uint64   // buffers the refills could not allocate
}

// CheckLiveness is a test mode that fails a world that has traffic to
// deliver and delivers nothing. From now on, after every event: when a
// queue has frames waiting (one arrived at its host window ago and is not
// in the ring yet, or sits in the host's unpublished batch or in the used
// ring) and, for window of simulated time, the driver received no packet
// from it and its host wrote none into the ring, the world stops with a
// *LivenessError (World.Err) naming the scenario and where each stalled
// queue's host and driver stand. A world with traffic and no event left
// to run is stalled at once. Lost wakeups are what it is for: a host
// asleep waiting for a kick the driver will not send, a driver waiting
// for an interrupt the host will not raise.
//
// A refill that could not allocate buffers counts as progress: the
// kernel retries from refill_work, which may legitimately wait. window 0
// is DefaultLivenessWindow. Off, it costs Step one nil test; on, O(queues)
// per event.
func (w *World) CheckLiveness(window sim.Duration) {
	if window <= 0 {
		window = DefaultLivenessWindow
	}
	l := &liveness{window: window, q: make([]queueProgress, len(w.Driver.RQ))}
	for i := range l.q {
		l.q[i].mark(w, i)
	}
	w.live = l
}

// mark records queue i's progress counters now.
func (p *queueProgress) mark(w *World, i int) {
	rq := w.Driver.RQ[i]
	p.since = w.Now()
	p.received, p.written, p.fails = rq.Stats.Packets, rq.Dev.Counters().Packets, rq.Stats.AllocFails
}

// after checks the world after an event; ended says no event was left.
func (l *liveness) after(w *World, ended bool) {
	if w.err != nil {
		return
	}
	now := w.Now()
	by := now.Add(-l.window)
	var stalled []int
	for i, rq := range w.Driver.RQ {
		p := &l.q[i]
		if rq.Stats.Packets != p.received || rq.Dev.Counters().Packets != p.written || rq.Stats.AllocFails != p.fails {
			p.mark(w, i)
			continue
		}
		tr := rq.Dev.Traffic()
		if !tr.Active() {
			continue
		}
		waiting := tr.NextArrival() <= by || rq.Dev.Unpublished() > 0 || rq.VQ.UsedIdx() != rq.VQ.LastUsed()
		if ended || now.Sub(p.since) >= l.window && waiting {
			stalled = append(stalled, i)
		}
	}
	if len(stalled) > 0 {
		window := l.window
		if ended {
			window = 0
		}
		w.err = l.stall(w, window, stalled)
		return
	}
	l.tasks(w)
}

// tasks stops w when a task has been runnable for TaskStall without
// running.
func (l *liveness) tasks(w *World) {
	now := w.Now()
	var stuck []string
	for i := 0; i < w.Sim.NumTasks(); i++ {
		t := w.Sim.Task(sim.TaskID(i))
		since := t.WaitingSince()
		if t.State() == sim.TaskSleeping || since < 0 || now.Sub(since) < TaskStall {
			continue
		}
		c := w.Sim.CPU(t.CPU)
		curr := "nothing (idle)"
		if id := c.Current(); id != sim.NoTask {
			curr = w.Sim.Task(id).Name
		}
		stuck = append(stuck, fmt.Sprintf("%s on CPU %d %s since %d ns, never run since; the CPU's current task is %s, %d runnable, busy until %d ns",
			t.Name, t.CPU, t.State(), since, curr, c.Runnable(), c.BusyUntil()))
	}
	if len(stuck) > 0 {
		w.err = &LivenessError{Scenario: w.Scenario.Name, Event: w.Sim.Queue.Fired(), At: now, Since: now, Window: TaskStall, Received: w.Received(), Tasks: stuck}
	}
}

// stall builds the error, with where each stalled queue stands.
func (l *liveness) stall(w *World, window sim.Duration, stalled []int) *LivenessError {
	e := &LivenessError{Scenario: w.Scenario.Name, Event: w.Sim.Queue.Fired(), At: w.Now(), Since: w.Now(), Window: window, Received: w.Received(), Kernel: true}
	for _, i := range stalled {
		rq := w.Driver.RQ[i]
		vq, dev := rq.VQ, rq.Dev
		tr := dev.Traffic()
		e.Since = min(e.Since, l.q[i].since)
		host := "running"
		if dev.Starved() {
			host = "asleep until a kick"
		}
		napi := "idle"
		if rq.NAPIScheduled() {
			napi = "scheduled"
		}
		cb := "enabled"
		if vq.CallbacksDisabled() {
			cb = "disabled"
		}
		_, size := tr.Peek()
		c := dev.Counters()
		e.Queues = append(e.Queues, fmt.Sprintf(
			"rx%d since %d ns: host %s (last_avail %d, avail_event %d, used.flags %#x, %d used entries unpublished, next frame %d bytes arrived at %d ns, %d kicks woke it, %d backlog drops, %d no-buffer drops), "+
				"ring (avail_idx %d, used_idx %d, num_free %d of %d), driver (last_used %d, used_event %d, NAPI %s, callbacks %s, interrupt armed %v, %d kicks, %d refills)",
			rq.Index, l.q[i].since, host, vq.DeviceLastAvail(), vq.AvailEvent(), vq.UsedFlags(), dev.Unpublished(), size, tr.NextArrival(), c.Wakeups, c.Drops, c.NoBufferDrops,
			vq.AvailIdx(), vq.UsedIdx(), vq.NumFree(), vq.Size(), vq.LastUsed(), vq.UsedEvent(), napi, cb, rq.IRQArmed(), rq.Stats.Kicks, rq.Stats.Refills))
		if why, ok := kernelDeadlock(rq); ok {
			e.Queues[len(e.Queues)-1] += "; " + why
		} else {
			e.Kernel = false
		}
	}
	return e
}

// kernelDeadlock says whether rq waits as the kernel itself would, for
// good: the host needs more than the posted mergeable buffers hold for
// its next frame (get_rx_bufs runs out, handle_rx waits for a kick), the
// driver has taken every used buffer and NAPI is idle, and the free
// descriptors are not more than min(budget, ring)/2, so virtnet_receive
// does not refill (and refill_work is not queued): nobody will post a
// buffer, so nobody kicks.
func kernelDeadlock(rq *virtionet.RQ) (string, bool) {
	need, posted, short := rq.Dev.Shortfall()
	free, limit := rq.VQ.NumFree(), rq.RefillThreshold()
	if !short || rq.NAPIScheduled() || rq.RefillQueued() || rq.Dev.Unpublished() > 0 || rq.VQ.UsedIdx() != rq.VQ.LastUsed() || free > limit {
		return "", false
	}
	return fmt.Sprintf("the kernel's deadlock: the next frame needs %d bytes, the posted buffers hold %d, "+
		"and virtnet_receive refills only when more than %d descriptors are free (%d are): no refill, so no kick", need, posted, limit, free), true
}
