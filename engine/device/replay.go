package device

import (
	"encoding/binary"
	"fmt"

	"ringlab/engine/drop"
	"ringlab/engine/kernel"
	"ringlab/engine/sim"
)

// Frame is one frame of a capture, handed to the engine by its caller
// (the engine reads no files): its bytes as captured, its length on the
// wire and when it arrived, counted from the capture's first frame.
type Frame struct {
	At   sim.Duration
	Len  int    // on the wire (the capture's original length), at least len(Data)
	Data []byte // as captured: a capture cut at a snap length holds fewer than Len
}

// MaxReplayFrames bounds a replay: every frame has its record (Fate).
const MaxReplayFrames = 1 << 22

// MaxFrameLen bounds a replayed frame's length on the wire: a 64 KiB
// GSO-sized frame is the largest a capture of a receive path holds.
const MaxFrameLen = 1 << 16

// Replay is a capture to feed the device instead of the scenario's
// generator: its frames, in order, arrive at their captured times (or at
// RatePPS, evenly spaced), each on the queue its flow hashes to, and
// enter the host backend as a generated frame does. Its bytes are the
// frame's: a program reads what was captured.
type Replay struct {
	Frames []Frame
	// RatePPS, when positive, spaces the frames 1/RatePPS apart instead
	// of their captured times.
	RatePPS float64
}

// Arrivals is when each frame arrives: its captured time, or i/RatePPS;
// a frame stamped earlier than the one before arrives with it.
func (r *Replay) Arrivals() []sim.Time {
	out := make([]sim.Time, len(r.Frames))
	var last sim.Duration
	for i := range r.Frames {
		at := r.Frames[i].At
		if r.RatePPS > 0 {
			at = sim.Duration(float64(i) * 1e9 / r.RatePPS)
		}
		last = max(last, at)
		out[i] = sim.Time(last)
	}
	return out
}

// Validate says what is wrong with r, naming the frame.
func (r *Replay) Validate() error {
	if len(r.Frames) == 0 {
		return fmt.Errorf("replay: no frames")
	}
	if len(r.Frames) > MaxReplayFrames {
		return fmt.Errorf("replay: %d frames, at most %d", len(r.Frames), MaxReplayFrames)
	}
	if r.RatePPS < 0 || r.RatePPS != r.RatePPS || r.RatePPS > 1e10 {
		return fmt.Errorf("replay: rate %g pps: want 0 (as captured) up to 1e10", r.RatePPS)
	}
	var last sim.Duration
	for i, f := range r.Frames {
		switch {
		case f.Len < 14 || f.Len > MaxFrameLen:
			return fmt.Errorf("replay: frame %d: %d bytes on the wire, want an Ethernet frame of 14 to %d", i+1, f.Len, MaxFrameLen)
		case len(f.Data) > f.Len:
			return fmt.Errorf("replay: frame %d: %d bytes captured of a %d-byte frame", i+1, len(f.Data), f.Len)
		case f.At < 0:
			return fmt.Errorf("replay: frame %d: arrives %d ns before the first", i+1, -f.At)
		}
		if f.At < last {
			// A capture's timestamps may step back (merged files, a
			// clock set back): the frame arrives with the previous one.
			continue
		}
		last = f.At
	}
	return nil
}

// Outcome is what became of a replayed frame, as far as the model
// follows it.
type Outcome uint8

// Outcomes.
const (
	// OutcomePending: still on its way when the run ended (not yet
	// arrived, waiting at the host, or in the ring).
	OutcomePending Outcome = iota
	// OutcomeHostQueueFull: the host's queue was full while the ring
	// was empty (Counters.Drops).
	OutcomeHostQueueFull
	// OutcomeTooBig: larger than the buffers posted (Counters.TooBig).
	OutcomeTooBig
	// OutcomeNoBuffer: a vDPA device had no buffer for it
	// (Counters.NoBufferDrops).
	OutcomeNoBuffer
	// OutcomeReceived: the driver took it from the ring; with no XDP
	// program it went to the stack (GRO, then the consumer).
	OutcomeReceived
	// OutcomeXDP: the XDP program ran on it; Fate.Action says what it
	// returned and Fate.Failed whether the driver could carry it out.
	OutcomeXDP
)

// Fate is one replayed frame's record: where it went, and what an XDP
// program did with it.
type Fate struct {
	Queue   int16
	Outcome Outcome
	// Action is the XDP program's verdict (enum xdp_action) when
	// Outcome is OutcomeXDP; Failed when the driver could not carry out
	// TX or REDIRECT and dropped the frame (the trace_xdp_exception path).
	Action uint8
	Failed bool
	// Drop is why the model dropped the frame where the site says
	// (engine/drop); an XDP_DROP or XDP_ABORTED verdict is its own.
	Drop drop.Reason
	// Taken is when the driver took it from the ring.
	Taken sim.Time
	// What the program read and wrote of the frame, as offsets from its
	// first byte (data at entry), hi one past the last byte; lo == hi
	// when it did not (Loads, Stores count the accesses). HeadMove and
	// TailMove are how far bpf_xdp_adjust_head and adjust_tail moved
	// data and data_end; Insns the instructions run.
	Loads, Stores    int32
	ReadLo, ReadHi   int32
	WriteLo, WriteHi int32
	HeadMove         int32
	TailMove         int32
	Insns            int32
}

// ReplayLog is every replayed frame's Fate, by its index in the capture;
// a world holds one for its replay and every queue writes its own frames'.
type ReplayLog struct {
	fates   []Fate
	decided int // frames whose Outcome is no longer OutcomePending
}

// NewReplayLog returns the log of n frames, all pending.
func NewReplayLog(n int) *ReplayLog { return &ReplayLog{fates: make([]Fate, n)} }

// Fates is every frame's record, in capture order (read only).
func (l *ReplayLog) Fates() []Fate { return l.fates }

// Decided is the number of frames whose outcome is known.
func (l *ReplayLog) Decided() int { return l.decided }

// Done reports whether every frame's outcome is known.
func (l *ReplayLog) Done() bool { return l.decided == len(l.fates) }

// set records frame i's outcome.
func (l *ReplayLog) set(i int32, o Outcome) *Fate {
	f := &l.fates[i]
	if f.Outcome == OutcomePending {
		l.decided++
	}
	f.Outcome = o
	return f
}

// CopyFrom makes l's records src's.
func (l *ReplayLog) CopyFrom(src *ReplayLog) error {
	if len(l.fates) != len(src.fates) {
		return fmt.Errorf("device: copy: a replay of %d frames into one of %d", len(src.fates), len(l.fates))
	}
	copy(l.fates, src.fates)
	l.decided = src.decided
	return nil
}

// replayQueue is one queue's share of a replay: the capture's frames
// that hash to it, in order, and when each arrives.
type replayQueue struct {
	frames []Frame // the whole capture, shared and never written
	idx    []int32 // capture index of this queue's frames
	at     []sim.Time
	log    *ReplayLog
	q      int16
}

// NewReplayTraffic returns the traffic of queue q out of nq fed by rep:
// the frames whose flow hashes to q (ReplayQueue), recorded in log.
func NewReplayTraffic(rep *Replay, log *ReplayLog, q, nq int) *Traffic {
	rq := &replayQueue{frames: rep.Frames, log: log, q: int16(q)}
	for i, at := range rep.Arrivals() {
		if ReplayQueue(rep.Frames[i].Data, nq) != q {
			continue
		}
		rq.idx = append(rq.idx, int32(i))
		rq.at = append(rq.at, at)
	}
	t := &Traffic{rep: rq, burst: 1}
	if len(rq.idx) == 0 {
		return t // inactive: no flows
	}
	t.flows = make([]Flow, 1) // Active; Peek's flow, never built
	t.next = rq.at[0]
	t.size = rep.Frames[rq.idx[0]].Len
	return t
}

// ReplayQueue is the receive queue out of nq a captured frame goes to:
// a hash of its IPv4 or IPv6 addresses and TCP or UDP ports, a stand-in
// for the device's RSS (as the generator's flow f goes to queue f mod
// nq); a frame that is neither goes to queue 0.
func ReplayQueue(b []byte, nq int) int {
	if nq <= 1 || len(b) < 14 {
		return 0
	}
	typ, l3 := binary.BigEndian.Uint16(b[12:]), 14
	for (typ == 0x8100 || typ == 0x88a8) && len(b) >= l3+4 { // VLAN tags
		typ, l3 = binary.BigEndian.Uint16(b[l3+2:]), l3+4
	}
	var key []byte
	var proto byte
	l4 := 0
	switch {
	case typ == 0x0800 && len(b) >= l3+20:
		ihl := int(b[l3]&0x0f) * 4
		key, proto, l4 = b[l3+12:l3+20], b[l3+9], l3+ihl
		if binary.BigEndian.Uint16(b[l3+6:])&0x3fff != 0 { // a fragment: addresses only
			l4 = 0
		}
	case typ == 0x86dd && len(b) >= l3+40:
		key, proto, l4 = b[l3+8:l3+40], b[l3+6], l3+40
	default:
		return 0
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range key {
		h = (h ^ uint32(c)) * 16777619
	}
	if (proto == ProtoTCP || proto == ProtoUDP) && l4 > 0 && len(b) >= l4+4 {
		for _, c := range b[l4 : l4+4] {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	// murmur3's finaliser: FNV's low bits are the parity of the key's
	// low bits, alike for flows that differ in address and port alike.
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int(h % uint32(nq))
}

// Replaying reports whether t replays a capture.
func (t *Traffic) Replaying() bool { return t.rep != nil }

// replayAdvance is Advance for a replay: the next frame of the queue, or
// none (Never).
//
//go:noinline
func (t *Traffic) replayAdvance() {
	t.seq++
	rq := t.rep
	if t.seq >= uint64(len(rq.idx)) {
		t.next, t.size = Never, 0
		return
	}
	t.next = rq.at[t.seq]
	t.size = rq.frames[rq.idx[t.seq]].Len
}

// replayBuild is build for a replay: frame seq's captured bytes, cut at
// len(b); bytes past what was captured are zero.
//
//go:noinline
func (t *Traffic) replayBuild(b []byte, seq uint64, frameLen int) int {
	rq := t.rep
	if seq >= uint64(len(rq.idx)) {
		return 0
	}
	n := min(len(b), frameLen)
	c := copy(b[:n], rq.frames[rq.idx[seq]].Data)
	clear(b[c:n])
	return n
}

// replayDropUntil is DropUntil for a replay: the frames that arrived by
// at beyond the newest keep are dropped, each recorded.
//
//go:noinline
func (t *Traffic) replayDropUntil(at sim.Time, keep int) uint64 {
	rq := t.rep
	waiting := uint64(0)
	for s := t.seq; s < uint64(len(rq.at)) && rq.at[s] <= at; s++ {
		waiting++
	}
	if waiting <= uint64(keep) {
		return 0
	}
	n := waiting - uint64(keep)
	for i := uint64(0); i < n; i++ {
		t.Record(OutcomeHostQueueFull, t.queueFull)
		t.replayAdvance()
	}
	return n
}

// Record sets the outcome of the frame the traffic is at (the next one
// Advance consumes), for a replay; nothing otherwise.
func (t *Traffic) Record(o Outcome, why drop.Reason) {
	if t.rep != nil && t.seq < uint64(len(t.rep.idx)) {
		f := t.rep.log.set(t.rep.idx[t.seq], o)
		f.Queue, f.Drop = t.rep.q, why
	}
}

// Fate sets the outcome of frame seq of this queue and returns its
// record, nil when t replays nothing or seq is none of its frames.
func (t *Traffic) Fate(seq uint64, o Outcome) *Fate {
	if t.rep == nil || seq >= uint64(len(t.rep.idx)) {
		return nil
	}
	f := t.rep.log.set(t.rep.idx[seq], o)
	f.Queue = t.rep.q
	return f
}

// Fates of a frame, as a replay's outputs name them (Fate.Fate).
const (
	FatePending     = "pending"     // still on its way when the run ended
	FateDelivered   = "delivered"   // passed to the stack (XDP_PASS, or no program)
	FateDropped     = "dropped"     // dropped: Fate.Reason says where and why
	FateTransmitted = "transmitted" // XDP_TX: sent back out of the XDP send queue
	FateRedirected  = "redirected"  // XDP_REDIRECT into a cpumap or devmap
)

// XDP verdicts (enum xdp_action) as a Fate's Action holds them.
const (
	xdpAborted  = 0
	xdpDrop     = 1
	xdpPass     = 2
	xdpTx       = 3
	xdpRedirect = 4
)

// Fate says what became of the frame: FatePending, FateDelivered,
// FateDropped, FateTransmitted or FateRedirected.
func (f *Fate) Fate() string {
	switch f.Outcome {
	case OutcomePending:
		return FatePending
	case OutcomeReceived:
		return FateDelivered
	case OutcomeXDP:
		switch {
		case f.Failed:
			return FateDropped
		case f.Action == xdpPass:
			return FateDelivered
		case f.Action == xdpTx:
			return FateTransmitted
		case f.Action == xdpRedirect:
			return FateRedirected
		}
	}
	return FateDropped
}

// Reason is why the model dropped the frame, by the name engine/drop
// gives it at kernel v (the kernel's skb_drop_reason from the release
// that has one, else the model's); "" when it was not dropped.
func (f *Fate) Reason(v kernel.Version) string {
	why := f.Drop
	if why == drop.None && f.Outcome == OutcomeXDP {
		switch f.Action {
		case xdpPass, xdpTx, xdpRedirect:
		case xdpDrop:
			why = drop.XDPDrop
		default:
			why = drop.XDPAbort // XDP_ABORTED, or a value no verdict has
		}
	}
	return drop.Name(why, v)
}
