// Package promexp exports a metrics.Source's numbers in the Prometheus
// format, by Prometheus's conventions: one family per number, typed as
// engine/vocab says (a counter is ringlab_<name>_total, a gauge
// ringlab_<name>), in snake_case and base units (seconds, bytes), with
// HELP from engine/vocab and labels that stay the same while the
// source's options change (source kind, device, program, preset, queue,
// cpu); a twin's predictions are the same family as what they predict,
// with origin="predicted". The drops by reason are one family,
// ringlab_drops_total, with a reason label; the machine's softnet_stat
// numbers carry no device label and come from a host or sim source only.
// `ringlab serve` serves the text format, or OpenMetrics when the
// scraper asks; the output passes `promtool check metrics`.
// docs/prometheus.md has a scrape configuration and queries.
package promexp

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"ringlab/engine/vocab"
	"ringlab/server/metrics"
)

// QueueAll is the queue label of a counter the source reports only as a
// device-wide total. A counter with per-queue values is exported per queue
// only (queue="0", "1", ...), so that sum() over a family never counts a
// packet twice.
const QueueAll = "all"

// CPUAll is the cpu label of a total. Only the families of numbers that
// engine/vocab names per CPU (cpuN.softnet.time_squeeze: FamilyInfo.PerCPU)
// carry the cpu label; a number of one that the sample has per CPU
// (metrics.Sample.CPUs) is exported per CPU only (cpu="0", "1", ..., with
// queue="all"; an offline CPU has no series), else as the queues or the
// total with cpu="all". Per-CPU values of a number whose family has no
// cpu label are not exported (its total is).
const CPUAll = "all"

// Machine-wide numbers (/proc/net/softnet_stat's softnet.*, each CPU's
// softnet_data) are the machine's, not an interface's: their families
// carry no device label, and only a source of its own exports them (sim,
// host). A lab and a twin's measured side read the same softnet_stat as
// a host source on the machine, so they leave them out; exported once,
// by the host source, as node_exporter's node_softnet_* are. A twin's
// predictions of them (the engine's CPUs) stay.

// Label names and the origin label's values.
const (
	LabelSource  = "source"  // the source's kind: sim, host, lab, twin
	LabelDevice  = "device"  // the interface read
	LabelProgram = "program" // the XDP program running
	LabelPreset  = "preset"  // the sim source's preset
	LabelQueue   = "queue"   // a receive queue's number, or QueueAll
	LabelCPU     = "cpu"     // a CPU's number, or CPUAll; only on FamilyInfo.PerCPU families
	LabelOrigin  = "origin"  // a twin's: OriginMeasured or OriginPredicted
	LabelSpec    = "spec"    // ringlab_source_info's: the source as serve names it
	LabelReason  = "reason"  // ringlab_drops_total's: why (engine/drop's name: SOCKET_RCVBUFF, xdp_drop)

	OriginMeasured  = "measured"
	OriginPredicted = "predicted"
)

// Collector samples its source at every scrape, from the scrape's
// goroutine: by metrics.Source's rule the source it is given is shared
// through metrics.Serialized, as serve does.
type Collector struct {
	src     metrics.Source
	numbers []number // the source's names that are exported, in its order
	twin    bool     // families carry the origin label
	up      *prometheus.Desc
	info    *prometheus.Desc
	spec    string
}

// number is how one of the source's names is exported.
type number struct {
	name      string // the source's name: rx_packets, predicted_rx_packets
	family    *prometheus.Desc
	kind      prometheus.ValueType
	scale     float64 // the value times scale is in base units
	predicted bool
	perCPU    bool   // the family carries the cpu label
	reason    string // the reason label's value: drops.NAME's NAME, "" for other families
}

// New returns a Collector for src, describing the names src.Info lists.
func New(src metrics.Source) *Collector {
	info := src.Info()
	c := &Collector{src: src, spec: info.Name, twin: info.Labels.Kind == "twin"}
	constLabels := ConstLabels(info.Labels)
	c.up = prometheus.NewDesc("ringlab_source_up", "1 when the last scrape could sample the source, 0 when sampling failed.", nil, constLabels)
	c.info = prometheus.NewDesc("ringlab_source_info", "The source /metrics reads, as `ringlab serve --source` names it (spec: options such as a lab's rate included); always 1.", []string{LabelSpec}, constLabels)
	families := map[string]*prometheus.Desc{}
	perCPU := map[string]bool{}   // of the families made, those with the cpu label
	taken := map[[3]string]bool{} // (family, origin, reason) exported
	machineLabels := prometheus.Labels{}
	for k, v := range constLabels {
		if k != LabelDevice {
			machineLabels[k] = v
		}
	}
	// A lab and a twin read the machine's softnet_stat through a host
	// source of their own: the host source exports it.
	machineElsewhere := info.Labels.Kind == "lab" || info.Labels.Kind == "twin"
	for _, name := range info.Counters {
		f := Family(name)
		if f.Machine && !f.Predicted && machineElsewhere {
			continue
		}
		origin := OriginMeasured
		if f.Predicted {
			origin = OriginPredicted
		}
		if taken[[3]string{f.Metric, origin, f.Reason}] { // two names that differ only in punctuation or case
			continue
		}
		taken[[3]string{f.Metric, origin, f.Reason}] = true
		d, ok := families[f.Metric]
		if !ok {
			variable := []string{LabelQueue}
			if f.PerCPU {
				variable = append(variable, LabelCPU)
			}
			if f.Reason != "" {
				variable = append(variable, LabelReason)
			}
			if c.twin {
				variable = append(variable, LabelOrigin)
			}
			l := constLabels
			if f.Machine {
				l = machineLabels
			}
			d = prometheus.NewDesc(f.Metric, help(f, c.twin), variable, l)
			families[f.Metric], perCPU[f.Metric] = d, f.PerCPU
		}
		kind := prometheus.CounterValue
		if f.Kind != vocab.Counter {
			kind = prometheus.GaugeValue
		}
		c.numbers = append(c.numbers, number{name: name, family: d, kind: kind, scale: f.Scale, predicted: f.Predicted,
			perCPU: perCPU[f.Metric], reason: f.Reason})
	}
	return c
}

// ConstLabels are the labels every family of a source carries: its kind
// and, where they apply, its device, program and preset.
func ConstLabels(l metrics.Labels) prometheus.Labels {
	out := prometheus.Labels{LabelSource: l.Kind}
	for k, v := range map[string]string{LabelDevice: l.Device, LabelProgram: l.Program, LabelPreset: l.Preset} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// FamilyInfo is how a number is exported: its family's name, its kind
// and unit (engine/vocab's, in base units), the factor that takes its
// value to that unit, whether it is a twin's prediction, and whether its
// family carries the cpu label.
type FamilyInfo struct {
	Metric    string
	Kind      vocab.Kind
	Unit      string
	Help      string
	Scale     float64
	Predicted bool
	// PerCPU: engine/vocab names the number per CPU too (cpuN.NAME, as
	// vocab.CPUCounter builds it), so its family has the cpu label.
	PerCPU bool
	// Machine: the number is the machine's, not an interface's
	// (softnet.*): its family has no device label.
	Machine bool
	// Dir is the queues the number is of: "rx" (receive), "tx" (send),
	// or "" for neither.
	Dir string
	// Reason is a drop reason's name (drops.NAME's NAME): the numbers
	// of engine/vocab's drops group are one family, ringlab_drops_total,
	// with a reason label.
	Reason string
}

// machineWide reports whether a number (its base name) is the machine's:
// /proc/net/softnet_stat's, each CPU's struct softnet_data.
func machineWide(base string) bool { return strings.HasPrefix(base, "softnet.") }

// timeUnits are the vocabulary's units of time, with their factor to
// seconds and the suffix a name in them may carry.
var timeUnits = map[string]struct {
	scale  float64
	suffix string
}{
	"ns": {1e-9, "_ns"},
	"us": {1e-6, "_us"},
	"ms": {1e-3, "_ms"},
	"s":  {1, "_s"},
}

// Family returns how name is exported. The name goes to snake_case
// (UdpInDatagrams -> udp_in_datagrams, softnet.processed ->
// softnet_processed); a time in ns, us or ms becomes seconds (its
// suffix, if any, replaced by _seconds: zone_lock_wait_ns ->
// zone_lock_wait_seconds); bytes not named so get _bytes
// (page_pool.inflight_mem -> page_pool_inflight_mem_bytes); a gauge
// ending in _count (which Prometheus keeps for histograms) ends in its
// unit instead (ethtool_count -> ethtool_statistics); a counter ends in
// _total. predicted_NAME is NAME's family: the origin label tells them
// apart. A name the vocabulary does not know is a counter.
func Family(name string) FamilyInfo {
	base, predicted := strings.CutPrefix(name, vocab.PredictedPrefix)
	if base == "" {
		base, predicted = name, false
	}
	d, _ := vocab.Describe(base)
	_, perCPU := vocab.Lookup(vocab.CPUCounter(0, base))
	f := FamilyInfo{Kind: d.Kind, Unit: d.Unit, Help: d.Help, Scale: 1, Predicted: predicted, PerCPU: perCPU,
		Machine: machineWide(base)}
	s := snake(base)
	if dir, _, ok := strings.Cut(s, "_"); ok && (dir == "rx" || dir == "tx") {
		f.Dir = dir
	}
	if tu, ok := timeUnits[d.Unit]; ok {
		f.Scale, f.Unit = tu.scale, "seconds"
		s = strings.TrimSuffix(s, tu.suffix)
		if !strings.HasSuffix(s, "_seconds") {
			s += "_seconds"
		}
	}
	if d.Unit == "bytes" && !hasWord(s, "bytes") {
		s += "_bytes"
	}
	if d.Kind != vocab.Counter && strings.HasSuffix(s, "_count") {
		s = strings.TrimSuffix(s, "_count")
		if u := snake(d.Unit); u != "" && !strings.HasSuffix(s, "_"+u) {
			s += "_" + u
		}
	}
	if d.Kind == vocab.Counter && !strings.HasSuffix(s, "_total") {
		s += "_total"
	}
	f.Metric = "ringlab_" + s
	if r, ok := strings.CutPrefix(base, vocab.DropsPrefix); ok && d.Group == vocab.GroupDrops {
		f.Metric, f.Reason, f.Help = "ringlab_drops_total", r, vocab.DropsHelp
	}
	return f
}

// MetricName returns the Prometheus family of a number (Family's Metric):
// "rx_kicks" -> "ringlab_rx_kicks_total", "page_pool.inflight" ->
// "ringlab_page_pool_inflight".
func MetricName(name string) string { return Family(name).Metric }

// snake writes a name in snake_case: a capital after a small letter or
// a digit, or a capital followed by a small letter after another capital,
// starts a word; anything but letters and digits is a '_'; runs of '_'
// are one, none at the ends.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	under := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case r < unicode.MaxASCII && unicode.IsUpper(r):
			prevLowerOrDigit := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			acronymEnd := i > 0 && unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLowerOrDigit || acronymEnd {
				under()
			}
			b.WriteRune(unicode.ToLower(r))
		case r < unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			under()
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// hasWord reports whether the snake_case name s has w as one of its words.
func hasWord(s, w string) bool {
	for _, p := range strings.Split(s, "_") {
		if p == w {
			return true
		}
	}
	return false
}

// Help is the HELP line of a name: what engine/vocab says of it (for a
// name it does not know, a driver's own ethtool statistic, what little
// can be said), in base units, then what the labels mean.
func Help(name string) string { return help(Family(name), false) }

func help(f FamilyInfo, twin bool) string {
	h := strings.ToUpper(f.Help[:1]) + f.Help[1:]
	if f.Unit != "" {
		h += " (" + f.Unit + ")"
	}
	queues := `queue="all"` // what the queue label says
	switch f.Dir {
	case "rx":
		queues = `per receive queue (queue="0", "1", ...) where the source has each queue's, else queue="all"`
	case "tx":
		queues = `per send queue (queue="0", "1", ...) where the source has each queue's, else queue="all"`
	}
	if f.Machine {
		h += `. The machine's, not an interface's: no device label, exported by a host or sim source (not by a lab or a twin's measured side, which read the host's)`
	}
	if f.Reason != "" {
		h += `. reason="..." is engine/drop's name for why (docs/numbers.md, Drops by reason)`
	}
	switch {
	case f.PerCPU:
		h += `. Per CPU where the source has each CPU's (cpu="0", "1", ...), else cpu="all"; ` + queues + "."
	case f.Dir != "":
		h += ". " + strings.ToUpper(queues[:1]) + queues[1:] + "."
	case f.Machine:
		h += `; queue="all".`
	default:
		h += `. Device-wide, queue="all", unless the source has it per queue (queue="0", "1", ...).`
	}
	if twin {
		h += ` origin="measured" is the real source's number, origin="predicted" the twin engine's prediction of it.`
	}
	return h
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.info
	seen := map[*prometheus.Desc]bool{}
	for _, n := range c.numbers {
		if !seen[n.family] {
			seen[n.family] = true
			ch <- n.family
		}
	}
}

// Collect implements prometheus.Collector: one Sample per scrape. A failed
// sample yields ringlab_source_up 0 and no numbers, not a failed scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, c.spec)
	s, err := c.src.Sample()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, n := range c.numbers {
		labels := func(queue, cpu string) []string {
			l := append(make([]string, 0, 4), queue)
			if n.perCPU {
				l = append(l, cpu)
			}
			if n.reason != "" {
				l = append(l, n.reason)
			}
			switch {
			case !c.twin:
			case n.predicted:
				l = append(l, OriginPredicted)
			default:
				l = append(l, OriginMeasured)
			}
			return l
		}
		split := false // exported per CPU or per queue, not as the total
		if n.perCPU {
			for i, values := range s.CPUs {
				if v, ok := values[n.name]; ok {
					split = true
					ch <- prometheus.MustNewConstMetric(n.family, n.kind, float64(v)*n.scale, labels(QueueAll, strconv.Itoa(i))...)
				}
			}
		}
		if !split {
			for q, values := range s.Queues {
				if v, ok := values[n.name]; ok {
					split = true
					ch <- prometheus.MustNewConstMetric(n.family, n.kind, float64(v)*n.scale, labels(strconv.Itoa(q), CPUAll)...)
				}
			}
		}
		if v, ok := s.Totals[n.name]; ok && !split {
			ch <- prometheus.MustNewConstMetric(n.family, n.kind, float64(v)*n.scale, labels(QueueAll, CPUAll)...)
		}
	}
}
