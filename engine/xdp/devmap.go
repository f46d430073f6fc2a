package xdp

import (
	"ringlab/engine/sim"
	"ringlab/engine/skb"
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
	lastTx    sim.Time // when the device finishes the last queued frame
	compCPU   int      // -1: the CPU that sent
	scheduled bool
	complete  sim.Kind
	Completed uint64
}

type txSlot struct {
	f    FrameID
	done sim.Time
	cpu  int16
}

// NewDevmap returns a devmap over a next device sending maxPPS frames per
// second from a TX ring of ringSize, completing on compCPU (-1: the
// sending CPU).
func NewDevmap(s *sim.Sim, frames *FramePool, rel skb.Releaser, maxPPS float64, ringSize, compCPU int) *Devmap {
	m := &Devmap{sim: s, frames: frames, rel: rel, bq: make([]devBulk, s.NumCPU())}
	m.next = &NextDevice{gap: sim.Duration(1e9 / maxPPS), ring: make([]txSlot, ringSize), compCPU: compCPU}
	m.next.complete = s.Queue.RegisterArg("next device tx completion", "cpu", m.completion)
	s.Queue.Cite(m.next.complete, "xdp_return_frame")
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
			m.C.Drops++
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

// arm schedules the completion interrupt for the oldest frame in flight.
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
	m.sim.Queue.Schedule(at, d.complete, uint64(cpu))
}

// completion is the next device's TX completion in NAPI on CPU arg: every
// frame sent by now is returned with xdp_return_frame_bulk, in batches of
// XDP_BULK_QUEUE_SIZE.
func (m *Devmap) completion(now sim.Time, arg uint64) {
	d := m.next
	d.scheduled = false
	c := m.sim.CPU(int(arg))
	c.BeginActivity(now, "tx completion")
	c.Charge(sim.SymNextIRQ, c.Costs().IRQ)
	done := 0
	for d.n > 0 && d.ring[d.head].done <= c.Now() {
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
	c.End()
	m.arm(int(arg))
}
