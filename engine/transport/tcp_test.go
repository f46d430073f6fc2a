package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
)

// bottleneck is a receiver for the tests: frames queue in a buffer of
// capacity frames and are served one at a time in serve each, then
// delivered to a socket the application empties at once. A frame that
// finds the buffer full is lost, as one that finds no posted receive
// buffer is.
type bottleneck struct {
	t        *TCP
	capacity int
	serve    sim.Duration
	wnd      int

	queue     []uint64 // seqs waiting
	queueSegs []int
	busyUntil sim.Time
	delivered uint64 // segments
	lost      uint64 // segments
}

// run drives sender and receiver until time end and returns the
// segments delivered in [from, end).
func (b *bottleneck) run(tb testing.TB, from, end sim.Time) uint64 {
	var inWindow uint64
	var headDone sim.Time
	for {
		at, segs, ok := b.t.Next()
		// The head of the queue finishes at headDone.
		if len(b.queue) > 0 && (!ok || headDone <= at) {
			if headDone >= end {
				return inWindow
			}
			b.t.Delivered(headDone, b.queue[0], b.wnd)
			b.delivered += uint64(b.queueSegs[0])
			if headDone >= from {
				inWindow += uint64(b.queueSegs[0])
			}
			b.queue, b.queueSegs = b.queue[1:], b.queueSegs[1:]
			b.busyUntil = headDone
			if len(b.queue) > 0 {
				headDone = headDone.Add(b.serve)
			}
			continue
		}
		require.True(tb, ok, "the sender stalled with nothing queued")
		if at >= end {
			return inWindow
		}
		seq := b.t.Take()
		if len(b.queue) >= b.capacity {
			b.lost += uint64(segs) // the sender learns of it from the next frame's report
			continue
		}
		if len(b.queue) == 0 {
			start := at
			if b.busyUntil > start {
				start = b.busyUntil
			}
			headDone = start.Add(b.serve)
		}
		b.queue = append(b.queue, seq)
		b.queueSegs = append(b.queueSegs, segs)
	}
}

func newTCP(t *testing.T, cfg TCPConfig) *TCP {
	s, err := NewTCP(cfg)
	require.NoError(t, err)
	return s
}

var base = TCPConfig{MSS: 1448, HdrBytes: 66, MaxSegs: 1, RTT: 100 * sim.Microsecond, WireOverhead: 24, RcvWnd: 1 << 30}

// Slow start doubles the window every round trip: ten segments in the
// first RTT, then 20, 40, 80.
func TestSlowStartDoublesPerRTT(t *testing.T) {
	s := newTCP(t, base)
	b := &bottleneck{t: s, capacity: 1 << 20, serve: 0, wnd: 1 << 30}
	var per []uint64
	var prev uint64
	for k := 1; k <= 4; k++ {
		b.run(t, 0, sim.Time(k)*sim.Time(base.RTT)+sim.Time(base.RTT)/2)
		per = append(per, b.delivered-prev)
		prev = b.delivered
	}
	assert.Equal(t, []uint64{10, 20, 40, 80}, per)
	assert.Equal(t, InitCwnd+150, s.Cwnd())
}

// With a small receive window the throughput is the window per round
// trip; with the line slower than that, the line.
func TestThroughputIsTheSmallerOfWindowAndLine(t *testing.T) {
	const window = 64 * 1448
	cfg := base
	cfg.RcvWnd = window
	s := newTCP(t, cfg)
	b := &bottleneck{t: s, capacity: 1 << 20, wnd: window}
	got := b.run(t, sim.Time(10*sim.Millisecond), sim.Time(20*sim.Millisecond))
	perRTT := float64(got) / 100 // 10 ms is 100 RTTs
	assert.InDelta(t, 64, perRTT, 1, "window-limited: 64 segments per RTT")
	assert.Positive(t, s.Counters().RcvWndLimit)

	cfg = base
	cfg.LineBps = 1e9
	s = newTCP(t, cfg)
	b = &bottleneck{t: s, capacity: 1 << 20, wnd: 1 << 30}
	got = b.run(t, sim.Time(10*sim.Millisecond), sim.Time(20*sim.Millisecond))
	gbps := float64(got) * float64(1448+66+24) * 8 / 10e-3 / 1e9
	assert.InDelta(t, 1.0, gbps, 0.01, "line-limited at 1 Gbit/s of wire")
}

// A sender the receiver's window holds does not grow its own window past
// what it uses (tcp_is_cwnd_limited: to twice what was out in slow start,
// not at all after it), so losses then cost throughput: each takes the
// window to 0.7 of itself (cubictcp_recalc_ssthresh), the first two from
// twice the receiver's to just under it, the third well below, and the
// rate falls until it grows back as far as the sender uses it. A window
// grown on every ACK regardless would stay far above the receiver's, and
// the losses would cost nothing.
func TestReceiverLimitedWindowDoesNotGrow(t *testing.T) {
	const segs = 64
	cfg := base
	cfg.RcvWnd = segs * base.MSS
	run := func(lose bool) (cwnd int, after uint64) {
		s := newTCP(t, cfg)
		b := &bottleneck{t: s, capacity: 1 << 20, wnd: cfg.RcvWnd}
		at := sim.Time(10 * sim.Millisecond)
		b.run(t, 0, at)
		cwnd = s.Cwnd()
		for range 3 {
			if lose {
				_, _, ok := s.Next()
				require.True(t, ok)
				s.Take() // lost on the way: the frames behind it reveal it
			}
			b.run(t, 0, at+sim.Time(5*base.RTT))
			at += sim.Time(5 * base.RTT)
		}
		return cwnd, b.run(t, at, at+sim.Time(10*base.RTT))
	}
	cwnd, clean := run(false)
	assert.LessOrEqual(t, cwnd, 2*segs, "slow start stops at twice what the receiver lets out")
	assert.GreaterOrEqual(t, cwnd, segs, "the window still covers the receiver's")
	assert.InDelta(t, 10*segs, clean, segs, "64 segments per RTT without the losses")
	_, lossy := run(true)
	assert.Less(t, float64(lossy), 0.85*float64(clean), "the third loss takes the window well below the receiver's: fewer segments over the next 10 RTTs")
}

// One drop reduces the window once (fast retransmit), to CUBIC's beta,
// 717/1024 of it (cubictcp_recalc_ssthresh), revealed by the frames
// behind it; PRR spreads the reduction over the recovery and
// tcp_end_cwnd_reduction leaves the window at ssthresh. Every segment
// still arrives.
func TestOneLossHalvesTheWindow(t *testing.T) {
	cfg := base
	cfg.LineBps = 10e9
	s := newTCP(t, cfg)
	b := &bottleneck{t: s, capacity: 1 << 20, wnd: 1 << 30}
	b.run(t, 0, sim.Time(2*sim.Millisecond))
	before := s.Cwnd()
	_, _, ok := s.Next()
	require.True(t, ok)
	s.Take() // lost on the way: never reported
	b.run(t, 0, sim.Time(2*sim.Millisecond)+sim.Time(3*base.RTT))
	assert.Equal(t, uint64(1), s.Counters().FastRecovery)
	assert.Equal(t, uint64(0), s.Counters().Timeouts)
	assert.Equal(t, before*717/1024, s.Ssthresh(), "beta = 717/1024, not Reno's half")
	assert.GreaterOrEqual(t, s.Cwnd(), s.Ssthresh(), "ssthresh at recovery's end, then CUBIC's growth")
	assert.Less(t, s.Cwnd(), before*3/4)
	assert.Equal(t, uint64(1), s.Counters().Retransmits)
	assert.Equal(t, uint64(1), s.Counters().LostFrames)
}

// A loss nothing reveals (no frame behind it arrives) is probed first: a
// tail loss probe after 2 srtt in whole jiffies + TCP_TIMEOUT_MIN, whose
// report shows the hole and starts a recovery. If the probe is lost too, the sender waits
// for the retransmission timeout, at least TCP_RTO_MIN, and restarts from
// one segment.
func TestTailLossIsProbedThenTimedOut(t *testing.T) {
	lostWindow := func() *TCP {
		s := newTCP(t, base)
		for i := 0; i < InitCwnd; i++ {
			at, _, ok := s.Next()
			require.True(t, ok)
			assert.Equal(t, sim.Time(base.RTT/2), at, "the initial window leaves at once")
			s.Take() // and is lost: nothing is ever reported
		}
		require.Equal(t, 10, s.InFlight())
		return s
	}
	s := lostWindow()
	at, segs, ok := s.Next()
	require.True(t, ok, "the probe")
	// usecs_to_jiffies(2 x 100 µs) rounds up to one jiffy, plus
	// TCP_TIMEOUT_MIN's two: 3 ms after the last send, then half a
	// round trip to the receiver.
	assert.Equal(t, sim.Time(3*Jiffy+base.RTT/2), at)
	assert.Equal(t, 1, segs)
	seq := s.Take()
	assert.Equal(t, uint64(1), s.Counters().Probes)
	s.Delivered(at, seq, 1<<20) // the probe arrives: its ACK shows the hole
	_, _, ok = s.Next()
	require.True(t, ok)
	assert.Equal(t, uint64(1), s.Counters().FastRecovery, "recovery, not a timeout")
	assert.Zero(t, s.Counters().Timeouts)
	assert.Equal(t, uint64(10), s.Counters().LostFrames)
	assert.Equal(t, InitCwnd*717/1024, s.Ssthresh(), "reduced once, to beta")
	assert.Equal(t, 1, s.Cwnd(), "PRR: nothing left in flight, the probe's ACK lets one segment go (tcp_cwnd_reduction)")

	s = lostWindow()
	s.Next()
	s.Take() // the probe is lost as well
	at, segs, ok = s.Next()
	require.True(t, ok, "the timeout sends again")
	assert.GreaterOrEqual(t, at, sim.Time(RTOMin))
	assert.Equal(t, 1, segs)
	assert.Zero(t, s.Counters().Timeouts, "a report before it would still cancel the timeout")
	s.Take()
	assert.Equal(t, uint64(1), s.Counters().Timeouts)
	assert.Equal(t, 1, s.Cwnd())
	// The retransmission is lost as well: TCP_CA_Loss schedules no probe,
	// the timer fires again.
	next, _, ok := s.Next()
	require.True(t, ok)
	assert.GreaterOrEqual(t, next, at.Add(2*RTOMin), "in TCP_CA_Loss the timer again, not a probe, and backed off: twice the first")
	s.Take()
	assert.Equal(t, uint64(1), s.Counters().Probes)
	assert.Equal(t, uint64(2), s.Counters().Timeouts)
	again, _, ok := s.Next()
	require.True(t, ok)
	assert.GreaterOrEqual(t, again, next.Add(4*RTOMin), "a third timeout waits four times the first")
}

// In recovery no loss probe is scheduled (tcp_schedule_loss_probe wants
// TCP_CA_Open or TCP_CA_CWR): a tail that goes silent there, the
// retransmissions lost as well, waits for the retransmission timer. Once
// a frame sent after the loss was found is acknowledged, recovery is over
// and a silent tail is probed again.
func TestNoLossProbeInRecovery(t *testing.T) {
	s := newTCP(t, base)
	var seqs []uint64
	for range InitCwnd {
		_, _, ok := s.Next()
		require.True(t, ok)
		seqs = append(seqs, s.Take())
	}
	// The first is lost; the second arrives and reveals it; the rest
	// and everything sent after are lost.
	s.Delivered(sim.Time(base.RTT/2), seqs[1], 1<<20)
	for {
		at, _, ok := s.Next()
		require.True(t, ok)
		if at > sim.Time(10*base.RTT) {
			break
		}
		s.Take()
	}
	assert.Equal(t, uint64(1), s.Counters().FastRecovery)
	at, _, ok := s.Next()
	require.True(t, ok)
	assert.GreaterOrEqual(t, at, sim.Time(RTOMin), "in recovery the silent tail waits for the timer, not a probe")
	assert.Zero(t, s.Counters().Probes)
	s.Take() // the timer's retransmission, lost too
	require.Equal(t, uint64(1), s.Counters().Timeouts)
	next, _, ok := s.Next()
	require.True(t, ok)
	assert.GreaterOrEqual(t, next, at.Add(RTOMin), "TCP_CA_Loss after the timer: no probe either")
	assert.Zero(t, s.Counters().Probes)

	// A frame sent after the loss was found gets through: recovery ends,
	// and a tail that goes silent after it is probed.
	s2 := newTCP(t, base)
	for range InitCwnd {
		s2.Next()
		s2.Take()
	}
	for seq := uint64(1); seq < InitCwnd; seq++ { // frame 0 lost, the rest arrive
		s2.Delivered(sim.Time(base.RTT/2), seq, 1<<20)
	}
	at, _, ok = s2.Next()
	require.True(t, ok)
	seq := s2.Take()
	require.GreaterOrEqual(t, seq, uint64(InitCwnd), "sent after the loss was found")
	s2.Delivered(at, seq, 1<<20)
	for {
		at, _, ok := s2.Next()
		require.True(t, ok)
		if at > sim.Time(20*base.RTT) {
			break
		}
		s2.Take() // lost
	}
	at, _, ok = s2.Next()
	require.True(t, ok)
	assert.Less(t, at, sim.Time(RTOMin), "out of recovery a silent tail is probed, well before the timer")
	s2.Take()
	assert.Equal(t, uint64(1), s2.Counters().Probes)
	assert.Zero(t, s2.Counters().Timeouts)
}

// The receiver's buffer decides how much of a bottleneck CUBIC uses: with
// less buffer than the bandwidth-delay product the window's halvings
// leave the link idle; with more, it stays busy. This is what a ring too
// short for its rate does to a TCP stream.
func TestBufferBelowBDPLosesThroughput(t *testing.T) {
	const serve = 1 * sim.Microsecond // the receiver takes a frame a microsecond
	bdp := int(base.RTT / serve)      // 100 frames
	util := func(capacity int) (float64, uint64) {
		s := newTCP(t, base)
		b := &bottleneck{t: s, capacity: capacity, serve: serve, wnd: 1 << 30}
		got := b.run(t, sim.Time(50*sim.Millisecond), sim.Time(150*sim.Millisecond))
		return float64(got) / float64(100*sim.Millisecond/serve), b.lost
	}
	small, lostSmall := util(bdp / 8)
	big, lostBig := util(2 * bdp)
	t.Logf("utilisation with %d buffers %.3f (%d segments lost), with %d buffers %.3f (%d lost)", bdp/8, small, lostSmall, 2*bdp, big, lostBig)
	assert.Positive(t, lostSmall)
	assert.Positive(t, lostBig, "CUBIC probes until it loses, whatever the buffer")
	assert.Less(t, small, big-0.05)
	assert.Greater(t, big, 0.97)
}

// TestRACKWaitsForTheReorderingWindow is FIDELITY row N10's RACK: a hole
// one SACKed segment reveals is marked lost only when the frames sent
// after it have had their round trip plus the reordering window
// (tcp_rack_detect_loss, tcp_rack_reo_wnd: min_rtt/4 on a path that has
// not reordered), or at once when DupThresh segments are SACKed past it.
// Before, any report past a hole started the recovery.
func TestRACKWaitsForTheReorderingWindow(t *testing.T) {
	start := func(reports int) *TCP {
		s := newTCP(t, base) // the initial window leaves at 0 and arrives at 50 µs
		for i := 0; i < InitCwnd; i++ {
			_, _, ok := s.Next()
			require.True(t, ok)
			s.Take()
		}
		for i := 1; i <= reports; i++ { // frame 0 is lost; 1.. arrive a microsecond apart
			s.Delivered(sim.Time(base.RTT/2)+sim.Time(i-1)*sim.Time(sim.Microsecond), uint64(i), 1<<20)
		}
		return s
	}
	reo := base.RTT / 4 // min_rtt/4: the handshake's sample, 100 µs

	s := start(1)
	at, _, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, sim.Time(base.RTT+base.RTT/2), at, "the ACK at 100 µs opens the window")
	assert.Zero(t, s.Counters().FastRecovery, "one segment SACKed: RACK arms its reordering timer")
	for i := 0; s.Counters().FastRecovery == 0; i++ {
		require.Less(t, i, 100)
		assert.Equal(t, sim.Time(base.RTT+base.RTT/2), at, "sent at the ACK, before the timer")
		s.Take()
		at, _, ok = s.Next()
		require.True(t, ok)
	}
	assert.Equal(t, sim.Time(base.RTT+reo+base.RTT/2), at, "the timer marks the hole lost at 100 + 25 µs, and PRR sends")

	s = start(DupThresh)
	for i := 0; s.Counters().FastRecovery == 0; i++ {
		require.Less(t, i, 100)
		at, _, ok = s.Next()
		require.True(t, ok)
		s.Take()
	}
	assert.Less(t, at, sim.Time(base.RTT+reo+base.RTT/2), "three segments SACKed: marked lost at the third's ACK")
}

func TestNewTCPRefusesBadConfigs(t *testing.T) {
	for _, cfg := range []TCPConfig{
		{MSS: 0, MaxSegs: 1},
		{MSS: 1448, MaxSegs: 0},
		{MSS: 1448, MaxSegs: 46},
		{MSS: 1448, MaxSegs: 1, RTT: -1},
	} {
		_, err := NewTCP(cfg)
		assert.ErrorIs(t, err, ErrConfig, "%+v", cfg)
	}
	_, err := NewTCP(TCPConfig{MSS: 1448, MaxSegs: 45})
	assert.NoError(t, err, "45 segments of 1448 bytes fit 64 KiB")
}

// The event ring never allocates and never loses a count: past its size
// events merge into the newest.
func TestEventsMergeWhenFull(t *testing.T) {
	s := newTCP(t, base)
	for i := 0; i < maxEvents+100; i++ {
		s.Window(sim.Time(i), 1<<20)
	}
	assert.Equal(t, maxEvents, s.size)
	last := s.ev[(s.head+s.size-1)%len(s.ev)]
	assert.Equal(t, sim.Time(maxEvents+99).Add(base.RTT/2), last.at, "the newest merged event carries the latest time")
	s2 := newTCP(t, base)
	for i := 0; i < maxEvents+100; i++ {
		s2.push(event{at: sim.Time(i), kind: evAck, segs: 1, wnd: 1 << 20})
	}
	total := 0
	for i := 0; i < s2.size; i++ {
		total += int(s2.ev[(s2.head+i)%len(s2.ev)].segs)
	}
	assert.Equal(t, maxEvents+100, total, "merged ACKs keep every segment")
	allocs := testing.AllocsPerRun(100, func() {
		at, _, ok := s.Next()
		if ok {
			s.Delivered(at, s.Take(), 1<<20)
		}
	})
	assert.Zero(t, allocs)
}

// tcp_select_initial_window and tcp_init_buffer_space for a receiver
// with sk_rcvbuf at tcp_rmem[1] (131072), as read at 6.1.190, 6.6.9 and
// 6.12 (FIDELITY N7): the SYN-ACK offers the buffer's window in whole
// segments; window_clamp keeps a segment in reserve; rcv_ssthresh starts
// at it; and a round trip's reads must pass 10 segments before the
// buffer grows. 6.6 to 6.9 count the memory at 65/256 before measuring a
// packet, so they start at half the window of the kernels around them.
func TestInitialRcvWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mss, ratio int
		scaling    bool
		want       RcvWindow
	}{
		{"6.1 (half of the buffer)", 1448, 0, false, RcvWindow{RcvWnd: 65160, Clamp: 64088, Ssthresh: 64088, Space: 14480}},
		{"6.12 (ratio 128)", 1448, DefaultRatio(true), true, RcvWindow{RcvWnd: 65160, Clamp: 64088, Ssthresh: 64088, Space: 14480}},
		{"6.6 (ratio 65)", 1448, DefaultRatio(false), true, RcvWindow{RcvWnd: 31856, Clamp: 31832, Ssthresh: 31832, Space: 14480}},
		{"6.6, MTU 9000", 8948, DefaultRatio(false), true, RcvWindow{RcvWnd: 26844, Clamp: 24332, Ssthresh: 24332, Space: 24332}},
		{"6.12, MTU 9000", 8948, DefaultRatio(true), true, RcvWindow{RcvWnd: 62636, Clamp: 56588, Ssthresh: 56588, Space: 56588}},
	} {
		assert.Equal(t, tc.want, InitialRcvWindow(131072, tc.mss, tc.ratio, tc.scaling), tc.name)
	}
	assert.Equal(t, 131072, SpaceFromWin(65536, DefaultRatio(true), true), "tcp_space_from_win inverts tcp_win_from_space")
	assert.Equal(t, 131072, SpaceFromWin(65536, 0, false))
}

// TestTSOAutosizeFollowsThePacingRate is FIDELITY row T1's TSO
// autosizing (tcp_tso_autosize): a TSO packet carries what the pacing
// rate sends in a millisecond, plus GSO_MAX_SIZE >> (min_rtt >> 9). On a
// 100 µs round trip the initial window leaves as one 10-segment packet;
// on a 10 ms one, 2 * 10 segments a round trip is 2.9 MB/s, 2828 bytes a
// millisecond: packets of tcp_min_tso_segs, 2 segments. Before, every
// packet took all the window allowed.
func TestTSOAutosizeFollowsThePacingRate(t *testing.T) {
	for _, tc := range []struct {
		rtt  sim.Duration
		segs []int
	}{
		{100 * sim.Microsecond, []int{10}},
		{10 * sim.Millisecond, []int{2, 2, 2, 2, 2}},
	} {
		cfg := base
		cfg.MaxSegs, cfg.RTT = 44, tc.rtt
		s := newTCP(t, cfg)
		var got []int
		for {
			at, segs, ok := s.Next()
			require.True(t, ok)
			if at > sim.Time(tc.rtt/2) {
				break // the initial window is out
			}
			got = append(got, segs)
			s.Take()
		}
		assert.Equal(t, tc.segs, got, "round trip %v", tc.rtt)
	}
}
