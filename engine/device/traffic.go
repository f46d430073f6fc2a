package device

import (
	"cmp"
	"math"
	"math/rand/v2"

	"ringlab/engine/drop"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/transport"
)

// Never is the arrival time of a frame that is not coming: a TCP sender
// waiting for the receiver to report something.
const Never = sim.Time(math.MaxInt64)

// Traffic generates the arrivals of one queue: the flows that hash to it,
// at its share of the rate, with the configured sizes and bursts.
type Traffic struct {
	flows    []Flow
	tmpls    []frameTemplate // flows[i]'s headers, prepared once
	spec     scenario.Traffic
	interval float64 // ns between arrivals; 0 = saturating
	burst    int
	next     sim.Time // arrival time of the next packet
	inBurst  int
	frac     float64 // fractional ns carried between arrivals
	seq      uint64
	flowIdx  int
	rng      *rand.Rand // random_sizes: the scenario's seeded generator
	pcg      *rand.PCG  // rng's source, whose state a copy copies
	size     int        // the next frame's size (drawn at random, or SizeAt(seq)); not a TCP stream's
	// queueFull is why a replayed frame past the host's backlog is lost
	// (the tap's or the NIC's queue: NewRX says which).
	queueFull drop.Reason
	// tcp is the queue's tcp_stream sender (at most one stream a queue):
	// it decides when each frame arrives and how many segments it
	// carries; seq numbers its frames as it does.
	tcp *transport.TCP
	// rep is the queue's share of a replayed capture (NewReplayTraffic),
	// nil for generated traffic: seq numbers its frames.
	rep *replayQueue
}

// NewStreamTraffic is NewTraffic for the scenario's workload: the open
// generator as given, a udp_stream as an open generator of its
// datagrams' frames, a tcp_stream with a transport.TCP sender for the
// queue's stream. A queue without a stream has no flows.
//
// A tcp_stream's application writes write_bytes at a time, each costing
// the sender costs.TCPSendmsg; the sender's skbs are freed on TX
// completion, costs.NICTxCompletion after they leave, when it sends
// through a NIC (a nic or vdpa device, or a line rate: the sender is
// across a wire), and as they leave when it writes into vhost's tap on
// the host (tun_net_xmit orphans them).
func NewStreamTraffic(s *scenario.Scenario, q int, costs *sim.Costs) (*Traffic, error) {
	spec := s.Traffic
	switch spec.Kind {
	case scenario.TrafficUDPStream:
		_, spec.Size = s.UDPFrame()
		return NewTraffic(spec, q, s.Queues, s.Seed), nil
	case scenario.TrafficTCPStream:
		mss, hdr, segs := s.TCPFrame()
		spec.Size = mss + hdr
		t := NewTraffic(spec, q, s.Queues, s.Seed)
		t.interval = 0
		if !t.Active() {
			return t, nil
		}
		rtt := spec.RTTUs
		if rtt == 0 {
			rtt = scenario.DefaultRTTUs
		}
		var err error
		cfg := transport.TCPConfig{
			MSS: mss, HdrBytes: hdr, MaxSegs: segs,
			RTT:     sim.Duration(rtt * 1000),
			LineBps: spec.LineGbps * 1e9, WireOverhead: scenario.WireOverhead,
			RcvWnd:     tcpSynAckWindow(s, mss),
			Jiffy:      sim.Second / sim.Duration(max(s.Sched.HZ, 1)),
			WriteBytes: cmp.Or(spec.WriteBytes, scenario.DefaultWriteBytes),
			WriteCost:  costs.TCPSendmsg,
			NoDelay:    spec.NoDelay,
		}
		if s.Device.Kind != scenario.DeviceVhost || spec.LineGbps > 0 {
			cfg.TxFree = costs.NICTxCompletion
		}
		if cfg.WriteCost <= 0 {
			cfg.WriteBytes = 0 // the cost table's tcp_sendmsg set to 0: an application that never waits
		}
		t.tcp, err = transport.NewTCP(cfg)
		return t, err
	}
	return NewTraffic(spec, q, s.Queues, s.Seed), nil
}

// tcpTake is Advance for a TCP stream, out of line likewise.
//
//go:noinline
func (t *Traffic) tcpTake() {
	t.tcp.Take()
	t.seq++
}

// TCP is the queue's tcp_stream sender, nil for other workloads.
func (t *Traffic) TCP() *transport.TCP { return t.tcp }

// NewTraffic returns the generator of queue q out of nq. Flow f goes to
// queue f mod nq (a stand-in for the device's RSS); the rate is shared by
// the queues in proportion to their flows. seed seeds random frame sizes
// (each queue draws its own stream from it).
func NewTraffic(spec scenario.Traffic, q, nq int, seed uint64) *Traffic {
	t := &Traffic{spec: spec, burst: spec.Burst}
	if spec.RandomSizes {
		t.pcg = sim.NewPCG(seed + uint64(q)*0x9e3779b97f4a7c15)
		t.rng = rand.New(t.pcg)
		t.size = spec.Sizes[t.rng.IntN(len(spec.Sizes))]
	} else {
		t.size = spec.SizeAt(0)
	}
	proto := uint8(ProtoUDP)
	if spec.Proto == "tcp" {
		proto = ProtoTCP
	}
	for f := q; f < spec.Flows; f += nq {
		t.flows = append(t.flows, MakeFlow(f, spec.IPv6, proto, uint16(spec.DstPort)))
	}
	t.tmpls = make([]frameTemplate, len(t.flows))
	for i := range t.flows {
		t.tmpls[i] = newFrameTemplate(&t.flows[i])
	}
	if pps := spec.PPS(); pps > 0 && len(t.flows) > 0 {
		share := float64(len(t.flows)) / float64(spec.Flows)
		t.interval = 1e9 / (pps * share)
		if t.burst > 1 {
			t.interval *= float64(t.burst)
		}
	}
	if t.burst < 1 {
		t.burst = 1
	}
	return t
}

// Active reports whether this queue receives any traffic.
func (t *Traffic) Active() bool { return len(t.flows) > 0 }

// Saturating reports whether packets are always waiting.
func (t *Traffic) Saturating() bool { return t.interval == 0 && t.tcp == nil && t.rep == nil }

// NextArrival is the arrival time of the next packet: Never when a TCP
// sender waits for the receiver.
func (t *Traffic) NextArrival() sim.Time {
	if t.tcp != nil {
		return t.tcpArrival()
	}
	return t.next
}

// tcpArrival is NextArrival for a TCP stream, out of line so that the open
// generator's NextArrival inlines.
//
//go:noinline
func (t *Traffic) tcpArrival() sim.Time {
	at, _, ok := t.tcp.Next()
	if !ok {
		return Never
	}
	return at
}

// tcpSize is Peek's frame size for a TCP stream, out of line likewise.
//
//go:noinline
func (t *Traffic) tcpSize() int {
	return t.tcp.NextLen()
}

// Seq is the number of packets generated so far.
func (t *Traffic) Seq() uint64 { return t.seq }

// Peek returns the flow and frame size of the next packet.
func (t *Traffic) Peek() (*Flow, int) {
	if t.tcp != nil {
		return &t.flows[0], t.tcpSize()
	}
	return &t.flows[t.flowIdx], t.size
}

// build writes packet seq of flow f, frameLen bytes long, into b as
// Flow.Build would (cut at len(b)) and returns the bytes written.
func (t *Traffic) build(f int, b []byte, seq uint64, frameLen int) int {
	if t.rep != nil {
		return t.replayBuild(b, seq, frameLen)
	}
	return t.tmpls[f].build(b, seq, frameLen)
}

// Advance consumes the next packet and computes the following arrival.
// A TCP frame is on its way whether the device places it or drops it:
// the sender learns which from what the receiver reports.
func (t *Traffic) Advance() {
	if t.tcp != nil {
		t.tcpTake()
		return
	}
	if t.rep != nil {
		t.replayAdvance()
		return
	}
	t.seq++
	if len(t.spec.Sizes) > 0 { // a list of sizes, drawn or in turn; a single size stays
		t.nextSize()
	}
	t.flowIdx++
	if t.flowIdx == len(t.flows) {
		t.flowIdx = 0
	}
	if t.interval == 0 {
		return
	}
	t.inBurst++
	if t.inBurst < t.burst {
		return
	}
	t.inBurst = 0
	d := t.interval + t.frac
	whole := math.Floor(d)
	t.frac = d - whole
	t.next = t.next.Add(sim.Duration(whole))
}

// nextSize is Advance's size for the next frame from a list of sizes, at
// random or in turn; out of line.
//
//go:noinline
func (t *Traffic) nextSize() {
	if t.rng != nil {
		t.size = t.spec.Sizes[t.rng.IntN(len(t.spec.Sizes))]
		return
	}
	t.size = t.spec.SizeAt(t.seq)
}

// DropUntil discards the packets that arrived at or before t beyond the
// newest keep, as a full host queue does; it returns how many it dropped.
func (t *Traffic) DropUntil(at sim.Time, keep int) uint64 {
	if t.rep != nil {
		return t.replayDropUntil(at, keep)
	}
	if t.interval == 0 || t.next > at {
		return 0
	}
	waiting := uint64(float64(at-t.next)/t.interval*float64(t.burst)) + 1
	if waiting <= uint64(keep) {
		return 0
	}
	n := waiting - uint64(keep)
	for i := uint64(0); i < n; i++ {
		t.Advance()
	}
	return n
}

// tcpSynAckWindow is the window the receiver's SYN-ACK offers
// (tcp_select_initial_window): its starting receive buffer, counted at the
// kernel's default ratio, in whole segments, at most 65535.
func tcpSynAckWindow(s *scenario.Scenario, mss int) int {
	rcvbuf, _ := s.TCPRcvbufStart()
	b := s.Behaviours()
	return transport.InitialRcvWindow(rcvbuf, mss, transport.DefaultRatio(b.TCPDefaultRatioHalf), b.TCPScalingRatio).RcvWnd
}
