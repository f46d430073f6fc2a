package engine

import (
	"fmt"

	"ringlab/engine/drop"
	"ringlab/engine/sim"
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

// Summarize reads the world's state.
func (w *World) Summarize() Summary {
	now := w.Now()
	el := now.Sub(0)
	s := Summary{
		Scenario:  w.Scenario.Name,
		Mode:      w.Driver.Mode(),
		SimTimeNS: int64(now),
		Packets:   w.Received(),
		Counters:  map[string]uint64{},
		PagePool:  map[string]uint64{},
		Pages:     w.Pages(),
		Events:    w.Sim.Queue.Fired(),
	}
	var bytes uint64
	for _, rq := range w.Driver.RQ {
		bytes += rq.Stats.Bytes
	}
	if secs := el.Seconds(); secs > 0 {
		s.PPS = float64(s.Packets) / secs
		s.Gbps = float64(bytes) * 8 / secs / 1e9
	}
	for i := 0; i < w.Sim.NumCPU(); i++ {
		s.CPUs = append(s.CPUs, w.Sim.CPU(i).Utilisation(el))
		cs := w.CPUCounters(i, nil)
		m := make(map[string]uint64, len(cs))
		for _, c := range cs {
			m[c.Name] = c.Value
		}
		s.CPUList = append(s.CPUList, cs)
		s.PerCPU = append(s.PerCPU, m)
	}
	s.CounterList = w.Totals()
	for _, c := range s.CounterList {
		s.Counters[c.Name] = c.Value
	}
	s.PagePoolList = w.PagePoolStats()
	for _, c := range s.PagePoolList {
		s.PagePool[c.Name] = c.Value
	}
	for _, rq := range w.Driver.RQ {
		if rq.LastFault.Faulted() {
			s.XDPFaults = append(s.XDPFaults, fmt.Sprintf("rx%d: %s", rq.Index, rq.LastFault))
		}
	}
	st := w.Stats()
	for r := drop.Reason(1); r < drop.NumReasons; r++ {
		if n := st.Drops[r]; n > 0 {
			s.Drops = append(s.Drops, DropReason{Name: drop.Name(r, st.Kernel), Count: n,
				Kernel: st.Kernel.String() + ": " + drop.Kernel(r, st.Kernel)})
		}
	}
	for _, q := range w.Queues() {
		m := map[string]uint64{}
		for _, c := range q {
			m[c.Name] = c.Value
		}
		s.Queues = append(s.Queues, m)
	}
	return s
}

// RunFor runs the world for d of simulated time from now.
func (w *World) RunFor(d sim.Duration) error {
	return w.RunUntil(w.Now().Add(d))
}
