package xdp

import (
	"ringlab/engine/drop"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
)

// Devmap is a BPF_MAP_TYPE_DEVMAP whose entries all name one next device
// (kernel/bpf/devmap.c). XDP_REDIRECT into it puts the frame on the
// redirecting CPU's bulk queue of DEV_MAP_BULK_SIZE (bq_enqueue); a full
// queue or xdp_do_flush sends the bulk with the device's ndo_xdp_xmit
// (bq_xmit_all); frames the device refuses are freed by the caller
// (xdp_return_frame_rx_napi). Sent frames come back when the device
// completes them, on its completion CPU, through xdp_return_frame_bulk.
type Devmap struct {
	sim    *sim.Sim
	net    *softnet.Softnet
	frames *FramePool
	rel    skb.Releaser
	next   *NextDevice
	bq     []devBulk // per CPU
	frags  int       // frags of the frames in bulk queues and the TX ring

	C DevmapCounters
}

// DevmapCounters count the devmap's work (xdp_devmap_xmit tracepoint).
type DevmapCounters struct {
	Sent  uint64 // frames the device accepted
	Drops uint64 // frames the device refused (TX ring full)
	Xmits uint64 // ndo_xdp_xmit calls
	// Reasons counts Drops by why (engine/drop).
	Reasons drop.Counts
}

type devBulk struct {
	q [DevMapBulkSize]FrameID
	n int
}

// NextDevice is the device on the other side of the devmap: a TX ring of
// fixed size drained at the device's line rate. Completions are processed
// on one CPU (its TX interrupt's), in batches.
type NextDevice struct {
	gap       sim.Duration // 1 / max_pps
	ring      []txSlot
	head, n   int
	lastTx    sim.Time       // when the device finishes the last queued frame
	compCPU   int            // -1: the CPU that sent
	scheduled bool           // the TX interrupt is armed or its NAPI scheduled
	irq       sim.Kind       // the TX interrupt, arg the CPU
	poll      sim.Kind       // its NAPI's poll, arg the CPU
	napi      softnet.NAPIID // the first CPU's instance; CPU i's is napi+i
	Completed uint64
}

// TXWorkLimit is how many completed frames one poll of the next device's
// NAPI cleans (ixgbe's IXGBE_DEFAULT_TX_WORK, q_vector->tx.work_limit); a
// poll that reaches it reports its whole budget, to be polled again.
const TXWorkLimit = 256

type txSlot struct {
	f    FrameID
	done sim.Time
	cpu  int16
}

// NewDevmap returns a devmap over a next device sending maxPPS frames per
// second from a TX ring of ringSize, completing on compCPU (-1: the
// sending CPU), where its TX interrupt schedules a NAPI instance of the
// CPU's NET_RX (net).
func NewDevmap(s *sim.Sim, net *softnet.Softnet, frames *FramePool, rel skb.Releaser, maxPPS float64, ringSize, compCPU int) *Devmap {
	m := &Devmap{sim: s, net: net, frames: frames, rel: rel, bq: make([]devBulk, s.NumCPU())}
	d := &NextDevice{gap: sim.Duration(1e9 / maxPPS), ring: make([]txSlot, ringSize), compCPU: compCPU}
	m.next = d
	d.irq = s.Queue.RegisterArg("next device irq", "cpu", m.interrupt)
	d.poll = s.Queue.RegisterArg("next device tx completion", "cpu", func(now sim.Time, arg uint64) {
		net.PollEvent(now, d.napi+softnet.NAPIID(arg))
	})
	s.Queue.Cite(d.irq, "__napi_schedule")
	s.Queue.Cite(d.poll, "net_rx_action", "xdp_return_frame")
	for i := 0; i < s.NumCPU(); i++ {
		// A NAPI instance for the device's TX queue of each CPU (a NIC's
		// XDP send rings are per CPU); the engine keeps one TX ring.
		if n := net.AddNAPI(i, softnet.NAPIWeight, m, d.poll, uint64(i)); i == 0 {
			d.napi = n
		}
	}
	return m
}

// Next returns the next device.
func (m *Devmap) Next() *NextDevice { return m.next }

// Capacity is the most frames the devmap can hold at once: the TX ring
// full and every bulk queue with DEV_MAP_BULK_SIZE.
func (m *Devmap) Capacity() int { return len(m.next.ring) + len(m.bq)*DevMapBulkSize }

// InFlightFrags is the number of frags the frames in bulk queues and the
// TX ring carry.
func (m *Devmap) InFlightFrags() int { return m.frags }

// InFlight is the number of frames queued in bulk queues or the TX ring.
func (m *Devmap) InFlight() int {
	n := m.next.n
	for i := range m.bq {
		n += m.bq[i].n
	}
	return n
}

// Enqueue is dev_map_enqueue on CPU c.
func (m *Devmap) Enqueue(c *sim.CPU, f FrameID) {
	bq := &m.bq[c.ID]
	if bq.n == DevMapBulkSize {
		m.xmit(c)
	}
	bq.q[bq.n] = f
	bq.n++
	m.frags += int(m.frames.frames[f].NrFrags)
}

// Flush is __dev_flush at xdp_do_flush.
func (m *Devmap) Flush(c *sim.CPU) {
	if m.bq[c.ID].n > 0 {
		m.xmit(c)
	}
}

// xmit is bq_xmit_all: ndo_xdp_xmit of the bulk queue; what does not fit
// is returned to its pool by the caller.
func (m *Devmap) xmit(c *sim.CPU) {
	bq := &m.bq[c.ID]
	d := m.next
	m.C.Xmits++
	c.Charge(sim.SymBQXmitAll, c.Costs().NDOXmit)
	for i := 0; i < bq.n; i++ {
		f := bq.q[i]
		if d.n == len(d.ring) {
			// bq_xmit_all: ndo_xdp_xmit sent fewer than it was given;
			// the rest go back (xdp_return_frame_rx_napi), counted in
			// trace_xdp_devmap_xmit's drops: xdp_frames, no skb.
			m.C.Drops++
			m.C.Reasons.Add(drop.DevmapFull)
			m.frags -= int(m.frames.frames[f].NrFrags)
			m.sim.Fail(m.frames.Return(c, f, m.rel, skb.Context{Softirq: true, Direct: true}))
			continue
		}
		c.Charge(sim.SymBQXmitAll, c.Costs().XmitFrame)
		start := d.lastTx
		if now := c.Now(); start < now {
			start = now
		}
		d.lastTx = start.Add(d.gap)
		d.ring[(d.head+d.n)%len(d.ring)] = txSlot{f: f, done: d.lastTx, cpu: int16(c.ID)}
		d.n++
		m.C.Sent++
	}
	bq.n = 0
	m.arm(c.ID)
}

// arm schedules the TX interrupt for the oldest frame in flight, unless
// it is armed or its NAPI scheduled.
func (m *Devmap) arm(sender int) {
	d := m.next
	if d.scheduled || d.n == 0 {
		return
	}
	d.scheduled = true
	cpu := d.compCPU
	if cpu < 0 {
		cpu = sender
	}
	at := d.ring[d.head].done.Add(m.sim.Costs.IRQLatency)
	m.sim.Queue.Schedule(at, d.irq, uint64(cpu))
}

// interrupt is the next device's TX interrupt on CPU arg (ixgbe's
// ixgbe_msix_clean_rings): it schedules the CPU's instance, whose poll
// runs in NET_RX.
func (m *Devmap) interrupt(now sim.Time, arg uint64) {
	c := m.sim.CPU(int(arg))
	c.BeginIRQ(now, "next device irq")
	c.Charge(sim.SymNextIRQ, c.Costs().IRQ)
	m.net.Schedule(m.next.napi+softnet.NAPIID(arg), c.Now())
	c.End()
}

// Poll is the next device's TX completion in NAPI on c: every frame sent
// by now, up to TXWorkLimit, is returned with xdp_return_frame_bulk, in
// batches of XDP_BULK_QUEUE_SIZE. Done, it completes and the interrupt
// is armed again for the next frame in flight (ixgbe_poll).
func (m *Devmap) Poll(c *sim.CPU, n softnet.NAPIID, budget int) int {
	d := m.next
	done := 0
	for d.n > 0 && d.ring[d.head].done <= c.Now() && done < TXWorkLimit {
		s := d.ring[d.head]
		d.head = (d.head + 1) % len(d.ring)
		d.n--
		done++
		m.frags -= int(m.frames.frames[s.f].NrFrags)
		if done%ReturnBulkSize == 0 {
			c.Charge(sim.SymRawSpinLock, c.Costs().SpinLock)
		}
		m.sim.Fail(m.frames.Return(c, s.f, m.rel, skb.Context{Softirq: true}))
		d.Completed++
	}
	if done == TXWorkLimit {
		return budget // "if (!clean_complete) return budget"
	}
	m.net.Complete(n)
	d.scheduled = false
	m.arm(c.ID)
	return 0
}
