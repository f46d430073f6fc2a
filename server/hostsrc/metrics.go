package hostsrc

import (
	"fmt"
	"sort"

	"ringlab/server/metrics"
)

// MetricsSource adapts a Source to metrics.Source ("host:IFNAME"). Like
// every metrics.Source it is used by one goroutine at a time.
type MetricsSource struct {
	src   *Source
	smp   Sample
	info  metrics.SourceInfo
	notes []string
}

// OpenMetrics opens "host:IFNAME" for the server.
func OpenMetrics(arg string) (metrics.Source, error) {
	if arg == "" {
		return nil, fmt.Errorf("host: name an interface, e.g. host:eth0 (interfaces: %s)", interfaceList())
	}
	src, err := Open(arg)
	if err != nil {
		return nil, err
	}
	m := &MetricsSource{src: src}
	if err := src.ReadInto(&m.smp); err != nil {
		src.Close()
		return nil, err
	}
	tot, _ := m.convert()
	names := make([]string, 0, len(tot))
	for n := range tot {
		names = append(names, n)
	}
	sort.Strings(names)
	desc := fmt.Sprintf("read-only counters of %s (driver %s): sysfs statistics, ethtool stats, netlink page pools and queue stats, softnet_stat", arg, m.smp.Driver)
	if m.smp.Driver == "" {
		desc = fmt.Sprintf("read-only counters of %s (no driver statistics): sysfs statistics, softnet_stat", arg)
	}
	m.notes = append(m.notes, m.smp.Notes...)
	m.info = metrics.SourceInfo{Name: "host:" + arg, Description: desc, Counters: names,
		Labels: metrics.Labels{Kind: "host", Device: arg}}
	return m, nil
}

func interfaceList() string {
	l, err := Interfaces()
	if err != nil {
		return "unknown"
	}
	return fmt.Sprint(l)
}

// Info implements metrics.Source.
func (m *MetricsSource) Info() metrics.SourceInfo {
	i := m.info
	i.Counters = append([]string(nil), i.Counters...)
	i.Notes = append([]string(nil), m.notes...)
	return i
}

// Sample implements metrics.Source: Sample.Counters' totals and queues,
// and each CPU's softnet_stat line (Sample.CPUCounters).
func (m *MetricsSource) Sample() (metrics.Sample, error) {
	if err := m.src.ReadInto(&m.smp); err != nil {
		return metrics.Sample{}, err
	}
	m.notes = append(m.notes, m.smp.Notes...)
	tot, queues := m.convert()
	return metrics.Sample{Time: m.smp.Time, Totals: tot, Queues: queues, CPUs: m.smp.CPUCounters()}, nil
}

// convert is the sample's one flattening (Sample.Counters).
func (m *MetricsSource) convert() (map[string]uint64, []map[string]uint64) {
	return m.smp.Counters()
}

// Close implements metrics.Source.
func (m *MetricsSource) Close() error {
	return m.src.Close()
}
