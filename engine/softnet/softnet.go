// Package softnet is NET_RX: each CPU's softnet_data (the NAPI instances
// scheduled on it and its /proc/net/softnet_stat counters), net_rx_action
// with its budgets, __do_softirq's restarts, and ksoftirqd/N, the thread
// NET_RX falls back to (net/core/dev.c, kernel/softirq.c).
//
// How NET_RX runs. napi_schedule puts a NAPI instance on its CPU's poll
// list and raises NET_RX; at the exit of the interrupt that did so
// (irq_exit -> invoke_softirq) __do_softirq runs it ahead of the task the
// interrupt preempted. A pass of __do_softirq runs net_rx_action, which
// polls the listed instances in turn, each up to its weight, until the
// list is empty, netdev_budget packets are spent or netdev_budget_usecs
// have passed (then time_squeeze counts the round); an instance that
// used its whole weight is put back at the tail and NET_RX raised again.
// __do_softirq then runs another pass while NET_RX is pending, less than
// MAX_SOFTIRQ_TIME has passed, fewer than MAX_SOFTIRQ_RESTART passes ran
// and no reschedule is due (need_resched); otherwise it wakes ksoftirqd,
// a task scheduled like any other, which runs __do_softirq again and
// yields at cond_resched between its runs. From 4.9 to 6.4 an interrupt's
// exit, or local_bh_enable, leaves pending softirqs to ksoftirqd while it
// is runnable (ksoftirqd_running); from 6.5 they run there at once, so the
// next interrupt (a timer tick at least) or local_bh_enable (the reader's
// release_sock) runs NET_RX again.
//
// Each napi_poll is one event: in interrupt context the "napi poll"
// event of the instance, in ksoftirqd one chunk of the ksoftirqd task,
// with bottom halves disabled. A __do_softirq's passes are chained event
// after event, so that what other CPUs do in between is interleaved.
package softnet

import (
	"fmt"

	"ringlab/engine/sim"
)

// Constants of kernel/softirq.c and net/core/dev.c.
const (
	// MaxSoftirqRestart is MAX_SOFTIRQ_RESTART: __do_softirq's passes.
	MaxSoftirqRestart = 10
	// MaxSoftirqTime is MAX_SOFTIRQ_TIME, msecs_to_jiffies(2).
	MaxSoftirqTime = 2 * sim.Millisecond
	// DefaultBudget is netdev_budget's default.
	DefaultBudget = 300
	// DefaultBudgetUsecs is netdev_budget_usecs's default,
	// 2 * USEC_PER_SEC / HZ: 2 jiffies (2000 us at HZ=1000).
	DefaultBudgetJiffies = 2
	// NAPIWeight is NAPI_POLL_WEIGHT, the weight virtio_net gives its
	// instances.
	NAPIWeight = 64
)

// NAPIID names a NAPI instance of a Softnet; the engine numbers a
// driver's receive queues first, so instance i is receive queue i's.
type NAPIID int16

// Poller is a NAPI instance's poll function (napi->poll): it processes up
// to budget packets on c and returns how many it did. Returning less than
// budget means it completed (it called Softnet.Complete, and may have
// scheduled itself again since).
type Poller interface {
	Poll(c *sim.CPU, n NAPIID, budget int) int
}

// Config is what a kernel and its sysctls say of NET_RX.
type Config struct {
	// Budget is net.core.netdev_budget: packets per net_rx_action.
	Budget int
	// BudgetUsecs is net.core.netdev_budget_usecs: a net_rx_action's time
	// limit, which the kernel counts in whole jiffies
	// (usecs_to_jiffies, rounded up).
	BudgetUsecs int
	// KsoftirqdGate: softirqs raised while ksoftirqd is runnable wait for
	// it (ksoftirqd_running in invoke_softirq and do_softirq: 4.9, commit
	// 4cd13c21b207, to 6.4; reverted by d15121be7485 in 6.5).
	KsoftirqdGate bool
	// ActionRestart: net_rx_action polls what was scheduled while it ran
	// before it returns, when its own list is done and nothing is to be
	// polled again (the in_net_rx_action check's goto start, 6.4+);
	// before, that waits for __do_softirq's next pass.
	ActionRestart bool
	// OnPoll, when not nil, runs on c before each poll: net_rx_action's
	// skb_defer_free_flush.
	OnPoll func(c *sim.CPU)
}

// CPUStats are one CPU's softnet counters.
type CPUStats struct {
	// Processed, Dropped and TimeSqueeze are /proc/net/softnet_stat's
	// first three columns: skbs the stack took in (__netif_receive_skb_core),
	// skbs dropped at a full backlog (enqueue_to_backlog; the engine has
	// no backlog, so 0), and net_rx_action rounds that ran out of budget
	// or time with work left.
	Processed, Dropped, TimeSqueeze uint64
	// Polls is napi_poll calls, InKsoftirqd those run by ksoftirqd.
	Polls, InKsoftirqd uint64
	// Restarts counts __do_softirq passes past the first; Deferred the
	// times it gave up and woke ksoftirqd (wakeup_softirqd).
	Restarts, Deferred uint64
	// Gated counts raises left to a runnable ksoftirqd (4.9 to 6.4).
	Gated uint64
}

// where says where a __do_softirq runs now on a CPU.
type where uint8

const (
	nowhere  where = iota
	inIRQ          // at an interrupt's exit (or local_bh_enable)
	inThread       // in ksoftirqd
)

type napi struct {
	cpu       int
	weight    int
	poll      Poller
	kind      sim.Kind // the event of one poll in interrupt context
	arg       uint64
	scheduled bool // NAPI_STATE_SCHED
}

// cpuState is one CPU's softnet_data and the __do_softirq running on it.
type cpuState struct {
	list    []NAPIID // sd->poll_list
	action  []NAPIID // net_rx_action's own list, spliced from poll_list
	repoll  []NAPIID // instances that used their whole weight this round
	pending bool     // NET_RX raised
	where   where
	// The running __do_softirq: its end (MAX_SOFTIRQ_TIME, in jiffies)
	// and the passes it may still run; the running net_rx_action: its
	// budget left and time limit (in jiffies).
	end      int64
	restarts int
	budget   int
	limit    int64
	tick     bool // a tick event is armed
	thread   sim.TaskID
	Stats    CPUStats
}

// Softnet is NET_RX on every CPU of a Sim.
type Softnet struct {
	sim   *sim.Sim
	cfg   Config
	napis []napi
	cpus  []cpuState
	ksoft sim.Kind // "ksoftirqd": a chunk of ksoftirqd/N, arg N
	tickK sim.Kind // "tick": a timer interrupt's exit runs pending softirqs (6.5+)
}

// New builds NET_RX for every CPU of s, with a ksoftirqd task on each.
// Instances are added with AddNAPI before the Sim runs.
func New(s *sim.Sim, cfg Config) *Softnet {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.BudgetUsecs <= 0 {
		cfg.BudgetUsecs = int(DefaultBudgetJiffies * s.Sched.Tick / sim.Microsecond)
	}
	sn := &Softnet{sim: s, cfg: cfg, cpus: make([]cpuState, s.NumCPU())}
	sn.ksoft = s.Queue.RegisterArg("ksoftirqd", "cpu", sn.ksoftirqd)
	sn.tickK = s.Queue.RegisterArg("tick", "cpu", sn.tickEvent)
	s.Queue.Cite(sn.ksoft, "run_ksoftirqd", "net_rx_action")
	s.Queue.Cite(sn.tickK, "__do_softirq")
	for i := range sn.cpus {
		sn.cpus[i].thread = s.NewTask(i, "ksoftirqd/"+itoa(i), sn.ksoft, uint64(i))
	}
	return sn
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// SetOnPoll sets Config.OnPoll (the stack, built after, flushes its
// defer lists there).
func (sn *Softnet) SetOnPoll(f func(c *sim.CPU)) { sn.cfg.OnPoll = f }

// AddNAPI adds an instance on cpu with its weight and poll function
// (netif_napi_add) and returns its id: the first is 0. A poll of it in
// interrupt context is an event of kind with arg, whose handler calls
// PollEvent (the driver registers it, so that the event is named as its
// instances are: "napi poll rx0").
func (sn *Softnet) AddNAPI(cpu, weight int, p Poller, kind sim.Kind, arg uint64) NAPIID {
	sn.napis = append(sn.napis, napi{cpu: cpu, weight: weight, poll: p, kind: kind, arg: arg})
	n := len(sn.napis)
	for i := range sn.cpus {
		cs := &sn.cpus[i]
		cs.list = grow(cs.list, n)
		cs.action = grow(cs.action, n)
		cs.repoll = grow(cs.repoll, n)
	}
	return NAPIID(n - 1)
}

func grow(l []NAPIID, n int) []NAPIID {
	if cap(l) >= n {
		return l
	}
	return append(make([]NAPIID, 0, n), l...)
}

// Stats returns CPU cpu's counters.
func (sn *Softnet) Stats(cpu int) CPUStats { return sn.cpus[cpu].Stats }

// Ksoftirqd is CPU cpu's ksoftirqd task.
func (sn *Softnet) Ksoftirqd(cpu int) sim.TaskID { return sn.cpus[cpu].thread }

// Pending reports whether NET_RX is raised on cpu and not yet run.
func (sn *Softnet) Pending(cpu int) bool { return sn.cpus[cpu].pending }

// Scheduled reports whether instance n is on a poll list (or being
// polled).
func (sn *Softnet) Scheduled(n NAPIID) bool { return sn.napis[n].scheduled }

// Processed counts one skb the stack took in on cpu
// (__netif_receive_skb_core's sd->processed).
func (sn *Softnet) Processed(cpu int) { sn.cpus[cpu].Stats.Processed++ }

// jiffy is the jiffies count at t.
func (sn *Softnet) jiffy(t sim.Time) int64 { return int64(t) / int64(sn.sim.Sched.Tick) }

// usecsToJiffies is usecs_to_jiffies: rounded up.
func (sn *Softnet) usecsToJiffies(us int) int64 {
	tick := int64(sn.sim.Sched.Tick / sim.Microsecond)
	return (int64(us) + tick - 1) / tick
}

// Schedule is napi_schedule of instance n at t: unless it is scheduled
// already, it goes on its CPU's poll list and NET_RX is raised. From
// interrupt context (a device's interrupt, an IPI) the softirq runs at
// the interrupt's exit (invoke_softirq); from a poll (a driver that
// completed and found more work), in the running __do_softirq.
func (sn *Softnet) Schedule(n NAPIID, t sim.Time) {
	p := &sn.napis[n]
	if p.scheduled {
		return
	}
	p.scheduled = true
	cs := &sn.cpus[p.cpu]
	cs.list = append(cs.list, n)
	sn.Raise(p.cpu, t)
}

// Complete is napi_complete_done: instance n leaves the poll list (the
// poll returns less than its weight).
func (sn *Softnet) Complete(n NAPIID) { sn.napis[n].scheduled = false }

// Raise raises NET_RX on cpu at t from interrupt context and runs it at
// the interrupt's exit unless a __do_softirq runs there already, or (4.9
// to 6.4) ksoftirqd is runnable.
func (sn *Softnet) Raise(cpu int, t sim.Time) {
	cs := &sn.cpus[cpu]
	cs.pending = true
	sn.invoke(cpu, t)
}

// BHEnable is local_bh_enable in a task on c (release_sock at the end of
// a recvmsg): pending softirqs run there, unless ksoftirqd is runnable
// (4.9 to 6.4).
func (sn *Softnet) BHEnable(c *sim.CPU) { sn.invoke(c.ID, c.Now()) }

// invoke is invoke_softirq / do_softirq: run pending NET_RX at t.
func (sn *Softnet) invoke(cpu int, t sim.Time) {
	cs := &sn.cpus[cpu]
	if !cs.pending || cs.where != nowhere {
		return
	}
	if sn.cfg.KsoftirqdGate && sn.sim.Task(cs.thread).State() != sim.TaskSleeping {
		cs.Stats.Gated++
		return
	}
	if len(cs.list) == 0 {
		// A raise with no instance scheduled (trigger_rx_softirq, the
		// defer list's IPI): net_rx_action only flushes, on the CPU's
		// work under way.
		cs.pending = false
		if sn.cfg.OnPoll != nil {
			sn.cfg.OnPoll(sn.sim.CPU(cpu))
		}
		return
	}
	cs.where = inIRQ
	sn.startPass(cs, t, true)
	sn.schedulePoll(cs, t)
}

// startPass starts a pass of __do_softirq at t (first: the first pass,
// which sets MAX_SOFTIRQ_TIME's end) and its net_rx_action.
func (sn *Softnet) startPass(cs *cpuState, t sim.Time, first bool) {
	if first {
		cs.end = sn.jiffy(t) + sn.jiffy(sim.Time(MaxSoftirqTime))
		cs.restarts = MaxSoftirqRestart
	} else {
		cs.Stats.Restarts++
	}
	cs.pending = false // set_softirq_pending(0)
	cs.budget = sn.cfg.Budget
	cs.limit = sn.jiffy(t) + sn.usecsToJiffies(sn.cfg.BudgetUsecs)
	// list_splice_init(&sd->poll_list, &list)
	cs.action = append(cs.action[:0], cs.list...)
	cs.list = cs.list[:0]
	cs.repoll = cs.repoll[:0]
}

// schedulePoll schedules the next poll of the __do_softirq running on
// CPU cs at t, an event of the instance's kind, when it runs in
// interrupt context (in ksoftirqd, EndTask schedules the task's next
// chunk).
func (sn *Softnet) schedulePoll(cs *cpuState, t sim.Time) {
	if cs.where != inIRQ || len(cs.action) == 0 {
		return
	}
	p := &sn.napis[cs.action[0]]
	sn.sim.Queue.Schedule(t, p.kind, p.arg)
}

// PollEvent is one napi_poll of instance n in interrupt context, the
// body of the event AddNAPI was given.
func (sn *Softnet) PollEvent(now sim.Time, n NAPIID) {
	cpu := sn.napis[n].cpu
	cs := &sn.cpus[cpu]
	if cs.where != inIRQ || len(cs.action) == 0 || cs.action[0] != n {
		return
	}
	c := sn.sim.CPU(cpu)
	c.BeginSoftirq(now, "net_rx_action")
	more := sn.steps(c, cs)
	c.End()
	if more {
		sn.schedulePoll(cs, c.Now())
	}
}

// steps runs the next poll, and the passes with no instance that follow
// it (a raise that only flushes the defer lists), until the next poll
// is due or the __do_softirq ends.
func (sn *Softnet) steps(c *sim.CPU, cs *cpuState) bool {
	more := sn.step(c, cs)
	for more && len(cs.action) == 0 {
		more = sn.step(c, cs)
	}
	return more
}

// ksoftirqd is a chunk of ksoftirqd/N (run_ksoftirqd): one napi_poll of
// the __do_softirq it runs, or the start of one while NET_RX is pending.
// It yields (cond_resched) only between its __do_softirq runs.
func (sn *Softnet) ksoftirqd(now sim.Time, arg uint64) {
	cs := &sn.cpus[arg]
	c := sn.sim.CPU(int(arg))
	if !c.BeginTask(now, cs.thread, true) {
		return
	}
	if cs.where == nowhere {
		if !cs.pending {
			c.EndTask(false) // ksoftirqd_should_run: nothing pending, sleep
			return
		}
		cs.where = inThread
		sn.startPass(cs, c.Now(), true)
	}
	if cs.where != inThread {
		// A __do_softirq in interrupt context has what is pending: it
		// wakes this thread again if it gives up.
		c.EndTask(false)
		return
	}
	if sn.steps(c, cs) {
		c.EndTaskHold()
		return
	}
	c.EndTask(cs.pending)
}

// tickEvent is a timer interrupt on CPU arg: its exit runs pending
// softirqs (from 6.5, whether ksoftirqd is runnable or not).
func (sn *Softnet) tickEvent(now sim.Time, arg uint64) {
	cs := &sn.cpus[arg]
	cs.tick = false
	sn.invoke(int(arg), now)
	sn.armTick(int(arg), now)
}

// armTick schedules the next tick on cpu while NET_RX waits there for
// an interrupt's exit: from 6.5, after __do_softirq gave up, the next
// interrupt on the CPU runs it (the device's interrupt is off while its
// NAPI is scheduled, so a timer tick at the latest).
func (sn *Softnet) armTick(cpu int, t sim.Time) {
	cs := &sn.cpus[cpu]
	if sn.cfg.KsoftirqdGate || cs.tick || !cs.pending || cs.where != nowhere {
		return
	}
	cs.tick = true
	tk := int64(sn.sim.Sched.Tick)
	sn.sim.Queue.Schedule(sim.Time((int64(t)/tk+1)*tk), sn.tickK, uint64(cpu))
}

// step runs one napi_poll of the running net_rx_action on c and moves
// the __do_softirq on: it reports whether it goes on (another poll now)
// or ended.
func (sn *Softnet) step(c *sim.CPU, cs *cpuState) bool {
	if len(cs.action) > 0 {
		n := cs.action[0]
		copy(cs.action, cs.action[1:])
		cs.action = cs.action[:len(cs.action)-1]
		if sn.cfg.OnPoll != nil {
			sn.cfg.OnPoll(c)
		}
		p := &sn.napis[n]
		cs.Stats.Polls++
		if cs.where == inThread {
			cs.Stats.InKsoftirqd++
		}
		work := p.poll.Poll(c, n, p.weight)
		cs.budget -= work
		if work >= p.weight && p.scheduled {
			// napi_poll: the whole weight used, polled again later.
			cs.repoll = append(cs.repoll, n)
		}
		if cs.budget <= 0 || sn.jiffy(c.Now()) >= cs.limit {
			// "If softirq window is exhausted then punt": counted
			// whether or not work is left.
			cs.Stats.TimeSqueeze++
			return sn.endAction(c, cs)
		}
		if len(cs.action) > 0 {
			return true
		}
		if sn.cfg.ActionRestart && len(cs.repoll) == 0 && len(cs.list) > 0 {
			// goto start: splice what was scheduled meanwhile.
			cs.action = append(cs.action[:0], cs.list...)
			cs.list = cs.list[:0]
			return true
		}
		return sn.endAction(c, cs)
	}
	if sn.cfg.OnPoll != nil {
		sn.cfg.OnPoll(c) // the loop's first skb_defer_free_flush, nothing listed
	}
	return sn.endAction(c, cs)
}

// endAction ends net_rx_action: the instances left go back on the poll
// list (what was left of its own list, then those scheduled meanwhile,
// then those to poll again) and NET_RX is raised again if any; then
// __do_softirq runs another pass, or gives up and wakes ksoftirqd.
func (sn *Softnet) endAction(c *sim.CPU, cs *cpuState) bool {
	cs.action = append(cs.action, cs.list...)
	cs.action = append(cs.action, cs.repoll...)
	cs.list = append(cs.list[:0], cs.action...)
	cs.action = cs.action[:0]
	cs.repoll = cs.repoll[:0]
	if len(cs.list) > 0 {
		cs.pending = true
	}
	if !cs.pending {
		cs.where = nowhere
		return false
	}
	cs.restarts--
	if sn.jiffy(c.Now()) < cs.end && !c.NeedResched() && cs.restarts > 0 {
		sn.startPass(cs, c.Now(), false)
		return true
	}
	// wakeup_softirqd
	if cs.where == inIRQ {
		cs.Stats.Deferred++
		at := c.Now()
		sn.sim.Wake(cs.thread, at)
	}
	cs.where = nowhere
	sn.armTick(c.ID, c.Now())
	return false
}

// CopyFrom makes sn's state src's: every CPU's lists, counters and the
// __do_softirq running there, and which instances are scheduled. sn must
// have been built like src in a twin world (see sim.Sim.CopyFrom); its
// instances keep their own poll functions.
func (sn *Softnet) CopyFrom(src *Softnet) error {
	if len(sn.napis) != len(src.napis) || len(sn.cpus) != len(src.cpus) {
		return fmt.Errorf("softnet: copy: %d instances on %d CPUs into %d on %d", len(src.napis), len(src.cpus), len(sn.napis), len(sn.cpus))
	}
	sn.cfg.Budget, sn.cfg.BudgetUsecs = src.cfg.Budget, src.cfg.BudgetUsecs
	for i := range sn.napis {
		sn.napis[i].scheduled = src.napis[i].scheduled
	}
	for i := range sn.cpus {
		d, s := &sn.cpus[i], &src.cpus[i]
		list, action, repoll := d.list, d.action, d.repoll
		*d = *s
		d.list = append(list[:0], s.list...)
		d.action = append(action[:0], s.action...)
		d.repoll = append(repoll[:0], s.repoll...)
	}
	return nil
}
