package play

import (
	"bytes"
	"fmt"
	"strings"

	"ringlab/engine"
	"ringlab/engine/device"
	"ringlab/engine/view"
	"ringlab/internal/capture"
)

// A capture the person loaded (pcap or pcapng) feeds a pane's device in
// place of its generator, as `ringlab run --pcap` does (docs/replay.md):
// Config carries its bytes (a link too), the pane its parsed frames, the
// state each frame's fate so far, the inspect panel a frame's whole
// record (view.KindFrame) and PcapExport the frames with their
// verdicts as pcapng.

// MaxCapture bounds a capture loaded in the page: a link carries it.
const MaxCapture = 256 << 10

// KindFrame inspects frame Index (from 0) of the pane's capture.
const KindFrame view.Kind = "frame"

// CaptureRows is how many of the latest decided frames the state lists.
const CaptureRows = 16

// paneCapture is a pane's capture, parsed.
type paneCapture struct {
	c   *capture.Capture
	rep *device.Replay
}

// parseCapture reads a configuration's capture; the error names the
// byte offset of a malformed record (capture.Error).
func parseCapture(name string, b []byte, rate float64) (*paneCapture, error) {
	if len(b) > MaxCapture {
		return nil, fmt.Errorf("capture %q: %d bytes, at most %d (%d KiB) in the page", name, len(b), MaxCapture, MaxCapture>>10)
	}
	c, err := capture.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("capture %q: %w", name, err)
	}
	rep, err := capture.Replay(c, rate)
	if err != nil {
		return nil, fmt.Errorf("capture %q: %w", name, err)
	}
	return &paneCapture{c: c, rep: rep}, nil
}

// WithCapture returns a copy of c whose device is fed the capture b
// (named name) at rate packets per second (0: as captured). The
// capture must parse and the scenario take it.
func (c Config) WithCapture(name string, b []byte, rate float64) (Config, error) {
	out := c.clone()
	out.Capture, out.CaptureName, out.CaptureRate = append([]byte(nil), b...), cleanName(name), rate
	if _, err := parseCapture(out.CaptureName, out.Capture, rate); err != nil {
		return c, err
	}
	return out, nil
}

// record is frame i's inspect record.
func (pc *paneCapture) record(w *engine.World, t view.Target) (view.Record, error) {
	r := view.Record{Target: t}
	if t.Index < 0 || t.Index >= len(pc.c.Packets) {
		return r, fmt.Errorf("%w: frame %d: the capture has %d (from 0)", view.ErrTarget, t.Index, len(pc.c.Packets))
	}
	rec := capture.RecordOf(pc.c, pc.rep, w.Replay().Fates(), t.Index, w.Scenario.Queues, w.Scenario.KernelVersion())
	r.Title = fmt.Sprintf("frame %d of the capture", rec.N)
	add := func(name, format string, args ...any) {
		r.Fields = append(r.Fields, view.Field{Name: name, Value: fmt.Sprintf(format, args...)})
	}
	add("flow", "%s", rec.Flow)
	add("length", "%d bytes on the wire, %d captured", rec.Len, rec.CapLen)
	add("in the file", "byte offset %d", rec.Offset)
	add("queue", "rx%d", rec.Queue)
	add("arrives", "%d ns", rec.ArrivalNS)
	add("fate", "%s", rec.Fate)
	if rec.TakenNS > 0 {
		add("taken", "%d ns (by the driver, from the ring)", rec.TakenNS)
	}
	if rec.Verdict != "" {
		add("verdict", "%s", rec.Verdict)
	}
	if rec.Reason != "" {
		add("drop reason", "%s", rec.Reason)
	}
	if rec.Verdict != "" {
		add("program read", "%s", spanText(rec.Read))
		add("program wrote", "%s", spanText(rec.Wrote))
		if rec.HeadMove != 0 || rec.TailMove != 0 {
			add("moved", "data %+d, data_end %+d", rec.HeadMove, rec.TailMove)
		}
		add("instructions", "%d", rec.Insns)
	}
	add("comment", "%s", rec.Comment())
	return r, nil
}

func spanText(s *capture.Span) string {
	if s == nil {
		return "nothing"
	}
	return fmt.Sprintf("bytes %d to %d (%d accesses)", s.Lo, s.Hi-1, s.Accesses)
}

// CaptureState is what the page shows of a pane's capture: its frames'
// fates so far, counted, and the latest decided ones.
type CaptureState struct {
	Name    string  `json:"name"`
	Format  string  `json:"format"`
	RatePPS float64 `json:"rate_pps,omitempty"`
	Frames  int     `json:"frames"`
	Decided int     `json:"decided"`
	capture.Counts
	// Rows are the latest CaptureRows decided frames in capture order,
	// newest last.
	Rows []FrameRow `json:"rows,omitempty"`
}

// FrameRow is one frame in the capture's list.
type FrameRow struct {
	Index   int    `json:"index"` // from 0: inspect's index
	Flow    string `json:"flow"`
	Len     int    `json:"len"`
	Fate    string `json:"fate"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// state counts the frames' fates and lists the latest decided.
func (pc *paneCapture) state(w *engine.World, cf *Config) *CaptureState {
	fates := w.Replay().Fates()
	v := w.Scenario.KernelVersion()
	st := &CaptureState{Name: cf.CaptureName, Format: string(pc.c.Format), RatePPS: cf.CaptureRate,
		Frames: len(fates), Decided: w.Replay().Decided(), Counts: capture.Count(fates, v)}
	for i := len(fates) - 1; i >= 0 && len(st.Rows) < CaptureRows; i-- {
		f := &fates[i]
		if f.Outcome == device.OutcomePending {
			continue
		}
		p := &pc.c.Packets[i]
		row := FrameRow{Index: i, Flow: capture.Describe(p.Data), Len: p.Len, Fate: f.Fate(), Reason: f.Reason(v)}
		if f.Outcome == device.OutcomeXDP {
			row.Verdict = capture.VerdictOf(f)
		}
		st.Rows = append(st.Rows, row)
	}
	for i, j := 0, len(st.Rows)-1; i < j; i, j = i+1, j-1 {
		st.Rows[i], st.Rows[j] = st.Rows[j], st.Rows[i]
	}
	return st
}

// export writes every frame of the capture as pcapng, each with what
// the model did with it so far in its comment (a frame still on its
// way: fate=pending).
func (pc *paneCapture) export(w *engine.World) ([]byte, error) {
	recs := capture.Records(pc.c, pc.rep, w.Replay().Fates(), w.Scenario.Queues, w.Scenario.KernelVersion())
	var b bytes.Buffer
	if err := capture.WriteVerdicts(&b, pc.c, recs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// exportName is the exported file's name: the capture's, with
// -verdicts.pcapng in place of its extension.
func exportName(name string) string {
	for _, ext := range []string{".pcapng", ".pcap", ".cap"} {
		name = strings.TrimSuffix(name, ext)
	}
	if name == "" {
		name = "capture"
	}
	return name + "-verdicts.pcapng"
}
