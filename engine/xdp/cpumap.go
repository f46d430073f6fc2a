package xdp

import (
	"strconv"

	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
)

// Cpumap is a BPF_MAP_TYPE_CPUMAP with one entry per target CPU
// (kernel/bpf/cpumap.c). XDP_REDIRECT into it puts the frame on the
// redirecting CPU's bulk queue (bq_enqueue); a full bulk queue, or
// xdp_do_flush at the end of the NAPI poll, moves it into the target's
// ptr_ring under the ring's producer lock (bq_flush_to_queue); a full ring
// drops the frame. A kthread on the target CPU (cpu_map_kthread_run) takes
// up to CPUMAP_BATCH frames at a time, builds skbs around them and passes
// them up the stack there, so their pages are freed on the target CPU.
type Cpumap struct {
	sim    *sim.Sim
	frames *FramePool
	skbs   *skb.Pool
	stack  *skb.Stack
	rel    skb.Releaser
	pools  PoolReleaser
	k      CpumapKernel
	frags  int // frags of the frames in bulk queues and rings
	// mem, when set, locates whole-page buffers' pages: the driver put
	// them in mem.CpumapRing; the kthread's skb holds them next
	// (SetMem).
	mem *mem.Mem

	entries []*cpumapEntry // by target CPU; nil when the CPU has no entry
	bq      [][]bulkQueue  // [source CPU][target CPU]
	run     sim.Kind
	// bhEnable is local_bh_enable after a batch (SetBHEnable).
	bhEnable func(c *sim.CPU)

	C CpumapCounters
}

// CpumapCounters count the cpumap's work (xdp_cpumap_enqueue and
// xdp_cpumap_kthread tracepoints).
type CpumapCounters struct {
	Enqueued uint64 // frames put in a ptr_ring
	Drops    uint64 // frames dropped: ring full
	Flushes  uint64 // bulk queues flushed
	Passed   uint64 // skbs the kthreads passed up
	Wakeups  uint64 // kthread wake-ups
	SKBFails uint64 // skbs that could not be built
	// Reasons counts Drops and SKBFails by why (engine/drop).
	Reasons drop.Counts
}

type bulkQueue struct {
	q [CPUMapBulkSize]FrameID
	n int
}

type cpumapEntry struct {
	cpu   int
	ring  []FrameID // ptr_ring of qsize entries
	head  int       // consumer index
	count int
	prod  *sim.Lock  // ptr_ring producer_lock
	cons  *sim.Lock  // ptr_ring consumer_lock
	task  sim.TaskID // the kthread (cpumap/N/map:ID), bound to cpu
	// gro is the entry's GRO (rcpu->gro, 6.15+), nil before; packets
	// counts what it took since its last flush.
	gro     *skb.GRO
	packets int
}

// CpumapKernel is what the cpumap does differently between the kernels the
// engine models, fixed when it is built.
type CpumapKernel struct {
	// LockedConsume: the kthread takes its batch with
	// ptr_ring_consume_batched, under the ring's consumer_lock (5.2 to
	// 5.8); on the other kernels it is the ring's single consumer and
	// takes frames without it (__ptr_ring_consume, then
	// __ptr_ring_consume_batched from 5.9).
	LockedConsume bool
	// ReleaseFrames: the skb built from a page_pool frame does not recycle;
	// xdp_release_frame takes its pages out of their pool (until 6.3;
	// skb_mark_for_recycle from 6.4).
	ReleaseFrames bool
	// GRO: the kthread passes its skbs up through GRO of its own
	// (gro_receive_skb, 4f8ab26a034f "bpf: cpumap: switch to GRO from
	// netif_receive_skb_list()", 6.15), merging a TCP stream's frames
	// (TCPStream) of up to MaxLen bytes; before, netif_receive_skb_list
	// passed each skb up alone.
	GRO       bool
	TCPStream bool
	MaxLen    int
	// Tick is 1/HZ: GRO's flush of what it held since an earlier jiffy.
	Tick sim.Duration
}

// NewCpumap returns a cpumap for ncpu CPUs with entries for targets, each
// with a ptr_ring of qsize frames; pools takes pages out of their pool
// when k.ReleaseFrames.
func NewCpumap(s *sim.Sim, frames *FramePool, skbs *skb.Pool, stack *skb.Stack, rel skb.Releaser, pools PoolReleaser, targets []int, qsize int, k CpumapKernel) *Cpumap {
	if qsize <= 0 {
		qsize = DefaultQsize
	}
	n := s.NumCPU()
	m := &Cpumap{sim: s, frames: frames, skbs: skbs, stack: stack, rel: rel, pools: pools, k: k,
		entries: make([]*cpumapEntry, n), bq: make([][]bulkQueue, n)}
	for i := range m.bq {
		m.bq[i] = make([]bulkQueue, n)
	}
	for _, t := range targets {
		if t < 0 || t >= n || m.entries[t] != nil {
			continue
		}
		m.entries[t] = &cpumapEntry{cpu: t, ring: make([]FrameID, qsize),
			prod: sim.NewLock("cpumap producer"), cons: sim.NewLock("cpumap consumer")}
	}
	m.run = s.Queue.RegisterArg("cpumap kthread", "cpu", m.kthread)
	s.Queue.Cite(m.run, "cpu_map_kthread_run")
	for _, e := range m.entries {
		if e != nil {
			e.task = s.NewTask(e.cpu, "cpumap/"+strconv.Itoa(e.cpu), m.run, uint64(e.cpu))
			if k.GRO {
				e.gro = skb.NewGRO(skbs, stack.Deliver, true, k.MaxLen)
			}
		}
	}
	return m
}

// SetMem has the kthread move the pages of frames located in a cpumap
// ring (whole-page buffers) to mem.SKB when it builds their skbs, as a
// page's location follows its buffer.
func (m *Cpumap) SetMem(mm *mem.Mem) { m.mem = mm }

// locate moves frame f's pages that wait in a cpumap ring to the skb.
func (m *Cpumap) locate(f FrameID) {
	fr := &m.frames.frames[f]
	err := m.mem.MoveFrom(fr.Page, mem.CpumapRing, mem.SKB, int(fr.Queue))
	if fr.NrFrags > 0 {
		for _, g := range m.frames.Frags(f) {
			if e := m.mem.MoveFrom(g.Page, mem.CpumapRing, mem.SKB, int(fr.Queue)); e != nil && err == nil {
				err = e
			}
		}
	}
	m.sim.Fail(err)
}

// Has reports whether cpu has an entry.
func (m *Cpumap) Has(cpu int) bool { return cpu >= 0 && cpu < len(m.entries) && m.entries[cpu] != nil }

// Locks appends each entry's ptr_ring producer and consumer locks to buf,
// by target CPU (for measurements).
func (m *Cpumap) Locks(buf []*sim.Lock) []*sim.Lock {
	for _, e := range m.entries {
		if e != nil {
			buf = append(buf, e.prod, e.cons)
		}
	}
	return buf
}

// Capacity is the most frames the cpumap can hold at once: every ring
// full and every bulk queue with CPU_MAP_BULK_SIZE.
func (m *Cpumap) Capacity() int {
	n := 0
	for _, e := range m.entries {
		if e != nil {
			n += len(e.ring) + len(m.bq)*CPUMapBulkSize
		}
	}
	return n
}

// QueuedFrags is the number of frags the frames in ring and bulk queues
// carry: with Queued, the pages located in cpumap rings.
func (m *Cpumap) QueuedFrags() int { return m.frags }

// ConsumerLock is the counters of target's ptr_ring consumer_lock (zero
// stats when target has no entry).
func (m *Cpumap) ConsumerLock(target int) sim.LockStats {
	if !m.Has(target) {
		return sim.LockStats{}
	}
	return m.entries[target].cons.Stats()
}

// Queued is the number of frames in ring and bulk queues.
func (m *Cpumap) Queued() int {
	n := 0
	for _, e := range m.entries {
		if e != nil {
			n += e.count
		}
	}
	for i := range m.bq {
		for j := range m.bq[i] {
			n += m.bq[i][j].n
		}
	}
	return n
}

// Enqueue is cpu_map_enqueue on CPU c. It reports false when target has no
// entry (the caller drops the frame: xdp_do_redirect fails).
func (m *Cpumap) Enqueue(c *sim.CPU, target int, f FrameID) bool {
	if !m.Has(target) {
		return false
	}
	bq := &m.bq[c.ID][target]
	if bq.n == CPUMapBulkSize {
		m.flushOne(c, target)
	}
	bq.q[bq.n] = f
	bq.n++
	m.frags += int(m.frames.frames[f].NrFrags)
	return true
}

// Flush is __cpu_map_flush at xdp_do_flush: every bulk queue of c goes to
// its ring, and idle kthreads are woken.
func (m *Cpumap) Flush(c *sim.CPU) {
	for t := range m.bq[c.ID] {
		if m.bq[c.ID][t].n > 0 {
			m.flushOne(c, t)
		}
	}
}

// flushOne is bq_flush_to_queue: under the ring's producer lock, produce
// every frame; those that do not fit are returned
// (xdp_return_frame_rx_napi) and counted as drops. Then wake the kthread
// (__cpu_map_flush's wake_up_process).
func (m *Cpumap) flushOne(c *sim.CPU, target int) {
	e := m.entries[target]
	bq := &m.bq[c.ID][target]
	m.C.Flushes++
	e.prod.Hold(c, sim.SymBQEnqueue, sim.Duration(bq.n)*c.Costs().PPRingPut)
	// The ring only fills as the queue is produced, so the first k frames
	// fit and every later one meets a full ring: the frames are stored in
	// one loop over local indices, then the rest dropped, in the order of
	// the frame-by-frame loop.
	k := min(bq.n, len(e.ring)-e.count)
	// (head + count) mod len without the division: both are below len
	// (count is, as the ring is not full when k > 0).
	tail := e.head + e.count
	if tail >= len(e.ring) {
		tail -= len(e.ring)
	}
	for _, f := range bq.q[:k] {
		e.ring[tail] = f
		if tail++; tail == len(e.ring) {
			tail = 0
		}
	}
	e.count += k
	m.C.Enqueued += uint64(k)
	for _, f := range bq.q[k:bq.n] {
		// bq_flush_to_queue: __ptr_ring_produce failed; the frame goes
		// back (xdp_return_frame_rx_napi), counted in
		// trace_xdp_cpumap_enqueue's drops: an xdp_frame, no skb.
		m.C.Drops++
		m.C.Reasons.Add(drop.CpumapFull)
		m.frags -= int(m.frames.frames[f].NrFrags)
		m.sim.Fail(m.frames.Return(c, f, m.rel, skb.Context{Softirq: true, Direct: true}))
	}
	bq.n = 0
	if e.count > 0 {
		// wake_up_process: the kthread runs when its CPU's scheduler
		// lets it, after the wake-up's latency on another CPU.
		at := c.Now()
		if e.cpu != c.ID {
			at = at.Add(c.Costs().TaskWakeLatency)
		}
		if m.sim.Wake(e.task, at) {
			m.C.Wakeups++
			c.Charge(sim.SymTryToWakeUp, c.Costs().Wakeup)
		}
	}
}

// kthread is one iteration of cpu_map_kthread_run on the target CPU: take
// up to CPUMAP_BATCH frames (under the consumer lock only on the kernels
// whose kthread took it, CpumapKernel.LockedConsume), build an skb around
// each and pass them up with BH disabled (softirq context), then run again
// while frames remain.
func (m *Cpumap) kthread(now sim.Time, arg uint64) {
	e := m.entries[arg]
	c := m.sim.CPU(e.cpu)
	if !c.BeginTask(now, e.task, true) {
		return
	}
	n := e.count
	if n > CPUMapBatch {
		n = CPUMapBatch
	}
	if m.k.LockedConsume {
		e.cons.Hold(c, sim.SymCPUMapKthread, sim.Duration(n)*c.Costs().PPRingGet)
	} else {
		c.Charge(sim.SymCPUMapKthread, sim.Duration(n)*c.Costs().PPRingGet)
	}
	for i := 0; i < n; i++ {
		f := e.ring[e.head]
		if e.head++; e.head == len(e.ring) { // (head + 1) mod len
			e.head = 0
		}
		e.count--
		fr := &m.frames.frames[f]
		m.frags -= int(fr.NrFrags)
		c.Charge(sim.SymCPUMapKthread, c.Costs().BuildSKB)
		if m.mem != nil {
			if fr.NrFrags == 0 {
				// locate of a frame of one buffer, without the call.
				m.sim.Fail(m.mem.MoveFrom(fr.Page, mem.CpumapRing, mem.SKB, int(fr.Queue)))
			} else {
				m.locate(f)
			}
		}
		var s skb.ID
		if fr.NrFrags == 0 && !m.k.ReleaseFrames {
			// ToSKB of a frame of one buffer, marked for recycling when
			// it is a page_pool's, without the call.
			if s = m.skbs.Alloc(c.ID, int(fr.Queue), c.Now()); s != skb.NoSKB {
				b := m.skbs.Get(s)
				b.Head, b.Len, b.Seq, b.Truesize = fr.Page, fr.Len, m.frames.Seq(f), fr.FrameSz
				b.PPRecycle = fr.Mem == MemPagePool
				m.frames.put(f)
			}
		} else {
			var err error
			s, err = m.frames.ToSKB(f, m.skbs, c, m.k.ReleaseFrames, m.pools)
			m.sim.Fail(err)
		}
		if s == skb.NoSKB {
			// cpu_map_kthread_run: no skb (kmem_cache_alloc_bulk or
			// __xdp_build_skb_from_frame failed), xdp_return_frame,
			// counted in trace_xdp_cpumap_kthread's drops.
			m.C.SKBFails++
			m.C.Reasons.Add(drop.CpumapNoSKB)
			m.sim.Fail(m.frames.Return(c, f, m.rel, skb.Context{Softirq: true}))
			continue
		}
		m.C.Passed++
		if e.gro != nil {
			m.sim.Fail(e.gro.Receive(c, s, m.k.TCPStream, m.jiffy(c.Now())))
		} else {
			m.sim.Fail(m.stack.Deliver(c, s))
		}
	}
	if e.gro != nil {
		// "Flush either every 64 packets or in case of empty ring"
		// (cpu_map_gro_flush): all of it when the ring is empty, else
		// what was held since an earlier jiffy.
		e.packets += n
		if e.packets >= CPUMapGROFlush || e.count == 0 {
			if e.count == 0 {
				m.sim.Fail(e.gro.FlushAll(c))
			} else {
				m.sim.Fail(e.gro.FlushOld(c, m.jiffy(c.Now())))
			}
			e.packets = 0
		}
	}
	if m.bhEnable != nil {
		m.bhEnable(c) // local_bh_enable: pending softirqs run here
	}
	// cond_resched while frames remain, else schedule() until woken.
	c.EndTask(e.count > 0)
}

// CPUMapGROFlush is how many packets the kthread passes to GRO before it
// flushes (NAPI_POLL_WEIGHT, cpu_map_kthread_run).
const CPUMapGROFlush = 64

// jiffy is the jiffies count at t.
func (m *Cpumap) jiffy(t sim.Time) int64 {
	if m.k.Tick <= 0 {
		return 0
	}
	return int64(t) / int64(m.k.Tick)
}

// GROHeld is how many skbs the kthreads' GRO holds (6.15+).
func (m *Cpumap) GROHeld() int {
	n := 0
	for _, e := range m.entries {
		if e != nil && e.gro != nil && e.gro.Held() != skb.NoSKB {
			n++
		}
	}
	return n
}

// GROStats sums the kthreads' GRO counters: frames merged and skbs
// passed up.
func (m *Cpumap) GROStats() (merged, flushed uint64) {
	for _, e := range m.entries {
		if e != nil && e.gro != nil {
			merged += e.gro.Merged
			flushed += e.gro.Flushed
		}
	}
	return merged, flushed
}

// SetBHEnable gives the kthread its local_bh_enable, which runs pending
// softirqs on its CPU after each batch (softnet.Softnet.BHEnable).
func (m *Cpumap) SetBHEnable(f func(c *sim.CPU)) { m.bhEnable = f }
