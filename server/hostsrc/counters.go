package hostsrc

import (
	"regexp"
	"strconv"

	"ringlab/engine/vocab"
)

// perQueueName matches per-queue ethtool names: virtio_net's rx0_kicks and
// veth's rx_queue_0_xdp_packets.
var perQueueName = regexp.MustCompile(`^(rx|tx)(?:_queue_)?(\d+)_(.+)$`)

// maxQueue bounds the queue numbers taken from ethtool names.
const maxQueue = 4096

// maxCPU bounds the CPU ids taken from softnet_stat: the largest
// CONFIG_NR_CPUS (MAXSMP's 8192).
const maxCPU = 8192

// The softnet_stat columns a Sample carries per CPU, under the names of
// their sums.
const (
	softnetProcessed   = "softnet.processed"
	softnetDropped     = "softnet.dropped"
	softnetTimeSqueeze = "softnet.time_squeeze"
	softnetReceivedRPS = "softnet.received_rps"     // where the kernel prints column 10
	softnetFlowLimit   = "softnet.flow_limit_count" // column 11
	softnetBacklogLen  = "softnet.backlog_len"      // column 12 (5.10)
)

// softnetColumns are the softnet_stat columns a Sample carries, under the
// names of their sums, with the number of columns a line needs to have
// each (SoftnetCPU.Columns).
var softnetColumns = [...]struct {
	name    string
	columns int
	value   func(*SoftnetCPU) uint32
}{
	{softnetProcessed, softnetMinColumns, func(c *SoftnetCPU) uint32 { return c.Processed }},
	{softnetDropped, softnetMinColumns, func(c *SoftnetCPU) uint32 { return c.Dropped }},
	{softnetTimeSqueeze, softnetMinColumns, func(c *SoftnetCPU) uint32 { return c.TimeSqueeze }},
	{softnetReceivedRPS, colReceivedRPS + 1, func(c *SoftnetCPU) uint32 { return c.ReceivedRPS }},
	{softnetFlowLimit, colFlowLimitCount + 1, func(c *SoftnetCPU) uint32 { return c.FlowLimitCount }},
	{softnetBacklogLen, colBacklogLen + 1, func(c *SoftnetCPU) uint32 { return c.BacklogLen }},
}

// Counters is the one flattening of a Sample into named numbers, each
// under its engine/vocab name, which the live stream, /metrics and the
// tutorials' host directive all read:
//
//   - sysfs statistics as sysfs names them (rx_packets, rx_dropped);
//   - ethtool statistics by the driver's name, per-queue ones in Queues
//     under the totals' names (rx0_kicks and rx_queue_0_kicks are queue 0's
//     rx_kicks); a device-wide one a sysfs statistic already names is
//     ethtool.NAME; ethtool_count says how many the driver has;
//   - netlink qstats-get's per-queue counters in Queues, where ethtool
//     has not given the queue's number already (rx_packets, rx_bytes,
//     tx_packets, tx_bytes, ...); a total sysfs does not give is their
//     sum over queues;
//   - page pools summed: page_pools, page_pool.inflight,
//     page_pool.inflight_mem, and when the kernel has
//     CONFIG_PAGE_POOL_STATS the 11 stats under their canonical names
//     (rx_pp_alloc_fast ..., which netlink calls alloc-fast);
//   - every name read under another interface's spelling of a number
//     under its canonical one (engine/vocab's aliases: veth's
//     rx_xdp_redirect is rx_xdp_redirects);
//   - /proc/net/softnet_stat summed over CPUs: softnet.processed,
//     softnet.dropped, softnet.time_squeeze and, where the kernel prints
//     them, softnet.received_rps, softnet.flow_limit_count and
//     softnet.backlog_len (node_exporter's columns); softnet.cpus
//     (CPUCounters has each CPU's).
//
// Totals holds every device-wide number; Queues[q] the per-queue ones
// (nil when the driver has none).
func (s *Sample) Counters() (totals map[string]uint64, queues []map[string]uint64) {
	tot := make(map[string]uint64, len(s.Stats)+len(s.Ethtool)+24)
	for k, v := range s.Stats {
		tot[k] = v
	}
	for _, c := range s.Ethtool {
		if g := perQueueName.FindStringSubmatch(c.Name); g != nil {
			if q, err := strconv.Atoi(g[2]); err == nil && q < maxQueue {
				for len(queues) <= q {
					queues = append(queues, map[string]uint64{})
				}
				queues[q][vocab.Canonical(vocab.Total(g[1], g[3]))] = c.Value
				continue
			}
		}
		if _, dup := s.Stats[c.Name]; dup {
			tot[ethtoolName(c.Name)] = c.Value
			continue
		}
		tot[vocab.Canonical(c.Name)] = c.Value
	}
	for _, qs := range s.Queues {
		for len(queues) <= qs.ID {
			queues = append(queues, map[string]uint64{})
		}
		q := queues[qs.ID]
		for _, c := range qs.Counters {
			if _, had := q[c.Name]; !had { // ethtool's, where it has one
				q[c.Name] = c.Value
			}
		}
	}
	for _, q := range queues {
		for name := range q {
			if _, ok := tot[name]; ok {
				continue
			}
			var sum uint64
			for _, other := range queues {
				sum += other[name]
			}
			tot[name] = sum
		}
	}
	tot["ethtool_count"] = uint64(len(s.Ethtool))
	tot["page_pools"] = uint64(len(s.PagePools))
	var inflight, mem uint64
	var stats [pagePoolStats]uint64
	for _, p := range s.PagePools {
		inflight += p.Inflight
		mem += p.InflightMem
		if st := p.Stats; st != nil {
			for i, v := range st.values() {
				stats[i] += v
			}
		}
	}
	tot["page_pool.inflight"] = inflight
	tot["page_pool.inflight_mem"] = mem
	if s.pagePoolStats() {
		// Netlink's page_pool.alloc_fast ... are aliases of the ethtool
		// names (rx_pp_alloc_fast): the interface's pools summed by
		// netlink are the number; a driver's own ethtool count of it, if
		// it has one, is ethtool.rx_pp_alloc_fast.
		for i, n := range pagePoolStatNames {
			name := vocab.Canonical("page_pool." + n)
			if v, had := tot[name]; had {
				tot[ethtoolName(name)] = v
			}
			tot[name] = stats[i]
		}
	}
	tot["softnet.cpus"] = uint64(len(s.Softnet))
	for _, col := range softnetColumns {
		var sum uint64
		have := col.columns == softnetMinColumns // the first three are always there
		for i := range s.Softnet {
			c := &s.Softnet[i]
			sum += uint64(col.value(c))
			have = have || c.Columns >= col.columns
		}
		if have {
			tot[col.name] = sum
		}
	}
	return tot, queues
}

// CPUCounters is each CPU's line of /proc/net/softnet_stat under the
// names Counters gives their sums (softnetColumns: softnet.processed,
// softnet.dropped, softnet.time_squeeze, and the columns past them the
// kernel prints), index = the CPU's id (SoftnetCPU.CPU: the line's
// position on kernels before 5.10, which print no id). A CPU without a
// line (offline) has an empty map; a line whose id is maxCPU or more is
// left out (its counts are in the sums still). Nil when softnet_stat was
// not read. The values are the kernel's 32-bit counters, which wrap.
func (s *Sample) CPUCounters() []map[string]uint64 {
	var cpus []map[string]uint64
	for _, c := range s.Softnet {
		if c.CPU < 0 || c.CPU >= maxCPU {
			continue
		}
		for len(cpus) <= c.CPU {
			cpus = append(cpus, map[string]uint64{})
		}
		m := cpus[c.CPU] // a second line of one id (no kernel prints one) adds to it
		for _, col := range softnetColumns {
			if c.Columns >= col.columns || col.columns == softnetMinColumns {
				m[col.name] += uint64(col.value(&c))
			}
		}
	}
	return cpus
}

// ethtoolName is the name of an ethtool statistic in its own namespace:
// "ethtool.rx_packets".
func ethtoolName(driver string) string { return "ethtool." + driver }

// pagePoolStats is the number of page-pool-stats-get counters.
const pagePoolStats = 11

// pagePoolStatNames are their names, as engine/vocab and the page_pool's
// ethtool names (rx_pp_*) have them, in the kernel's order.
var pagePoolStatNames = [pagePoolStats]string{
	"alloc_fast", "alloc_slow", "alloc_slow_ho", "alloc_empty", "alloc_refill", "alloc_waive",
	"recycle_cached", "recycle_cache_full", "recycle_ring", "recycle_ring_full", "recycle_released_ref",
}

func (p *PagePoolStats) values() [pagePoolStats]uint64 {
	return [pagePoolStats]uint64{p.AllocFast, p.AllocSlow, p.AllocSlowHighOrder, p.AllocEmpty, p.AllocRefill, p.AllocWaive,
		p.RecycleCached, p.RecycleCacheFull, p.RecycleRing, p.RecycleRingFull, p.RecycleReleasedRefcnt}
}

// pagePoolStats reports whether any pool has statistics.
func (s *Sample) pagePoolStats() bool {
	for _, p := range s.PagePools {
		if p.Stats != nil {
			return true
		}
	}
	return false
}

// Figures is the sample as the tutorials' host directive reads it:
// Counters' totals, each queue's numbers under their per-queue names
// (rx0_kicks), each CPU's under its per-CPU name
// (cpu0.softnet.time_squeeze, as the engine's world names them), and
// every ethtool statistic as ethtool.NAME by the driver's own name, so a
// tutorial can name one whatever the driver calls it.
func (s *Sample) Figures() map[string]float64 {
	tot, queues := s.Counters()
	out := make(map[string]float64, len(tot)+len(s.Ethtool)+3*len(s.Softnet))
	for k, v := range tot {
		out[k] = float64(v)
	}
	for q, m := range queues {
		for k, v := range m {
			dir, name, _ := cutDir(k)
			out[vocab.Queue(dir, q, name)] = float64(v)
		}
	}
	for i, m := range s.CPUCounters() {
		for k, v := range m {
			out[vocab.CPUCounter(i, k)] = float64(v)
		}
	}
	for _, c := range s.Ethtool {
		out[ethtoolName(c.Name)] = float64(c.Value)
	}
	return out
}

// cutDir splits "rx_kicks" into "rx" and "kicks".
func cutDir(total string) (dir, name string, ok bool) {
	if len(total) > 3 && total[2] == '_' {
		return total[:2], total[3:], true
	}
	return "", total, false
}
