package engine

import (
	"fmt"
	"math"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// Measurement windows of a reproduction: the world warms up (rings fill,
// pools reach their steady state), then counters are read over the window.
const (
	ReproWarmup = 5 * sim.Millisecond
	ReproWindow = 20 * sim.Millisecond
)

// Row is one reproduced row of the published table.
type Row struct {
	scenario.Reproduction
	Simulated float64
	// Ratio is Simulated over the baseline row's Simulated, and
	// PublishedRatio the same for the published figures; NaN for a
	// baseline row, or when the baseline's figure is 0.
	Ratio          float64
	PublishedRatio float64

	// Usage is what the configuration's resources did over the window,
	// and Limit what limits it (LimitOf).
	Usage Usage
	Limit Limit
	// Fitted lists what was fitted on this row's result: the cost
	// table's constants fitted on it and the preset's fitted fields.
	Fitted []FittedValue
	// Match says whether the simulated figure matches the published one
	// (Matches), Check whether Limit is the published mechanism for this
	// row and its baseline (MechanismHolds), and Verdict what the two and
	// Fitted make of the row, with Why.
	Match   bool
	Check   MechanismCheck
	Verdict Verdict
	Why     string
}

// snapshot is what a metric is computed from.
type snapshot struct {
	t        sim.Time
	bytes    uint64
	appBytes uint64 // payload the applications read
	txDone   uint64
	cached   uint64
	ring     uint64
	refill   uint64
	packets  uint64
}

func (w *World) snap() snapshot {
	s := snapshot{t: w.Now(), bytes: w.Stack.Counters().Bytes, appBytes: w.Stack.Counters().AppBytes, packets: w.Received()}
	if w.Devmap != nil {
		s.txDone = w.Devmap.Next().Completed
	}
	for _, p := range w.Pools.List(nil) {
		r := p.RecycleStats()
		s.cached += r.Cached
		s.ring += r.Ring
		s.refill += p.AllocStats().Refill
	}
	return s
}

// Measure runs a scenario through warmup and window and returns the
// metric.
func Measure(s scenario.Scenario, metric string, warmup, window sim.Duration) (float64, error) {
	m, err := MeasureUsage(s, metric, warmup, window)
	return m.Value, err
}

// Measurement is a metric over a window and what the run's resources did
// in it.
type Measurement struct {
	Value float64
	Usage Usage
	Limit Limit // LimitOf(Usage)
}

// MeasureUsage is Measure that also says what the resources did over the
// window and which one limits the run (LimitOf).
func MeasureUsage(s scenario.Scenario, metric string, warmup, window sim.Duration) (Measurement, error) {
	w, err := New(s)
	if err != nil {
		return Measurement{}, err
	}
	if err := w.RunUntil(sim.Time(warmup)); err != nil {
		return Measurement{}, err
	}
	a, ua := w.snap(), w.usageSnap()
	if err := w.RunUntil(sim.Time(warmup + window)); err != nil {
		return Measurement{}, err
	}
	b, ub := w.snap(), w.usageSnap()
	v, err := metricValue(metric, a, b)
	if err != nil {
		return Measurement{}, err
	}
	u := w.usage(ua, ub)
	return Measurement{Value: v, Usage: u, Limit: LimitOf(u)}, nil
}

// metricValue computes a metric from the snapshots at the window's ends.
func metricValue(metric string, a, b snapshot) (float64, error) {
	secs := b.t.Sub(a.t).Seconds()
	switch metric {
	case "delivered_gbps":
		return float64(b.bytes-a.bytes) * 8 / secs / 1e9, nil
	case "goodput_gbps":
		return float64(b.appBytes-a.appBytes) * 8 / secs / 1e9, nil
	case "tx_mpps":
		return float64(b.txDone-a.txDone) / secs / 1e6, nil
	case "recycle_cached_share", "recycle_ring_share":
		total := float64(b.cached - a.cached + b.ring - a.ring)
		if total == 0 {
			return 0, nil
		}
		if metric == "recycle_cached_share" {
			return float64(b.cached-a.cached) / total, nil
		}
		return float64(b.ring-a.ring) / total, nil
	case "alloc_refill_per_mpkt":
		pk := float64(b.packets - a.packets)
		if pk == 0 {
			return 0, nil
		}
		return float64(b.refill-a.refill) / pk * 1e6, nil
	}
	return 0, fmt.Errorf("engine: unknown metric %q", metric)
}

// Reproduce runs every row of scenario.Reproductions and gives each its
// verdict (Judge). progress, when not nil, is called before each row.
func Reproduce(progress func(i, n int, r scenario.Reproduction)) ([]Row, error) {
	table := scenario.Reproductions()
	rows := make([]Row, 0, len(table))
	got := map[string]Measurement{}
	for i, r := range table {
		if progress != nil {
			progress(i, len(table), r)
		}
		key := r.Config + "/" + r.Metric
		m, ok := got[key]
		s, err := scenario.LookupPreset(r.Config)
		if err != nil {
			return nil, err
		}
		if !ok {
			m, err = MeasureUsage(s, r.Metric, ReproWarmup, ReproWindow)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", r.ID, r.Config, err)
			}
			got[key] = m
		}
		rows = append(rows, Row{Reproduction: r, Simulated: m.Value, Usage: m.Usage, Limit: m.Limit, Fitted: FittedOn(&s, r.ID)})
	}
	for i := range rows {
		r := &rows[i]
		r.Ratio, r.PublishedRatio = math.NaN(), math.NaN()
		if r.Baseline == "" {
			continue
		}
		for _, b := range rows {
			if b.Config == r.Baseline && b.Metric == r.Metric && b.Unit == r.Unit {
				if b.Simulated != 0 {
					r.Ratio = r.Simulated / b.Simulated
				}
				if b.Published != 0 {
					r.PublishedRatio = r.Published / b.Published
				}
			}
		}
	}
	for i := range rows {
		var base *Row
		for j := range rows {
			if rows[j].Config == rows[i].Baseline && rows[j].Metric == rows[i].Metric {
				base = &rows[j]
			}
		}
		Judge(&rows[i], base)
	}
	return rows, nil
}
