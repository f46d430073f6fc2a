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
	a, ua := w.MarkReadout(), w.usageSnap()
	if err := w.RunUntil(sim.Time(warmup + window)); err != nil {
		return Measurement{}, err
	}
	ub := w.usageSnap()
	v, err := MetricSince(w, metric, &a)
	if err != nil {
		return Measurement{}, err
	}
	u := w.usage(ua, ub)
	return Measurement{Value: v, Usage: u, Limit: LimitOf(u)}, nil
}

// MetricParts are the readout's parts a metric is one of: the run's
// rates and shares (pps, goodput_gbps, tx_mpps, recycle_cached_share,
// ...), each over a window.
const MetricParts = PartRun | PartMeasures

// MetricSince reads a metric (a figure of MetricParts) over the window
// from m to now.
func MetricSince(w *World, metric string, m *ReadoutMark) (float64, error) {
	var r Readout
	w.ReadSince(&r, MetricParts, m)
	f, ok := r.Get(metric)
	if !ok || f.Name == "sim_time_ns" || f.Name == "events" || f.Name == "time_us" {
		return 0, fmt.Errorf("engine: unknown metric %q", metric)
	}
	return f.Value, nil
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
