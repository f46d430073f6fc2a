package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"ringlab/engine"
	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/internal/capture"
)

// maxCaptureBytes bounds a capture file `ringlab run --pcap` reads.
const maxCaptureBytes = 256 << 20

// replayTail is how long a replay runs past its last frame's arrival,
// at most, for the frames still in the rings to be taken.
const replayTail = sim.Second

// pcapOptions are `ringlab run`'s capture flags.
type pcapOptions struct {
	file    string
	rate    float64
	verbose bool
	out     string
}

// loadReplay reads a capture file into frames the engine replays: the
// first frame arrives at 0, each other at its timestamp's distance from
// the first (a frame stamped earlier than the first arrives with it; a
// simple packet block, which has no timestamp, with the frame before).
func loadReplay(path string, rate float64) (*device.Replay, *capture.Capture, error) {
	b, err := readInput(path, maxCaptureBytes, "a capture")
	if err != nil {
		return nil, nil, err
	}
	c, err := capture.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(c.Packets) == 0 {
		return nil, nil, fmt.Errorf("%s: the capture holds no packets", path)
	}
	if len(c.Packets) > device.MaxReplayFrames {
		return nil, nil, fmt.Errorf("%s: %d packets, at most %d", path, len(c.Packets), device.MaxReplayFrames)
	}
	rep := &device.Replay{Frames: make([]device.Frame, len(c.Packets)), RatePPS: rate}
	t0 := c.Packets[0].Time
	for i, p := range c.Packets {
		switch {
		case p.Len < 14:
			return nil, nil, fmt.Errorf("%s: packet %d at byte offset %d: %d bytes on the wire, shorter than an Ethernet header", path, i+1, p.Offset, p.Len)
		case p.Len > device.MaxFrameLen:
			return nil, nil, fmt.Errorf("%s: packet %d at byte offset %d: %d bytes on the wire, more than the %d a received frame may have", path, i+1, p.Offset, p.Len, device.MaxFrameLen)
		}
		rep.Frames[i] = device.Frame{At: sim.Duration(max(p.Time-t0, 0)), Len: p.Len, Data: p.Data}
	}
	if err := rep.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, c, nil
}

// pcapSpan is a range of a frame's bytes a program read or wrote, from
// its first byte, hi one past the last, with how many accesses.
type pcapSpan struct {
	Lo       int `json:"lo"`
	Hi       int `json:"hi"`
	Accesses int `json:"accesses"`
}

// pcapFrame is one replayed frame's record in the output.
type pcapFrame struct {
	N         int       `json:"n"`
	Offset    int64     `json:"offset"`
	Len       int       `json:"len"`
	CapLen    int       `json:"caplen"`
	Flow      string    `json:"flow"`
	Queue     int       `json:"queue"`
	ArrivalNS int64     `json:"arrival_ns"`
	TakenNS   int64     `json:"taken_ns,omitempty"`
	Fate      string    `json:"fate"`
	Verdict   string    `json:"verdict,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Read      *pcapSpan `json:"read,omitempty"`
	Wrote     *pcapSpan `json:"wrote,omitempty"`
	HeadMove  int       `json:"head_move,omitempty"`
	TailMove  int       `json:"tail_move,omitempty"`
	Insns     int       `json:"insns,omitempty"`
}

// pcapReport is what a replay did: counts by fate, verdict and reason,
// and with --pcap-verbose every frame.
type pcapReport struct {
	File     string         `json:"file"`
	Format   string         `json:"format"`
	RatePPS  float64        `json:"rate_pps,omitempty"`
	Frames   int            `json:"frames"`
	Fates    map[string]int `json:"fates"`
	Verdicts map[string]int `json:"verdicts,omitempty"`
	Reasons  map[string]int `json:"reasons,omitempty"`
	Records  []pcapFrame    `json:"records,omitempty"`
}

// pcapFrames is every frame's record.
func pcapFrames(w *engine.World, rep *device.Replay, c *capture.Capture) []pcapFrame {
	fates := w.Replay().Fates()
	out := make([]pcapFrame, len(fates))
	arrivals := rep.Arrivals()
	for i := range fates {
		f, p := &fates[i], &c.Packets[i]
		arrival := arrivals[i]
		r := pcapFrame{
			N: i + 1, Offset: p.Offset, Len: p.Len, CapLen: len(p.Data),
			Flow:      describeFrame(p.Data),
			Queue:     device.ReplayQueue(p.Data, w.Scenario.Queues),
			ArrivalNS: int64(arrival),
			Fate:      f.Fate(), Reason: f.Reason(w.Scenario.KernelVersion()),
		}
		if f.Outcome == device.OutcomeReceived || f.Outcome == device.OutcomeXDP {
			r.TakenNS = int64(f.Taken)
		}
		if f.Outcome == device.OutcomeXDP {
			r.Verdict = bpf.Action(f.Action).String()
			r.Insns = int(f.Insns)
			if f.Loads > 0 {
				r.Read = &pcapSpan{int(f.ReadLo), int(f.ReadHi), int(f.Loads)}
			}
			if f.Stores > 0 {
				r.Wrote = &pcapSpan{int(f.WriteLo), int(f.WriteHi), int(f.Stores)}
			}
			r.HeadMove, r.TailMove = int(f.HeadMove), int(f.TailMove)
		}
		out[i] = r
	}
	return out
}

func newPcapReport(path string, c *capture.Capture, rate float64, frames []pcapFrame, verbose bool) pcapReport {
	r := pcapReport{File: path, Format: string(c.Format), RatePPS: rate, Frames: len(frames), Fates: map[string]int{}}
	for _, f := range frames {
		r.Fates[f.Fate]++
		if f.Verdict != "" {
			if r.Verdicts == nil {
				r.Verdicts = map[string]int{}
			}
			r.Verdicts[f.Verdict]++
		}
		if f.Reason != "" {
			if r.Reasons == nil {
				r.Reasons = map[string]int{}
			}
			r.Reasons[f.Reason]++
		}
	}
	if verbose {
		r.Records = frames
	}
	return r
}

// comment is the frame's pcapng comment: its fate, verdict and reason
// first, then what the program did and when.
func (f *pcapFrame) comment() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ringlab: fate=%s", f.Fate)
	if f.Verdict != "" {
		fmt.Fprintf(&b, " verdict=%s", f.Verdict)
	}
	if f.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", f.Reason)
	}
	fmt.Fprintf(&b, " queue=%d arrival_ns=%d", f.Queue, f.ArrivalNS)
	if f.TakenNS > 0 {
		fmt.Fprintf(&b, " taken_ns=%d", f.TakenNS)
	}
	if f.Verdict != "" {
		fmt.Fprintf(&b, " read=%s wrote=%s", f.Read, f.Wrote)
		if f.HeadMove != 0 || f.TailMove != 0 {
			fmt.Fprintf(&b, " head_move=%d tail_move=%d", f.HeadMove, f.TailMove)
		}
		fmt.Fprintf(&b, " insns=%d", f.Insns)
	}
	return b.String()
}

func (s *pcapSpan) String() string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%d-%d(%d)", s.Lo, s.Hi-1, s.Accesses)
}

// line is the frame's --pcap-verbose line.
func (f *pcapFrame) line() string {
	s := fmt.Sprintf("#%d %s %d bytes q%d at %s: %s", f.N, f.Flow, f.Len, f.Queue, time.Duration(f.ArrivalNS), f.Fate)
	if f.Verdict != "" {
		s += " " + f.Verdict
	}
	if f.Reason != "" {
		s += " (" + f.Reason + ")"
	}
	if f.Verdict != "" {
		s += fmt.Sprintf(", read %s, wrote %s", f.Read, f.Wrote)
		if f.HeadMove != 0 || f.TailMove != 0 {
			s += fmt.Sprintf(", head %+d tail %+d", f.HeadMove, f.TailMove)
		}
	}
	return s
}

// writePcapOut writes every frame as captured to path as pcapng, each
// with its comment; its time is the capture's first timestamp plus when
// the driver took it (a frame it never took: when it arrived).
func writePcapOut(path string, c *capture.Capture, frames []pcapFrame) error {
	out := make([]capture.Out, len(frames))
	t0 := c.Packets[0].Time
	for i := range frames {
		f, p := &frames[i], &c.Packets[i]
		at := f.ArrivalNS
		if f.TakenNS > 0 {
			at = f.TakenNS
		}
		out[i] = capture.Out{Time: t0 + at, Len: p.Len, Data: p.Data, Comment: f.comment()}
	}
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := capture.WritePcapng(fh, "ringlab", "ringlab0", out); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
}

// describeFrame names a frame's protocol and addresses: "udp
// 10.1.0.0:10000 > 10.2.0.1:9", "arp", "ethertype 0x88cc".
func describeFrame(b []byte) string {
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

// checkPcapFlags says what is wrong with the capture flags beside the
// others, "" when nothing.
func (o *runOptions) checkPcapFlags() string {
	p := &o.pcap
	if p.file == "" {
		switch {
		case p.rate != 0:
			return "--pcap-rate needs --pcap"
		case p.out != "":
			return "--pcap-out needs --pcap"
		case p.verbose:
			return "--pcap-verbose needs --pcap"
		}
		return ""
	}
	switch {
	case p.rate < 0 || p.rate > 1e10 || p.rate != p.rate:
		return fmt.Sprintf("--pcap-rate %g: want 0 (as captured) up to 1e10 packets per second", p.rate)
	case o.packets > 0:
		return "--pcap and --packets are exclusive (a capture runs until every frame is received, dropped or past --duration)"
	case o.interval > 0 || o.trace > 0:
		return "--pcap does not take --interval or --trace"
	}
	return ""
}

// runPcap is `ringlab run --pcap`: the capture's frames through the
// world built from s, until each one's fate is known, for at most
// --duration (by default its last frame's arrival and a second).
func (o *runOptions) runPcap(s scenario.Scenario, spec *bpf.CollectionSpec, stdout, stderr io.Writer) int {
	rep, c, err := loadReplay(o.pcap.file, o.pcap.rate)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: --pcap %v\n", err)
		return exitUsage
	}
	w, err := engine.NewReplay(s, spec, rep)
	if err != nil {
		fmt.Fprintf(stderr, "ringlab run: %v\n", err)
		return exitUsage
	}
	arrivals := rep.Arrivals()
	until := arrivals[len(arrivals)-1].Add(replayTail)
	if o.duration > 0 {
		until = sim.Time(o.duration.Nanoseconds())
	}
	start := time.Now()
	mark := w.MarkUsage()
	for !w.Replay().Done() {
		at, ok := w.Sim.Queue.Peek()
		if !ok || at > until {
			break
		}
		err = w.RunReplay(min(until, at.Add(sim.Millisecond)))
		if err == nil {
			err = xdpLooped(w)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ringlab run: %v\n", err)
			return exitFail
		}
	}
	wall := time.Since(start)
	frames := pcapFrames(w, rep, c)
	if o.pcap.out != "" {
		if err := writePcapOut(o.pcap.out, c, frames); err != nil {
			fmt.Fprintf(stderr, "ringlab run: --pcap-out %v\n", err)
			return exitFail
		}
	}
	report := newPcapReport(o.pcap.file, c, rep.RatePPS, frames, o.pcap.verbose)
	sum := w.Summarize()
	limit := engine.LimitOf(w.UsageBetween(mark, w.MarkUsage()))
	if o.json {
		out := struct {
			engine.Summary
			Limit  engine.Limit   `json:"limit"`
			Fitted []scenario.Fit `json:"fitted,omitempty"`
			Costs  []costRow      `json:"costs,omitempty"`
			Pcap   pcapReport     `json:"pcap"`
		}{Summary: sum, Limit: limit, Fitted: s.Fitted, Pcap: report}
		if o.costs {
			out.Costs = costRows(w)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "ringlab run: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	if o.pcap.verbose {
		for i := range frames {
			fmt.Fprintln(stdout, frames[i].line())
		}
		fmt.Fprintln(stdout)
	}
	printPcapReport(stdout, &report)
	printSummary(stdout, sum, wall, limit, "the whole replay")
	printFitted(stdout, &w.Scenario)
	if o.costs {
		printCosts(stdout, costRows(w))
	}
	return exitOK
}

func printPcapReport(w io.Writer, r *pcapReport) {
	how := "at their captured times"
	if r.RatePPS > 0 {
		how = fmt.Sprintf("at %g packets per second", r.RatePPS)
	}
	fmt.Fprintf(w, "capture %s (%s): %d frames %s\n", r.File, r.Format, r.Frames, how)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table := func(head string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(tw, "%s\tframes\n", head)
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%d\n", k, m[k])
		}
		fmt.Fprintln(tw)
	}
	table("fate", r.Fates)
	table("verdict", r.Verdicts)
	table("drop reason", r.Reasons)
	tw.Flush()
}
