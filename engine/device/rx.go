package device

import (
	"ringlab/engine/drop"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// WindowSize is how many bytes of each receive buffer are stored: the
// virtio_net header and the start of the frame, enough for every header a
// program parses. Bytes past the window are generated on read
// (PayloadByte), so a ring of 9000-byte buffers costs no more memory than a
// ring of 64-byte ones.
const WindowSize = VirtioNetHdrLen + 256

// vhost-net's limits (drivers/vhost/net.c).
const (
	// VhostNetBatch is VHOST_NET_BATCH: handle_rx publishes its used
	// entries (vhost_net_signal_used) when nvq->done_idx, the heads
	// added since the last publish, exceeds it.
	VhostNetBatch = 64
	// vhostNetPktWeight is VHOST_NET_PKT_WEIGHT: frames after which
	// handle_rx requeues itself (vhost_exceeds_weight), ending its run.
	vhostNetPktWeight = 256
	// vhostNetWeight is VHOST_NET_WEIGHT: bytes (frame and header) after
	// which handle_rx requeues itself.
	vhostNetWeight = 0x80000
)

// Counters of one receive backend.
type Counters struct {
	Packets    uint64 // frames written into the ring
	Bytes      uint64 // frame bytes written (headers included, virtio header not)
	Buffers    uint64 // buffers used (more than Packets with mergeable spans)
	Drops      uint64 // frames the host dropped: its queue was full while the ring was empty
	TooBig     uint64 // frames that did not fit the buffers posted (discarded by the host)
	Starved    uint64 // times the host found the ring empty with a frame waiting
	Wakeups    uint64 // kicks that woke a starved host
	Interrupts uint64 // interrupts raised
	RingErrors uint64 // chains the host refused (BAD_RING)
	// Busy is the host time spent on frames: cost of each frame written or
	// discarded (a vhost worker's handle_rx, a NIC's pipeline).
	Busy sim.Duration
	// StarvedTime is how long the host waited for buffers with a frame
	// waiting, from finding the ring empty to running again after the
	// kick; a wait still open is in StarvedFor.
	StarvedTime sim.Duration
	// NoBufferDrops are the frames a vdpa device dropped because no
	// buffer was posted for them, or too few for their size (it has no
	// host queue to keep them in).
	NoBufferDrops uint64
	// UsedPublishes counts the stores of used.idx: one per frame for a
	// hardware device, one per batch for vhost-net (vhost_net_signal_used).
	UsedPublishes uint64
	// Runs counts vhost-net's handle_rx runs: each ends when no frame is
	// waiting, when the ring holds too little for the next one, or at the
	// weight (256 frames or 512 KiB), and publishes what it holds.
	Runs uint64
	// Reasons counts Drops, NoBufferDrops and vhost-net's TooBig by why
	// the host lost the frame (engine/drop).
	Reasons drop.Counts
	// PublishWaitNs is the total time frames' used entries waited, written
	// but not published, in ns: what batching adds to their latency.
	PublishWaitNs uint64
}

// RX is the host side of one receive queue.
type RX struct {
	q         *virtq.Queue
	traffic   *Traffic
	costs     *sim.Costs
	kind      string
	mode      string
	hw        bool // kind is hardware (nic or vdpa): NIC costs, doorbells (decoded once: tested per frame)
	vdpa      bool // a hardware virtqueue: no host queue, a frame without a buffer is dropped
	batch     bool // vhost-net: used entries published in batches
	mergeable bool // mode is mergeable
	backlog   int
	// backlogDrop is why a frame past the backlog is lost: the tap's
	// queue (vhost-net) or the NIC's FIFO.
	backlogDrop drop.Reason

	minGap  sim.Duration // 1/max_pps
	cursor  sim.Time     // the host thread is free from here
	starved bool         // a frame waits and the ring is empty: sleeping until a kick
	wake    sim.Time     // a kick has woken it at this time (when !starved)
	since   sim.Time     // when starved: since when

	// vhost-net's batch and run (handle_rx): the used entries written
	// and not published (nvq->done_idx), the frames they hold and the
	// sum of the times they were written (for PublishWaitNs), the frames
	// and bytes of the run so far.
	doneIdx    int
	doneFrames int
	doneEndSum int64
	runPkts    int
	runBytes   int

	window []byte // WindowSize bytes per descriptor head
	// pend[head] is the frame written into head's buffer whose header and
	// bytes are not in the window yet: they are written when read (Window,
	// CopyFrame), the bytes built from the flow's template, so a frame
	// nobody reads costs no bytes and its window's cache line is not
	// touched.
	pend []pendingFrame
	c    Counters

	first virtq.ChainInfo // scratch: plan's first chain, for deliver

	// vcpu is the guest CPU whose vCPU thread shares the worker's host
	// CPU (SetSharedVCPU), nil when the worker has one of its own: each
	// frame the worker handles is time that vCPU does not run.
	vcpu *sim.CPU
	// iotlb is vhost's device IOTLB over a guest's emulated IOMMU
	// (SetIOTLB), nil without one.
	iotlb IOTLB
}

// IOTLB is the host's side of a guest's emulated IOMMU (mem.DMA's
// HostTranslate): whether the mapping holding addr is one the host has
// not translated since the guest made it, and, with fill, recording the
// translation.
type IOTLB interface {
	HostTranslate(addr uint64, fill bool) (miss bool)
}

// SetIOTLB says that vhost translates this queue's descriptors through
// its own IOTLB, the guest's IOMMU being QEMU's (VIRTIO_F_ACCESS_PLATFORM
// with a vIOMMU): translate_desc finds each IOVA there (vhost_iotlb_hit
// a descriptor), and a mapping not there yet is a VHOST_IOTLB_MISS to
// QEMU, whose update comes back before the worker goes on
// (vhost_iotlb_miss). A hardware device (vDPA: its IOMMU is the host's,
// programmed through QEMU) is left as it is.
func (r *RX) SetIOTLB(t IOTLB) {
	if !r.hw {
		r.iotlb = t
	}
}

// translate is what vhost's IOTLB adds to taking the nbuf buffers at the
// front of the avail ring: a hit per descriptor and a miss per mapping
// not translated since the guest made it. With fill, the translations
// are recorded; without, it only looks (the same answer until the frame
// is taken).
func (r *RX) translate(nbuf int, fill bool) sim.Duration {
	var d sim.Duration
	for k := 0; k < nbuf; k++ {
		head, ok := r.q.DeviceAvailAt(uint16(k))
		if !ok {
			break
		}
		desc := r.q.DeviceDesc(head)
		if desc.Flags&virtq.DescFIndirect != 0 {
			for j := 0; ; j++ {
				e, ok := r.q.DeviceIndirect(head, j)
				if !ok {
					break
				}
				d += r.translateOne(e.Addr, fill)
			}
			continue
		}
		for n := 0; n < r.q.Size(); n++ { // at most num descriptors: a looping chain is the ring's error, found elsewhere
			d += r.translateOne(desc.Addr, fill)
			if desc.Flags&virtq.DescFNext == 0 {
				break
			}
			desc = r.q.DeviceDesc(desc.Next)
		}
	}
	return d
}

// translateOne is one descriptor's translation: a hit, or a miss.
func (r *RX) translateOne(addr uint64, fill bool) sim.Duration {
	if r.iotlb.HostTranslate(addr, fill) {
		return r.costs.VhostIOTLBHit + r.costs.VhostIOTLBMiss
	}
	return r.costs.VhostIOTLBHit
}

// SetSharedVCPU says that the vhost worker shares its host CPU with the
// vCPU of guest CPU c: every span the worker runs is stolen from c
// (sim.CPU.Steal). The host's scheduler is taken to run the worker at
// once whenever it has a frame (a woken sleeper preempts the vCPU thread:
// CFS's and EEVDF's wakeup preemption); the fair share it would give a
// worker that never sleeps is not modelled.
func (r *RX) SetSharedVCPU(c *sim.CPU) { r.vcpu = c }

// SharedVCPU is the guest CPU whose vCPU shares the worker's host CPU,
// nil for none (SetSharedVCPU).
func (r *RX) SharedVCPU() *sim.CPU { return r.vcpu }

// Config is what a device's host side takes from the scenario, decoded
// once (ConfigOf): its kind, the driver's receive mode, and its limits.
type Config struct {
	Kind    string  // scenario.Device.Kind: vhost, nic or vdpa
	Mode    string  // the driver's receive mode (scenario.Mode): mergeable frames may span buffers
	Backlog int     // frames the host queues while the ring is empty (vhost and nic)
	MaxPPS  float64 // the device's own packet rate cap, 0 for none
	// AvailEventOnPop: the device writes avail_event as it pops each
	// chain rather than when it sleeps (scenario.AvailEventPop).
	AvailEventOnPop bool
}

// ConfigOf is the device's Config in scenario s.
func ConfigOf(s *scenario.Scenario) Config {
	return Config{
		Kind:            s.Device.Kind,
		Mode:            s.Mode(),
		Backlog:         s.Device.Backlog,
		MaxPPS:          s.Device.MaxPPS,
		AvailEventOnPop: s.Device.AvailEvent == scenario.AvailEventPop,
	}
}

// NewRX returns the backend of receive queue q, fed by tr (for a
// scenario's queue, NewStreamTraffic).
func NewRX(q *virtq.Queue, cfg Config, tr *Traffic, costs *sim.Costs) *RX {
	r := &RX{
		q:       q,
		traffic: tr,
		costs:   costs,
		kind:    cfg.Kind,
		mode:    cfg.Mode,
		backlog: cfg.Backlog,
		window:  make([]byte, q.Size()*WindowSize),
		pend:    make([]pendingFrame, q.Size()),
	}
	r.hw = r.kind != scenario.DeviceVhost
	r.vdpa = r.kind == scenario.DeviceVDPA
	r.batch = r.kind == scenario.DeviceVhost
	r.backlogDrop = drop.NICFull
	if r.batch {
		r.backlogDrop = drop.TapFull
	}
	if tr != nil {
		tr.queueFull = r.backlogDrop // a replayed frame's, past the backlog
	}
	if r.vdpa {
		r.backlog = 0 // frames wait nowhere: see CatchUp
	}
	r.mergeable = r.mode == scenario.ModeMergeable
	if cfg.MaxPPS > 0 {
		r.minGap = sim.Duration(1e9 / cfg.MaxPPS)
	}
	q.DeviceSetAvailEventOnPop(cfg.AvailEventOnPop)
	return r
}

// Counters returns the backend's counters.
func (r *RX) Counters() Counters { return r.c }

// Traffic is the generator feeding this queue.
func (r *RX) Traffic() *Traffic { return r.traffic }

// Starved reports whether the host sleeps waiting for a kick.
func (r *RX) Starved() bool { return r.starved }

// StarvedFor is Counters().StarvedTime plus the wait still open at now.
func (r *RX) StarvedFor(now sim.Time) sim.Duration {
	d := r.c.StarvedTime
	if r.starved && now > r.since {
		d += now.Sub(r.since)
	}
	return d
}

// Unpublished is how many used entries vhost-net holds in its batch,
// written and not yet published (nvq->done_idx).
func (r *RX) Unpublished() int { return r.doneIdx }

// pendingFrame names a frame by what builds it: the flow's template, the
// sequence number and the length, and the header's num_buffers.
type pendingFrame struct {
	seq     uint64
	flow    int32
	size    int32
	numBuf  uint16
	pending bool // the window does not hold this frame yet
}

// Window returns the stored bytes of the buffer whose chain starts at head:
// the virtio_net header followed by the start of the frame.
func (r *RX) Window(head uint16) []byte {
	off := int(head) * WindowSize
	w := r.window[off : off+WindowSize]
	if pf := &r.pend[head]; pf.pending {
		h := VirtioNetHdr{NumBuffers: pf.numBuf}
		h.Put(w)
		r.traffic.build(int(pf.flow), w[VirtioNetHdrLen:], pf.seq, int(pf.size))
		pf.pending = false
	}
	return w
}

// CopyFrame copies the first len(dst) stored frame bytes of the buffer
// whose chain starts at head into dst: copy(dst,
// Window(head)[VirtioNetHdrLen:]), building them straight into dst when
// they are not in the window yet. len(dst) is at most WindowSize -
// VirtioNetHdrLen.
func (r *RX) CopyFrame(head uint16, dst []byte) {
	if pf := &r.pend[head]; pf.pending {
		// build is Flow.Build cut at len(dst): a prefix of what the
		// window would hold.
		r.traffic.build(int(pf.flow), dst, pf.seq, int(pf.size))
		return
	}
	off := int(head)*WindowSize + VirtioNetHdrLen
	copy(dst, r.window[off:off+len(dst)])
}

// FrameSeq is the number of the frame written into the buffer whose chain
// starts at head: the order its sender sent it in (a tcp_stream's frames
// are numbered by the stream's sender).
func (r *RX) FrameSeq(head uint16) uint64 { return r.pend[head].seq }

// NumBuffers is num_buffers of the header in the buffer whose chain
// starts at head: NumBuffers(Window(head)), without writing the window.
func (r *RX) NumBuffers(head uint16) uint16 {
	if pf := &r.pend[head]; pf.pending {
		return pf.numBuf
	}
	return NumBuffers(r.window[int(head)*WindowSize:])
}

// Kick tells the host that the driver added buffers (virtqueue_notify).
// A starved host wakes after the notification latency; vhost's handle_rx
// starts by turning notifications off again (vhost_disable_notify).
func (r *RX) Kick(at sim.Time) {
	if !r.starved {
		return
	}
	r.starved = false
	r.c.Wakeups++
	r.wake = at.Add(r.kickLatency())
	if r.wake > r.since {
		r.c.StarvedTime += r.wake.Sub(r.since)
	}
	if r.cursor < r.wake {
		r.cursor = r.wake
	}
	if r.batch {
		r.q.DeviceDisableNotify()
	}
}

func (r *RX) kickLatency() sim.Duration {
	if r.hw {
		return r.costs.NICDoorbellLatency
	}
	return r.costs.VhostWakeLatency
}

// handledSize is how many of a frame's size bytes the host handles: all
// of them, but vhost-net drops a frame too big for its buffer with a
// truncating recvmsg that copies one byte (dropTooBig).
func (r *RX) handledSize(size int, fits bool) int {
	if !fits && r.batch {
		return 1
	}
	return size
}

// cost is the host time to deliver a frame of n bytes in nbuf buffers made
// of ndesc descriptors. vhost translates every descriptor of every chain
// into an iovec (vhost_get_vq_desc, translate_desc) before it copies; a
// hardware device (nic, vdpa) spends no host CPU: its pipeline time is
// NIC costs.
func (r *RX) cost(n, nbuf, ndesc int) sim.Duration {
	var d sim.Duration
	if r.hw {
		d = r.costs.NICPacket + sim.Duration(nbuf-1)*r.costs.NICPacket/2
	} else {
		d = r.costs.VhostPacket + sim.Duration((n+63)/64)*r.costs.VhostCopy64 +
			sim.Duration(nbuf-1)*r.costs.VhostBuffer + sim.Duration(ndesc)*r.costs.VhostDesc
	}
	if d < r.minGap {
		d = r.minGap
	}
	return d
}

// CatchUp does everything the host would have done up to t: every frame
// whose delivery ends at or before t is written, and published when the
// device would have published it. It reports whether an interrupt was
// raised and the time of the first one.
//
// vhost (handle_rx in drivers/vhost/net.c) takes buffers for each frame
// (get_rx_bufs), adds the used entries to its batch, and publishes the
// batch and decides the interrupt (vhost_net_signal_used,
// vhost_add_used_and_signal_n) when it passes VHOST_NET_BATCH and when its
// run ends: no frame waiting, too few buffers for the next one (after
// vhost_enable_notify), or the weight. A hardware device publishes and
// decides per frame. A vdpa device drops the frames it cannot place.
func (r *RX) CatchUp(t sim.Time) (irq bool, irqAt sim.Time) {
	if !r.traffic.Active() {
		return false, 0
	}
	for !r.starved {
		if broken, _ := r.q.Broken(); broken {
			return irq, irqAt
		}
		arrival := r.traffic.NextArrival()
		if arrival > t {
			return irq, irqAt
		}
		if r.vdpa && arrival < r.wake {
			// It came off the wire while the device, out of buffers,
			// waited for the doorbell: nowhere to put it.
			r.c.NoBufferDrops++
			r.traffic.Record(OutcomeNoBuffer, drop.NoBuffer)
			r.c.Reasons.Add(drop.NoBuffer)
			r.traffic.Advance()
			continue
		}
		start := r.cursor
		if arrival > start {
			start = arrival
		}
		if r.backlog > 0 && !r.traffic.Saturating() {
			// vhost-net: the tap's queue full (tun_net_xmit's
			// ptr_ring_produce fails: SKB_DROP_REASON_FULL_RING); a
			// NIC: its FIFO.
			n := r.traffic.DropUntil(start, r.backlog)
			r.c.Drops += n
			r.c.Reasons.AddN(r.backlogDrop, n)
		}
		_, size := r.traffic.Peek()
		// A frame that fits the next available buffer when that is one
		// writable descriptor (virtq.DevicePeekLone) needs no plan: lone
		// is false when it is not, or the frame does not fit it, and
		// plan decides.
		head, writable, lone := r.q.DevicePeekLone()
		lone = lone && uint64(size+VirtioNetHdrLen) <= uint64(writable)
		nbuf, ndesc, fits, ok := 1, 1, true, true
		if !lone {
			nbuf, ndesc, fits, ok = r.plan(size, &r.first)
		}
		if !ok {
			// The ring is empty, or holds too little for this frame.
			if r.doneIdx > 0 {
				// handle_rx: no headcount, vhost_enable_notify, then
				// "out:" publishes the batch. The host has been trying
				// since the previous frame ended (its next frame was
				// waiting, or the batch would have been published).
				irq, irqAt = r.publish(r.cursor, irq, irqAt)
			}
			r.endRun()
			r.starve(start)
			if r.vdpa {
				r.c.NoBufferDrops++
				r.traffic.Record(OutcomeNoBuffer, drop.NoBuffer)
				r.c.Reasons.Add(drop.NoBuffer)
				r.traffic.Advance()
			}
			return irq, irqAt
		}
		size = r.handledSize(size, fits)
		d := r.cost(size, nbuf, ndesc)
		if r.iotlb != nil {
			d += r.translate(nbuf, false)
		}
		end := start.Add(d)
		if end > t {
			return irq, irqAt
		}
		if r.iotlb != nil {
			r.translate(nbuf, true)
		}
		r.cursor = end
		r.c.Busy += end.Sub(start)
		if r.vcpu != nil {
			r.vcpu.Steal(start, end)
		}
		switch {
		case !fits:
			r.c.TooBig++
			r.traffic.Record(OutcomeTooBig, drop.TooBig)
			if r.batch {
				// A drop only for vhost-net: a hardware device returns
				// the buffers empty and the driver drops (RxLength).
				r.c.Reasons.Add(drop.TooBig)
				irq, irqAt = r.dropTooBig(end, irq, irqAt)
				continue
			}
			r.discard(nbuf)
		case lone:
			// deliver of a frame into the one buffer DevicePeekLone
			// found: no chain to walk, one used entry.
			r.writeFirst(head, 1, size)
			r.q.DeviceAddUsedLone(head, uint32(size+VirtioNetHdrLen))
			r.c.Buffers++
			r.c.Packets++
			r.c.Bytes += uint64(size)
		default:
			if !r.deliver(size, nbuf, &r.first) {
				return irq, irqAt
			}
		}
		r.traffic.Advance()
		if r.batch {
			irq, irqAt = r.used(end, nbuf, size, irq, irqAt)
			continue
		}
		// used's hardware case without the call: publish and decide
		// per frame (signal).
		r.q.DevicePublishUsed()
		r.c.UsedPublishes++
		if r.q.DeviceNeedInterrupt() {
			r.c.Interrupts++
			if !irq {
				irq, irqAt = true, end
			}
		}
	}
	return irq, irqAt
}

// starve puts the host to sleep until a kick, after enabling
// notifications (vhost_enable_notify: avail_event is the avail index it
// has seen, so that any buffer the driver adds kicks it; without
// EVENT_IDX, NO_NOTIFY is cleared). Its last_avail_idx would be wrong
// there: buffers it saw and could not use lie between it and avail.idx,
// and a refill moving avail.idx from above it never crosses it
// (FIDELITY row 16).
func (r *RX) starve(at sim.Time) {
	r.starved = true
	r.c.Starved++
	r.since = at
	r.q.DeviceEnableNotify()
	if at > r.cursor {
		r.cursor = at
	}
}

// used ends a frame whose used entries were written by end. A hardware
// device publishes them and decides the interrupt at once; vhost-net adds
// them to its batch (nvq->done_idx += headcount) and publishes when the
// batch passes VHOST_NET_BATCH or the run ends: when no frame is waiting
// (vhost_net_rx_peek_head_len finds none) or at the weight
// (vhost_exceeds_weight requeues the work).
func (r *RX) used(end sim.Time, nbuf, size int, irq bool, irqAt sim.Time) (bool, sim.Time) {
	if !r.batch {
		r.q.DevicePublishUsed()
		r.c.UsedPublishes++
		return r.signal(end, irq, irqAt)
	}
	r.doneIdx += nbuf
	r.doneFrames++
	r.doneEndSum += int64(end)
	r.runPkts++
	r.runBytes += size + VirtioNetHdrLen
	switch {
	case r.runEnds(end):
		r.endRun()
		return r.publish(end, irq, irqAt)
	case r.doneIdx > VhostNetBatch:
		return r.publish(end, irq, irqAt)
	}
	return irq, irqAt
}

// runEnds says whether vhost-net's handle_rx run ends with the frame that
// ended at end: no frame is waiting (vhost_net_rx_peek_head_len finds
// none) or the run reached its weight (vhost_exceeds_weight).
func (r *RX) runEnds(end sim.Time) bool {
	return r.traffic.NextArrival() > end || r.runPkts >= vhostNetPktWeight || r.runBytes >= vhostNetWeight
}

// endRun ends a handle_rx run (vhost only).
func (r *RX) endRun() {
	if r.batch {
		r.c.Runs++
		r.runPkts, r.runBytes = 0, 0
	}
}

// publish is vhost_net_signal_used at time at: the batch goes out in one
// used.idx store (vhost_add_used_n), then vhost_signal decides.
func (r *RX) publish(at sim.Time, irq bool, irqAt sim.Time) (bool, sim.Time) {
	r.q.DevicePublishUsed()
	r.c.UsedPublishes++
	r.c.PublishWaitNs += uint64(int64(r.doneFrames)*int64(at) - r.doneEndSum)
	r.doneIdx, r.doneFrames, r.doneEndSum = 0, 0, 0
	return r.signal(at, irq, irqAt)
}

// signal decides, after a publish at time at, whether to interrupt
// (vhost_notify, vring_need_event); the first interrupt's time is kept.
func (r *RX) signal(at sim.Time, irq bool, irqAt sim.Time) (bool, sim.Time) {
	if r.q.DeviceNeedInterrupt() {
		r.c.Interrupts++
		if !irq {
			irq, irqAt = true, at
		}
	}
	return irq, irqAt
}

// NextLanding is the time the host will next make frames visible in the
// ring (and may interrupt), if it can without a kick: the end of the next
// frame for a hardware device, the next publish for vhost-net, as far as
// nextPublish can tell (never later than it happens).
func (r *RX) NextLanding() (sim.Time, bool) {
	if r.starved || !r.traffic.Active() {
		return 0, false
	}
	if broken, _ := r.q.Broken(); broken {
		return 0, false
	}
	_, size := r.traffic.Peek()
	nbuf, ndesc, fits, ok := r.plan(size, &r.first)
	if !ok {
		// It will find the ring empty when the frame arrives.
		return 0, false
	}
	size = r.handledSize(size, fits)
	start := r.cursor
	a := r.traffic.NextArrival()
	if a == Never {
		return 0, false // nothing will arrive until the receiver reports
	}
	if a > start {
		start = a
	}
	d := r.cost(size, nbuf, ndesc)
	if r.iotlb != nil {
		d += r.translate(nbuf, false)
	}
	end := start.Add(d)
	if r.batch {
		end = r.nextPublish(end, nbuf, size)
	}
	return end, true
}

// nextPublish looks ahead from the next frame, which ends at end in nbuf
// buffers, to the end of the frame after which vhost-net publishes (used):
// the batch passes VHOST_NET_BATCH, the run reaches its weight, or the
// next frame finds too few buffers. It changes nothing. It looks past a
// frame only where the next step is certain: saturating traffic of fixed
// sizes (a frame always waits, so none ends the run by its absence) and
// lone-descriptor buffers (no chain to walk and check); elsewhere it
// stops, and the landing there looks again. So the time is never later
// than the publish, and landings are one per publish instead of one per
// frame when the host runs flat out.
func (r *RX) nextPublish(end sim.Time, nbuf, size int) sim.Time {
	tr := r.traffic
	done := r.doneIdx + nbuf
	pkts := r.runPkts + 1
	bytes := r.runBytes + size + VirtioNetHdrLen
	seq := tr.seq + 1
	off := uint16(nbuf)
	for {
		if done > VhostNetBatch || pkts >= vhostNetPktWeight || bytes >= vhostNetWeight {
			return end
		}
		if !tr.Saturating() || tr.rng != nil || r.iotlb != nil {
			return end // (an IOTLB miss ahead is not certain either)
		}
		size = tr.spec.SizeAt(seq)
		n, ok, certain := r.planLoneAt(size, off)
		if !certain || !ok {
			return end // stop looking, or the host runs dry and publishes at end
		}
		end = end.Add(r.cost(size, n, n))
		done += n
		pkts++
		bytes += size + VirtioNetHdrLen
		seq++
		off += uint16(n)
	}
}

// planLoneAt is plan for a frame of size bytes whose buffers start off
// entries past last_avail, when they are lone descriptors: n buffers
// (one, fitting or not, outside mergeable mode). ok is false when too few
// are posted. certain is false when an entry is not a lone descriptor.
func (r *RX) planLoneAt(size int, off uint16) (n int, ok, certain bool) {
	posted := int(uint16(r.q.AvailIdx() - r.q.DeviceLastAvail()))
	if posted > r.q.Size() {
		return 0, false, false // DevicePop will call it a ring error
	}
	avail := posted - int(off)
	if avail <= 0 {
		return 0, false, true
	}
	need := uint64(size + VirtioNetHdrLen)
	var got uint64
	for k := 0; k < avail; k++ {
		w, lone := r.q.DeviceLoneAt(off + uint16(k))
		if !lone {
			return 0, false, false
		}
		if !r.mergeable {
			// A frame too big for its buffer is dropped by vhost
			// without using it (CatchUp): not certain to publish.
			return 1, true, uint64(w) >= need || !r.batch
		}
		got += uint64(w)
		if got >= need {
			return k + 1, true, true
		}
	}
	return 0, false, true
}

// Shortfall reports, for mergeable buffers, what the next frame needs
// (its bytes and the virtio_net header) against what the posted buffers
// hold in all: short is true when they hold less, so the host cannot take
// the frame until the driver posts more (get_rx_bufs finds the ring empty
// before the frame is placed, and handle_rx waits for a kick). Outside
// mergeable mode, or with no frame waiting, short is false.
func (r *RX) Shortfall() (need, posted uint64, short bool) {
	if !r.mergeable || !r.traffic.Active() {
		return 0, 0, false
	}
	_, size := r.traffic.Peek()
	need = uint64(size + VirtioNetHdrLen)
	avail := int(uint16(r.q.AvailIdx() - r.q.DeviceLastAvail()))
	for k := 0; k < avail; k++ {
		ci, err := r.q.DeviceChain(r.q.AvailEntry(r.q.DeviceLastAvail() + uint16(k)))
		if err != nil {
			return need, posted, false
		}
		posted += ci.Writable
	}
	return need, posted, posted < need
}

// plan looks at the available buffers without taking them and says how
// many a frame of size bytes needs, and how many descriptors they hold.
// fits is false when the frame cannot fit (small or big mode buffers too
// short): it will be discarded using one buffer. ok is false when there
// are not enough buffers yet. *first gets the chain of the first buffer,
// for a deliver that follows at once.
func (r *RX) plan(size int, first *virtq.ChainInfo) (nbuf, ndesc int, fits, ok bool) {
	avail := int(uint16(r.q.AvailIdx() - r.q.DeviceLastAvail()))
	if avail == 0 {
		return 0, 0, false, false
	}
	need := uint64(size + VirtioNetHdrLen)
	if !r.mergeable {
		ci, err := r.q.DeviceChain(r.q.AvailEntry(r.q.DeviceLastAvail()))
		if err != nil {
			r.c.RingErrors++
			return 0, 0, false, false
		}
		*first = ci
		return 1, ci.Descs, ci.Writable >= need, true
	}
	var got uint64
	for k := 0; k < avail; k++ {
		ci, err := r.q.DeviceChain(r.q.AvailEntry(r.q.DeviceLastAvail() + uint16(k)))
		if err != nil {
			r.c.RingErrors++
			return 0, 0, false, false
		}
		if k == 0 {
			*first = ci
		}
		got += ci.Writable
		ndesc += ci.Descs
		if got >= need {
			return k + 1, ndesc, true, true
		}
	}
	return 0, 0, false, false
}

// writeFirst writes the next frame, size bytes in nbuf buffers, into its
// first buffer, head: the virtio_net header (num_buffers) and the bytes
// (Flow.Build of the next packet, from the prepared headers) go into the
// window when it is read.
func (r *RX) writeFirst(head uint16, nbuf, size int) {
	pf := &r.pend[head]
	pf.seq, pf.flow, pf.size, pf.pending = r.traffic.seq, int32(r.traffic.flowIdx), int32(size), true
	pf.numBuf = uint16(nbuf)
	if !r.mergeable {
		pf.numBuf = 0
	}
}

// dropTooBig is vhost-net with a frame too big for its one buffer (quota
// 1 outside mergeable mode), ended at end: get_rx_bufs finds the overrun,
// gives the buffer back (vhost_discard_vq_desc) and returns UIO_MAXIOV +
// 1, and handle_rx drops the packet with a truncating recvmsg. No used
// entry: the buffer waits for the next frame. The packet counts towards
// the run's weight (++recv_pkts); a run it ends publishes the batch.
func (r *RX) dropTooBig(end sim.Time, irq bool, irqAt sim.Time) (bool, sim.Time) {
	r.traffic.Advance()
	r.runPkts++
	if r.runEnds(end) {
		r.endRun()
		if r.doneIdx > 0 {
			return r.publish(end, irq, irqAt)
		}
	}
	return irq, irqAt
}

// discard takes nbuf buffers and returns them unused (length 0), as the
// hardware devices (nic, vdpa) do here with a frame too big for them; the
// entries are published with the frame. vhost-net drops such a frame
// without using a buffer (CatchUp). Whether a hardware device drops,
// truncates or returns the buffer empty is the device's; nothing the
// engine models is sourced on it.
func (r *RX) discard(nbuf int) {
	for i := 0; i < nbuf; i++ {
		head, ok := r.q.DevicePop()
		if !ok {
			return
		}
		r.q.DeviceAddUsed(uint32(head), 0)
	}
}

// deliver writes one frame into nbuf buffers and adds them to the used
// ring (handle_rx in drivers/vhost/net.c: get_rx_bufs, copy_to_iter, the
// heads kept at vq->heads + nvq->done_idx); used publishes them.
// num_buffers goes into the first header.
// first is the chain plan found for the first buffer: nothing has changed
// the ring since, so it is not walked again.
func (r *RX) deliver(size, nbuf int, first *virtq.ChainInfo) bool {
	remaining := size + VirtioNetHdrLen
	for i := 0; i < nbuf; i++ {
		head, ok := r.q.DevicePop()
		if !ok {
			r.c.RingErrors++
			return false
		}
		ci := *first
		if i > 0 {
			var err error
			if ci, err = r.q.DeviceChain(head); err != nil {
				r.c.RingErrors++
				return false
			}
		}
		n := remaining
		if uint64(n) > ci.Writable {
			n = int(ci.Writable)
		}
		if i == 0 {
			r.writeFirst(head, nbuf, size)
		}
		r.q.DeviceAddUsed(uint32(head), uint32(n))
		remaining -= n
		r.c.Buffers++
	}
	r.c.Packets++
	r.c.Bytes += uint64(size)
	return true
}
