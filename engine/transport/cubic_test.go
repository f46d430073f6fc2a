package transport

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
)

// cubic_root: a table and one Newton-Raphson step, within a percent of
// the cube root over the range CUBIC uses.
func TestCubicRoot(t *testing.T) {
	// cube_factor times a window's drop: 2^40/410 segments and up.
	for _, a := range []uint64{cubeFactor, 7 * cubeFactor, 300 * cubeFactor, 123456 * cubeFactor, 1 << 50, 1 << 62} {
		want := math.Cbrt(float64(a))
		assert.InEpsilon(t, want, float64(cubicRoot(a)), 0.01, "cbrt(%d)", a)
	}
}

// bictcp_update after a loss at Wmax: the curve starts at beta * Wmax,
// rises concave to Wmax at K = cbrt(Wmax (1 - beta) / C) seconds (C =
// 0.4), then convex past it. Wmax 1000 segments: K = cbrt(750) = 9.09 s.
func TestCubicCurveReachesWmaxAtK(t *testing.T) {
	var c cubic
	const wmax = 1000
	ss := c.recalcSsthresh(wmax)
	assert.Equal(t, uint32(wmax*717/1024), ss, "cwnd * beta")
	c.update(ss, 1, 0, Jiffy)
	kSec := float64(c.k) / 1024
	assert.InEpsilon(t, math.Cbrt(wmax*(1-717.0/1024)/0.4), kSec, 0.01, "K in seconds")
	target := func(at sim.Duration) uint32 { return c.curve(uint64(at * 1024 / sim.Second)) }
	assert.InDelta(t, float64(ss), float64(target(0)), 1, "the curve starts at the reduced window")
	early, atK, late := target(time(kSec/4)), target(time(kSec)), target(time(kSec*1.5))
	t.Logf("target at K/4 %d, K %d, 1.5K %d", early, atK, late)
	assert.Greater(t, early, ss)
	assert.InDelta(t, wmax, float64(atK), wmax*0.02, "the curve's plateau is Wmax")
	assert.Greater(t, late, uint32(wmax), "past K it probes beyond Wmax")
}

func time(s float64) sim.Duration { return sim.Duration(s * float64(sim.Second)) }

// Fast convergence: a loss below the last Wmax remembers less than the
// window, (1 + beta) / 2 of it, so a flow that is losing share gives it up.
func TestCubicFastConvergence(t *testing.T) {
	var c cubic
	c.recalcSsthresh(1000)
	c.recalcSsthresh(800)
	assert.Equal(t, uint32(800*(1024+717)/2048), c.lastMaxCwnd)
}

// tcp_slow_start: the window grows by what is acknowledged but stops at
// ssthresh; the rest of the ACK goes to congestion avoidance, not past
// the threshold in slow start's doubling (FIDELITY N11).
func TestSlowStartStopsAtSsthresh(t *testing.T) {
	s := newTCP(t, base)
	s.cwnd, s.ssthresh, s.maxPacketsOut = 60, 64, 60
	s.congAvoid(10, 0)
	assert.Equal(t, 64, s.Cwnd(), "60 + 10 capped at 64; 6 left to CUBIC's count, not a segment each")
}

// PRR (tcp_cwnd_reduction): in a recovery the sender keeps sending,
// ssthresh/prior_cwnd = 0.7 of what is delivered while more than ssthresh
// is out, instead of Reno's silence until half the window has drained.
func TestPRRSpreadsTheReduction(t *testing.T) {
	s := newTCP(t, base)
	s.cwnd, s.inflight = 100, 100
	s.ca, s.priorCwnd = caRecovery, 100
	s.ssthresh = int(s.cc.recalcSsthresh(100))
	s.inflight-- // one lost
	sent := 0
	for i := range 100 {
		s.inflight-- // a segment delivered (SACKed)
		s.cwndReduction(1)
		n := max(0, s.cwnd-s.inflight)
		s.prrOut += n
		s.inflight += n
		sent += n
		if i == 39 {
			assert.InDelta(t, 0.7*40, float64(sent), 1, "0.7 segment sent per segment delivered")
		}
	}
	assert.Equal(t, s.ssthresh, s.inflight, "a round of ACKs later, what is out is ssthresh")
}

// HyStart's ACK train (hystart_update): a bottleneck spreads a round's
// ACKs over its queue; when they come back as a train longer than half
// the path's delay (plus hystart_ack_delay), slow start ends there, with
// ssthresh at the window, before the queue overflows.
func TestHyStartLeavesSlowStartBeforeALoss(t *testing.T) {
	s := newTCP(t, base)
	b := &bottleneck{t: s, capacity: 1 << 20, serve: sim.Microsecond, wnd: 1 << 30}
	b.run(t, 0, sim.Time(5*sim.Millisecond))
	c := s.Counters()
	assert.Equal(t, uint64(1), c.HyStartTrain+c.HyStartDelay, "slow start left once, by HyStart")
	assert.Positive(t, c.HyStartTrain, "by the ACK train")
	assert.Less(t, s.Ssthresh(), InfiniteSsthresh)
	assert.Zero(t, b.lost, "before anything was lost")
	t.Logf("ssthresh %d, cwnd %d, srtt %v", s.Ssthresh(), s.Cwnd(), s.SRTT())
}

// tcp_rtt_estimator and __tcp_set_rto: the RTO is srtt + rttvar, rttvar
// at least TCP_RTO_MIN, so about srtt + 200 ms, not max(1.5 RTT, 200 ms)
// (FIDELITY N9); with a steady RTT it stays there.
func TestRTOIsSrttPlusRttvar(t *testing.T) {
	for _, rtt := range []sim.Duration{100 * sim.Microsecond, 50 * sim.Millisecond} {
		cfg := base
		cfg.RTT = rtt
		s := newTCP(t, cfg)
		want := (rtt + RTOMin + Jiffy - 1) / Jiffy * Jiffy
		assert.Equal(t, want, s.RTO(), "RTT %v: from the handshake's sample", rtt)
		b := &bottleneck{t: s, capacity: 1 << 20, wnd: 64 * cfg.MSS}
		b.run(t, 0, sim.Time(20*rtt))
		assert.Equal(t, want, s.RTO(), "RTT %v: after a steady stream", rtt)
		assert.Equal(t, rtt, s.SRTT())
	}
}

// tcp_schedule_loss_probe with one segment out waits TCP_RTO_MIN more
// than two srtt (the receiver may be delaying its ACK), capped by the
// RTO (FIDELITY N10).
func TestLossProbeWithOneSegmentOut(t *testing.T) {
	cfg := base
	cfg.RTT = 10 * sim.Millisecond
	cfg.RcvWnd = cfg.MSS // one segment at a time
	s := newTCP(t, cfg)
	_, _, ok := s.Next()
	require.True(t, ok)
	s.Take() // lost
	at, _, ok := s.Next()
	require.True(t, ok)
	probe := 20*sim.Millisecond + RTOMin // 2 srtt + TCP_RTO_MIN
	assert.Equal(t, sim.Time(min(probe, s.RTO())+cfg.RTT/2), at)
	assert.Less(t, at, sim.Time(probe+cfg.RTT), "the probe, at the RTO at the latest")
}
