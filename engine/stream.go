package engine

import (
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/transport"
)

// streams connects a tcp_stream's receiving sockets to its senders. The
// protocol runs where NET_RX runs: each skb a socket takes is
// acknowledged by __tcp_ack_snd_check's rule, and an ACK that goes out
// costs the CPU tcp_send_ack and a descriptor on its send queue (the
// driver's start_xmit, which kicks the host when it waits for one); the
// sender learns of every frame the ACK covers, with the window the
// socket then advertises. A read that opens the window enough sends a
// window update from the reader's CPU (tcp_cleanup_rbuf), and the driver
// is told the host may have a frame to land sooner.
type streams struct {
	w       *World
	hdr     uint32
	scaling bool // tcp_win_from_space scales by tp->scaling_ratio (6.6+)
	// The receive buffer's autotuning (dynamic right-sizing): rmem2 is
	// tcp_rmem[2], where it stops (Scenario.Rcvbuf, read once: it
	// consults the kernel's table); locked, a buffer the scenario set
	// (SO_RCVBUF), which it leaves alone; advmss the segment it counts in;
	// rcvRTT the receiver's RTT estimate that paces it (rcv_rtt_est);
	// grow616 6.16's tcp_rcvbuf_grow.
	rmem2   int
	locked  bool
	advmss  int
	rcvRTT  sim.Duration
	grow616 bool
	// jiffy is 1/HZ; rtt and rto the receiver's srtt and icsk_rto in
	// jiffies, from the handshake's sample of the path (rtt_us): the
	// delayed-ACK engine's bounds.
	jiffy    sim.Duration
	rtt, rto int64
	delack   sim.Kind
	q        []streamQueue
}

// streamQueue is the receiving socket of queue i's stream.
type streamQueue struct {
	on      bool // a socket took a packet of the stream
	ratio   int  // tp->scaling_ratio, measured per packet
	adv     int  // the window last advertised
	sockCPU int  // the CPU whose socket reads the stream, -1 before
	// The frames received and not yet acknowledged, in order
	// (rcv_nxt - rcv_wup, by frame), their payload bytes, and the frame
	// expected next (a frame after a gap is out of order).
	pending [pendingMax]uint64
	npend   int
	unacked int
	next    uint64
	quick   int // icsk_ack.quick: quick ACKs left
	// The receive window (tcp_grow_window, tcp_rcv_space_adjust): clamp
	// is window_clamp, ssthresh rcv_ssthresh, both bytes; space is
	// rcvq_space.space, what a round trip's reads must pass for the
	// buffer to grow, spaceSeq and spaceAt where the current round began
	// (copied_seq, the time).
	clamp, ssthresh, space int
	spaceSeq               uint64
	spaceAt                sim.Time
	ato                    int64    // icsk_ack.ato, jiffies: 0 before the first data
	lrcv                   int64    // icsk_ack.lrcvtime, jiffies: the last data's arrival
	delackAt               sim.Time // the delayed-ACK timer's expiry, 0 when not armed
	ackCPU                 int      // where the delayed ACK was armed (the protocol's CPU)
}

// pendingMax bounds the frames an ACK may wait for: a GRO skb of
// GROMaxSize holds at most 45 MSS-sized frames.
const pendingMax = 64

// TCP's receive-side constants (include/net/tcp.h).
const (
	// maxQuickACKs is TCP_MAX_QUICKACKS: at the start and after a hole,
	// the receiver ACKs every segment for this many.
	maxQuickACKs = 16
	// hzPerATOMin is HZ / TCP_ATO_MIN (= TCP_DELACK_MIN): the delayed-ACK
	// timeout a connection starts with is a 25th of a second, and the
	// fastest arrivals keep it there; hzPerDelackMax is HZ /
	// TCP_DELACK_MAX, the longest an ACK is delayed (icsk_delack_max).
	hzPerATOMin    = 25
	hzPerDelackMax = 5
)

func newStreams(w *World) *streams {
	s := &w.Scenario
	_, hdr, _ := s.TCPFrame()
	b := s.Behaviours()
	mss, _, _ := s.TCPFrame()
	st := &streams{w: w, hdr: uint32(hdr), scaling: b.TCPScalingRatio, rmem2: s.Rcvbuf(), advmss: mss, grow616: b.TCPRcvbufGrow, q: make([]streamQueue, s.Queues)}
	rcvbuf, locked := s.TCPRcvbufStart()
	st.locked = locked
	ratio := transport.DefaultRatio(b.TCPDefaultRatioHalf)
	win := transport.InitialRcvWindow(rcvbuf, mss, ratio, st.scaling)
	st.jiffy = sim.Second / sim.Duration(max(s.Sched.HZ, 1))
	rttUs := s.Traffic.RTTUs
	if rttUs == 0 {
		rttUs = scenario.DefaultRTTUs
	}
	rtt := sim.Duration(rttUs * float64(sim.Microsecond))
	st.rtt = st.jiffies(rtt + st.jiffy - 1)                    // usecs_to_jiffies rounds up
	st.rto = st.jiffies(rtt + transport.RTOMin + st.jiffy - 1) // srtt + rttvar, rttvar at least TCP_RTO_MIN
	// The receiver's RTT (tcp_rcv_rtt_measure_ts): timestamps count in
	// milliseconds, and a 0 ms sample counts as 1 ms until 6.16 drops it.
	st.rcvRTT = rtt
	if !st.grow616 {
		st.rcvRTT = max(rtt, sim.Millisecond)
	}
	for i := range st.q {
		st.q[i] = streamQueue{ratio: ratio, sockCPU: -1, quick: maxQuickACKs,
			clamp: win.Clamp, ssthresh: win.Ssthresh, space: win.Space}
	}
	st.delack = w.Sim.Queue.RegisterArg("delayed ACK", "rx", st.delackTimer)
	w.Sim.Queue.Cite(st.delack, "tcp_send_ack")
	return st
}

// window is tcp_select_window for queue q's socket on cpu: the room left
// in its receive buffer, as tcp_win_from_space counts it.
func (st *streams) window(cpu, q int) int {
	return min(transport.WinFromSpace(st.w.Stack.RcvbufFree(cpu), st.q[q].ratio, st.scaling), st.q[q].ssthresh)
}

// growWindow is tcp_grow_window for an in-order skb of n bytes (len of
// payload and headers, as skb->len) in truesize bytes on queue q's
// socket on cpu: rcv_ssthresh grows by twice the skb, or two segments,
// up to window_clamp and the free space, when skbs this dense would fit
// the buffer (__tcp_grow_window); and the socket ACKs at once
// (icsk_ack.quick |= 1).
func (st *streams) growWindow(sq *streamQueue, cpu, n, truesize int) {
	room := min(sq.clamp, transport.WinFromSpace(st.w.Stack.RcvbufFree(cpu), sq.ratio, st.scaling)) - sq.ssthresh
	if room <= 0 {
		return
	}
	var incr int
	if transport.WinFromSpace(truesize, sq.ratio, st.scaling) <= n {
		incr = 2 * st.advmss
	} else {
		// __tcp_grow_window: halve the skb's window and tcp_rmem[2]'s
		// together until the skb's fits in it or rcv_ssthresh passes it.
		ts := transport.WinFromSpace(truesize, sq.ratio, st.scaling) >> 1
		window := transport.WinFromSpace(st.rmem2, sq.ratio, st.scaling) >> 1
		for sq.ssthresh <= window {
			if ts <= n {
				incr = 2 * st.advmss
				break
			}
			ts >>= 1
			window >>= 1
		}
	}
	if incr == 0 {
		return
	}
	sq.ssthresh += min(room, max(incr, 2*n))
	sq.quick |= 1
}

// spaceAdjust is tcp_rcv_space_adjust after a read on cpu: once a
// receiver round trip has passed, when the reads of that round passed
// rcvq_space.space, sk_rcvbuf grows to hold twice them, plus twice their
// growth over the round before (the sender may be in slow start), plus
// 16 segments before 6.16, at most tcp_rmem[2]; window_clamp follows.
func (st *streams) spaceAdjust(sq *streamQueue, cpu int, now sim.Time) {
	if now.Sub(sq.spaceAt) < st.rcvRTT {
		return
	}
	copied := st.w.Stack.Copied(cpu)
	got := int(copied - sq.spaceSeq)
	sq.spaceSeq, sq.spaceAt = copied, now
	if got <= sq.space {
		return
	}
	old := sq.space
	sq.space = got
	if st.locked {
		return
	}
	rcvwin := 2 * got
	if !st.grow616 {
		rcvwin += 16 * st.advmss
	}
	rcvwin += 2 * int(int64(rcvwin)*int64(got-old)/int64(max(old, 1)))
	rcvbuf := min(transport.SpaceFromWin(rcvwin, sq.ratio, st.scaling), st.rmem2)
	if rcvbuf > st.w.Stack.Rcvbuf(cpu) {
		st.w.Stack.SetRcvbuf(cpu, rcvbuf)
		sq.clamp = transport.WinFromSpace(rcvbuf, sq.ratio, st.scaling)
	}
}

func (st *streams) sender(queue int) *transport.TCP {
	if queue < 0 || queue >= len(st.q) {
		return nil
	}
	return st.w.Driver.RQ[queue].Dev.Traffic().TCP()
}

// Queued implements skb.SocketObserver: tcp_data_queue took the skb of
// segs frames from seq on, in NET_RX on c; then __tcp_ack_snd_check.
func (st *streams) Queued(c *sim.CPU, cpu, queue int, seq uint64, segs int, n, truesize uint32) {
	tcp := st.sender(queue)
	if tcp == nil {
		return
	}
	sq := &st.q[queue]
	sq.on, sq.sockCPU = true, cpu
	hdr := uint32(segs) * st.hdr
	if n > hdr {
		// tcp_measure_rcv_mss: skb->len << TCP_RMEM_TO_WIN_SCALE /
		// skb->truesize, whose truesize counts the struct sk_buff, from
		// a full-sized segment only (gso_size, or the one segment's
		// length, at least rcv_mss): a short segment leaves it.
		if segs > 1 || int(n-hdr) >= st.advmss {
			sq.ratio = transport.ScalingRatio(int(n-hdr), int(truesize)+skb.StructTruesize)
		}
		sq.unacked += int(n - hdr)
	}
	st.eventDataRecv(sq, c.Now()) // tcp_data_queue -> tcp_event_data_recv
	ofo := seq != sq.next
	if !ofo && n >= 128 {
		st.growWindow(sq, cpu, int(n), int(truesize)+skb.StructTruesize)
	}
	sq.next = seq + uint64(segs)
	if ofo {
		sq.quick = maxQuickACKs // tcp_enter_quickack_mode
	}
	for i := 0; i < segs; i++ {
		if sq.npend == pendingMax {
			st.ack(c, queue)
		}
		sq.pending[sq.npend] = seq + uint64(i)
		sq.npend++
	}
	// __tcp_ack_snd_check: more than one full segment unacknowledged,
	// quickack mode, or data out of order: ACK now; else the delayed
	// ACK.
	if sq.unacked > tcp.MSS() || sq.quick > 0 || ofo {
		st.ack(c, queue)
		return
	}
	st.sendDelayedACK(c, queue)
}

// jiffies is d in whole jiffies, rounded down.
func (st *streams) jiffies(d sim.Duration) int64 { return int64(d / st.jiffy) }

// hz is the jiffies in a second.
func (st *streams) hz() int64 { return int64(sim.Second / st.jiffy) }

// eventDataRecv is tcp_event_data_recv's delayed-ACK engine for data
// arriving at now: the first data sets ato to TCP_ATO_MIN (the quick
// ACKs are the connection's from the start); after, ato follows the
// gaps between arrivals, halving toward TCP_ATO_MIN while they are
// short, and a gap longer than the RTO (the sender stalled) brings back
// the quick ACKs (tcp_incr_quickack).
func (st *streams) eventDataRecv(sq *streamQueue, now sim.Time) {
	j := st.jiffies(now.Sub(0))
	atoMin := st.hz() / hzPerATOMin
	if sq.ato == 0 {
		sq.ato = atoMin
	} else {
		switch m := j - sq.lrcv; {
		case m <= atoMin/2:
			sq.ato = sq.ato>>1 + atoMin/2
		case m < sq.ato:
			sq.ato = min(sq.ato>>1+m, st.rto)
		case m > st.rto:
			sq.quick = max(sq.quick, maxQuickACKs)
		}
	}
	sq.lrcv = j
}

// sendDelayedACK is tcp_send_delayed_ack: the timer at the next jiffies
// plus ato, a slow ato bounded by the round trip and half a second, all
// by TCP_DELACK_MAX; an armed timer keeps its earlier expiry, and one
// about to expire (within a quarter of ato) sends the ACK now.
func (st *streams) sendDelayedACK(c *sim.CPU, queue int) {
	sq := &st.q[queue]
	ato := sq.ato
	if delackMin := st.hz() / hzPerATOMin; ato > delackMin {
		maxATO := min(st.hz()/2, max(st.rtt, delackMin))
		ato = min(ato, maxATO)
	}
	ato = min(ato, st.hz()/hzPerDelackMax)
	now := st.jiffies(c.Now().Sub(0))
	timeout := sim.Time(0).Add(sim.Duration(now+ato) * st.jiffy)
	if sq.delackAt != 0 {
		if sq.delackAt <= sim.Time(0).Add(sim.Duration(now+ato>>2)*st.jiffy) {
			st.ack(c, queue) // the timer is about to expire: the ACK now
			return
		}
		if sq.delackAt <= timeout {
			return // an older, earlier timer stands
		}
	}
	sq.delackAt, sq.ackCPU = timeout, c.ID
	st.w.Sim.Queue.Schedule(sq.delackAt, st.delack, uint64(queue))
}

// ack sends queue's socket's ACK from c: tcp_send_ack, the driver's
// start_xmit, and the sender hears of every frame it covers.
func (st *streams) ack(c *sim.CPU, queue int) {
	sq := &st.q[queue]
	tcp := st.sender(queue)
	c.Charge(sim.SymTCPSendAck, c.Costs().TCPSendAck)
	st.w.Driver.XmitACK(c)
	wnd := st.window(sq.sockCPU, queue)
	sq.adv = wnd
	for _, seq := range sq.pending[:sq.npend] {
		tcp.Delivered(c.Now(), seq, wnd)
	}
	sq.quick = max(sq.quick-sq.npend, 0) // tcp_dec_quickack_mode
	sq.npend, sq.unacked, sq.delackAt = 0, 0, 0
	st.w.Driver.WakeRX(queue, c.Now())
}

// delackTimer is tcp_delack_timer of queue arg's socket, on the CPU that
// armed it (timer softirq): the pending ACK goes out.
func (st *streams) delackTimer(now sim.Time, arg uint64) {
	sq := &st.q[arg]
	if sq.delackAt != now || sq.npend == 0 {
		return // sent meanwhile, or re-armed
	}
	c := st.w.Sim.CPU(sq.ackCPU)
	c.BeginSoftirq(now, "delayed ACK")
	st.ack(c, int(arg))
	c.End()
}

// Read implements skb.SocketObserver: the application on CPU cpu read,
// in process context on c (tcp_recvmsg's tcp_cleanup_rbuf): an ACK goes
// out when more than a segment is unacknowledged, or as a window update
// when reading at least doubled a window that had fallen to half of the
// buffer's worth or less.
func (st *streams) Read(c *sim.CPU, cpu int) {
	for q := range st.q {
		sq := &st.q[q]
		if !sq.on || sq.sockCPU != cpu {
			continue
		}
		tcp := st.sender(q)
		st.spaceAdjust(sq, cpu, c.Now()) // tcp_recvmsg_locked, after the copy
		if sq.npend > 0 && sq.unacked > tcp.MSS() {
			st.ack(c, q)
			continue
		}
		wnd := st.window(cpu, q)
		if 2*sq.adv > sq.clamp || wnd < 2*sq.adv { // tcp_cleanup_rbuf
			continue
		}
		if sq.npend > 0 {
			st.ack(c, q) // the window update acknowledges what is pending
			continue
		}
		c.Charge(sim.SymTCPSendAck, c.Costs().TCPSendAck)
		st.w.Driver.XmitACK(c)
		sq.adv = wnd
		tcp.Window(c.Now(), wnd)
		st.w.Driver.WakeRX(q, c.Now())
	}
}

// copyFrom makes st's state src's.
func (st *streams) copyFrom(src *streams) {
	w, q := st.w, st.q
	*st = *src
	st.w = w
	st.q = append(q[:0], src.q...)
}

// streamConfig fills the stack's socket fields: the receive buffer, what
// of each packet recvmsg does not copy, and whether the stack verifies
// checksums in software.
func streamConfig(s *scenario.Scenario, cfg *skb.StackConfig) {
	cfg.VerifyCsum = !s.RxCsumValidated()
	ip := 20
	if s.Traffic.IPv6 {
		ip = 40
	}
	switch s.Traffic.Kind {
	case scenario.TrafficTCPStream:
		_, cfg.HdrBytes, _ = s.TCPFrame()
		cfg.Rcvbuf, _ = s.TCPRcvbufStart() // tcp_rmem[1], which autotuning grows
	case scenario.TrafficUDPStream:
		cfg.HdrBytes = 14 + ip + 8
		cfg.Rcvbuf = s.Rcvbuf()
	default:
		cfg.HdrBytes = 14 + ip + 8
		if s.Traffic.Proto == "tcp" {
			cfg.HdrBytes = 14 + ip + 20
		}
		if cfg.Process {
			// An open generator's packets still land on a socket whose
			// receive buffer bounds what it holds.
			cfg.Rcvbuf = s.Rcvbuf()
		}
	}
}
