package transport

import (
	"math"

	"ringlab/engine/sim"
)

// never is a time that does not come.
const never = sim.Time(math.MaxInt64)

// app is the sending application: a loop of writes of WriteBytes, each
// taking WriteCost of the sender's CPU, as iperf3 and netperf send. It
// never waits for the send buffer: a sender whose writes outrun the
// network is not held by them, and one they hold is slower than any
// window, so sk_sndbuf never decides what the receiver gets.
type app struct {
	written int64    // bytes written so far
	at      sim.Time // when the next write is done
}

// active reports whether the application can be what limits the sender.
func (t *TCP) active() bool { return t.cfg.WriteCost > 0 }

// advanceApp runs the application's writes done by s.
func (t *TCP) advanceApp(s sim.Time) {
	if !t.active() || t.app.at > s {
		return
	}
	n := int64(s.Sub(t.app.at)/t.cfg.WriteCost) + 1
	t.app.written += n * int64(t.cfg.WriteBytes)
	t.app.at = t.app.at.Add(sim.Duration(n) * t.cfg.WriteCost)
}

// appTime is when the application will have written off bytes of the
// stream (at least the next write's end).
func (t *TCP) appTime(off int64) sim.Time {
	if off <= t.app.written {
		return t.app.at
	}
	k := (off - t.app.written + int64(t.cfg.WriteBytes) - 1) / int64(t.cfg.WriteBytes)
	return t.app.at.Add(sim.Duration(k-1) * t.cfg.WriteCost)
}

// fill is tcp_write_xmit's frame at s, with the windows leaving room for
// segs segments: the segments lost and owed go first (retx of them),
// then what the application wrote. A frame is bytes of payload; when
// there is none to send, wait is when there may be (a write, or the TX
// completion autocorking waits for).
//
// An application that has written less than the frame's worth sends
// what it has in whole segments, and the short rest only when Nagle
// allows (tcp_nagle_check with tcp_minshall_check: nothing in flight,
// or no short segment unacknowledged; or TCP_NODELAY); and a write's
// push of less than a full TSO packet (size_goal) waits while an earlier
// frame's skb is still in the sender's qdisc or device
// (tcp_should_autocork), until its TX completion (tcp_tsq_handler) or
// until the writes fill the packet. An ACK's push (tcp_data_snd_check)
// is not corked.
func (t *TCP) fill(s sim.Time, segs int) (retx, bytes int, wait sim.Time) {
	mss := int64(t.cfg.MSS)
	retx = min(segs, t.owed)
	if !t.active() {
		return retx, segs * t.cfg.MSS, never
	}
	t.advanceApp(s)
	queued := t.app.written - t.newOff
	if queued >= int64(segs-retx)*mss {
		return retx, segs * t.cfg.MSS, never
	}
	full, short := queued/mss, queued%mss
	if retx > 0 {
		return retx, retx*t.cfg.MSS + int(full*mss), never // the retransmissions go now
	}
	if goal := int64(t.tsoSegs()) * mss; t.lastEvent != s && t.inflight > 0 && t.freeAt > s {
		if !t.corked {
			t.c.Autocorked++
			t.corked = true
		}
		return 0, 0, min(t.freeAt, t.appTime(t.newOff+goal))
	}
	nagle := !t.cfg.NoDelay && t.inflight > 0 && t.smlOff > t.unaOff
	bytes = int(full * mss)
	if short > 0 {
		if !nagle {
			bytes += int(short)
		} else if full == 0 && !t.held {
			t.c.NagleHeld++
			t.held = true
		}
	}
	if bytes > 0 {
		return 0, bytes, never
	}
	next := t.newOff + 1 // the next write's bytes
	if nagle {
		next = t.newOff + mss // a full segment
	}
	return 0, 0, t.appTime(next)
}
