package play

import (
	"ringlab/engine"
	"ringlab/engine/kernel"
	"ringlab/engine/sim"
)

// The perf top pane: where each CPU's simulated time goes, by kernel
// function, from the charges of the engine's cost table (engine.PerfTop).
// A pane keeps two marks of the run's profiles, taken when it refreshes
// and at least PerfWindow of simulated time apart; the window is from the
// older mark to now: the last stretch of a long step, or of a run played
// in small steps, between one and two PerfWindows long (longer when one
// step ran more). Beside each share, the share since the start.

// PerfWindow is the least simulated time between the marks a window
// starts at.
const PerfWindow = 200 * sim.Microsecond

// PerfRows is how many symbols a CPU lists, idle included.
const PerfRows = 16

// PerfState is a pane's perf top.
type PerfState struct {
	WindowNs int64          `json:"window_ns"` // the window's length in simulated time
	AtNs     int64          `json:"at_ns"`     // its end: the pane's time
	CPUs     []PerfCPUState `json:"cpus"`      // the CPUs, then each vhost worker
	// NoTime says no simulated time has passed in the window (the world
	// stands at time 0, or was just rebuilt): a busy share has no
	// meaning then, and the rows are shares of what was charged at that
	// instant (the setup's refill).
	NoTime bool `json:"no_time,omitempty"`
	// Limit is what limits the run over the same window, by the rule
	// ringlab reproduce and ringlab run use (engine.LimitOf); nil until
	// the pane has a window.
	Limit *engine.Limit `json:"limit,omitempty"`
	// XDPNsPerRun is the model's time in bpf_prog_run_xdp per run of the
	// program over the window (its rows' time on every CPU over the
	// runs the driver counted, rx_xdp_packets); 0 when the program did
	// not run in it. The page sets the real program's beside it (a lab's
	// BPF run-time stats).
	XDPNsPerRun float64 `json:"xdp_ns_per_run,omitempty"`
}

// PerfCPUState is one CPU's top symbols: by share of the window, the
// largest first, each with its share since the start.
type PerfCPUState struct {
	Name      string         `json:"name"`       // cpu0, or host rx0 (a vhost worker)
	Busy      float64        `json:"busy"`       // share of the window not idle
	TotalBusy float64        `json:"total_busy"` // since the start
	Rows      []PerfRowState `json:"rows"`
}

// PerfRowState is a symbol's line: its shares and, for a kernel
// function, what it does and its source at the scenario's kernel.
type PerfRowState struct {
	Sym    string  `json:"sym"`
	As     string  `json:"as,omitempty"` // the function's name at the scenario's kernel when not Sym (kernel.NameAt)
	Window float64 `json:"window"`       // share of the window, in [0, 1]
	Total  float64 `json:"total"`        // share of the run so far
	File   string  `json:"file,omitempty"`
	Does   string  `json:"does,omitempty"`
	URL    string  `json:"url,omitempty"`
}

// perfMarks are a pane's two marks.
type perfMarks struct {
	prev, last engine.PerfSample
	cur        engine.PerfSample // the sample of the latest refresh, reused
	// The resources' use at the same marks (engine.MarkUsage), and what
	// limits the run from prev to the latest refresh. prevU is set once
	// prev is a mark, not the zero sample of the start.
	prevU, lastU engine.UsageMark
	limit        *engine.Limit
	// The program's runs (rx_xdp_packets summed over the queues) at
	// prev, last and the latest refresh.
	prevXDP, lastXDP, curXDP uint64
}

// observe samples w at a refresh and rolls the marks. A world that went
// back (a step back, a new configuration) forgets marks ahead of it.
func (m *perfMarks) observe(w *engine.World) {
	w.SamplePerf(&m.cur)
	if m.cur.T < m.last.T || m.cur.T < m.prev.T || len(m.last.CPUs) != len(m.cur.CPUs) && m.last.CPUs != nil {
		m.prev, m.last = engine.PerfSample{}, engine.PerfSample{}
		m.prevXDP, m.lastXDP = 0, 0
	}
	curU := w.MarkUsage()
	m.curXDP = 0
	for _, rq := range w.Driver.RQ {
		m.curXDP += rq.Stats.XDPPackets
	}
	if m.cur.T.Sub(m.last.T) >= PerfWindow {
		m.prev, m.last = m.last, copySample(m.prev, &m.cur)
		m.prevU, m.lastU = m.lastU, curU
		m.prevXDP, m.lastXDP = m.lastXDP, m.curXDP
	}
	m.limit = nil
	if m.prev.CPUs != nil && m.prev.T < m.cur.T {
		l := engine.LimitOf(w.UsageBetween(m.prevU, curU))
		m.limit = &l
	}
}

// copySample copies s into into's slices.
func copySample(into engine.PerfSample, s *engine.PerfSample) engine.PerfSample {
	into.T = s.T
	into.CPUs = append(into.CPUs[:0], s.CPUs...)
	into.Hosts = append(into.Hosts[:0], s.Hosts...)
	into.Steal = append(into.Steal[:0], s.Steal...)
	return into
}

// state is the perf top of the latest refresh, its functions linked at
// kernel v.
func (m *perfMarks) state(v kernel.Version) *PerfState {
	if m.cur.CPUs == nil {
		return nil
	}
	win, err := engine.PerfTop(&m.prev, &m.cur)
	if err != nil {
		return nil
	}
	all, err := engine.PerfTop(&engine.PerfSample{}, &m.cur)
	if err != nil || len(all) != len(win) {
		return nil
	}
	out := &PerfState{WindowNs: int64(m.cur.T.Sub(m.prev.T)), AtNs: int64(m.cur.T), Limit: m.limit}
	out.NoTime = out.WindowNs <= 0
	if runs := m.curXDP - m.prevXDP; runs > 0 && m.curXDP >= m.prevXDP && !out.NoTime {
		var share float64
		for _, pc := range win {
			share += pc.Share(sim.SymBPFProgRunXDP.String())
		}
		out.XDPNsPerRun = share * float64(out.WindowNs) / float64(runs)
	}
	for i, pc := range win {
		rows := pc.Rows
		if len(rows) == 0 {
			rows = all[i].Rows // nothing ran in the window: the run's order
		}
		// Rows is never null: a CPU that has had no time yet (t=0) has none.
		cs := PerfCPUState{Name: pc.Name, Busy: pc.Busy, TotalBusy: all[i].Busy, Rows: []PerfRowState{}}
		if out.NoTime { // a share of no time: not 100 % busy
			cs.Busy = 0
		}
		if out.AtNs <= 0 {
			cs.TotalBusy = 0
		}
		for _, r := range rows[:min(len(rows), PerfRows)] {
			rs := PerfRowState{Sym: r.Sym, Total: all[i].Share(r.Sym)}
			if len(pc.Rows) > 0 {
				rs.Window = r.Share
			}
			if f, ok := kernel.LookupFunc(r.Sym); ok {
				rs.File, rs.Does, rs.URL = f.File, f.Does, kernel.SourceURL(r.Sym, v)
				if as := kernel.NameAt(r.Sym, v); as != r.Sym {
					rs.As = as
				}
			} else {
				rs.Does = pseudoRows[r.Sym]
			}
			cs.Rows = append(cs.Rows, rs)
		}
		out.CPUs = append(out.CPUs, cs)
	}
	return out
}

// pseudoRows say what the rows that are no kernel function stand for.
var pseudoRows = map[string]string{
	sim.SymIdleName:         "time the CPU did no work: the part of the window nothing was charged",
	sim.SymStealName:        "time the vCPU did not run: the host ran the vhost worker on its host CPU (steal, the scenario's host.vhost)",
	sim.SymPageRef.String(): "get_page and put_page's atomics on struct page, inlined into the functions that take or drop a reference",
	sim.SymNextIRQ.String(): "the interrupt of the device a devmap sends through, for its TX completions: that device's own driver (ixgbe_msix_clean_rings in R4), not virtio's vring_interrupt",
}
