package transport

import "ringlab/engine/sim"

// CUBIC, Linux's default congestion control (net/ipv4/tcp_cubic.c, as of
// 5.8, when HyStart took its present form; read at 6.6): the window
// grows along a cubic curve of the time since the last reduction,
// centred on the window where the loss happened, and a loss multiplies
// it by beta = 717/1024. HyStart leaves slow start before the first
// loss, when the ACKs of a round come back as a train longer than half
// the path's delay or the round's delay grows.

// CUBIC's constants and module parameters at their defaults.
const (
	cubicBetaScale   = 1024 // BICTCP_BETA_SCALE
	cubicBeta        = 717  // beta: about 0.7
	cubicHZShift     = 10   // BICTCP_HZ: time in 1/1024 s
	cubicBicScale    = 41   // bic_scale: C = 41/1024 * 10 = 0.4
	hystartLowWindow = 16   // hystart_low_window
	hystartAckDelta  = 2000 // hystart_ack_delta_us
	hystartMinSample = 8    // HYSTART_MIN_SAMPLES
	hystartDelayMin  = 4000 // HYSTART_DELAY_MIN, us
	hystartDelayMax  = 16000
	// InfiniteSsthresh is TCP_INFINITE_SSTHRESH: slow start until a loss
	// or HyStart sets a threshold.
	InfiniteSsthresh = 0x7fffffff
)

// Precomputed by cubictcp_register.
const (
	cubicBetaTCP  = 8 * (cubicBetaScale + cubicBeta) / 3 / (cubicBetaScale - cubicBeta) // beta_scale
	cubeRTTScale  = cubicBicScale * 10                                                  // cube_rtt_scale
	cubeFactor    = (1 << (10 + 3*cubicHZShift)) / cubeRTTScale                         // cube_factor
	pacingSSRatio = 200                                                                 // sysctl_tcp_pacing_ss_ratio
	pacingCARatio = 120                                                                 // sysctl_tcp_pacing_ca_ratio
)

// cubic is struct bictcp: CUBIC's state and HyStart's.
type cubic struct {
	cnt          uint32 // increase cwnd by 1 after cnt ACKed segments
	lastMaxCwnd  uint32
	lastCwnd     uint32
	lastTime     int64 // jiffies
	originPoint  uint32
	k            uint32 // time to the origin point, in 1/1024 s
	delayMin     uint32 // us
	epochStart   int64  // jiffies; epoch: false for none (the kernel's 0)
	epoch        bool
	ackCnt       uint32
	tcpCwnd      uint32 // the window Reno would have
	sampleCnt    uint8
	found        bool
	roundStart   int64 // us
	endSeq       uint64
	lastAck      int64 // us
	currRTT      uint32
	HyStartTrain uint64 // LINUX_MIB_TCPHYSTARTTRAINDETECT
	HyStartDelay uint64 // LINUX_MIB_TCPHYSTARTDELAYDETECT
}

// reset is bictcp_reset (the counters survive: they are MIBs).
func (c *cubic) reset() {
	train, delay := c.HyStartTrain, c.HyStartDelay
	*c = cubic{HyStartTrain: train, HyStartDelay: delay}
}

// hystartReset is bictcp_hystart_reset: a new round starts at now and
// ends when the frame sent next (snd_nxt) is acknowledged.
func (c *cubic) hystartReset(nowUs int64, sndNxt uint64) {
	c.roundStart, c.lastAck = nowUs, nowUs
	c.endSeq = sndNxt
	c.currRTT = ^uint32(0)
	c.sampleCnt = 0
}

// cubicRoot is cubic_root: a table lookup and one Newton-Raphson step
// (average error about 0.2%).
func cubicRoot(a uint64) uint32 {
	v := [64]uint8{
		0, 54, 54, 54, 118, 118, 118, 118,
		123, 129, 134, 138, 143, 147, 151, 156,
		157, 161, 164, 168, 170, 173, 176, 179,
		181, 185, 187, 190, 192, 194, 197, 199,
		200, 202, 204, 206, 209, 211, 213, 215,
		217, 219, 221, 222, 224, 225, 227, 229,
		231, 232, 234, 236, 237, 239, 240, 242,
		244, 245, 246, 248, 250, 251, 252, 254,
	}
	b := uint32(fls64(a))
	if b < 7 {
		return (uint32(v[a]) + 35) >> 6
	}
	b = ((b * 84) >> 8) - 1
	shift := a >> (b * 3)
	x := ((uint32(v[shift]) + 10) << b) >> 6
	x = 2*x + uint32(a/(uint64(x)*uint64(x-1)))
	return (x * 341) >> 10
}

// fls64 is the 1-based index of a's highest set bit, 0 for 0.
func fls64(a uint64) int {
	n := 0
	for a != 0 {
		a >>= 1
		n++
	}
	return n
}

// usecsToJiffies rounds us up to whole jiffies of length jf.
func usecsToJiffies(us int64, jf sim.Duration) int64 {
	j := int64(jf / sim.Microsecond)
	return (us + j - 1) / j
}

// update is bictcp_update: the ACKs cnt that add one segment, from the
// cubic curve at now (in jiffies) and TCP friendliness.
func (c *cubic) update(cwnd, acked uint32, jiffies int64, jf sim.Duration) {
	hz := int64(sim.Second / jf)
	c.ackCnt += acked
	if c.lastCwnd == cwnd && jiffies-c.lastTime <= hz/32 {
		return
	}
	// The curve is recomputed at most once a jiffy; a reduction ends the
	// epoch (recalcSsthresh), which forces it.
	if !(c.epoch && jiffies == c.lastTime) {
		c.lastCwnd, c.lastTime = cwnd, jiffies
		if !c.epoch {
			c.epoch, c.epochStart = true, jiffies
			c.ackCnt = acked
			c.tcpCwnd = cwnd
			if c.lastMaxCwnd <= cwnd {
				c.k, c.originPoint = 0, cwnd
			} else {
				c.k = cubicRoot(cubeFactor * uint64(c.lastMaxCwnd-cwnd))
				c.originPoint = c.lastMaxCwnd
			}
		}
		t := uint64(jiffies-c.epochStart) + uint64(usecsToJiffies(int64(c.delayMin), jf))
		target := c.curve((t << cubicHZShift) / uint64(hz))
		if target > cwnd {
			c.cnt = cwnd / (target - cwnd)
		} else {
			c.cnt = 100 * cwnd // a very small increment
		}
		if c.lastMaxCwnd == 0 && c.cnt > 20 {
			c.cnt = 20 // 5% a round trip while the path is unknown
		}
	}
	// TCP friendliness: no slower than Reno would grow.
	d := (cwnd * cubicBetaTCP) >> 3
	for d > 0 && c.ackCnt > d {
		c.ackCnt -= d
		c.tcpCwnd++
	}
	if c.tcpCwnd > cwnd {
		if maxCnt := cwnd / (c.tcpCwnd - cwnd); c.cnt > maxCnt {
			c.cnt = maxCnt
		}
	}
	c.cnt = max(c.cnt, 2) // at most 1.5x a round trip
}

// curve is bic_target: the window CUBIC aims for t/1024 s into the
// epoch, origin + C (t - K)^3.
func (c *cubic) curve(t uint64) uint32 {
	offs := t - uint64(c.k)
	if t < uint64(c.k) {
		offs = uint64(c.k) - t
	}
	delta := uint32((cubeRTTScale * offs * offs * offs) >> (10 + 3*cubicHZShift))
	if t < uint64(c.k) {
		return c.originPoint - delta // below the origin
	}
	return c.originPoint + delta
}

// recalcSsthresh is cubictcp_recalc_ssthresh: the epoch ends, Wmax is
// remembered (less with fast convergence, when the window is below the
// last one: another flow is taking a share), and the threshold is
// cwnd * beta.
func (c *cubic) recalcSsthresh(cwnd uint32) uint32 {
	c.epoch = false
	if cwnd < c.lastMaxCwnd {
		c.lastMaxCwnd = cwnd * (cubicBetaScale + cubicBeta) / (2 * cubicBetaScale)
	} else {
		c.lastMaxCwnd = cwnd
	}
	return max(cwnd*cubicBeta/cubicBetaScale, 2)
}
