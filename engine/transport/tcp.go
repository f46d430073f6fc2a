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
// ACKs while the window is what holds the sender (tcp_is_cwnd_limited),
// one multiplicative decrease per window of data on a loss found by
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
	RTOMax   = 120 * sim.Second      // TCP_RTO_MAX
	// Jiffy is the timer tick at HZ=1000, the default of TCPConfig.Jiffy:
	// the granularity of TCP's retransmission and loss probe timers.
	Jiffy = sim.Millisecond
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
	// Jiffy is 1/HZ of the sender's kernel (0: HZ=1000): TCP's timers
	// count in whole jiffies, TCP_TIMEOUT_MIN is two.
	Jiffy sim.Duration
}

// ErrConfig is wrapped by NewTCP's errors.
var ErrConfig = errors.New("transport: bad TCP configuration")

// maxEvents bounds the events in flight back to the sender. Past it, a new
// event merges into the newest one (counts add up, the later time wins),
// so nothing allocates and nothing is lost, only delayed.
const maxEvents = 8192

// MaxInFlight is the most frames a sender keeps unacknowledged, whatever
// its windows say: a send buffer (Linux's tcp_wmem maximum, 4 MiB, holds
// about 2900 MSS-sized segments).
const MaxInFlight = 4096

type evKind uint8

const (
	evAck    evKind = iota // segs delivered: the ACK reaches the sender
	evLoss                 // segs lost: duplicate ACKs reveal it
	evWindow               // the receiver's window changed (a window update)
)

type event struct {
	at   sim.Time
	seq  uint64 // the frame reported (evAck)
	kind evKind
	segs int32
	wnd  int32 // advertised window in bytes (evAck, evWindow)
}

// TCP is the sender of one connection.
//
// Tail losses: when nothing comes back and the window is closed, the
// sender sends a tail loss probe (RACK-TLP, RFC 8985; Linux since 4.18)
// after 2 RTT, rounded up to whole jiffies, and TCP_TIMEOUT_MIN; the
// probe's report reveals the hole and the window halves. Only when the
// probe is lost too, or the sender is in recovery already, does the
// retransmission timer collapse the window.
type TCP struct {
	cfg TCPConfig

	cwnd     float64 // congestion window, segments
	ssthresh float64
	rwnd     int // receiver's advertised window, bytes
	inflight int // segments sent and neither acked nor known lost
	recovery sim.Time
	// sent[seq % len(sent)] is how many segments frame seq carries, for
	// the frames in flight: [expected, next frame). expected is the
	// oldest frame the receiver has not reported: a report of a later one
	// means those before it were lost on the way (the path is FIFO), as
	// the duplicate ACKs it brings tell a real sender.
	sent     []int32
	expected uint64
	// progress is when the sender last heard anything (an ACK or a
	// window update arriving): with segments in flight and nothing heard
	// for a retransmission timeout, they are taken as lost.
	progress sim.Time

	// linkFree is when the sender's link is free again: no frame leaves
	// before it, and frames leave in order.
	linkFree sim.Time
	// clock is the time up to which events have been applied: the window
	// reflects them, so no frame may leave before it. An event reported
	// later for an earlier time takes effect at the clock.
	clock sim.Time

	// The next frame, decided and not yet taken. nextRTO: it is the
	// retransmission after a timeout, which happens only if nothing is
	// reported before it (Take applies the timeout; a report plans again).
	// nextProbe: it is a tail loss probe.
	next      sim.Time // when it reaches the receiver
	nextSegs  int
	haveNext  bool
	nextRTO   bool
	nextProbe bool
	// probed: a tail loss probe went out since the last ACK.
	probed bool
	// Loss recovery (TCP_CA_Recovery, or TCP_CA_Loss after a timeout):
	// entered when a report reveals a loss or the timer fires, left when
	// a frame sent after that (at or past highSeq, the snd_nxt of then)
	// is reported. In it no tail loss probe is scheduled: a tail that
	// goes silent waits for the retransmission timer.
	inRecovery bool
	highSeq    uint64
	// backoff is icsk_backoff: the timeouts since the last ACK, each
	// doubling the next retransmission timeout (tcp_retransmit_timer).
	backoff uint

	// Congestion window validation (tcp_cwnd_validate): the most segments
	// out in the current window of data, the frame that ends that window,
	// and whether the window was the limit then. The window grows only
	// while it is what holds the sender (tcp_is_cwnd_limited).
	maxPacketsOut int
	maxPacketsSeq uint64
	cwndLimited   bool

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
	LostFrames   uint64 // frames the receiver's reports showed lost (timeouts aside)
	FastRecovery uint64 // window reductions on duplicate ACKs
	Timeouts     uint64 // retransmission timeouts
	Probes       uint64 // tail loss probes sent
	RcvWndLimit  uint64 // times the receiver's window, not cwnd, held a frame back
}

// NewTCP returns the sender at time 0.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	switch {
	case cfg.MSS < 1 || cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: mss %d", ErrConfig, cfg.MSS)
	case cfg.MaxSegs < 1 || cfg.MaxSegs*cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: %d segments of %d bytes exceed %d", ErrConfig, cfg.MaxSegs, cfg.MSS, GSOMaxSize)
	case cfg.RTT < 0 || cfg.HdrBytes < 0 || cfg.WireOverhead < 0 || cfg.LineBps < 0 || cfg.RcvWnd < 0 || cfg.Jiffy < 0:
		return nil, fmt.Errorf("%w: negative value", ErrConfig)
	}
	if cfg.Jiffy == 0 {
		cfg.Jiffy = Jiffy
	}
	return &TCP{
		cfg:      cfg,
		cwnd:     InitCwnd,
		ssthresh: 1 << 30,
		rwnd:     cfg.RcvWnd,
		ev:       make([]event, maxEvents),
		sent:     make([]int32, MaxInFlight),
	}, nil
}

// MSS is the connection's payload bytes per segment.
func (t *TCP) MSS() int { return t.cfg.MSS }

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

// Expected is the oldest frame the receiver has not reported.
func (t *TCP) Expected() uint64 { return t.expected }

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
	send := t.next.Add(-t.cfg.RTT / 2)
	if t.nextRTO {
		t.timeout(send)
	}
	if t.nextProbe {
		t.c.Probes++
		t.probed, t.nextProbe = true, false
	}
	seq := t.c.Frames
	segs := t.nextSegs
	if t.inflight == 0 {
		t.progress = send // the retransmission timer starts with the first segment out
	}
	t.sent[seq%MaxInFlight] = int32(segs)
	t.inflight += segs
	t.c.Frames++
	t.c.Segments += uint64(segs)
	t.linkFree = send.Add(t.wireTime(segs))
	t.haveNext = false
	t.validate(t.inflight >= int(t.cwnd))
	return seq
}

// validate is tcp_cwnd_validate's bookkeeping, run after tcp_write_xmit
// sent or found the window full: once per window of data (snd_una past
// max_packets_seq), or when more is out than recorded, or when the window
// is the limit, record what is out and whether the window held it.
func (t *TCP) validate(limited bool) {
	if t.expected >= t.maxPacketsSeq || t.inflight > t.maxPacketsOut || limited {
		t.maxPacketsOut = t.inflight
		t.maxPacketsSeq = t.c.Frames
		t.cwndLimited = limited
	}
}

// grow is Reno's tcp_cong_avoid for segs newly acknowledged segments.
func (t *TCP) grow(segs int) {
	if t.cwnd < t.ssthresh {
		t.cwnd += float64(segs) // slow start
	} else {
		t.cwnd += float64(segs) / t.cwnd // congestion avoidance
	}
	t.cwnd = min(t.cwnd, 1<<20)
}

// isCwndLimited is tcp_is_cwnd_limited: in slow start the window may grow
// to twice what was out; after it, only if the window held the sender
// back in the last window of data. A sender held by the receiver's window
// does not grow its own (tcp_reno_cong_avoid and bictcp_cong_avoid return
// at once).
func (t *TCP) isCwndLimited() bool {
	if t.cwnd < t.ssthresh {
		return t.cwnd < float64(2*t.maxPacketsOut)
	}
	return t.cwndLimited
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

// frames is how many frames are in flight.
func (t *TCP) frames() uint64 { return t.c.Frames - t.expected }

// plan decides the next frame: the first time from the link being free at
// which the windows, with every event up to then applied, let a segment
// go. An event reported after the plan was made (the receiver runs ahead
// and behind the sender in its own batches) makes Next plan again.
func (t *TCP) plan() {
	s := max(t.linkFree, t.clock)
	for {
		t.apply(s)
		w, byRcv := t.window()
		if room := w - t.inflight; room >= 1 && t.frames() < MaxInFlight {
			segs := min(room, t.cfg.MaxSegs)
			t.next, t.nextSegs, t.haveNext = s.Add(t.cfg.RTT/2), segs, true
			return
		}
		if byRcv {
			t.c.RcvWndLimit++
		} else {
			t.validate(true)
		}
		if t.size == 0 {
			if t.inflight > 0 {
				// Nothing will come back unless the receiver reports
				// something. RACK-TLP (tcp_schedule_loss_probe): after
				// two round trips and TCP_TIMEOUT_MIN the sender probes
				// with one more segment, whose ACK shows the receiver's
				// hole and starts a fast recovery; if that is lost too,
				// or the sender is in recovery already (a probe is
				// scheduled only in TCP_CA_Open or TCP_CA_CWR), the
				// retransmission timer.
				if !t.probed && !t.inRecovery {
					at := max(s, t.progress.Add(t.probeTimeout()))
					t.next, t.nextSegs, t.haveNext, t.nextProbe = at.Add(t.cfg.RTT/2), 1, true, true
				} else {
					at := max(s, t.progress.Add(t.rto()))
					t.next, t.nextSegs, t.haveNext, t.nextRTO = at.Add(t.cfg.RTT/2), 1, true, true
				}
			}
			return
		}
		if at := t.ev[t.head].at; at > s {
			s = at
		}
	}
}

// timeout is tcp_retransmit_timer at time at: nothing came back for an
// RTO; what is in flight is lost and the window collapses to one segment.
func (t *TCP) timeout(at sim.Time) {
	t.c.Timeouts++
	t.backoff++
	// TCP_CA_Loss: no probe either until what was out is acknowledged.
	t.inRecovery, t.highSeq = true, t.c.Frames
	t.ssthresh = max(t.cwnd/2, 2)
	t.cwnd = 1
	t.recovery = at.Add(t.cfg.RTT)
	t.drop(t.inflight)
	t.expected = t.c.Frames
	t.progress = at
	t.nextRTO = false
}

// probeTimeout is tcp_schedule_loss_probe's timeout with more than one
// segment out: usecs_to_jiffies(2 srtt), which rounds up to whole
// jiffies, plus TCP_TIMEOUT_MIN.
func (t *TCP) probeTimeout() sim.Duration {
	jf := t.cfg.Jiffy
	j := (2*t.cfg.RTT + jf - 1) / jf
	return j*jf + 2*jf // TCP_TIMEOUT_MIN: 2 jiffies
}

// rto is the retransmission timeout: Linux's max(TCP_RTO_MIN, srtt +
// 4 rttvar) with a steady RTT, doubled for each timeout since the last
// ACK (icsk_rto << 1 in tcp_retransmit_timer), at most TCP_RTO_MAX.
func (t *TCP) rto() sim.Duration {
	r := max(t.cfg.RTT+t.cfg.RTT/2, RTOMin)
	return min(r<<min(t.backoff, 10), RTOMax) // 10 doublings of TCP_RTO_MIN pass TCP_RTO_MAX
}

// apply runs every event up to s, in time order.
func (t *TCP) apply(s sim.Time) {
	for t.size > 0 && t.ev[t.head].at <= s {
		e := t.ev[t.head]
		t.progress = e.at
		t.head = (t.head + 1) % len(t.ev)
		t.size--
		switch e.kind {
		case evAck:
			t.probed = false
			t.backoff = 0 // an RTT measured: tcp_ack_update_rtt resets icsk_backoff
			if t.inRecovery && e.seq >= t.highSeq {
				t.inRecovery = false // high_seq acknowledged: TCP_CA_Open again
			}
			t.inflight -= int(e.segs)
			t.c.Acked += uint64(e.segs)
			t.rwnd = int(e.wnd)
			if t.isCwndLimited() {
				t.grow(int(e.segs))
			}
		case evWindow:
			t.rwnd = int(e.wnd)
		case evLoss:
			// Fast retransmit (tcp_enter_recovery): one reduction per
			// window of data.
			if !t.inRecovery {
				t.inRecovery, t.highSeq = true, t.c.Frames
			}
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
		last.seq = max(last.seq, e.seq)
		t.haveNext, t.nextRTO, t.nextProbe = false, false, false
		return
	}
	i := t.size
	for i > 0 && t.ev[(t.head+i-1)%len(t.ev)].at > e.at {
		t.ev[(t.head+i)%len(t.ev)] = t.ev[(t.head+i-1)%len(t.ev)]
		i--
	}
	t.ev[(t.head+i)%len(t.ev)] = e
	t.size++
	t.haveNext, t.nextRTO, t.nextProbe = false, false, false // the plan may change
}

// Delivered reports that frame seq reached the receiving socket at time
// at, which then advertised wnd bytes: the ACK reaches the sender half a
// round trip later. Frames sent before seq and not reported were lost on
// the way (the path keeps order): the duplicate ACKs this frame brings
// tell the sender so. A report for a frame already given up on (taken as
// lost at a timeout) only updates the window.
func (t *TCP) Delivered(at sim.Time, seq uint64, wnd int) {
	ackAt := at.Add(t.cfg.RTT / 2)
	wnd = min(wnd, 1<<30)
	if seq < t.expected || seq >= t.c.Frames {
		t.push(event{at: ackAt, kind: evWindow, wnd: int32(wnd)})
		return
	}
	if seq > t.expected {
		lost := int32(0)
		for s := t.expected; s < seq; s++ {
			lost += t.sent[s%MaxInFlight]
		}
		t.c.LostFrames += seq - t.expected
		t.push(event{at: ackAt, kind: evLoss, segs: lost})
	}
	t.push(event{at: ackAt, seq: seq, kind: evAck, segs: t.sent[seq%MaxInFlight], wnd: int32(wnd)})
	t.expected = seq + 1
}

// Window reports that the receiver's window became wnd bytes at time at
// (the application read: tcp_cleanup_rbuf sends a window update).
func (t *TCP) Window(at sim.Time, wnd int) {
	t.push(event{at: at.Add(t.cfg.RTT / 2), kind: evWindow, wnd: int32(min(wnd, 1<<30))})
}

// The receive window (net/ipv4/tcp_output.c tcp_select_window,
// include/net/tcp.h tcp_win_from_space).
const (
	// RmemToWinScale is TCP_RMEM_TO_WIN_SCALE: scaling ratios are in
	// 1/256ths.
	RmemToWinScale = 8
	// DefaultScalingRatio is TCP_DEFAULT_SCALING_RATIO, what a socket
	// assumes before it has measured a packet: 1200 bytes of payload in
	// SKB_TRUESIZE(4096) = 4096 + 256 + 320 bytes of memory.
	DefaultScalingRatio = (1200 << RmemToWinScale) / (4096 + 256 + 320)
)

// WinFromSpace is tcp_win_from_space: how much window space bytes of
// socket memory (counted in truesize, as sk_rmem_alloc is) are worth.
// With scaling (6.6+) the socket scales by the payload-to-truesize ratio
// it measured on its last full-sized packet (tp->scaling_ratio, in 1/256:
// ScalingRatio); before, it kept half for overhead (tcp_adv_win_scale 1).
func WinFromSpace(space, ratio int, scaling bool) int {
	if space <= 0 {
		return 0
	}
	if scaling {
		return int(int64(space) * int64(ratio) >> RmemToWinScale)
	}
	return space - space>>1
}

// ScalingRatio is the scaling ratio tcp_measure_rcv_mss takes from a
// packet of len bytes held in truesize bytes (at least 1).
func ScalingRatio(len, truesize int) int {
	if truesize <= 0 {
		return DefaultScalingRatio
	}
	return max(1, len<<RmemToWinScale/truesize)
}
