package view

import (
	"ringlab/engine"
	"ringlab/engine/mem"
	"ringlab/engine/vocab"
)

// Metric is one row of the page's counters table.
type Metric struct {
	Name  string
	Value float64
}

// Report lists what the page's counters table shows, in a fixed order,
// each number under its engine/vocab name: time and events, average
// throughput, each CPU's utilisation and counters (World.CPUCounters:
// cpu0.softnet.time_squeeze), pages per location, then every counter of
// World.Totals under its kernel name. It appends to dst[:0].
func Report(w *engine.World, dst []Metric) []Metric {
	out := dst[:0]
	now := w.Now()
	secs := now.Sub(0).Seconds()
	st := w.Stats()
	pps, gbps := 0.0, 0.0
	if secs > 0 {
		pps = float64(st.RX.Packets) / secs
		gbps = float64(st.RX.Bytes) * 8 / secs / 1e9
	}
	out = append(out,
		Metric{"sim_time_ns", float64(now)},
		Metric{"events", float64(w.Sim.Queue.Fired())},
		Metric{"pps", pps},
		Metric{"gbps", gbps},
	)
	for i := 0; i < w.Sim.NumCPU(); i++ {
		out = append(out, Metric{vocab.CPUUtil(i), w.Sim.CPU(i).Utilisation(now.Sub(0))})
	}
	var cpu [8]engine.Counter
	for i := 0; i < w.Sim.NumCPU(); i++ {
		for _, c := range w.CPUCounters(i, cpu[:0]) {
			out = append(out, Metric{vocab.CPUCounter(i, c.Name), float64(c.Value)})
		}
	}
	counts := w.Mem.Counts()
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		out = append(out, Metric{vocab.Pages(l.String()), float64(counts[l])})
	}
	for _, c := range st.Totals(nil) {
		out = append(out, Metric{c.Name, float64(c.Value)})
	}
	return out
}

// KeyMetrics are the rows a compare pane shows first.
var KeyMetrics = []string{
	"pps", "gbps", "rx_packets", "rx_drops", "host_drops", "rx_xdp_drops",
	"rx_pp_alloc_fast", "rx_pp_alloc_slow", "rx_pp_recycle_cached", "rx_pp_recycle_ring",
	"page_allocs", "page_frees", "zone_lock_contended", vocab.CPUUtil(0), vocab.CPUUtil(1), vocab.CPUUtil(2),
}
