package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"ringlab/engine"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// runner drives a headless run in chunks: after each it looks at the XDP
// program (xdpLooped), updates the progress line and, with --interval,
// prints the intervals that ended.
type runner struct {
	w        *engine.World
	progress *progress // nil: no progress line
	// With --interval: every is its length in simulated time, out where
	// the lines go, next the end of the interval under way and last the
	// counters at its start.
	every sim.Duration
	out   io.Writer
	next  sim.Time
	last  intervalMark
}

// runChunk is how many packets (or how much simulated time, at most a
// hundredth of the run) a run goes between two looks at its XDP program;
// the first looks come sooner (64 packets, doubling).
const runChunk = 4096

// runPackets runs until the driver has received n packets, stopping with
// xdpLooped's error as soon as the program loops, or when nothing more
// arrives.
func (r *runner) runPackets(n uint64) error {
	w := r.w
	chunk := uint64(64)
	for got := w.Received(); got < n; got = w.Received() {
		chunk = min(2*chunk, runChunk)
		var err error
		if r.every > 0 {
			err = r.stepPackets(n, runChunk)
		} else {
			err = w.RunPackets(min(n-got, chunk))
		}
		if err != nil {
			return err
		}
		if err := r.after(); err != nil {
			return err
		}
		if _, more := w.Sim.Queue.Peek(); w.Received() == got && (r.every == 0 || !more) {
			return nil // nothing more arrives
		}
	}
	return nil
}

// stepPackets runs events until the driver has received n packets, the
// next event is past the interval's end (the clock then moves to that
// end), or events have run.
func (r *runner) stepPackets(n uint64, events int) error {
	w := r.w
	for ; events > 0 && w.Received() < n; events-- {
		at, ok := w.Sim.Queue.Peek()
		if !ok {
			break
		}
		if at > r.next {
			return w.RunUntil(r.next) // no event runs: the interval ends
		}
		if !w.Step() {
			break
		}
	}
	return w.Err()
}

// runUntil runs to simulated time t in a hundred slices (each cut at the
// end of an interval), stopping as runPackets does.
func (r *runner) runUntil(t sim.Time) error {
	w := r.w
	step := max(sim.Duration(t-w.Now())/100, 1)
	for w.Now() < t {
		end := min(t, w.Now().Add(step))
		if r.every > 0 {
			end = min(end, r.next)
		}
		if err := w.RunUntil(end); err != nil {
			return err
		}
		if err := r.after(); err != nil {
			return err
		}
	}
	return nil
}

// after is what follows each chunk.
func (r *runner) after() error {
	if err := xdpLooped(r.w); err != nil {
		return err
	}
	for r.every > 0 && r.w.Now() >= r.next {
		if err := r.emit(); err != nil {
			return err
		}
		r.next = r.next.Add(r.every)
	}
	r.progress.update(r.w)
	return nil
}

// finish prints the last interval, cut short where the run ended, and
// clears the progress line.
func (r *runner) finish() error {
	r.progress.done(r.w)
	if r.every > 0 && r.w.Now() > r.last.at {
		return r.emit()
	}
	return nil
}

// intervalMark is an interval's start: the world's readout mark (nil:
// the world's start) and its counters then.
type intervalMark struct {
	at       sim.Time
	mark     *engine.ReadoutMark
	counters map[string]uint64
}

// intervalLine is one line of --interval: an interval of simulated time,
// the packets the driver received in it and their rate, the counters that
// moved (by how much) and the gauges at its end.
type intervalLine struct {
	StartNS  int64             `json:"start_ns"`
	EndNS    int64             `json:"end_ns"`
	Packets  uint64            `json:"packets"`
	PPS      float64           `json:"pps"`
	Counters map[string]uint64 `json:"counters"`
	Gauges   map[string]uint64 `json:"gauges,omitempty"`
}

// emit prints the interval from the last mark to now as a JSON line:
// the world's readout over it (its run part and its totals).
func (r *runner) emit() error {
	var ro engine.Readout
	r.w.ReadSince(&ro, engine.PartRun|engine.PartTotals, r.last.mark)
	mark := r.w.MarkReadout()
	now := intervalMark{at: r.w.Now(), mark: &mark, counters: map[string]uint64{}}
	l := intervalLine{
		StartNS:  int64(r.last.at),
		EndNS:    int64(now.at),
		Counters: map[string]uint64{},
	}
	for _, f := range ro.Figures {
		switch {
		case f.Name == "pps":
			l.PPS = f.Value
		case f.Part == engine.PartTotals:
			now.counters[f.Name] = uint64(f.Value)
		}
	}
	l.Packets = now.counters["rx_packets"] - r.last.counters["rx_packets"]
	for name, v := range now.counters {
		if d, ok := vocab.Lookup(name); ok && d.Kind == vocab.Gauge {
			if l.Gauges == nil {
				l.Gauges = map[string]uint64{}
			}
			l.Gauges[name] = v
		} else if v != r.last.counters[name] {
			l.Counters[name] = v - r.last.counters[name]
		}
	}
	r.last = now
	b, err := json.Marshal(l) // map keys sorted: the same run prints the same lines
	if err != nil {
		return err
	}
	r.progress.clear()
	_, err = fmt.Fprintf(r.out, "%s\n", b)
	return err
}

// progressEvery is how often the progress line changes: on a terminal it
// is redrawn in place; elsewhere (--progress into a file) each is a line,
// so those come less often.
const (
	progressEvery     = 250 * time.Millisecond
	progressLineEvery = 5 * time.Second
)

// progress is the line `ringlab run` keeps on stderr during a long run:
// how far the run is towards its --packets or --duration, the simulated
// time and the wall time.
type progress struct {
	w        io.Writer
	terminal bool // redraw in place; else one line each time
	packets  uint64
	until    sim.Time
	start    time.Time
	shown    time.Time
	drawn    bool // a line is on the terminal, not ended by a newline
}

// newProgress returns the progress line of a run towards packets (or, when
// zero, to simulated time until) on w, or nil when it is not wanted: asked
// says so when the flag was given, else it is shown on a terminal only.
func newProgress(w io.Writer, asked *bool, packets uint64, until sim.Time) *progress {
	terminal := isTerminal(w)
	if asked != nil && !*asked || asked == nil && !terminal {
		return nil
	}
	now := time.Now()
	p := &progress{w: w, terminal: terminal, packets: packets, until: until, start: now, shown: now}
	p.show(nil)
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *progress) update(w *engine.World) {
	if p == nil {
		return
	}
	every := progressLineEvery
	if p.terminal {
		every = progressEvery
	}
	if time.Since(p.shown) < every {
		return
	}
	p.show(w)
}

// done shows the run's end: on a terminal the line is cleared, elsewhere
// a last line says where the run ended.
func (p *progress) done(w *engine.World) {
	if p == nil {
		return
	}
	if p.terminal {
		p.clear()
		return
	}
	p.show(w)
}

// clear removes the line from the terminal.
func (p *progress) clear() {
	if p != nil && p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *progress) show(w *engine.World) {
	p.shown = time.Now()
	var received uint64
	var now sim.Time
	if w != nil {
		received, now = w.Received(), w.Now()
	}
	wall := time.Since(p.start).Round(100 * time.Millisecond)
	var line string
	if p.packets > 0 {
		line = fmt.Sprintf("ringlab run: %d of %d packets (%.0f%%), %s simulated, %s", received, p.packets,
			100*float64(min(received, p.packets))/float64(p.packets), time.Duration(now), wall)
	} else {
		line = fmt.Sprintf("ringlab run: %s of %s simulated (%.0f%%), %d packets, %s", time.Duration(now), time.Duration(p.until),
			100*float64(min(now, p.until))/float64(max(p.until, 1)), received, wall)
	}
	if p.terminal {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}
