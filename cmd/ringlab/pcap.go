package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
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

// loadReplay reads a capture file into frames the engine replays
// (capture.Replay).
func loadReplay(path string, rate float64) (*device.Replay, *capture.Capture, error) {
	b, err := readInput(path, maxCaptureBytes, "a capture")
	if err != nil {
		return nil, nil, err
	}
	c, err := capture.Parse(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	rep, err := capture.Replay(c, rate)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, c, nil
}

// pcapReport is what a replay did: counts by fate, verdict and reason
// (capture.Counts), and with --pcap-verbose every frame.
type pcapReport struct {
	File    string  `json:"file"`
	Format  string  `json:"format"`
	RatePPS float64 `json:"rate_pps,omitempty"`
	Frames  int     `json:"frames"`
	capture.Counts
	Records []capture.Record `json:"records,omitempty"`
}

// pcapFrames is every frame's record.
func pcapFrames(w *engine.World, rep *device.Replay, c *capture.Capture) []capture.Record {
	return capture.Records(c, rep, w.Replay().Fates(), w.Scenario.Queues, w.Scenario.KernelVersion())
}

func newPcapReport(path string, c *capture.Capture, rate float64, w *engine.World, frames []capture.Record, verbose bool) pcapReport {
	fates := w.Replay().Fates()
	r := pcapReport{File: path, Format: string(c.Format), RatePPS: rate, Frames: len(fates),
		Counts: capture.Count(fates, w.Scenario.KernelVersion())}
	if verbose {
		r.Records = frames
	}
	return r
}

// writePcapOut writes every frame as captured to path as pcapng, each
// with its comment (capture.WriteVerdicts).
func writePcapOut(path string, c *capture.Capture, frames []capture.Record) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := capture.WriteVerdicts(fh, c, frames); err != nil {
		fh.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fh.Close()
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
	report := newPcapReport(o.pcap.file, c, rep.RatePPS, w, frames, o.pcap.verbose)
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
			fmt.Fprintln(stdout, frames[i].Line())
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
