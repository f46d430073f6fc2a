package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// tcpStream is the default preset turned into an iperf3-like stream into
// a vDPA virtqueue at 100 Gbit/s, read by an application on CPU 1.
func tcpStream(edit func(*scenario.Scenario)) func(*scenario.Scenario) {
	return func(s *scenario.Scenario) {
		s.CPUs = 2
		s.RingSize = 256
		s.Device.Kind = scenario.DeviceVDPA
		s.Traffic = scenario.Traffic{Kind: scenario.TrafficTCPStream, Proto: "tcp", Flows: 1, LineGbps: 100, DstPort: 5201}
		s.Consumer = scenario.Consumer{CPU: 1, Context: scenario.FreeProcess, CostNs: 200}
		if edit != nil {
			edit(s)
		}
	}
}

// runStream runs a stream for d, checked after every event and for
// liveness, and returns the application's goodput in Gbit/s.
func runStream(t *testing.T, edit func(*scenario.Scenario), d sim.Duration) (*World, float64) {
	t.Helper()
	w := preset(t, "default", tcpStream(edit))
	require.NoError(t, w.CheckEveryEvent(0))
	w.CheckLiveness(0)
	require.NoError(t, w.RunUntil(sim.Time(d)))
	require.NoError(t, w.Check())
	return w, float64(counter(t, w, "app_bytes")) * 8 / d.Seconds() / 1e9
}

// A TCP stream slows on loss: a ring too short for the bursts its window
// sends drops frames (the vDPA device has nowhere else to put them), the
// sender cuts its window to CUBIC's 0.7 each time the next frames' SACKs
// reveal a loss and RACK marks it (tcp_enter_recovery), and the stream
// runs far below what a
// longer ring lets it reach. Nothing is lost for good: what the
// application reads is what the sender delivered.
func TestTCPStreamSlowsOnLoss(t *testing.T) {
	short, slow := runStream(t, func(s *scenario.Scenario) { s.RingSize = 64 }, 20*sim.Millisecond)
	long, fast := runStream(t, nil, 20*sim.Millisecond)
	t.Logf("64 entries: %.1f Gbit/s, %d frames lost, cwnd %d; 256 entries: %.1f Gbit/s, %d lost", slow,
		counter(t, short, "tcp_lost_frames"), counter(t, short, "tcp_cwnd"), fast, counter(t, long, "tcp_lost_frames"))
	assert.Positive(t, counter(t, short, "host_no_buffer_drops"))
	assert.Positive(t, counter(t, short, "tcp_lost_frames"))
	assert.Positive(t, counter(t, short, "tcp_fast_recovery"), "losses revealed by later frames halve the window")
	assert.Zero(t, counter(t, short, "tcp_timeouts"), "no loss needs the retransmission timer")
	assert.Less(t, slow*2, fast, "the longer ring more than doubles the stream")
	assert.Equal(t, counter(t, short, "host_no_buffer_drops"), counter(t, short, "tcp_lost_frames"),
		"every frame the device dropped, and only those, is what the sender found lost")
}

// The receiver's window holds the stream: a socket buffer smaller than
// the bandwidth-delay product caps it at about rcvbuf's window per round
// trip, and a larger one lifts the cap.
func TestTCPStreamWindowFromTheSocketBuffer(t *testing.T) {
	const rtt = 100 // µs
	small := func(s *scenario.Scenario) {
		s.Traffic.RTTUs = rtt
		s.Consumer.RcvbufBytes = 256 << 10
		s.Consumer.CostNs = 0
	}
	w, gbps := runStream(t, small, 20*sim.Millisecond)
	// 6.6+: the window is the free buffer scaled by payload/truesize; the
	// whole buffer's worth bounds the stream.
	bound := float64(256<<10) * 8 / (rtt * 1e-6) / 1e9
	t.Logf("rcvbuf 256 KiB, RTT %d µs: %.2f Gbit/s (the buffer's worth per RTT: %.2f)", rtt, gbps, bound)
	assert.Positive(t, counter(t, w, "tcp_rcvwnd_limited"))
	assert.Less(t, gbps, bound)
	_, big := runStream(t, func(s *scenario.Scenario) { small(s); s.Consumer.RcvbufBytes = 4 << 20 }, 20*sim.Millisecond)
	assert.Greater(t, big, 2*gbps, "sixteen times the buffer, more than twice the stream")
}

// Throughput is what the application reads, and an application slower
// than the stream is what limits it: its socket fills, the window closes,
// and the sender waits instead of losing frames.
func TestTCPStreamIsPacedByTheApplication(t *testing.T) {
	w, gbps := runStream(t, func(s *scenario.Scenario) {
		s.Consumer.CostNs = 20000
		s.Consumer.RcvbufBytes = scenario.TCPRmemMax // 6 MiB: the 32 MiB of 6.16+ outlasts the 20 ms run
	}, 20*sim.Millisecond)
	// tcp_recvmsg pays its cost once an skb it takes off the queue (a GRO
	// skb, with what TCP merged into it on the socket) and the copy per
	// byte: the reader's CPU is what holds the stream.
	read := counter(t, w, "socket_queued")
	perSKB := float64(20*sim.Millisecond) / float64(read)
	t.Logf("a 20 µs-per-skb application: %.2f Gbit/s, %d skbs read (%.1f µs each), CPU 1 %.2f", gbps, read, perSKB/1e3, w.Sim.CPU(1).Utilisation(20*sim.Millisecond))
	assert.Greater(t, perSKB, float64(20*sim.Microsecond), "no faster than its cost per skb")
	// The window stops the sender before the socket overflows but for a
	// few packets sent against a window that the payload-to-truesize
	// ratio (which alternates between the page_pool fragments' two
	// truesizes, as tp->scaling_ratio follows the last packet) overstated;
	// Linux would collapse its queue (tcp_prune_queue), the engine drops
	// them (docs/scenario.md).
	assert.Less(t, float64(counter(t, w, "socket_drops")), 0.01*float64(counter(t, w, "stack_delivered")))
	assert.Zero(t, counter(t, w, "tcp_timeouts"))
	assert.Positive(t, counter(t, w, "tcp_rcvwnd_limited"))
	assert.Greater(t, w.Sim.CPU(1).Utilisation(20*sim.Millisecond), 0.95)
}

// A udp_stream is open loop: an application slower than the datagrams
// fills its receive buffer, and the socket drops what does not fit
// (UDP_MIB_RCVBUFERRORS); what it reads is capped by the application.
func TestUDPStreamDropsAtTheSocket(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) {
		s.CPUs = 2
		s.RingSize = 256
		s.Traffic = scenario.Traffic{Kind: scenario.TrafficUDPStream, Proto: "udp", Flows: 1, RatePPS: 1e6, DstPort: 9}
		s.Consumer = scenario.Consumer{CPU: 1, Context: scenario.FreeProcess, CostNs: 2000}
	})
	require.NoError(t, w.CheckEveryEvent(0))
	require.NoError(t, w.RunUntil(sim.Time(20*sim.Millisecond)))
	require.NoError(t, w.Check())
	drops, read := counter(t, w, "socket_drops"), counter(t, w, "stack_delivered")
	t.Logf("1 Mpps into a 2 µs application: %d read, %d dropped at the socket, %d bytes held", read, drops, w.Stack.Rmem(1))
	assert.Positive(t, drops)
	assert.InDelta(t, 20e-3/2.15e-6, float64(read), 0.15*20e-3/2.15e-6)
	assert.LessOrEqual(t, w.Stack.Rmem(1), uint64(scenario.UDPRmemDefault+w.Scenario.RingSize*4096), "the buffer bounds what the socket holds")
	_, frame := w.Scenario.UDPFrame()
	assert.Equal(t, 1514, frame, "netperf's default message fills the MTU")
}

func TestStreamValidation(t *testing.T) {
	base := func() scenario.Scenario {
		s, err := scenario.LookupPreset("default")
		require.NoError(t, err)
		tcpStream(nil)(&s)
		return s
	}
	for _, tc := range []struct {
		name  string
		edit  func(*scenario.Scenario)
		field string
	}{
		{"softirq consumer", func(s *scenario.Scenario) { s.Consumer.Context = scenario.FreeSoftirq }, "consumer.context"},
		{"udp proto", func(s *scenario.Scenario) { s.Traffic.Proto = "udp" }, "traffic.proto"},
		{"a rate", func(s *scenario.Scenario) { s.Traffic.RatePPS = 1e6; s.Traffic.LineGbps = 0 }, "traffic.rate_pps"},
		{"sizes", func(s *scenario.Scenario) { s.Traffic.Sizes = []int{100, 200} }, "traffic.sizes"},
		{"more streams than queues", func(s *scenario.Scenario) { s.Traffic.Flows = 2 }, "traffic.flows"},
		{"bad kind", func(s *scenario.Scenario) { s.Traffic.Kind = "tcp_rr" }, "traffic.kind"},
		{"rtt on open traffic", func(s *scenario.Scenario) { s.Traffic.Kind = ""; s.Traffic.RTTUs = 10 }, "traffic"},
		{"negative rtt", func(s *scenario.Scenario) { s.Traffic.RTTUs = -1 }, "traffic.rtt_us"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			err := s.Validate()
			var fe *scenario.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field, err.Error())
		})
	}
	s := base()
	require.NoError(t, s.Validate())
}

// Without VIRTIO_NET_F_GUEST_CSUM the stack sums every payload byte in
// software on the CPU that takes the packet (__skb_checksum_complete):
// csum_64b per 64 bytes more of that CPU's time per packet, and the
// bytes counted.
func TestChecksumWithoutGuestCsum(t *testing.T) {
	run := func(csum bool) *World {
		w := preset(t, "default", func(s *scenario.Scenario) {
			s.RingSize = 256
			s.Traffic = scenario.Traffic{Proto: "udp", Size: 1514, Flows: 1, RatePPS: 100_000, DstPort: 9}
			s.Features.GuestCsum = csum
		})
		require.NoError(t, w.RunUntil(sim.Time(10*sim.Millisecond)))
		return w
	}
	on, off := run(true), run(false)
	require.Equal(t, on.Received(), off.Received(), "the same packets either way")
	assert.Zero(t, counter(t, on, "csum_bytes"))
	payload := uint64(1514 - 14 - 20 - 8)
	assert.Equal(t, off.Stack.Counters().Delivered*payload, counter(t, off, "csum_bytes"))
	extra := float64(off.Sim.CPU(0).Busy()-on.Sim.CPU(0).Busy()) / float64(off.Stack.Counters().Delivered)
	want := float64((payload+63)/64) * float64(off.Sim.Costs.Csum64)
	assert.InEpsilon(t, want, extra, 0.03, "csum_64b per 64 bytes of payload on CPU 0 (the run's last poll is cut by the window)")
}

// FIDELITY row N5: the cpumap kthread passes its skbs up through GRO from
// 6.15 (4f8ab26a034f, cpu_map_kthread_run's gro_receive_skb), so a TCP
// stream redirected to another CPU reaches the protocol in merged skbs,
// each paying tcp_rcv and an ACK once; before, netif_receive_skb_list
// passed each segment up alone.
func TestCpumapGROFrom615(t *testing.T) {
	run := func(kernel string) *World {
		w := preset(t, "r1-page-pool", func(s *scenario.Scenario) { s.Kernel = kernel })
		require.NoError(t, w.CheckEveryEvent(0))
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
		require.NoError(t, w.Check())
		return w
	}
	old, gro := run("6.14"), run("6.15")
	assert.Zero(t, counter(t, old, "gro_merged"))
	assert.Equal(t, counter(t, old, "cpumap_passed"), counter(t, old, "socket_queued")+counter(t, old, "tcp_rcv_coalesce")+counter(t, old, "socket_drops"), "6.14: every skb to the socket alone")
	assert.Greater(t, counter(t, gro, "gro_merged"), counter(t, gro, "gro_skbs"), "6.15: most frames merged")
	assert.Less(t, counter(t, gro, "tcp_acks")*2, counter(t, old, "tcp_acks"), "an ACK a merged skb, not one per two segments")
	assert.Greater(t, counter(t, gro, "app_bytes"), counter(t, old, "app_bytes"), "CPU 1 has the protocol's time back")
}

// tcp_event_data_recv's delayed-ACK engine: the first data sets ato to
// TCP_ATO_MIN (40 ms); arrivals closer than half of it keep it there,
// a slower one moves it to half of itself plus the gap, and a gap past
// the RTO (the sender stalled) brings back the quick ACKs. Then
// tcp_send_delayed_ack: an ato past TCP_DELACK_MIN is bounded by the
// round trip, at least TCP_DELACK_MIN, and the timer expires at a jiffy
// (FIDELITY N6).
func TestDelayedACKTimeoutFollowsTheArrivals(t *testing.T) {
	for _, tc := range []struct {
		rttUs float64
		delay sim.Duration // the timer after a 30 ms gap
	}{
		{50, 40 * sim.Millisecond},      // bounded by TCP_DELACK_MIN: the round trip is shorter
		{100_000, 50 * sim.Millisecond}, // a 100 ms round trip lets ato's 50 ms stand
	} {
		w := preset(t, "r2-mtu1500-before", func(s *scenario.Scenario) { s.Traffic.RTTUs = tc.rttUs })
		st := w.streams
		require.NotNil(t, st)
		sq := &st.q[0]
		at := func(ms int64) sim.Time { return sim.Time(ms) * sim.Time(sim.Millisecond) }
		st.eventDataRecv(sq, at(1000))
		assert.Equal(t, int64(40), sq.ato, "TCP_ATO_MIN at the first data")
		st.eventDataRecv(sq, at(1010))
		assert.Equal(t, int64(40), sq.ato, "10 ms apart: ato/2 + TCP_ATO_MIN/2")
		st.eventDataRecv(sq, at(1040))
		assert.Equal(t, int64(50), sq.ato, "30 ms apart: ato/2 + 30")
		st.eventDataRecv(sq, at(1140))
		assert.Equal(t, int64(50), sq.ato, "a gap past ato, short of the RTO: unchanged")
		sq.quick = 0
		st.eventDataRecv(sq, at(1600))
		assert.Equal(t, maxQuickACKs, sq.quick, "a gap past the RTO: quick ACKs again")

		sq.ato, sq.delackAt, sq.npend = 50, 0, 1
		c := w.Sim.CPU(0)
		c.BeginSoftirq(at(2000).Add(300*sim.Microsecond), "test")
		st.sendDelayedACK(c, 0)
		c.End()
		assert.Equal(t, at(2000).Add(tc.delay), sq.delackAt, "rtt %v µs: the timer at the jiffy plus the bounded ato", tc.rttUs)
		sq.npend = 0
	}
}

// R1's stream behind a cpumap on 6.4: the program turned GUEST_CSUM off
// (virtnet_xdp_set, virtnet_clear_guest_offloads), so the skbs the cpumap
// kthread builds reach tcp_v4_rcv unvalidated and CPU 1 checksums every
// payload byte (FIDELITY N3); from 6.10 the device's DATA_VALID survives
// the program and nothing is summed in software.
func TestXDPStreamChecksumsInSoftware(t *testing.T) {
	run := func(kernel string) *World {
		w := preset(t, "r1-page-pool", func(s *scenario.Scenario) { s.Kernel = kernel })
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
		return w
	}
	old, kept := run("6.4"), run("6.10")
	assert.Positive(t, counter(t, old, "csum_bytes"))
	assert.GreaterOrEqual(t, counter(t, old, "csum_bytes"), counter(t, old, "app_bytes"), "every byte read was summed first")
	assert.Zero(t, counter(t, kept, "csum_bytes"))
	assert.Positive(t, old.Sim.CPU(1).Profile()[sim.SymSKBChecksum], "on CPU 1, where the cpumap kthread runs the protocol")
}

// A receiver's buffer and window grow as Linux's do (FIDELITY N7): the
// socket starts at tcp_rmem[1] (131072 bytes), so the SYN-ACK offers 7
// segments of 8948 bytes (tcp_select_initial_window); rcv_ssthresh and
// the window grow per skb (tcp_grow_window); and each receiver round trip
// whose reads pass the last one's, dynamic right-sizing grows sk_rcvbuf
// toward tcp_rmem[2] (tcp_rcv_space_adjust). A buffer the application
// set (SO_RCVBUF) stays where it was set.
func TestReceiveBufferAutotunes(t *testing.T) {
	w := preset(t, "r2-mtu9000-after", nil)
	tcp := w.Driver.RQ[0].Dev.Traffic().TCP()
	require.NotNil(t, tcp)
	assert.Equal(t, 62636, tcp.RcvWnd(), "the SYN-ACK's window: 131072 bytes' worth, in whole segments")
	require.NoError(t, w.RunUntil(sim.Time(20*sim.Millisecond)))
	cpu := w.streams.q[0].sockCPU
	require.GreaterOrEqual(t, cpu, 0)
	grown := w.Stack.Rcvbuf(cpu)
	t.Logf("sk_rcvbuf 131072 -> %d in 20 ms, window_clamp %d, rcv_ssthresh %d", grown, w.streams.q[0].clamp, w.streams.q[0].ssthresh)
	assert.Greater(t, grown, 1<<20, "grown by dynamic right-sizing")
	assert.LessOrEqual(t, grown, scenario.TCPRmemMax, "at most tcp_rmem[2]")
	assert.Greater(t, w.streams.q[0].ssthresh, 62636, "rcv_ssthresh grew with the buffer")

	locked := preset(t, "r2-mtu9000-after", func(s *scenario.Scenario) { s.Consumer.RcvbufBytes = 1 << 20 })
	require.NoError(t, locked.RunUntil(sim.Time(20*sim.Millisecond)))
	assert.Equal(t, 1<<20, locked.Stack.Rcvbuf(locked.streams.q[0].sockCPU), "SO_RCVBUF: SOCK_RCVBUF_LOCK, no autotuning")
}

// TestSmallWritesHoldTheStream is FIDELITY row T1 in a world: a stream
// into a vhost device with guest GSO, whose host hands the guest the
// sender's TSO packets whole. Written 128 KiB at a time (iperf3's
// default) it arrives in 64 KiB packets and the receiver holds it;
// written 256 bytes at a time (iperf3 -l 256) the writes hold it
// (tcp_sendmsg each; LimitOf says so) and it arrives as the sender's
// Nagle and autocorking cut it: from a sender on the host writing into
// the tap (skbs orphaned as they leave), one segment a frame; from one
// across a 100 Gbit/s wire (skbs freed at TX completion), a
// completion's worth of writes a frame; with TCP_NODELAY, the short
// rests too.
func TestSmallWritesHoldTheStream(t *testing.T) {
	run := func(write int, line float64, nodelay bool) (Limit, float64, *World) {
		w := preset(t, "default", tcpStream(func(s *scenario.Scenario) {
			s.Device.Kind, s.Features.GuestGSO = scenario.DeviceVhost, true
			s.Traffic.WriteBytes, s.Traffic.LineGbps, s.Traffic.NoDelay = write, line, nodelay
		}))
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
		a := w.MarkUsage()
		require.NoError(t, w.RunUntil(sim.Time(25*sim.Millisecond)))
		require.NoError(t, w.Check())
		u := w.UsageBetween(a, w.MarkUsage())
		return LimitOf(u), u.FrameBytes, w
	}
	big, bigFrame, _ := run(128<<10, 0, false)
	tap, tapFrame, wt := run(256, 0, false)
	wire, wireFrame, ww := run(256, 100, false)
	_, nodelayFrame, wn := run(256, 0, true)

	assert.NotEqual(t, ResApp, big.Kind, "128 KiB writes outrun the receiver: %s", big)
	assert.Greater(t, bigFrame, 4*1514.0, "TSO packets, as the windows let them go")
	assert.Equal(t, ResApp, tap.Kind, "256-byte writes hold the stream: %s", tap)
	assert.Equal(t, ResApp, wire.Kind, "256-byte writes hold the stream: %s", wire)
	assert.InDelta(t, 1514, tapFrame, 100, "into the tap: a segment a frame, a short rest now and then")
	assert.Zero(t, counter(t, wt, "tcp_autocorked"))
	assert.Greater(t, wireFrame, 3*1514.0, "across a wire: autocorking gathers a TX completion's worth")
	assert.Positive(t, counter(t, ww, "tcp_autocorked"))
	assert.Less(t, nodelayFrame, 0.5*tapFrame, "TCP_NODELAY sends every write")
	assert.Positive(t, counter(t, wn, "tcp_short_segments"))
}
