// Package transport models the senders of the measured workloads: an
// iperf3-like bulk TCP sender, clocked by the receiver's ACKs and limited by
// its congestion window and the receiver's advertised window. It is pure
// bookkeeping in virtual time: the receiving side (device, driver, socket)
// tells it what arrived, what was dropped and how much room the socket
// has; it says when the next frame reaches the receiver and how big it is.
//
// The sender is Linux's with its default congestion control, CUBIC
// (cubic.go): slow start from an initial window of 10 segments
// (TCP_INIT_CWND), capped at ssthresh (tcp_slow_start), HyStart leaving
// it early; CUBIC's growth while the window is what holds the sender
// (tcp_is_cwnd_limited); on a loss the SACKs reveal, one reduction
// to beta = 0.7 of the window per recovery, spread over the recovery by
// PRR (tcp_cwnd_reduction); losses marked by RACK, after its reordering
// window (tcp_rack_detect_loss); a tail loss probe (RACK-TLP) when the
// ACKs stop; and a retransmission timeout from tcp_rtt_estimator's srtt
// and rttvar, at least TCP_RTO_MIN past the srtt. TSO packets are sized
// by the pacing rate (tcp_tso_autosize); pacing itself is left out;
// docs/scenario.md lists the simplifications.
//
// The sender's application (app.go) writes into it, each write costing
// tcp_sendmsg, and Nagle and autocorking decide what those writes become
// on the sender's line. WinFromSpace is tcp_win_from_space. The world
// (engine/stream.go) tells the sender what each socket takes and the
// window it advertises, and wakes the driver when the window opens.
package transport

import (
	"errors"
	"fmt"
	"math"

	"ringlab/engine/sim"
)

// Constants of the Linux TCP stack (include/net/tcp.h).
const (
	InitCwnd = 10 // TCP_INIT_CWND
	// DupThresh is tp->reordering at its default, TCP_FASTRETRANS_THRESH
	// (sysctl_tcp_reordering): with this many segments SACKed past a
	// hole, RACK marks it lost without waiting (tcp_rack_reo_wnd).
	DupThresh = 3
	RTOMin    = 200 * sim.Millisecond // TCP_RTO_MIN
	RTOMax    = 120 * sim.Second      // TCP_RTO_MAX
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

	// The sending application, iperf3's loop of write calls: WriteBytes
	// a write (iperf3 -l), WriteCost the sender's CPU time a write takes
	// (0: the sender always has data). Each write's tcp_push sends what
	// Nagle and autocorking let go (App.fill).
	WriteBytes int
	WriteCost  sim.Duration
	// TxFree is how long a frame the sender sent keeps its skb in the
	// sender's qdisc and device after it left (TX completion): while one
	// does, a write's push of less than a full TSO packet waits for it
	// (tcp_should_autocork). 0: freed as it leaves (a tap device orphans
	// it).
	TxFree sim.Duration
	// NoDelay is TCP_NODELAY (iperf3 -N): no Nagle.
	NoDelay bool
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

	cwnd     int // snd_cwnd, segments
	cwndCnt  int // snd_cwnd_cnt: ACKed segments toward the next increase
	ssthresh int // snd_ssthresh
	rwnd     int // receiver's advertised window, bytes
	inflight int // segments sent and neither acked nor known lost
	cc       cubic
	// sent[seq % len(sent)] is how many segments frame seq carries, for
	// the frames in flight: [expected, next frame). expected is the
	// oldest frame the receiver has not reported: a report of a later one
	// means those before it were lost on the way (the path is FIFO), as
	// the SACK it brings tells a real sender.
	sent     []int32
	sentAt   []sim.Time // when frame seq left the sender, for its RTT sample
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
	nextBytes int // its payload
	nextRetx  int // of its segments, those sent again after a loss (owed)
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
	ca      caState
	highSeq uint64
	// PRR (tcp_cwnd_reduction): the window at the reduction's start,
	// and the segments delivered and sent since.
	priorCwnd, prrDelivered, prrOut int
	// una is snd_una as the sender knows it: one past the last frame
	// acknowledged.
	una uint64
	// RACK (tcp_rack_detect_loss): the segments of holes the reports
	// revealed and RACK has not marked lost yet, when the first of them
	// was sent, the segments SACKed past them (sacked_out), and when the
	// reordering timer marks them lost (ICSK_TIME_REO_TIMEOUT).
	rackSegs   int32
	rackSent   sim.Time
	rackSacked int
	rackAt     sim.Time
	// minRTT is tcp_min_rtt in us: the least RTT sample (the kernel keeps
	// it over tcp_min_rtt_wlen, 300 s, longer than any run).
	minRTT int64
	// tcp_rtt_estimator's state, in us (srtt in 1/8 us), and rttSeq, the
	// frame whose ACK ends the current round of rttvar's decay.
	srtt, mdev, mdevMax, rttvar int64
	rttSeq                      uint64
	// pacingRate is sk_pacing_rate in bytes per second as the last ACK
	// left it (tcp_update_pacing_rate): HyStart's ACK train allows for
	// it.
	pacingRate int64
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
	// lastEvent is when the last event applied took effect: a plan at
	// that time is the ACK's push (tcp_data_snd_check), not a write's.
	lastEvent sim.Time

	// What the application wrote and what of it went (bytes of the
	// stream, retransmissions aside): newOff is snd_nxt, unaOff snd_una,
	// smlOff snd_sml (the end of the last segment sent short of an MSS,
	// tcp_minshall_update), endOff[seq % len] newOff after frame seq.
	// owed is the segments lost and not yet sent again; freeAt when the
	// last frame sent frees its skb (TX completion).
	app                    app
	newOff, unaOff, smlOff int64
	endOff                 []int64
	owed                   int
	freeAt                 sim.Time
	// corked and held: autocorking, or Nagle, holds what the application
	// wrote since the last frame went (counted once).
	corked, held bool

	c TCPCounters
}

// TCPCounters count what the sender did.
type TCPCounters struct {
	Frames       uint64 // frames sent
	Segments     uint64 // segments sent, retransmissions included
	Retransmits  uint64 // segments sent again after a loss
	Acked        uint64 // segments acknowledged
	LostFrames   uint64 // frames the receiver's reports showed lost (timeouts aside)
	FastRecovery uint64 // window reductions on a loss RACK marked
	Timeouts     uint64 // retransmission timeouts
	Probes       uint64 // tail loss probes sent
	RcvWndLimit  uint64 // times the receiver's window, not cwnd, held a frame back
	// Autocorked counts the pushes autocorking deferred
	// (TcpExtTCPAutoCorking); NagleHeld the times Nagle held a short
	// segment back with the windows open; Short the frames sent with a
	// segment short of an MSS.
	Autocorked, NagleHeld, Short uint64
	// HyStartTrain and HyStartDelay count HyStart's exits from slow start
	// (TcpExtTCPHystartTrainDetect, TcpExtTCPHystartDelayDetect).
	HyStartTrain, HyStartDelay uint64
}

// caState is the sender's icsk_ca_state, as far as the model has it.
type caState uint8

const (
	caOpen     caState = iota // TCP_CA_Open
	caRecovery                // TCP_CA_Recovery: fast retransmit, PRR
	caLoss                    // TCP_CA_Loss: after a retransmission timeout
)

// NewTCP returns the sender at time 0.
func NewTCP(cfg TCPConfig) (*TCP, error) {
	switch {
	case cfg.MSS < 1 || cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: mss %d", ErrConfig, cfg.MSS)
	case cfg.MaxSegs < 1 || cfg.MaxSegs*cfg.MSS > GSOMaxSize:
		return nil, fmt.Errorf("%w: %d segments of %d bytes exceed %d", ErrConfig, cfg.MaxSegs, cfg.MSS, GSOMaxSize)
	case cfg.RTT < 0 || cfg.HdrBytes < 0 || cfg.WireOverhead < 0 || cfg.LineBps < 0 || cfg.RcvWnd < 0 || cfg.Jiffy < 0 ||
		cfg.WriteBytes < 0 || cfg.WriteCost < 0 || cfg.TxFree < 0:
		return nil, fmt.Errorf("%w: negative value", ErrConfig)
	case (cfg.WriteBytes == 0) != (cfg.WriteCost == 0):
		return nil, fmt.Errorf("%w: write_bytes %d with a write cost of %v: want both or neither", ErrConfig, cfg.WriteBytes, cfg.WriteCost)
	}
	if cfg.Jiffy == 0 {
		cfg.Jiffy = Jiffy
	}
	t := &TCP{
		cfg:      cfg,
		cwnd:     InitCwnd,
		ssthresh: InfiniteSsthresh,
		rwnd:     cfg.RcvWnd,
		ev:       make([]event, maxEvents),
		sent:     make([]int32, MaxInFlight),
		sentAt:   make([]sim.Time, MaxInFlight),
		endOff:   make([]int64, MaxInFlight),
	}
	// The first write is done when the connection starts sending.
	t.app.written = int64(cfg.WriteBytes)
	t.app.at = sim.Time(0).Add(cfg.WriteCost)
	// The handshake measured the path: the SYN-ACK's RTT sample
	// (tcp_synack_rtt_meas) seeds srtt and the RTO; cubictcp_init starts
	// HyStart's first round.
	t.minRTT = max(1, int64(cfg.RTT/sim.Microsecond))
	t.rttEstimator(t.minRTT)
	t.updatePacingRate() // as the handshake's ACK leaves it (tcp_cong_control)
	t.cc.hystartReset(0, 0)
	return t, nil
}

// MSS is the connection's payload bytes per segment.
func (t *TCP) MSS() int { return t.cfg.MSS }

// Counters returns the sender's counters.
func (t *TCP) Counters() TCPCounters { return t.c }

// Cwnd is the congestion window in segments.
func (t *TCP) Cwnd() int { return t.cwnd }

// Ssthresh is the slow-start threshold in segments (InfiniteSsthresh
// until the first loss or HyStart sets it).
func (t *TCP) Ssthresh() int { return t.ssthresh }

// SRTT is the smoothed round trip the sender measured (tcp_rtt_estimator).
func (t *TCP) SRTT() sim.Duration { return sim.Duration(t.srtt>>3) * sim.Microsecond }

// RTO is the retransmission timeout now, before backoff (__tcp_set_rto).
func (t *TCP) RTO() sim.Duration { return t.baseRTO() }

// RcvWnd is the receiver's window as the sender last heard it, in bytes.
func (t *TCP) RcvWnd() int { return t.rwnd }

// InFlight is the segments sent and not yet acknowledged or known lost.
func (t *TCP) InFlight() int { return t.inflight }

// Expected is the oldest frame the receiver has not reported.
func (t *TCP) Expected() uint64 { return t.expected }

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

// NextLen is the length of the frame Next returns, as the receiver gets
// it (headers and payload, no FCS); a full segment's when there is none.
func (t *TCP) NextLen() int {
	if !t.haveNext {
		t.plan()
	}
	if !t.haveNext || t.nextBytes == 0 {
		return t.cfg.MSS + t.cfg.HdrBytes
	}
	return t.nextBytes + t.cfg.HdrBytes
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
		t.nextRetx = min(t.nextSegs, t.owed) // the first lost segment, again
	}
	if t.nextProbe {
		t.c.Probes++
		t.probed, t.nextProbe = true, false
	}
	seq := t.c.Frames
	segs := t.nextSegs
	t.owed -= t.nextRetx
	if newBytes := t.nextBytes - t.nextRetx*t.cfg.MSS; newBytes > 0 {
		t.newOff += int64(newBytes)
		if newBytes%t.cfg.MSS != 0 {
			t.smlOff = t.newOff // tcp_minshall_update
			t.c.Short++
		}
	}
	t.endOff[seq%MaxInFlight] = t.newOff
	t.corked, t.held = false, false
	if t.inflight == 0 {
		t.progress = send // the retransmission timer starts with the first segment out
	}
	t.sent[seq%MaxInFlight] = int32(segs)
	t.sentAt[seq%MaxInFlight] = send
	if t.ca == caRecovery {
		t.prrOut += segs
	}
	t.inflight += segs
	t.c.Frames++
	t.c.Segments += uint64(segs)
	t.linkFree = send.Add(t.wireTime(segs))
	t.freeAt = max(t.freeAt, t.linkFree.Add(t.cfg.TxFree))
	t.haveNext = false
	t.validate(t.inflight >= t.cwnd)
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

// congAvoid is cubictcp_cong_avoid for acked newly acknowledged
// segments at now: nothing unless the window is what holds the sender
// (tcp_is_cwnd_limited); slow start up to ssthresh (tcp_slow_start), the
// rest along CUBIC's curve (bictcp_update, tcp_cong_avoid_ai).
func (t *TCP) congAvoid(acked int, now sim.Time) {
	if !t.isCwndLimited() {
		return
	}
	if t.cwnd < t.ssthresh {
		// tcp_slow_start: cwnd = min(cwnd + acked, ssthresh), the rest
		// of acked to congestion avoidance.
		cw := min(t.cwnd+acked, t.ssthresh)
		acked -= cw - t.cwnd
		t.cwnd = min(cw, maxCwnd)
		if acked <= 0 {
			return
		}
	}
	t.cc.update(uint32(t.cwnd), uint32(acked), t.jiffies(now), t.cfg.Jiffy)
	// tcp_cong_avoid_ai with w = cnt: credits accumulated at a higher w
	// are applied gently now.
	w := int(t.cc.cnt)
	if t.cwndCnt >= w {
		t.cwndCnt = 0
		t.cwnd++
	}
	t.cwndCnt += acked
	if t.cwndCnt >= w {
		d := t.cwndCnt / w
		t.cwndCnt -= d * w
		t.cwnd += d
	}
	t.cwnd = min(t.cwnd, maxCwnd)
}

// maxCwnd bounds the window (snd_cwnd_clamp is far above what the model
// can have in flight: MaxInFlight frames).
const maxCwnd = 1 << 20

// jiffies is tcp_jiffies32 at now.
func (t *TCP) jiffies(now sim.Time) int64 { return int64(now.Sub(0) / t.cfg.Jiffy) }

// isCwndLimited is tcp_is_cwnd_limited: in slow start the window may grow
// to twice what was out; after it, only if the window held the sender
// back in the last window of data. A sender held by the receiver's window
// does not grow its own (tcp_reno_cong_avoid and bictcp_cong_avoid return
// at once).
func (t *TCP) isCwndLimited() bool {
	if t.cwnd < t.ssthresh {
		return t.cwnd < 2*t.maxPacketsOut
	}
	return t.cwndLimited
}

// rttEstimator is tcp_rtt_estimator for an RTT sample of m us: srtt
// moves an eighth toward it, mdev a quarter toward its error, and rttvar
// follows mdev's largest value over a round, at least TCP_RTO_MIN.
func (t *TCP) rttEstimator(m int64) {
	const rtoMinUs = int64(RTOMin / sim.Microsecond)
	srtt := t.srtt
	if srtt != 0 {
		m -= srtt >> 3
		srtt += m
		if m < 0 {
			m = -m
			m -= t.mdev >> 2
			if m > 0 {
				m >>= 3
			}
		} else {
			m -= t.mdev >> 2
		}
		t.mdev += m
		if t.mdev > t.mdevMax {
			t.mdevMax = t.mdev
			if t.mdevMax > t.rttvar {
				t.rttvar = t.mdevMax
			}
		}
		if t.una > t.rttSeq { // after(snd_una, rtt_seq): a round has passed
			if t.mdevMax < t.rttvar {
				t.rttvar -= (t.rttvar - t.mdevMax) >> 2
			}
			t.rttSeq = t.c.Frames
			t.mdevMax = rtoMinUs
		}
	} else {
		srtt = m << 3
		t.mdev = m << 1
		t.rttvar = max(t.mdev, rtoMinUs)
		t.mdevMax = t.rttvar
		t.rttSeq = t.c.Frames
	}
	t.srtt = max(1, srtt)
}

// baseRTO is __tcp_set_rto: srtt + rttvar, in whole jiffies, at most
// TCP_RTO_MAX (tcp_bound_rto).
func (t *TCP) baseRTO() sim.Duration {
	j := usecsToJiffies(t.srtt>>3+t.rttvar, t.cfg.Jiffy)
	return min(sim.Duration(j)*t.cfg.Jiffy, RTOMax)
}

// hystartAckDelay is hystart_ack_delay: the time a 64 KiB GSO packet
// takes four times over at the pacing rate, at most 1 ms, in us.
func (t *TCP) hystartAckDelay() int64 {
	if t.pacingRate <= 0 {
		return 0
	}
	return min(1000, int64(GSOMaxSize)*4*1_000_000/t.pacingRate)
}

// Sizing a TSO packet (tcp_sk_init's defaults, sock.h).
const (
	minTSOSegs  = 2  // tcp_min_tso_segs
	tsoRTTLog   = 9  // tcp_tso_rtt_log (5.18): 512 µs
	pacingShift = 10 // sk_pacing_shift, SK_PACING_SHIFT: a millisecond's worth
)

// tsoSegs is tcp_tso_segs: the segments one TSO packet of the sender
// carries (tcp_tso_autosize, 6.6): what the pacing rate sends in about a
// millisecond (sk_pacing_rate >> sk_pacing_shift), plus GSO_MAX_SIZE
// halved for each doubling of min_rtt past 512 µs (min_rtt >>
// tcp_tso_rtt_log), at most gso_max_size, at least tcp_min_tso_segs; no
// more than a frame may carry. On a LAN's round trip the second term
// alone makes every TSO packet full; across a WAN the packets follow the
// pacing rate, two segments at a 10 ms round trip's first window.
func (t *TCP) tsoSegs() int {
	if t.cfg.MaxSegs == 1 {
		return 1
	}
	bytes := t.pacingRate >> pacingShift
	if r := t.minRTT >> tsoRTTLog; r < 32 {
		bytes += GSOMaxSize >> r
	}
	bytes = min(bytes, GSOMaxSize)
	return min(max(int(bytes)/t.cfg.MSS, minTSOSegs), t.cfg.MaxSegs)
}

// updatePacingRate is tcp_update_pacing_rate: twice the window a round
// trip in slow start's first half, 1.2 times after.
func (t *TCP) updatePacingRate() {
	ratio := int64(pacingCARatio)
	if t.cwnd < t.ssthresh/2 {
		ratio = pacingSSRatio
	}
	t.pacingRate = int64(t.cfg.MSS) * (1_000_000 / 100 << 3) * ratio * int64(max(t.cwnd, t.inflight)) / max(1, t.srtt)
}

// acked is cubictcp_acked with the RTT sample of an ACK arriving at now:
// delay_min, and HyStart while in slow start with at least
// hystart_low_window segments.
func (t *TCP) acked(delayUs int64, now sim.Time, seq uint64) {
	c := &t.cc
	if c.epoch && t.jiffies(now)-c.epochStart < int64(sim.Second/t.cfg.Jiffy) {
		return // delay samples right after a fast recovery are discarded
	}
	delay := uint32(max(1, delayUs))
	if c.delayMin == 0 || c.delayMin > delay {
		c.delayMin = delay
	}
	if c.found || t.cwnd >= t.ssthresh || t.cwnd < hystartLowWindow {
		return
	}
	// hystart_update.
	nowUs := int64(now.Sub(0) / sim.Microsecond)
	if seq >= c.endSeq { // after(snd_una, end_seq)
		c.hystartReset(nowUs, t.c.Frames)
	}
	// ACK train: ACKs closely spaced since the round began, for longer
	// than half the path's delay (no pacing: SK_PACING_NONE).
	if nowUs-c.lastAck <= hystartAckDelta {
		c.lastAck = nowUs
		threshold := (int64(c.delayMin) + t.hystartAckDelay()) >> 1
		if nowUs-c.roundStart > threshold {
			c.found = true
			t.c.HyStartTrain++
			t.ssthresh = t.cwnd
		}
	}
	// Delay: the round's least RTT over 8 samples grew past delay_min
	// by an eighth of it, 4 to 16 ms.
	if c.currRTT > delay {
		c.currRTT = delay
	}
	if c.sampleCnt < hystartMinSample {
		c.sampleCnt++
	} else if c.currRTT > c.delayMin+min(max(c.delayMin>>3, hystartDelayMin), hystartDelayMax) {
		c.found = true
		t.c.HyStartDelay++
		t.ssthresh = t.cwnd
	}
}

// cwndReduction is tcp_cwnd_reduction (PRR, RFC 6937) for delivered
// segments newly delivered in recovery: while more is out than ssthresh
// the sender sends ssthresh/prior_cwnd of what is delivered, after that
// as much as is delivered, up to ssthresh; the first ACK always lets the
// retransmission go. The ACKs of a recovery are SACKs: snd_una does not
// advance, so no extra segment (FLAG_SND_UNA_ADVANCED).
func (t *TCP) cwndReduction(delivered int) {
	if delivered <= 0 || t.priorCwnd == 0 {
		return
	}
	t.prrDelivered += delivered
	delta := t.ssthresh - t.inflight
	var sndcnt int
	if delta < 0 {
		sndcnt = (t.ssthresh*t.prrDelivered+t.priorCwnd-1)/t.priorCwnd - t.prrOut
	} else {
		sndcnt = min(delta, max(t.prrDelivered-t.prrOut, delivered))
	}
	if t.prrOut == 0 {
		sndcnt = max(sndcnt, 1)
	}
	t.cwnd = t.inflight + max(sndcnt, 0)
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
	cw := t.cwnd
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
		wait := never
		if room := w - t.inflight; room >= 1 && t.frames() < MaxInFlight {
			segs := min(room, t.tsoSegs())
			var retx, bytes int
			retx, bytes, wait = t.fill(s, segs)
			if bytes > 0 {
				t.next, t.nextSegs, t.haveNext = s.Add(t.cfg.RTT/2), retx+(bytes-retx*t.cfg.MSS+t.cfg.MSS-1)/t.cfg.MSS, true
				t.nextBytes, t.nextRetx = bytes, retx
				return
			}
		} else if byRcv {
			t.c.RcvWndLimit++
		} else {
			t.validate(true)
		}
		next, pending := t.nextEvent()
		if wait < never && (!pending || wait < next) {
			next, pending = wait, true // the application's write, or a TX completion
		}
		if !pending {
			if t.inflight > 0 {
				// Nothing will come back unless the receiver reports
				// something. RACK-TLP (tcp_schedule_loss_probe): after
				// two round trips and TCP_TIMEOUT_MIN the sender probes
				// with one more segment, whose ACK shows the receiver's
				// hole and starts a fast recovery; if that is lost too,
				// or the sender is in recovery already (a probe is
				// scheduled only in TCP_CA_Open or TCP_CA_CWR), the
				// retransmission timer.
				if !t.probed && t.ca == caOpen {
					// A probe sends the last segment again (no new data
					// when the application has none: the stream's
					// bytes do not matter to the model).
					at := max(s, t.progress.Add(t.probeTimeout()))
					t.next, t.nextSegs, t.haveNext, t.nextProbe = at.Add(t.cfg.RTT/2), 1, true, true
				} else {
					at := max(s, t.progress.Add(t.rto()))
					t.next, t.nextSegs, t.haveNext, t.nextRTO = at.Add(t.cfg.RTT/2), 1, true, true
				}
				t.nextBytes, t.nextRetx = t.cfg.MSS, 0
			}
			return
		}
		if next > s {
			s = next
		}
	}
}

// nextEvent is when the next report takes effect: the oldest event, or
// RACK's reordering timer if it comes first.
func (t *TCP) nextEvent() (at sim.Time, ok bool) {
	if t.size > 0 {
		at, ok = t.ev[t.head].at, true
	}
	if t.rackSegs > 0 && (!ok || t.rackAt <= at) {
		at, ok = t.rackAt, true
	}
	return at, ok
}

// reoWnd is tcp_rack_reo_wnd on a path that never reorders (reord_seen
// stays 0, reo_wnd_steps 1): none in recovery or once DupThresh segments
// are SACKed past the hole, else min_rtt/4, at most srtt.
func (t *TCP) reoWnd() sim.Duration {
	if t.ca != caOpen || t.rackSacked >= DupThresh {
		return 0
	}
	return sim.Duration(min(t.minRTT>>2, t.srtt>>3)) * sim.Microsecond
}

// timeout is tcp_retransmit_timer at time at: nothing came back for an
// RTO; what is in flight is lost (tcp_enter_loss): ssthresh is reduced
// unless it was in this window of data already, the window collapses to
// one segment, and CUBIC and HyStart start over (cubictcp_state).
func (t *TCP) timeout(at sim.Time) {
	t.c.Timeouts++
	if t.ca == caOpen || (t.ca == caLoss && t.backoff == 0) {
		t.ssthresh = int(t.cc.recalcSsthresh(uint32(t.cwnd)))
	}
	t.backoff++
	t.drop(t.inflight)
	t.cwnd, t.cwndCnt = t.inflight+1, 0
	// TCP_CA_Loss: no probe either until what was out is acknowledged.
	t.ca, t.highSeq = caLoss, t.c.Frames
	t.cc.reset()
	t.cc.hystartReset(int64(at.Sub(0)/sim.Microsecond), t.c.Frames)
	t.expected = t.c.Frames
	t.rackSegs = 0 // every segment out is lost, the holes' with them
	t.progress = at
	t.nextRTO = false
}

// probeTimeout is tcp_schedule_loss_probe's timeout: two srtt in whole
// jiffies, plus TCP_RTO_MIN with one segment out (the receiver may be
// delaying its ACK) or TCP_TIMEOUT_MIN (two jiffies), never past the
// retransmission timer.
func (t *TCP) probeTimeout() sim.Duration {
	jf := t.cfg.Jiffy
	to := sim.Duration(usecsToJiffies(t.srtt>>2, jf)) * jf
	if t.inflight == 1 {
		to += RTOMin
	} else {
		to += 2 * jf
	}
	return min(to, t.rto())
}

// rto is the retransmission timer: icsk_rto (baseRTO), doubled for each
// timeout since the last RTT sample (tcp_retransmit_timer), at most
// TCP_RTO_MAX.
func (t *TCP) rto() sim.Duration {
	return min(t.baseRTO()<<min(t.backoff, 10), RTOMax) // 10 doublings of TCP_RTO_MIN pass TCP_RTO_MAX
}

// apply runs every event up to s, in time order; RACK's marking of a
// hole runs before an ACK of the same time (tcp_ack's
// tcp_fastretrans_alert before tcp_cong_control).
func (t *TCP) apply(s sim.Time) {
	for {
		if t.rackSegs > 0 && t.rackAt <= s && (t.size == 0 || t.rackAt <= t.ev[t.head].at) {
			t.markLost(t.rackSegs)
			t.rackSegs = 0
			continue
		}
		if t.size == 0 || t.ev[t.head].at > s {
			break
		}
		e := t.ev[t.head]
		t.advanceApp(e.at) // the writes before the ACK
		t.progress, t.lastEvent = e.at, e.at
		t.head = (t.head + 1) % len(t.ev)
		t.size--
		switch e.kind {
		case evAck:
			// tcp_ack: the RTT sample (tcp_clean_rtx_queue,
			// tcp_ack_update_rtt), CUBIC's pkts_acked, the end of a
			// recovery (tcp_fastretrans_alert), then tcp_cong_control.
			t.probed = false
			t.inflight -= int(e.segs)
			t.c.Acked += uint64(e.segs)
			t.rwnd = int(e.wnd)
			rtt := int64(e.at.Sub(t.sentAt[e.seq%MaxInFlight]) / sim.Microsecond)
			t.minRTT = min(t.minRTT, max(1, rtt))
			t.una = max(t.una, e.seq+1)
			t.unaOff = max(t.unaOff, t.endOff[e.seq%MaxInFlight])
			t.rttEstimator(max(1, rtt))
			t.backoff = 0 // an RTT measured: tcp_ack_update_rtt resets icsk_backoff
			t.acked(rtt, e.at, e.seq)
			if t.ca != caOpen && e.seq >= t.highSeq {
				if t.ca == caRecovery && t.ssthresh < InfiniteSsthresh {
					t.cwnd = t.ssthresh // tcp_end_cwnd_reduction
				}
				t.ca = caOpen // high_seq acknowledged
			}
			if t.ca == caRecovery {
				t.cwndReduction(int(e.segs))
			} else {
				t.congAvoid(int(e.segs), e.at)
			}
			t.updatePacingRate()
		case evWindow:
			t.rwnd = int(e.wnd)
		}
	}
	t.clock = max(t.clock, s)
}

// markLost is RACK marking segs segments lost (tcp_mark_skb_lost) and
// the fast retransmit that follows (tcp_enter_recovery): one reduction
// per recovery, to CUBIC's ssthresh; PRR spreads it over the ACKs that
// follow (tcp_init_cwnd_reduction).
func (t *TCP) markLost(segs int32) {
	if t.ca == caOpen {
		t.c.FastRecovery++
		t.ca, t.highSeq = caRecovery, t.c.Frames
		t.cwndCnt = 0
		t.priorCwnd, t.prrDelivered, t.prrOut = t.cwnd, 0, 0
		t.ssthresh = int(t.cc.recalcSsthresh(uint32(t.cwnd)))
	}
	t.drop(int(segs))
}

// drop takes segs lost segments out of flight: they are sent again as
// the window allows (bulk data: which bytes does not matter).
func (t *TCP) drop(segs int) {
	lost := min(segs, t.inflight)
	t.inflight -= lost
	t.owed += lost
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
// the way (the path keeps order): the SACK this frame's ACK brings shows
// the hole, and RACK marks it lost once the frames sent after it have
// had their round trip plus the reordering window (tcp_rack_detect_loss:
// a lost frame's send time + rack.rtt + reo_wnd), at once in recovery or
// with DupThresh segments SACKed past it. A report for a frame already
// given up on (taken as lost at a timeout) only updates the window.
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
		if t.rackSegs == 0 {
			t.rackSent, t.rackSacked, t.rackAt = t.sentAt[t.expected%MaxInFlight], 0, sim.Time(math.MaxInt64)
		}
		t.rackSegs += lost
	}
	if t.rackSegs > 0 {
		// tcp_rack_advance then tcp_rack_detect_loss: rack.rtt is this
		// frame's round trip, which ends at ackAt, so the oldest lost
		// frame's time is up the gap between their sends before the
		// reordering window ends. A later report may end the wait
		// sooner, never later (the timer already armed fires).
		t.rackSacked += int(t.sent[seq%MaxInFlight])
		wait := t.reoWnd() - t.sentAt[seq%MaxInFlight].Sub(t.rackSent)
		t.rackAt = min(t.rackAt, ackAt.Add(max(0, wait))) // the push below plans again
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

// DefaultScalingRatioHalf is TCP_DEFAULT_SCALING_RATIO from 6.10: half of
// a socket's memory taken as payload before it has measured a packet.
const DefaultScalingRatioHalf = 1 << (RmemToWinScale - 1)

// SpaceFromWin is tcp_space_from_win: the socket memory a window of win
// bytes needs, the inverse of WinFromSpace.
func SpaceFromWin(win, ratio int, scaling bool) int {
	if win <= 0 {
		return 0
	}
	if scaling {
		return int((int64(win) << RmemToWinScale) / int64(max(ratio, 1)))
	}
	return win << 1
}

// RcvWindow is a receiving socket's window state after the handshake
// (tcp_select_initial_window, tcp_init_buffer_space): the window its
// SYN-ACK offered, window_clamp, rcv_ssthresh and rcvq_space.space, in
// bytes.
type RcvWindow struct {
	RcvWnd, Clamp, Ssthresh, Space int
}

// InitialRcvWindow is RcvWindow for a socket with sk_rcvbuf rcvbuf and
// advmss mss, whose memory counts at the default ratio: the SYN-ACK
// offers the full space rounded down to whole segments, at most 65535
// (unscaled); window_clamp keeps one segment in reserve (tcp_app_win 31:
// "force reservation of one segment"); rcv_ssthresh starts at the
// window; a round trip's reads must pass 10 segments before the buffer
// grows.
func InitialRcvWindow(rcvbuf, mss, ratio int, scaling bool) RcvWindow {
	full := WinFromSpace(rcvbuf, ratio, scaling)
	space := full
	if space > mss {
		space -= space % mss
	}
	w := RcvWindow{RcvWnd: min(space, 65535), Clamp: full}
	if w.Clamp > 2*mss && w.Clamp+mss > full {
		w.Clamp = max(2*mss, full-mss)
	}
	w.Ssthresh = min(w.RcvWnd, w.Clamp)
	w.Space = min(w.Ssthresh, w.RcvWnd, InitCwnd*mss)
	return w
}

// DefaultRatio is TCP_DEFAULT_SCALING_RATIO on a kernel that scales by
// the measured ratio (scaling, 6.6+): 1200 bytes in SKB_TRUESIZE(4096)
// until 6.9, half from 6.10 (half).
func DefaultRatio(half bool) int {
	if half {
		return DefaultScalingRatioHalf
	}
	return DefaultScalingRatio
}
