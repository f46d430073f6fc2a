// Package transport models the senders of the measured workloads: an
// iperf3-like bulk TCP sender, clocked by the receiver's ACKs and limited by
// its congestion window and the receiver's advertised window. It is pure
// bookkeeping in virtual time: the receiving side (device, driver, socket)
// tells it what arrived, what was dropped and how much room the socket
// has; it says when the next frame reaches the receiver and how big it is.
//
// The model is Reno's (RFC 5681) as Linux runs it without its refinements:
// slow start from an initial window of 10 segments (RFC 6928, Linux's
// TCP_INIT_CWND), congestion avoidance adding one segment per window of
// ACKs, one multiplicative decrease per window of data on a loss found by
// duplicate ACKs (fast retransmit), and a retransmission timeout of at
// least TCP_RTO_MIN (200 ms) when no later segment arrives to reveal the
// loss. Linux's default is CUBIC with PRR, pacing and TSO autosizing; what
// the engine keeps is what decides throughput against a receiver: the ACK
// clock, the receive window, and backing off on loss. docs/scenario.md
// lists the simplifications.
package transport

import (
	"errors"
	"fmt"

	"ringlab/engine/sim"
)

// Constants of the Linux TCP stack (include/net/tcp.h).
const (
	InitCwnd = 10                    // TCP_INIT_CWND
	RTOMin   = 200 * sim.Millisecond // TCP_RTO_MIN
	// GSOMaxSize is the largest TSO/GSO packet a Linux sender builds
	// (GSO_LEGACY_MAX_SIZE, 65536 bytes of IP packet).
	GSOMaxSize = 65536
)

// TCPConfig describes one bulk TCP connection as its receiver sees it.
type TCPConfig struct {
	MSS      int // payload bytes per segment
	HdrBytes int // Ethernet, IP and TCP headers (with options) of each frame
	// MaxSegs is how many segments one frame may carry: 1 without GSO, up
	// to GSOMaxSize of IP packet with it.
	MaxSegs int
	// RTT is the round trip outside the receiver: the wire both ways and
	// the sender's own handling. The receiver's time (ring, NAPI, socket)
	// comes on top, as it does in a real RTT.
	RTT sim.Duration
	// LineBps is the sender's link in bits per second (0: unlimited, only
	// the windows and the receiver pace it). Each frame costs its bytes
	// plus WireOverhead on a wire; a GSO frame is cut into MSS-sized wire
	// frames by the sender's NIC, so it costs the wire what they cost.
	LineBps float64
	// WireOverhead is what each wire frame costs beyond its bytes
	// (preamble, FCS, inter-frame gap: 24 on Ethernet).
	WireOverhead int
	// RcvWnd is the receiver's window when the connection starts, in
	// bytes (what the first ACKs advertise).
	RcvWnd int
}

// ErrConfig is wrapped by NewTCP's errors.
var ErrConfig = errors.New("transport: bad TCP configuration")

// maxEvents bounds the events in flight back to the sender. Past it, a new
// event merges into the newest one (counts add up, the later time wins),
// so nothing allocates and nothing is lost, only delayed.
const maxEvents = 8192

type evKind uint8

const (
	evAck    evKind = iota // segs delivered: the ACK reaches the sender
	evLoss                 // segs lost: duplicate ACKs reveal it
	evWindow               // the receiver's window changed (a window update)
)

type event struct {
	at   sim.Time
	kind evKind
	segs int32
	wnd  int32 // advertised window in bytes (evAck, evWindow)
}

// TCP is the sender of one connection.
type TCP struct {
	cfg TCPConfig

	cwnd     float64 // congestion window, segments
	ssthresh float64
	rwnd     int // receiver's advertised window, bytes
	inflight int // segments sent and neither acked nor known lost
	recovery sim.Time
	// lost counts segments dropped whose loss the sender has not learned
	// yet; lostAt is when the oldest of them was dropped and lostSeq its
	// frame: a frame sent after it that arrives brings the duplicate ACKs
	// that reveal the loss.
	lost    int
	lostAt  sim.Time
	lostSeq uint64

	// linkFree is when the sender's link is free again: no frame leaves
	// before it, and frames leave in order.
	linkFree sim.Time
	// clock is the time up to which events have been applied: the window
	// reflects them, so no frame may leave before it. An event reported
	// later for an earlier time takes effect at the clock.
	clock sim.Time

	// The next frame, decided and not yet taken.
	next     sim.Time // when it reaches the receiver
	nextSegs int
	haveNext bool

	ev         []event // ring of events, ordered by time
	head, size int

	c TCPCounters
}

// TCPCounters count what the sender did.
type TCPCounters struct {
	Frames       uint64 // frames sent
	Segments     uint64 // segments sent, retransmissions included
	Retransmits  uint64 // segments sent again after a loss
	Acked        uint64 // segments acknowledged
	FastRecovery uint64 // window reductions on duplicate ACKs
	Timeouts     uint64 // retransmission timeouts
	RcvWndLimit  uint64 // times the receiver's window, not cwnd, held a frame back
}

// NewTCP returns the sender at time 0.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	switch {
	case cfg.MSS < 1 || cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: mss %d", ErrConfig, cfg.MSS)
	case cfg.MaxSegs < 1 || cfg.MaxSegs*cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: %d segments of %d bytes exceed %d", ErrConfig, cfg.MaxSegs, cfg.MSS, GSOMaxSize)
	case cfg.RTT < 0 || cfg.HdrBytes < 0 || cfg.WireOverhead < 0 || cfg.LineBps < 0 || cfg.RcvWnd < 0:
		return nil, fmt.Errorf("%w: negative value", ErrConfig)
	}
	return &TCP{
		cfg:      cfg,
		cwnd:     InitCwnd,
		ssthresh: 1 << 30,
		rwnd:     cfg.RcvWnd,
		ev:       make([]event, maxEvents),
	}, nil
}

// Counters returns the sender's counters.
func (t *TCP) Counters() TCPCounters { return t.c }

// Cwnd is the congestion window in segments.
func (t *TCP) Cwnd() float64 { return t.cwnd }

// Ssthresh is the slow-start threshold in segments.
func (t *TCP) Ssthresh() float64 { return t.ssthresh }

// RcvWnd is the receiver's window as the sender last heard it, in bytes.
func (t *TCP) RcvWnd() int { return t.rwnd }

// InFlight is the segments sent and not yet acknowledged or known lost.
func (t *TCP) InFlight() int { return t.inflight }

// FrameBytes is the size of a frame of segs segments as the receiver gets
// it (the frame, without FCS).
func (t *TCP) FrameBytes(segs int) int { return segs*t.cfg.MSS + t.cfg.HdrBytes }

// Next is the next frame: when it reaches the receiver and how many
// segments it carries. ok is false when nothing will be sent until the
// receiver reports something (every segment in flight, windows closed).
// It does not consume the frame: Take does.
func (t *TCP) Next() (at sim.Time, segs int, ok bool) {
	if !t.haveNext {
		t.plan()
	}
	return t.next, t.nextSegs, t.haveNext
}

// Take consumes the frame Next returned: it is on its way. It returns the
// frame's sequence number (0, 1, 2 ...: the order frames were sent in),
// by which Delivered and Lost name it.
func (t *TCP) Take() uint64 {
	if !t.haveNext {
		t.plan()
		if !t.haveNext {
			return t.c.Frames
		}
	}
	seq := t.c.Frames
	segs := t.nextSegs
	send := t.next.Add(-t.cfg.RTT / 2)
	t.inflight += segs
	t.c.Frames++
	t.c.Segments += uint64(segs)
	t.linkFree = send.Add(t.wireTime(segs))
	t.haveNext = false
	return seq
}

// wireTime is how long segs segments take on the sender's link.
func (t *TCP) wireTime(segs int) sim.Duration {
	if t.cfg.LineBps == 0 {
		return 0
	}
	bits := float64(segs*(t.cfg.MSS+t.cfg.HdrBytes+t.cfg.WireOverhead)) * 8
	return sim.Duration(bits * 1e9 / t.cfg.LineBps)
}

// window is how many segments may be in flight now.
func (t *TCP) window() (segs int, byRcv bool) {
	cw := int(t.cwnd)
	rw := t.rwnd / t.cfg.MSS
	if rw < cw {
		return rw, true
	}
	return cw, false
}

// plan decides the next frame: the first time from the link being free at
// which the windows, with every event up to then applied, let a segment
// go. An event reported after the plan was made (the receiver runs ahead
// and behind the sender in its own batches) makes Next plan again.
func (t *TCP) plan() {
	s := max(t.linkFree, t.clock)
	for {
		t.apply(s)
		w, byRcv := t.window()
		if room := w - t.inflight; room >= 1 {
			segs := min(room, t.cfg.MaxSegs)
			t.next, t.nextSegs, t.haveNext = s.Add(t.cfg.RTT/2), segs, true
			return
		}
		if byRcv {
			t.c.RcvWndLimit++
		}
		at, ok := t.nextEvent()
		if !ok {
			return
		}
		if at > s {
			s = at
		}
	}
}

// nextEvent is the time of the next thing that can open the window: an
// event coming back, or the retransmission timeout of a loss nothing will
// reveal.
func (t *TCP) nextEvent() (sim.Time, bool) {
	var at sim.Time
	ok := false
	if t.size > 0 {
		at, ok = t.ev[t.head].at, true
	}
	if t.lost > 0 {
		rto := t.lostAt.Add(t.rto())
		if !ok || rto < at {
			at, ok = rto, true
		}
	}
	return at, ok
}

// rto is the retransmission timeout: Linux's max(TCP_RTO_MIN, srtt +
// 4 rttvar) with a steady RTT.
func (t *TCP) rto() sim.Duration {
	if r := t.cfg.RTT + t.cfg.RTT/2; r > RTOMin {
		return r
	}
	return RTOMin
}

// apply runs every event up to s, in time order.
func (t *TCP) apply(s sim.Time) {
	for {
		at, ok := t.nextEvent()
		if !ok || at > s {
			break
		}
		if t.lost > 0 && (t.size == 0 || t.lostAt.Add(t.rto()) <= t.ev[t.head].at) {
			// tcp_retransmit_timer: the window collapses to one segment.
			t.c.Timeouts++
			t.ssthresh = max(t.cwnd/2, 2)
			t.cwnd = 1
			t.recovery = at.Add(t.cfg.RTT)
			t.drop(t.lost)
			t.lost = 0
			continue
		}
		e := t.ev[t.head]
		t.head = (t.head + 1) % len(t.ev)
		t.size--
		switch e.kind {
		case evAck:
			t.inflight -= int(e.segs)
			t.c.Acked += uint64(e.segs)
			t.rwnd = int(e.wnd)
			if t.cwnd < t.ssthresh {
				t.cwnd += float64(e.segs) // slow start
			} else {
				t.cwnd += float64(e.segs) / t.cwnd // congestion avoidance
			}
			t.cwnd = min(t.cwnd, 1<<20)
		case evWindow:
			t.rwnd = int(e.wnd)
		case evLoss:
			// Fast retransmit (tcp_enter_recovery): one reduction per
			// window of data.
			if e.at >= t.recovery {
				t.c.FastRecovery++
				t.ssthresh = max(t.cwnd/2, 2)
				t.cwnd = t.ssthresh
				t.recovery = e.at.Add(t.cfg.RTT)
			}
			t.drop(int(e.segs))
		}
	}
	t.clock = max(t.clock, s)
}

// drop takes segs lost segments out of flight: they are sent again as
// the window allows (bulk data: which bytes does not matter).
func (t *TCP) drop(segs int) {
	t.inflight -= segs
	if t.inflight < 0 {
		t.inflight = 0
	}
	t.c.Retransmits += uint64(segs)
}

// push adds an event in time order (events come back nearly in order:
// a short walk from the tail).
func (t *TCP) push(e event) {
	if t.size == len(t.ev) {
		last := &t.ev[(t.head+t.size-1)%len(t.ev)]
		last.segs += e.segs
		if e.at > last.at {
			last.at = e.at
		}
		if e.kind == evAck || e.kind == evWindow {
			last.wnd = e.wnd
		}
		return
	}
	i := t.size
	for i > 0 && t.ev[(t.head+i-1)%len(t.ev)].at > e.at {
		t.ev[(t.head+i)%len(t.ev)] = t.ev[(t.head+i-1)%len(t.ev)]
		i--
	}
	t.ev[(t.head+i)%len(t.ev)] = e
	t.size++
	t.haveNext = false // the plan may change
}

// Delivered reports that frame seq, segs segments, reached the receiving
// socket at time at, which then advertised wnd bytes: the ACK reaches the
// sender half a round trip later. A frame sent after one the sender does
// not know is lost brings the duplicate ACKs that reveal the loss.
func (t *TCP) Delivered(at sim.Time, seq uint64, segs, wnd int) {
	t.push(event{at: at.Add(t.cfg.RTT / 2), kind: evAck, segs: int32(segs), wnd: int32(min(wnd, 1<<30))})
	if t.lost > 0 && seq > t.lostSeq {
		t.push(event{at: at.Add(t.cfg.RTT / 2), kind: evLoss, segs: int32(t.lost)})
		t.lost = 0
	}
}

// Lost reports that frame seq, segs segments, was dropped at time at (no
// buffer posted, a full host queue, a full socket). The sender learns of
// it from the duplicate ACKs of a later frame, or at its retransmission
// timeout.
func (t *TCP) Lost(at sim.Time, seq uint64, segs int) {
	if t.lost == 0 {
		t.lostAt, t.lostSeq = at, seq
	}
	t.lost += segs
	t.haveNext = false
}

// Window reports that the receiver's window became wnd bytes at time at
// (the application read: tcp_cleanup_rbuf sends a window update).
func (t *TCP) Window(at sim.Time, wnd int) {
	t.push(event{at: at.Add(t.cfg.RTT / 2), kind: evWindow, wnd: int32(min(wnd, 1<<30))})
}
