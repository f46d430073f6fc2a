package device

import (
	"math"
	"math/rand/v2"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

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
	size     int        // the next frame's size when drawn at random
}

// NewTraffic returns the generator of queue q out of nq. Flow f goes to
// queue f mod nq (a stand-in for the device's RSS); the rate is shared by
// the queues in proportion to their flows. seed seeds random frame sizes
// (each queue draws its own stream from it).
func NewTraffic(spec scenario.Traffic, q, nq int, seed uint64) *Traffic {
	t := &Traffic{spec: spec, burst: spec.Burst}
	if spec.RandomSizes {
		t.rng = sim.NewRand(seed + uint64(q)*0x9e3779b97f4a7c15)
		t.size = spec.Sizes[t.rng.IntN(len(spec.Sizes))]
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
func (t *Traffic) Saturating() bool { return t.interval == 0 }

// NextArrival is the arrival time of the next packet.
func (t *Traffic) NextArrival() sim.Time { return t.next }

// Seq is the number of packets generated so far.
func (t *Traffic) Seq() uint64 { return t.seq }

// Peek returns the flow and frame size of the next packet.
func (t *Traffic) Peek() (*Flow, int) {
	if t.rng != nil {
		return &t.flows[t.flowIdx], t.size
	}
	return &t.flows[t.flowIdx], t.spec.SizeAt(t.seq)
}

// build writes packet seq of flow f, frameLen bytes long, into b as
// Flow.Build would (cut at len(b)) and returns the bytes written.
func (t *Traffic) build(f int, b []byte, seq uint64, frameLen int) int {
	return t.tmpls[f].build(b, seq, frameLen)
}

// Advance consumes the next packet and computes the following arrival.
func (t *Traffic) Advance() {
	t.seq++
	if t.rng != nil {
		t.size = t.spec.Sizes[t.rng.IntN(len(t.spec.Sizes))]
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

// DropUntil discards the packets that arrived at or before t beyond the
// newest keep, as a full host queue does; it returns how many it dropped.
func (t *Traffic) DropUntil(at sim.Time, keep int) uint64 {
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
