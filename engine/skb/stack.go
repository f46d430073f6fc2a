package skb

import (
	"ringlab/engine/sim"
)

// SocketQueueLimit bounds the skbs waiting for the application on one CPU
// (the socket receive buffer, sk_rcvbuf, counted in packets here). Past it
// the stack drops, as a full socket does.
const SocketQueueLimit = 4096

// AppBatch is how many skbs the application takes per wake-up before it
// lets the event loop run (one recvmmsg).
const AppBatch = 64

// Stack is what receives an skb from a driver or a cpumap kthread:
// netif_receive_skb up to the consumer, and the freeing of the skb where
// the kernel frees it.
//
//   - softirq on the receiving CPU: the packet is consumed in NET_RX
//     (early drop, GRO merge, forwarding) and freed there, in softirq.
//   - softirq on another CPU: RPS-like steering; consumed and freed in that
//     CPU's softirq.
//   - process: queued on a socket; an application thread on the consumer
//     CPU takes it, pays the per-packet cost and frees it. A free on a CPU
//     other than the skb's alloc_cpu is deferred to that CPU
//     (skb_attempt_defer_free) and done in its next NET_RX softirq.
type Stack struct {
	sim     *sim.Sim
	pool    *Pool
	rel     Releaser
	cpu     int  // consumer CPU, -1 = the receiving CPU
	process bool // application (process) context
	cost    sim.Duration

	wake     sim.Kind
	sockq    [][]ID // per CPU: skbs waiting for the application
	awake    []bool // per CPU: application scheduled
	deferred [][]ID // per CPU: skb_attempt_defer_free lists

	c StackCounters
	// Err is the first internal error met by an event handler; the world
	// stops on it.
	Err error
}

// StackCounters count what the stack did.
type StackCounters struct {
	Delivered uint64 // skbs consumed
	Bytes     uint64 // bytes of the skbs consumed
	Deferred  uint64 // frees deferred to the allocating CPU
	SockDrops uint64 // socket queue full
}

// NewStack builds the consumer side for ncpu CPUs.
func NewStack(s *sim.Sim, pool *Pool, rel Releaser, cpu int, process bool, cost sim.Duration) *Stack {
	st := &Stack{sim: s, pool: pool, rel: rel, cpu: cpu, process: process, cost: cost}
	n := s.NumCPU()
	st.sockq = make([][]ID, n)
	st.awake = make([]bool, n)
	st.deferred = make([][]ID, n)
	for i := 0; i < n; i++ {
		st.sockq[i] = make([]ID, 0, 256)
		st.deferred[i] = make([]ID, 0, 256)
	}
	st.wake = s.Queue.RegisterArg("app", "cpu", st.runApp)
	return st
}

// Counters returns the stack's counters.
func (st *Stack) Counters() StackCounters { return st.c }

// Waiting is the number of skbs queued for applications or deferred.
func (st *Stack) Waiting() int {
	n := 0
	for i := range st.sockq {
		n += len(st.sockq[i]) + len(st.deferred[i])
	}
	return n
}

// Deliver takes an skb in softirq on c (napi_gro_receive or the cpumap
// kthread's netif_receive_skb_list).
func (st *Stack) Deliver(c *sim.CPU, id ID) error {
	target := st.cpu
	if target < 0 {
		target = c.ID
	}
	if !st.process {
		// Consumed in softirq. On another CPU this is RPS: the other CPU's
		// softirq does the work; it is charged there at c's time.
		if target != c.ID {
			o := st.sim.CPU(target)
			o.Begin(c.Now())
			o.Spend(st.cost)
			st.c.Bytes += uint64(st.pool.Get(id).Len)
			err := st.pool.Free(o, id, st.rel, Context{Softirq: true})
			o.End()
			st.c.Delivered++
			return err
		}
		c.Spend(st.cost)
		st.c.Delivered++
		st.c.Bytes += uint64(st.pool.Get(id).Len)
		return st.pool.Free(c, id, st.rel, Context{Softirq: true})
	}
	q := st.sockq[target]
	if len(q) >= SocketQueueLimit {
		st.c.SockDrops++
		return st.pool.Free(c, id, st.rel, Context{Softirq: true})
	}
	st.sockq[target] = append(q, id)
	if !st.awake[target] {
		st.awake[target] = true
		st.sim.Queue.Schedule(c.Now().Add(c.Costs().TaskWakeLatency), st.wake, uint64(target))
	}
	return nil
}

// runApp is the application thread on CPU arg: it takes up to AppBatch
// skbs, pays for each and frees them in process context.
func (st *Stack) runApp(now sim.Time, arg uint64) {
	cpu := int(arg)
	c := st.sim.CPU(cpu)
	c.BeginActivity(now, "application recvmsg")
	q := st.sockq[cpu]
	n := len(q)
	if n > AppBatch {
		n = AppBatch
	}
	for _, id := range q[:n] {
		c.Spend(st.cost)
		st.c.Delivered++
		s := st.pool.Get(id)
		st.c.Bytes += uint64(s.Len)
		if int(s.AllocCPU) != cpu {
			// skb_attempt_defer_free: the allocating CPU frees it.
			st.deferred[s.AllocCPU] = append(st.deferred[s.AllocCPU], id)
			st.c.Deferred++
			continue
		}
		if err := st.pool.Free(c, id, st.rel, Context{Softirq: false}); err != nil && st.Err == nil {
			st.Err = err
		}
	}
	st.sockq[cpu] = append(q[:0], q[n:]...)
	end := c.End()
	if len(st.sockq[cpu]) > 0 {
		st.sim.Queue.Schedule(end, st.wake, arg)
		return
	}
	st.awake[cpu] = false
}

// FlushDeferred frees the skbs other CPUs deferred to c
// (skb_defer_free_flush at the start of net_rx_action), in softirq, with
// napi_consume_skb(skb, 1): napi_safe.
func (st *Stack) FlushDeferred(c *sim.CPU) error {
	l := st.deferred[c.ID]
	if len(l) == 0 {
		return nil
	}
	var first error
	for _, id := range l {
		if err := st.pool.Free(c, id, st.rel, Context{Softirq: true, NAPISafe: true}); err != nil && first == nil {
			first = err
		}
	}
	st.deferred[c.ID] = l[:0]
	return first
}
