// Package promexp exports a metrics.Source's counters in the Prometheus
// format: one counter family per kernel counter, named
// ringlab_<kernel name>_total, with source and queue labels.
package promexp

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"ringlab/server/metrics"
)

// QueueAll is the queue label of a counter the source reports only as a
// device-wide total. A counter with per-queue values is exported per queue
// only (queue="0", "1", ...), so that sum() over a family never counts a
// packet twice.
const QueueAll = "all"

// Collector samples its source at every scrape. It is safe for concurrent
// use when the source is (wrap it with metrics.Serialized).
type Collector struct {
	src    metrics.Source
	source string   // the source label
	names  []string // kernel counter names, in the source's order
	descs  map[string]*prometheus.Desc
	up     *prometheus.Desc
}

// New returns a Collector for src, describing the counters src.Info lists.
func New(src metrics.Source) *Collector {
	info := src.Info()
	c := &Collector{
		src:    src,
		source: info.Name,
		descs:  map[string]*prometheus.Desc{},
		up:     prometheus.NewDesc("ringlab_source_up", "1 when the last scrape could sample the source, 0 when sampling failed.", []string{"source"}, nil),
	}
	seen := map[string]bool{}
	for _, name := range info.Counters {
		metric := MetricName(name)
		if seen[metric] { // two kernel names that differ only in punctuation
			continue
		}
		seen[metric] = true
		c.names = append(c.names, name)
		c.descs[name] = prometheus.NewDesc(metric,
			"Kernel counter "+name+" as read from the source (per receive queue, or queue=\"all\" when the source has only the total).",
			[]string{"source", "queue"}, nil)
	}
	return c
}

// MetricName returns the Prometheus name of a kernel counter:
// "rx_kicks" -> "ringlab_rx_kicks_total". Characters other than letters,
// digits and '_' become '_' ("alloc-fast" -> "ringlab_alloc_fast_total").
func MetricName(kernel string) string {
	var b strings.Builder
	b.WriteString("ringlab_")
	for _, r := range kernel {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if !strings.HasSuffix(kernel, "_total") {
		b.WriteString("_total")
	}
	return b.String()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	for _, name := range c.names {
		ch <- c.descs[name]
	}
}

// Collect implements prometheus.Collector: one Sample per scrape. A failed
// sample yields ringlab_source_up 0 and no counters, not a failed scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.src.Sample()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0, c.source)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1, c.source)
	for _, name := range c.names {
		d := c.descs[name]
		perQueue := false
		for q, counters := range s.Queues {
			if v, ok := counters[name]; ok {
				perQueue = true
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), c.source, strconv.Itoa(q))
			}
		}
		if v, ok := s.Totals[name]; ok && !perQueue {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), c.source, QueueAll)
		}
	}
}
