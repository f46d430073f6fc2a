// Package promexp exports a metrics.Source's numbers in the Prometheus
// format: one family per name, with source and queue labels. A counter is
// ringlab_<name>_total, a gauge ringlab_<name>; the kind and the HELP
// line come from engine/vocab, the table that names every number.
package promexp

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"ringlab/engine/vocab"
	"ringlab/server/metrics"
)

// QueueAll is the queue label of a counter the source reports only as a
// device-wide total. A counter with per-queue values is exported per queue
// only (queue="0", "1", ...), so that sum() over a family never counts a
// packet twice.
const QueueAll = "all"

// Collector samples its source at every scrape, from the scrape's
// goroutine: by metrics.Source's rule the source it is given is shared
// through metrics.Serialized, as serve does.
type Collector struct {
	src    metrics.Source
	source string   // the source label
	names  []string // the source's names, in its order
	descs  map[string]*prometheus.Desc
	kinds  map[string]prometheus.ValueType
	up     *prometheus.Desc
}

// New returns a Collector for src, describing the counters src.Info lists.
func New(src metrics.Source) *Collector {
	info := src.Info()
	c := &Collector{
		src:    src,
		source: info.Name,
		descs:  map[string]*prometheus.Desc{},
		kinds:  map[string]prometheus.ValueType{},
		up:     prometheus.NewDesc("ringlab_source_up", "1 when the last scrape could sample the source, 0 when sampling failed.", []string{"source"}, nil),
	}
	seen := map[string]bool{}
	for _, name := range info.Counters {
		metric := MetricName(name)
		if seen[metric] { // two names that differ only in punctuation
			continue
		}
		seen[metric] = true
		c.names = append(c.names, name)
		c.kinds[name] = prometheus.CounterValue
		if gauge(name) {
			c.kinds[name] = prometheus.GaugeValue
		}
		c.descs[name] = prometheus.NewDesc(metric, Help(name), []string{"source", "queue"}, nil)
	}
	return c
}

// gauge reports whether engine/vocab says name goes up and down.
func gauge(name string) bool {
	d, ok := vocab.Lookup(name)
	return ok && d.Kind == vocab.Gauge
}

// Help is the HELP line of a name: its engine/vocab entry (what it is, its
// unit), or, for a name the vocabulary does not know (a driver's own
// ethtool statistic), what little can be said; then what the queue label
// means, the same for every family.
func Help(name string) string {
	const queues = " Per receive queue, or queue=\"all\" when the source has only the total."
	d, ok := vocab.Lookup(name)
	if !ok {
		return name + " as read from the source (a driver's own statistic, not in ringlab's vocabulary)." + queues
	}
	help := strings.ToUpper(d.Help[:1]) + d.Help[1:]
	if d.Unit != "" {
		help += " (" + d.Unit + ")"
	}
	return help + "." + queues
}

// MetricName returns the Prometheus name of a number: a counter's is
// "ringlab_" + name + "_total" ("rx_kicks" -> "ringlab_rx_kicks_total"),
// a gauge's has no suffix ("page_pool.inflight" ->
// "ringlab_page_pool_inflight"). Characters other than letters, digits
// and '_' become '_' ("alloc-fast" -> "ringlab_alloc_fast_total").
func MetricName(name string) string {
	var b strings.Builder
	b.WriteString("ringlab_")
	for _, r := range name {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if !gauge(name) && !strings.HasSuffix(name, "_total") {
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
				ch <- prometheus.MustNewConstMetric(d, c.kinds[name], float64(v), c.source, strconv.Itoa(q))
			}
		}
		if v, ok := s.Totals[name]; ok && !perQueue {
			ch <- prometheus.MustNewConstMetric(d, c.kinds[name], float64(v), c.source, QueueAll)
		}
	}
}
