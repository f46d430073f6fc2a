package softnet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
)

// device is a NAPI instance with backlog packets to take, each costing
// perPacket on the polling CPU; it completes when it takes less than its
// budget.
type device struct {
	sn        *Softnet
	id        NAPIID
	backlog   int
	perPacket sim.Duration
	polls     int
	inThread  int        // polls run by ksoftirqd
	wake      sim.TaskID // a task each poll wakes (sk_data_ready), or NoTask
}

func (d *device) Poll(c *sim.CPU, n NAPIID, budget int) int {
	d.polls++
	if c.Current() == d.sn.Ksoftirqd(c.ID) && c.Activity() == d.sn.sim.Task(d.sn.Ksoftirqd(c.ID)).Name {
		d.inThread++
	}
	work := min(d.backlog, budget)
	d.backlog -= work
	c.Charge(sim.SymVirtnetPoll, sim.Duration(work)*d.perPacket)
	if d.wake != sim.NoTask {
		d.sn.sim.Wake(d.wake, c.Now())
	}
	if work < budget {
		d.sn.Complete(n)
	}
	return work
}

type rig struct {
	sim *sim.Sim
	sn  *Softnet
}

func newRig(t *testing.T, ncpu int, cfg Config) *rig {
	t.Helper()
	s, err := sim.New(ncpu, sim.DefaultCosts())
	require.NoError(t, err)
	s.Sched = sim.DefaultSched(false, ncpu, 1000)
	return &rig{sim: s, sn: New(s, cfg)}
}

func (r *rig) add(cpu, backlog int, perPacket sim.Duration) *device {
	d := &device{sn: r.sn, backlog: backlog, perPacket: perPacket, wake: sim.NoTask}
	var id NAPIID
	k := r.sim.Queue.RegisterArg("napi poll", "rx", func(now sim.Time, arg uint64) { r.sn.PollEvent(now, id) })
	id = r.sn.AddNAPI(cpu, NAPIWeight, d, k, 0)
	d.id = id
	return d
}

// irq is a device interrupt on cpu at t that schedules n (napi_schedule
// from the handler; NET_RX runs at its exit).
func (r *rig) irq(n NAPIID, cpu int, t sim.Time) {
	c := r.sim.CPU(cpu)
	c.BeginIRQ(t, "irq")
	r.sn.Schedule(n, c.Now())
	c.End()
}

// net_rx_action polls a busy instance once a round: it used its whole
// weight, so napi_poll moves it to the repoll list, which goes back on the
// poll list at the round's end with NET_RX raised again; __do_softirq
// runs MAX_SOFTIRQ_RESTART passes, then wakes ksoftirqd (wakeup_softirqd),
// which polls the rest.
func TestNetRxActionPollsOnceARoundThenKsoftirqd(t *testing.T) {
	r := newRig(t, 1, Config{})
	d := r.add(0, 64*25, 100) // 25 full polls, then one that completes
	r.irq(d.id, 0, 0)
	r.sim.Queue.RunUntil(sim.Time(10 * sim.Millisecond))
	st := r.sn.Stats(0)
	assert.Equal(t, 26, d.polls)
	// 10 passes in the interrupt's __do_softirq, then ksoftirqd's 16 in
	// two runs of __do_softirq (10 and 6), cond_resched between them.
	assert.Equal(t, uint64(9+9+5), st.Restarts)
	assert.Equal(t, uint64(1), st.Deferred, "then ksoftirqd")
	assert.Equal(t, uint64(26-MaxSoftirqRestart), st.InKsoftirqd, "which polls the rest")
	assert.Zero(t, st.TimeSqueeze, "one instance never spends netdev_budget in a round")
	assert.False(t, r.sn.Scheduled(d.id))
	assert.Equal(t, sim.TaskSleeping, r.sim.Task(r.sn.Ksoftirqd(0)).State(), "ksoftirqd sleeps again")
}

// net_rx_action stops when netdev_budget is spent (or netdev_budget_usecs
// pass) and counts time_squeeze: five busy instances on one CPU spend 300
// in five polls.
func TestTimeSqueeze(t *testing.T) {
	r := newRig(t, 1, Config{})
	var ds []*device
	for range 5 {
		ds = append(ds, r.add(0, 64*4, 100))
	}
	c := r.sim.CPU(0)
	c.BeginIRQ(0, "irq")
	for _, d := range ds {
		r.sn.Schedule(d.id, 0)
	}
	c.End()
	r.sim.Queue.RunUntil(sim.Time(10 * sim.Millisecond))
	st := r.sn.Stats(0)
	assert.Positive(t, st.TimeSqueeze, "5 x 64 > netdev_budget 300")
	for _, d := range ds {
		assert.Equal(t, 5, d.polls, "4 full polls and one that completes")
	}

	// The same with netdev_budget at 1000: no round runs out.
	r = newRig(t, 1, Config{Budget: 1000})
	ds = ds[:0]
	for range 5 {
		ds = append(ds, r.add(0, 64*4, 100))
	}
	c = r.sim.CPU(0)
	c.BeginIRQ(0, "irq")
	for _, d := range ds {
		r.sn.Schedule(d.id, 0)
	}
	c.End()
	r.sim.Queue.RunUntil(sim.Time(10 * sim.Millisecond))
	assert.Zero(t, r.sn.Stats(0).TimeSqueeze)

	// And a slow instance runs out of netdev_budget_usecs: 2 jiffies.
	r = newRig(t, 1, Config{})
	d := r.add(0, 64*100, 20*sim.Microsecond) // 1.28 ms a poll
	r.irq(d.id, 0, 0)
	r.sim.Queue.RunUntil(sim.Time(5 * sim.Millisecond))
	assert.Positive(t, r.sn.Stats(0).TimeSqueeze, "a round of two polls crosses 2 jiffies")
}

// __do_softirq restarts only while no reschedule is due: a task woken on
// the CPU (need_resched) sends the rest to ksoftirqd after the first pass.
func TestNeedReschedSendsNetRxToKsoftirqd(t *testing.T) {
	r := newRig(t, 1, Config{})
	d := r.add(0, 64*5, 100)
	var reader sim.TaskID
	k := r.sim.Queue.Register("reader", func(now sim.Time, _ uint64) {
		c := r.sim.CPU(0)
		if c.BeginTask(now, reader, false) {
			c.Charge(sim.SymTCPRecvmsg, sim.Microsecond)
			c.EndTask(false)
		}
	})
	reader = r.sim.NewTask(0, "reader", k, 0)
	d.wake = reader // woken by the first poll on the idle CPU: need_resched
	r.irq(d.id, 0, 0)
	r.sim.Queue.RunUntil(sim.Time(sim.Millisecond))
	st := r.sn.Stats(0)
	assert.Equal(t, uint64(1), st.Deferred, "no second pass with a reschedule due")
	assert.Equal(t, 6, d.polls)
	assert.Equal(t, uint64(5), st.InKsoftirqd, "the first poll at the interrupt's exit, the rest in ksoftirqd")
	assert.Equal(t, uint64(4), st.Restarts, "all of them ksoftirqd's")
}

// From 4.9 to 6.4 softirqs raised while ksoftirqd is runnable wait for it
// (ksoftirqd_running in invoke_softirq); from 6.5 they run at the
// interrupt's exit (d15121be7485).
func TestKsoftirqdGate(t *testing.T) {
	for _, gate := range []bool{true, false} {
		r := newRig(t, 2, Config{KsoftirqdGate: gate})
		busy := r.add(0, 64*100, 100)
		other := r.add(0, 10, 100)
		// Keep CPU 0's ksoftirqd runnable: a task that never ends holds
		// the CPU, and ksoftirqd waits behind it once woken.
		var hog sim.TaskID
		k := r.sim.Queue.Register("hog", func(now sim.Time, _ uint64) {
			c := r.sim.CPU(0)
			if c.BeginTask(now, hog, false) {
				c.Charge(sim.SymTCPRecvmsg, 10*sim.Microsecond)
				c.EndTask(true)
			}
		})
		hog = r.sim.NewTask(0, "hog", k, 0)
		r.sim.Wake(hog, 0)
		r.irq(busy.id, 0, 0)
		// Until ksoftirqd has been woken.
		for r.sn.Stats(0).Deferred == 0 {
			require.True(t, r.sim.Queue.Step())
		}
		ksoftirqd := r.sim.Task(r.sn.Ksoftirqd(0))
		require.NotEqual(t, sim.TaskSleeping, ksoftirqd.State())
		polls := other.polls
		r.irq(other.id, 0, r.sim.Queue.Now())
		r.sim.Queue.RunUntil(r.sim.Queue.Now().Add(50 * sim.Microsecond))
		if gate {
			assert.Positive(t, r.sn.Stats(0).Gated, "left to ksoftirqd")
			assert.Equal(t, polls, other.polls, "not run at the interrupt's exit")
		} else {
			assert.Zero(t, r.sn.Stats(0).Gated)
			assert.Greater(t, other.polls, polls, "run at the interrupt's exit")
		}
	}
}
