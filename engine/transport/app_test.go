package transport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
)

// writes is what a receiver that takes every frame as it arrives and
// ACKs it at once sees of a sender over [from, end) (slow start's
// first milliseconds left out): each frame's payload, in order.
type writes struct {
	payload []int
	bytes   int
}

func receive(t *testing.T, s *TCP, from, end sim.Time) writes {
	t.Helper()
	var w writes
	for {
		at, _, ok := s.Next()
		require.True(t, ok, "the sender stalled")
		if at >= end {
			return w
		}
		n := s.NextLen() - s.cfg.HdrBytes
		seq := s.Take()
		if at >= from {
			w.payload = append(w.payload, n)
			w.bytes += n
		}
		s.Delivered(at, seq, 1<<30)
	}
}

// warm is when the tests start looking: slow start has opened the
// window past what the writes fill in a round trip.
const warm = sim.Time(2 * sim.Millisecond)

// smallWrites is a sender of iperf3 -l 256 on a LAN: writes of 256 bytes
// at tcp_sendmsg's 371 ns, TSO up to 44 segments.
func smallWrites() TCPConfig {
	cfg := base
	cfg.MaxSegs = 44
	cfg.WriteBytes, cfg.WriteCost = 256, 371*sim.Nanosecond
	return cfg
}

// TestSmallWritesReachTheReceiverAsSegments is FIDELITY row T1's small
// writes: a sender writing 256 bytes at a time into a tap device (its
// skbs orphaned as they leave: nothing for autocorking to wait on) is
// held by its writes, not its window, and each write's tcp_push sends
// what Nagle lets go: whole segments, one at a time, as the writes fill
// them (tcp_mss_split_point), the short rest held while a short segment
// is unacknowledged (tcp_minshall_check). The same stream written 128
// KiB at a time through a 10 Gbit/s line leaves as full TSO packets at
// the line's pace.
func TestSmallWritesReachTheReceiverAsSegments(t *testing.T) {
	const end = sim.Time(20 * sim.Millisecond)
	s := newTCP(t, smallWrites())
	before := s.Counters()
	got := receive(t, s, warm, end)

	appRate := 256.0 / 371e-9 // bytes a second
	rate := float64(got.bytes) / end.Sub(warm).Seconds()
	assert.InDelta(t, appRate, rate, 0.02*appRate, "the writes, not the window, set the rate")
	full := 0
	for _, n := range got.payload {
		require.LessOrEqual(t, n, 1448, "no frame carries more than one segment: the writes never queue a second before the first goes")
		if n == 1448 {
			full++
		}
	}
	assert.Greater(t, full, 95*len(got.payload)/100, "whole segments, one per frame: %d of %d", full, len(got.payload))
	c := s.Counters()
	assert.Positive(t, c.NagleHeld-before.NagleHeld, "Nagle held short rests")
	assert.Positive(t, c.Short, "a short rest goes once the short segment before it is acknowledged")
	assert.Less(t, c.Short, uint64(len(got.payload)/20), "and only then")
	assert.Zero(t, c.Autocorked, "a tap device frees every skb as it leaves")

	big := smallWrites()
	big.WriteBytes, big.LineBps = 128<<10, 10e9 // a 10 Gbit/s line, far below what the writes offer
	s = newTCP(t, big)
	got = receive(t, s, warm, end)
	assert.Equal(t, 44*1448, got.payload[len(got.payload)-1], "128 KiB writes: full TSO packets")
	assert.Zero(t, s.Counters().Short)
}

// TestNoDelaySendsEachWrite: with TCP_NODELAY (iperf3 -N) a write's
// push sends its bytes at once, short or not (tcp_nagle_check's
// nonagle): 256-byte frames, as many as writes.
func TestNoDelaySendsEachWrite(t *testing.T) {
	cfg := smallWrites()
	cfg.NoDelay = true
	s := newTCP(t, cfg)
	got := receive(t, s, warm, warm.Add(2*sim.Millisecond))
	n256 := 0
	for _, n := range got.payload {
		if n == 256 {
			n256++
		}
	}
	assert.Greater(t, n256, 95*len(got.payload)/100, "one frame a write: %d of %d", n256, len(got.payload))
	assert.Zero(t, s.Counters().NagleHeld)
}

// TestAutocorkingWaitsForTXCompletion: through a NIC whose TX completion
// comes 16 µs after a frame leaves, a write's push of less than a full
// TSO packet waits for it (tcp_should_autocork), so each frame carries
// what the writes made in about 16 µs (11 KB: 7 segments), not one
// segment; ACKs arriving meanwhile push what is queued (not corked).
func TestAutocorkingWaitsForTXCompletion(t *testing.T) {
	cfg := smallWrites()
	cfg.TxFree = 16 * sim.Microsecond
	cfg.RTT = 200 * sim.Microsecond // ACKs come back less often than completions
	s := newTCP(t, cfg)
	got := receive(t, s, warm, sim.Time(20*sim.Millisecond))
	mean := float64(got.bytes) / float64(len(got.payload))
	perTxFree := 256.0 / 371e-9 * 16e-6
	assert.InDelta(t, perTxFree, mean, 0.35*perTxFree, "a TX completion's worth of writes a frame")
	assert.Positive(t, s.Counters().Autocorked)
}

// TestRetransmissionsDoNotWaitForWrites: segments lost are sent again
// whether or not the application has written more.
func TestRetransmissionsDoNotWaitForWrites(t *testing.T) {
	cfg := smallWrites()
	cfg.WriteCost = 100 * sim.Microsecond // a write per RTT: the sender idles
	s := newTCP(t, cfg)
	var seqs []uint64
	var ats []sim.Time
	for len(seqs) < 3 {
		at, _, ok := s.Next()
		require.True(t, ok)
		ats = append(ats, at)
		seqs = append(seqs, s.Take())
	}
	// The first frame is lost; the second and third are reported.
	s.Delivered(ats[1], seqs[1], 1<<30)
	s.Delivered(ats[2], seqs[2], 1<<30)
	at, segs, ok := s.Next()
	require.True(t, ok)
	assert.Equal(t, 1, segs)
	assert.Less(t, at, s.appTime(s.newOff+1).Add(s.cfg.RTT/2), "the retransmission goes before the next write")
	assert.Equal(t, 1, s.nextRetx)
}
