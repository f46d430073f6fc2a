package hostsrc

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"sync"

	"ringlab/server/metrics"
)

// perQueueName matches per-queue ethtool names: virtio_net's rx0_kicks and
// veth's rx_queue_0_xdp_packets.
var perQueueName = regexp.MustCompile(`^(rx|tx)(?:_queue_)?(\d+)_(.+)$`)

// MetricsSource adapts a Source to metrics.Source ("host:IFNAME").
type MetricsSource struct {
	mu    sync.Mutex
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
	desc := fmt.Sprintf("read-only counters of %s (driver %s): sysfs statistics, ethtool stats, netlink page pools, softnet_stat", arg, m.smp.Driver)
	if m.smp.Driver == "" {
		desc = fmt.Sprintf("read-only counters of %s (no driver statistics): sysfs statistics, softnet_stat", arg)
	}
	m.notes = append(m.notes, m.smp.Notes...)
	m.info = metrics.SourceInfo{Name: "host:" + arg, Description: desc, Counters: names}
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
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.info
	i.Counters = append([]string(nil), i.Counters...)
	i.Notes = append([]string(nil), m.notes...)
	return i
}

// Sample implements metrics.Source.
func (m *MetricsSource) Sample() (metrics.Sample, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.src.ReadInto(&m.smp); err != nil {
		return metrics.Sample{}, err
	}
	m.notes = append(m.notes, m.smp.Notes...)
	tot, queues := m.convert()
	return metrics.Sample{Time: m.smp.Time, Totals: tot, Queues: queues}, nil
}

// convert maps a Sample to totals and per-queue counters: sysfs statistics
// as they are named there (rx_packets ...), ethtool device-wide counters by
// their name, per-queue ones under rx_/tx_ names in their queue, page pools
// summed (page_pool_inflight, page_pool_inflight_mem, page_pools), softnet
// summed over CPUs (softnet_processed, softnet_dropped,
// softnet_time_squeeze).
func (m *MetricsSource) convert() (map[string]uint64, []map[string]uint64) {
	s := &m.smp
	tot := make(map[string]uint64, len(s.Stats)+len(s.Ethtool)+8)
	for k, v := range s.Stats {
		tot[k] = v
	}
	var queues []map[string]uint64
	for _, c := range s.Ethtool {
		if g := perQueueName.FindStringSubmatch(c.Name); g != nil {
			q, err := strconv.Atoi(g[2])
			if err == nil && q < 4096 {
				for len(queues) <= q {
					queues = append(queues, map[string]uint64{})
				}
				queues[q][g[1]+"_"+g[3]] = c.Value
				continue
			}
		}
		if _, dup := tot[c.Name]; dup {
			tot["ethtool_"+c.Name] = c.Value
			continue
		}
		tot[c.Name] = c.Value
	}
	var inflight, mem uint64
	for _, p := range s.PagePools {
		inflight += p.Inflight
		mem += p.InflightMem
	}
	tot["page_pools"] = uint64(len(s.PagePools))
	tot["page_pool_inflight"] = inflight
	tot["page_pool_inflight_mem"] = mem
	var proc, drop, sq uint64
	for _, c := range s.Softnet {
		proc += uint64(c.Processed)
		drop += uint64(c.Dropped)
		sq += uint64(c.TimeSqueeze)
	}
	tot["softnet_processed"] = proc
	tot["softnet_dropped"] = drop
	tot["softnet_time_squeeze"] = sq
	return tot, queues
}

// Close implements metrics.Source.
func (m *MetricsSource) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.src.Close()
}
