package capture

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/kernel"
	"ringlab/engine/sim"
)

// Replay turns a parsed capture into the frames the engine replays
// (engine.NewReplay): the first frame arrives at 0, each other at its
// timestamp's distance from the first (a frame stamped earlier than the
// first arrives with it; a simple packet block, which has no
// timestamp, with the frame before), or evenly at rate packets per
// second when rate > 0. An error names the packet by its number and the
// byte offset of its record.
func Replay(c *Capture, rate float64) (*device.Replay, error) {
	if len(c.Packets) == 0 {
		return nil, fmt.Errorf("the capture holds no packets")
	}
	if len(c.Packets) > device.MaxReplayFrames {
		return nil, fmt.Errorf("%d packets, at most %d", len(c.Packets), device.MaxReplayFrames)
	}
	rep := &device.Replay{Frames: make([]device.Frame, len(c.Packets)), RatePPS: rate}
	t0 := c.Packets[0].Time
	for i, p := range c.Packets {
		switch {
		case p.Len < 14:
			return nil, fmt.Errorf("packet %d at byte offset %d: %d bytes on the wire, shorter than an Ethernet header", i+1, p.Offset, p.Len)
		case p.Len > device.MaxFrameLen:
			return nil, fmt.Errorf("packet %d at byte offset %d: %d bytes on the wire, more than the %d a received frame may have", i+1, p.Offset, p.Len, device.MaxFrameLen)
		}
		rep.Frames[i] = device.Frame{At: sim.Duration(max(p.Time-t0, 0)), Len: p.Len, Data: p.Data}
	}
	if err := rep.Validate(); err != nil {
		return nil, err
	}
	return rep, nil
}

// Span is a range of a frame's bytes a program read or wrote, from its
// first byte, Hi one past the last, with how many accesses.
type Span struct {
	Lo       int `json:"lo"`
	Hi       int `json:"hi"`
	Accesses int `json:"accesses"`
}

func (s *Span) String() string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%d-%d(%d)", s.Lo, s.Hi-1, s.Accesses)
}

// Record is what became of one replayed frame, as `ringlab run --pcap`
// prints it and the page shows it.
type Record struct {
	N         int    `json:"n"`
	Offset    int64  `json:"offset"`
	Len       int    `json:"len"`
	CapLen    int    `json:"caplen"`
	Flow      string `json:"flow"`
	Queue     int    `json:"queue"`
	ArrivalNS int64  `json:"arrival_ns"`
	TakenNS   int64  `json:"taken_ns,omitempty"`
	Fate      string `json:"fate"`
	Verdict   string `json:"verdict,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Read      *Span  `json:"read,omitempty"`
	Wrote     *Span  `json:"wrote,omitempty"`
	HeadMove  int    `json:"head_move,omitempty"`
	TailMove  int    `json:"tail_move,omitempty"`
	Insns     int    `json:"insns,omitempty"`
}

// Records is every frame's record: c the capture, rep its replay, fates
// the world's record of each frame (engine.World.Replay().Fates()), for
// a world of queues receive queues at kernel v.
func Records(c *Capture, rep *device.Replay, fates []device.Fate, queues int, v kernel.Version) []Record {
	out := make([]Record, len(fates))
	arrivals := rep.Arrivals()
	for i := range fates {
		out[i] = record(c, i, arrivals[i], &fates[i], queues, v)
	}
	return out
}

// RecordOf is frame i's record (0-based), as Records has it.
func RecordOf(c *Capture, rep *device.Replay, fates []device.Fate, i, queues int, v kernel.Version) Record {
	at := sim.Time(float64(i) * 1e9 / max(rep.RatePPS, 1)) // as Arrivals spaces them
	if rep.RatePPS <= 0 {
		at = 0
		for j := 0; j <= i; j++ { // a frame stamped earlier arrives with the one before
			at = max(at, sim.Time(rep.Frames[j].At))
		}
	}
	return record(c, i, at, &fates[i], queues, v)
}

func record(c *Capture, i int, arrival sim.Time, f *device.Fate, queues int, v kernel.Version) Record {
	p := &c.Packets[i]
	r := Record{
		N: i + 1, Offset: p.Offset, Len: p.Len, CapLen: len(p.Data),
		Flow:      Describe(p.Data),
		Queue:     device.ReplayQueue(p.Data, queues),
		ArrivalNS: int64(arrival),
		Fate:      f.Fate(), Reason: f.Reason(v),
	}
	if f.Outcome == device.OutcomeReceived || f.Outcome == device.OutcomeXDP {
		r.TakenNS = int64(f.Taken)
	}
	if f.Outcome == device.OutcomeXDP {
		r.Verdict = VerdictOf(f)
		r.Insns = int(f.Insns)
		if f.Loads > 0 {
			r.Read = &Span{int(f.ReadLo), int(f.ReadHi), int(f.Loads)}
		}
		if f.Stores > 0 {
			r.Wrote = &Span{int(f.WriteLo), int(f.WriteHi), int(f.Stores)}
		}
		r.HeadMove, r.TailMove = int(f.HeadMove), int(f.TailMove)
	}
	return r
}

// VerdictOf names the XDP verdict of a frame the program ran on
// (Outcome OutcomeXDP): XDP_PASS, XDP_DROP, ...
func VerdictOf(f *device.Fate) string { return bpf.Action(f.Action).String() }

// Comment is the frame's pcapng comment: its fate, verdict and reason
// first, then what the program did and when.
func (r *Record) Comment() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ringlab: fate=%s", r.Fate)
	if r.Verdict != "" {
		fmt.Fprintf(&b, " verdict=%s", r.Verdict)
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", r.Reason)
	}
	fmt.Fprintf(&b, " queue=%d arrival_ns=%d", r.Queue, r.ArrivalNS)
	if r.TakenNS > 0 {
		fmt.Fprintf(&b, " taken_ns=%d", r.TakenNS)
	}
	if r.Verdict != "" {
		fmt.Fprintf(&b, " read=%s wrote=%s", r.Read, r.Wrote)
		if r.HeadMove != 0 || r.TailMove != 0 {
			fmt.Fprintf(&b, " head_move=%d tail_move=%d", r.HeadMove, r.TailMove)
		}
		fmt.Fprintf(&b, " insns=%d", r.Insns)
	}
	return b.String()
}

// Line is the frame in a line: `ringlab run --pcap-verbose`'s.
func (r *Record) Line() string {
	s := fmt.Sprintf("#%d %s %d bytes q%d at %s: %s", r.N, r.Flow, r.Len, r.Queue, time.Duration(r.ArrivalNS), r.Fate)
	if r.Verdict != "" {
		s += " " + r.Verdict
	}
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	if r.Verdict != "" {
		s += fmt.Sprintf(", read %s, wrote %s", r.Read, r.Wrote)
		if r.HeadMove != 0 || r.TailMove != 0 {
			s += fmt.Sprintf(", head %+d tail %+d", r.HeadMove, r.TailMove)
		}
	}
	return s
}

// WriteVerdicts writes every frame of c, as captured, to w as pcapng,
// each with its record's comment; its time is the capture's first
// timestamp plus when the driver took it (a frame it never took: when
// it arrived).
func WriteVerdicts(w io.Writer, c *Capture, recs []Record) error {
	if len(recs) != len(c.Packets) {
		return fmt.Errorf("capture: %d records for %d packets", len(recs), len(c.Packets))
	}
	out := make([]Out, len(recs))
	t0 := c.Packets[0].Time
	for i := range recs {
		r, p := &recs[i], &c.Packets[i]
		at := r.ArrivalNS
		if r.TakenNS > 0 {
			at = r.TakenNS
		}
		out[i] = Out{Time: max(t0+at, 0), Len: p.Len, Data: p.Data, Comment: r.Comment()}
	}
	return WritePcapng(w, "ringlab", "ringlab0", out)
}

// Describe names a frame's protocol and addresses: "udp
// 10.1.0.0:10000 > 10.2.0.1:9", "arp", "ethertype 0x88cc".
func Describe(b []byte) string {
	if len(b) < 14 {
		return "runt"
	}
	typ, l3 := binary.BigEndian.Uint16(b[12:]), 14
	for (typ == 0x8100 || typ == 0x88a8) && len(b) >= l3+4 {
		typ, l3 = binary.BigEndian.Uint16(b[l3+2:]), l3+4
	}
	var src, dst netip.Addr
	var proto byte
	l4 := 0
	switch {
	case typ == 0x0806:
		return "arp"
	case typ == 0x0800 && len(b) >= l3+20:
		src, dst = netip.AddrFrom4([4]byte(b[l3+12:])), netip.AddrFrom4([4]byte(b[l3+16:]))
		proto, l4 = b[l3+9], l3+int(b[l3]&0x0f)*4
		if binary.BigEndian.Uint16(b[l3+6:])&0x1fff != 0 {
			l4 = 0 // a later fragment: no ports
		}
	case typ == 0x86dd && len(b) >= l3+40:
		src, dst = netip.AddrFrom16([16]byte(b[l3+8:])), netip.AddrFrom16([16]byte(b[l3+24:]))
		proto, l4 = b[l3+6], l3+40
	default:
		return fmt.Sprintf("ethertype %#04x", typ)
	}
	name := map[byte]string{1: "icmp", 6: "tcp", 17: "udp", 58: "icmp6"}[proto]
	if name == "" {
		name = fmt.Sprintf("proto %d", proto)
	}
	if (proto == 6 || proto == 17) && l4 > 0 && len(b) >= l4+4 {
		return fmt.Sprintf("%s %s > %s", name,
			netip.AddrPortFrom(src, binary.BigEndian.Uint16(b[l4:])), netip.AddrPortFrom(dst, binary.BigEndian.Uint16(b[l4+2:])))
	}
	return fmt.Sprintf("%s %s > %s", name, src, dst)
}
