package engine

import (
	"fmt"
	"strings"

	"ringlab/engine/drop"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// Summary is what `ringlab run` reports about a finished run.
type Summary struct {
	Scenario  string              `json:"scenario"`
	Mode      string              `json:"mode"`
	SimTimeNS int64               `json:"sim_time_ns"`
	Packets   uint64              `json:"packets"`
	PPS       float64             `json:"pps"`
	Gbps      float64             `json:"gbps"`
	CPUs      []float64           `json:"cpus"`
	Counters  map[string]uint64   `json:"counters"`
	Queues    []map[string]uint64 `json:"queues"`
	// PerCPU holds each CPU's counters (World.CPUCounters: its
	// softnet_stat columns and the scheduler's), under the names Totals
	// gives their sums.
	PerCPU   []map[string]uint64 `json:"per_cpu"`
	PagePool map[string]uint64   `json:"page_pool"`
	Pages    map[string]int64    `json:"pages"`
	Events   uint64              `json:"events"`
	// XDPFaults says, per queue whose program aborted, why it last did.
	XDPFaults []string `json:"xdp_faults,omitempty"`
	// Drops are the reasons the world dropped for, each with what the
	// scenario's kernel does there (their counts are drops.NAME in
	// Counters).
	Drops []DropReason `json:"drop_reasons,omitempty"`

	// Ordered views for printing.
	CounterList  []Counter   `json:"-"`
	PagePoolList []Counter   `json:"-"`
	CPUList      [][]Counter `json:"-"`
}

// DropReason is one reason a world dropped for: its name at the
// scenario's kernel (engine/drop), how many, and what that kernel does
// where the engine drops (the kfree_skb_reason call, or why there is
// none).
type DropReason struct {
	Name   string `json:"name"`
	Count  uint64 `json:"count"`
	Kernel string `json:"kernel"`
}

// SummaryParts are the readout parts a Summary shows.
const SummaryParts = PartRun | PartCPUUtil | PartCPUCounters | PartPages | PartTotals | PartQueues

// Summarize reads the world's state: its readout (World.Read, the parts
// SummaryParts) arranged as `ringlab run` prints it, with the reasons it
// dropped for and its XDP programs' faults.
func (w *World) Summarize() Summary {
	var r Readout
	w.Read(&r, SummaryParts)
	return SummaryOf(w, &r)
}

// SummaryOf arranges a readout of the world (at least SummaryParts) as
// a Summary: nothing in it is computed again.
func SummaryOf(w *World, r *Readout) Summary {
	s := Summary{
		Scenario: w.Scenario.Name,
		Mode:     w.Driver.Mode(),
		Counters: map[string]uint64{},
		PagePool: map[string]uint64{},
		Pages:    map[string]int64{},
	}
	for _, f := range r.Figures {
		switch f.Part {
		case PartRun:
			switch f.Name {
			case "sim_time_ns":
				s.SimTimeNS = int64(f.Value)
			case "events":
				s.Events = uint64(f.Value)
			case "pps":
				s.PPS = f.Value
			case "gbps":
				s.Gbps = f.Value
			}
		case PartCPUUtil:
			s.CPUs = append(s.CPUs, f.Value)
		case PartCPUCounters:
			for len(s.CPUList) <= f.Index {
				s.CPUList = append(s.CPUList, nil)
				s.PerCPU = append(s.PerCPU, map[string]uint64{})
			}
			name := strings.TrimPrefix(f.Name, vocab.CPUCounter(f.Index, ""))
			s.CPUList[f.Index] = append(s.CPUList[f.Index], Counter{name, uint64(f.Value)})
			s.PerCPU[f.Index][name] = uint64(f.Value)
		case PartPages:
			s.Pages[strings.TrimPrefix(f.Name, vocab.Pages(""))] = int64(f.Value)
		case PartTotals:
			c := Counter{f.Name, uint64(f.Value)}
			s.CounterList = append(s.CounterList, c)
			s.Counters[c.Name] = c.Value
			if d, _ := vocab.Lookup(c.Name); d.Group == vocab.GroupPagePool {
				s.PagePoolList = append(s.PagePoolList, c)
				s.PagePool[c.Name] = c.Value
			}
			if c.Name == "rx_packets" {
				s.Packets = c.Value
			}
		case PartQueues:
			for len(s.Queues) <= f.Index {
				s.Queues = append(s.Queues, map[string]uint64{})
			}
			s.Queues[f.Index][f.Name] = uint64(f.Value)
		}
	}
	for _, rq := range w.Driver.RQ {
		if rq.LastFault.Faulted() {
			s.XDPFaults = append(s.XDPFaults, fmt.Sprintf("rx%d: %s", rq.Index, rq.LastFault))
		}
	}
	st := &r.Stats
	for rs := drop.Reason(1); rs < drop.NumReasons; rs++ {
		if n := st.Drops[rs]; n > 0 {
			s.Drops = append(s.Drops, DropReason{Name: drop.Name(rs, st.Kernel), Count: n,
				Kernel: st.Kernel.String() + ": " + drop.Kernel(rs, st.Kernel)})
		}
	}
	return s
}

// RunFor runs the world for d of simulated time from now.
func (w *World) RunFor(d sim.Duration) error {
	return w.RunUntil(w.Now().Add(d))
}
