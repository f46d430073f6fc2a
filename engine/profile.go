package engine

import (
	"fmt"
	"sort"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// The simulated perf top: where each CPU's simulated time goes, by kernel
// function. Every cost the engine charges a CPU names the function that
// pays it (sim.CPU.Charge with a sim.Sym), and each CPU keeps the sum per
// symbol, so a CPU's rows add up to its busy time exactly. The shares are
// the cost table's (engine/sim/costs.go) as the run charges them: what the
// model says, not a measurement, and nothing fitted on a published perf
// profile.

// PerfSample is what a perf top is computed from at one instant: each
// CPU's profile and each receive queue's host time. Two samples give the
// window between them.
type PerfSample struct {
	T    sim.Time
	CPUs []sim.Profile
	// Hosts is each receive queue's vhost time (handle_rx: the frames it
	// wrote, the device's Busy); nil for a hardware device, which spends
	// no host CPU.
	Hosts []sim.Duration
	// Steal is each CPU's stolen time (sim.CPU.Stolen): the host ran a
	// vhost worker on its vCPU's host CPU.
	Steal []sim.Duration
}

// SamplePerf reads the world's profiles into s, reusing its slices.
func (w *World) SamplePerf(s *PerfSample) {
	s.T = w.Now()
	s.CPUs, s.Steal = s.CPUs[:0], s.Steal[:0]
	for i := 0; i < w.Sim.NumCPU(); i++ {
		s.CPUs = append(s.CPUs, w.Sim.CPU(i).Profile())
		s.Steal = append(s.Steal, w.Sim.CPU(i).Stolen())
	}
	s.Hosts = s.Hosts[:0]
	if w.Scenario.Device.Kind != scenario.DeviceVhost {
		return
	}
	for _, rq := range w.Driver.RQ {
		s.Hosts = append(s.Hosts, rq.Dev.Counters().Busy)
	}
}

// PerfRow is one line of a perf top: a symbol and its share of the CPU's
// time over the window.
type PerfRow struct {
	Sym   string  `json:"sym"`   // the kernel function, as perf shows it, or "[idle]"
	Share float64 `json:"share"` // of the window's time on this CPU, in [0, 1]
	Ns    int64   `json:"ns"`    // simulated time charged to it in the window
}

// PerfCPU is one CPU's perf top over a window, rows by share, largest
// first (idle among them).
type PerfCPU struct {
	Name string    `json:"name"` // cpu0, or "host rx0" for a vhost worker
	Busy float64   `json:"busy"` // share of the window not idle
	Rows []PerfRow `json:"rows"`
}

// HostSym is the function a vhost worker's time is charged to.
const HostSym = "handle_rx"

// PerfTop is each CPU's perf top between samples from and to (from may be
// the zero sample: since the start), then each vhost worker's. A CPU's
// window is the elapsed time, or its busy time when it ran ahead of the
// clock (a CPU's cursor runs up to a batch ahead of the event queue), so
// that a CPU's shares, idle and steal included, sum to 1. Rows with no time are
// left out; ties keep the symbols' order.
func PerfTop(from, to *PerfSample) ([]PerfCPU, error) {
	if from.CPUs != nil && len(from.CPUs) != len(to.CPUs) || from.Hosts != nil && len(from.Hosts) != len(to.Hosts) {
		return nil, fmt.Errorf("engine: perf top: samples of %d and %d CPUs, %d and %d hosts", len(from.CPUs), len(to.CPUs), len(from.Hosts), len(to.Hosts))
	}
	if to.T < from.T {
		return nil, fmt.Errorf("engine: perf top: window from %d ns back to %d ns", from.T, to.T)
	}
	elapsed := to.T.Sub(from.T)
	out := make([]PerfCPU, 0, len(to.CPUs)+len(to.Hosts))
	for i := range to.CPUs {
		d := to.CPUs[i]
		if from.CPUs != nil {
			d = d.Sub(&from.CPUs[i])
		}
		busy := d.Sum()
		var steal sim.Duration
		if i < len(to.Steal) {
			steal = to.Steal[i]
			if i < len(from.Steal) {
				steal -= from.Steal[i]
			}
		}
		win := max(elapsed, busy+steal)
		pc := PerfCPU{Name: fmt.Sprintf("cpu%d", i)}
		for s, ns := range d {
			if ns > 0 {
				pc.Rows = append(pc.Rows, PerfRow{Sym: sim.Sym(s).String(), Ns: int64(ns)})
			}
		}
		if steal > 0 {
			pc.Rows = append(pc.Rows, PerfRow{Sym: sim.SymStealName, Ns: int64(steal)})
		}
		pc.finish(busy, steal, win)
		out = append(out, pc)
	}
	for i := range to.Hosts {
		busy := to.Hosts[i]
		if from.Hosts != nil {
			busy -= from.Hosts[i]
		}
		pc := PerfCPU{Name: fmt.Sprintf("host rx%d", i)}
		if busy > 0 {
			pc.Rows = append(pc.Rows, PerfRow{Sym: HostSym, Ns: int64(busy)})
		}
		pc.finish(busy, 0, max(elapsed, busy))
		out = append(out, pc)
	}
	return out, nil
}

// finish adds the idle row, the shares and the order; steal is the part
// of the window not the CPU's (its row is already in).
func (pc *PerfCPU) finish(busy, steal, win sim.Duration) {
	if idle := win - busy - steal; idle > 0 {
		pc.Rows = append(pc.Rows, PerfRow{Sym: sim.SymIdleName, Ns: int64(idle)})
	}
	if win > 0 {
		pc.Busy = float64(busy) / float64(win)
		for k := range pc.Rows {
			pc.Rows[k].Share = float64(pc.Rows[k].Ns) / float64(win)
		}
	}
	sort.SliceStable(pc.Rows, func(a, b int) bool { return pc.Rows[a].Ns > pc.Rows[b].Ns })
}

// Share is the share of sym in the CPU's window, 0 when it has no row.
func (pc *PerfCPU) Share(sym string) float64 {
	for _, r := range pc.Rows {
		if r.Sym == sym {
			return r.Share
		}
	}
	return 0
}
