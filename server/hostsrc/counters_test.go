package hostsrc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/vocab"
)

func sampleOfEveryKind() *Sample {
	return &Sample{
		Stats:   map[string]uint64{"rx_packets": 100, "rx_dropped": 2},
		Ethtool: []Counter{{"rx0_kicks", 3}, {"rx_queue_1_kicks", 4}, {"rx_packets", 101}, {"rx_csum_good", 7}},
		PagePools: []PagePool{
			{Inflight: 5, InflightMem: 5 << 12, Stats: &PagePoolStats{AllocFast: 10, RecycleRing: 2}},
			{Inflight: 1, InflightMem: 1 << 12},
		},
		Softnet: []SoftnetCPU{{CPU: 0, Processed: 50, Dropped: 1, TimeSqueeze: 2}, {CPU: 1, Processed: 60}},
	}
}

// TestCountersNameEveryNumberOnce: the one flattening, which the live
// stream, /metrics and the tutorials read, names every number once, each
// under a name of engine/vocab.
func TestCountersNameEveryNumberOnce(t *testing.T) {
	tot, queues := sampleOfEveryKind().Counters()
	assert.Equal(t, map[string]uint64{
		"rx_packets": 100, "rx_dropped": 2, "ethtool.rx_packets": 101, "rx_csum_good": 7, "rx_kicks": 7,
		"ethtool_count": 4, "page_pools": 2, "page_pool.inflight": 6, "page_pool.inflight_mem": 6 << 12,
		"rx_pp_alloc_fast": 10, "rx_pp_alloc_slow": 0, "rx_pp_alloc_slow_ho": 0, "rx_pp_alloc_empty": 0,
		"rx_pp_alloc_refill": 0, "rx_pp_alloc_waive": 0, "rx_pp_recycle_cached": 0,
		"rx_pp_recycle_cache_full": 0, "rx_pp_recycle_ring": 2, "rx_pp_recycle_ring_full": 0,
		"rx_pp_recycle_released_ref": 0,
		"softnet.cpus":               2, "softnet.processed": 110, "softnet.dropped": 1, "softnet.time_squeeze": 2,
	}, tot)
	assert.Equal(t, []map[string]uint64{{"rx_kicks": 3}, {"rx_kicks": 4}}, queues)
	for name := range tot {
		if name == "rx_csum_good" {
			continue // a driver's own statistic: only the driver knows it
		}
		_, ok := vocab.Lookup(name)
		assert.True(t, ok, "%s is in engine/vocab", name)
		assert.Equal(t, vocab.Canonical(name), name, "%s: no alias leaves the source", name)
	}
}

// TestCountersUseCanonicalNames: a number the kernel reads out under
// another interface's name (netlink's page_pool.alloc_fast, veth's
// rx_xdp_redirect) leaves the source under engine/vocab's canonical
// one; the driver's own ethtool count of a page_pool stat stays, as
// ethtool.NAME.
func TestCountersUseCanonicalNames(t *testing.T) {
	s := &Sample{
		Stats:     map[string]uint64{"rx_packets": 100},
		Ethtool:   []Counter{{"rx_queue_0_xdp_redirect", 5}, {"rx_queue_1_xdp_redirect", 6}, {"rx_pp_alloc_fast", 9}},
		PagePools: []PagePool{{ID: 1, Stats: &PagePoolStats{AllocFast: 11, RecycleRing: 3}}},
	}
	tot, queues := s.Counters()
	assert.Equal(t, []map[string]uint64{{"rx_xdp_redirects": 5}, {"rx_xdp_redirects": 6}}, queues)
	assert.Equal(t, uint64(11), tot["rx_xdp_redirects"], "the queues' sum, under the canonical name")
	assert.NotContains(t, tot, "rx_xdp_redirect")
	assert.Equal(t, uint64(11), tot["rx_pp_alloc_fast"], "netlink's sum over the interface's pools")
	assert.Equal(t, uint64(9), tot["ethtool.rx_pp_alloc_fast"], "the driver's own, by its name")
	assert.Equal(t, uint64(3), tot["rx_pp_recycle_ring"])
	assert.NotContains(t, tot, "page_pool.alloc_fast")
	for name := range tot {
		assert.Equal(t, vocab.Canonical(name), name, "%s: no alias leaves the source", name)
	}
}

// TestQstatsPerQueue: netlink qstats-get gives each queue's packets
// and bytes where ethtool has none: in Queues under the totals' names,
// ethtool's number first where it has the queue's; the total sysfs has
// stays sysfs's, one only qstats has is the queues' sum.
func TestQstatsPerQueue(t *testing.T) {
	s := &Sample{
		Stats:   map[string]uint64{"rx_packets": 100, "tx_packets": 20},
		Ethtool: []Counter{{"rx_queue_1_packets", 41}},
		Queues: []QueueStats{
			{Type: "rx", ID: 0, Counters: []Counter{{"rx_packets", 60}, {"rx_bytes", 6000}}},
			{Type: "rx", ID: 1, Counters: []Counter{{"rx_packets", 40}, {"rx_bytes", 4000}}},
			{Type: "tx", ID: 0, Counters: []Counter{{"tx_packets", 20}, {"tx_stop", 1}, {"tx_wake", 1}}},
		},
	}
	tot, queues := s.Counters()
	assert.Equal(t, []map[string]uint64{
		{"rx_packets": 60, "rx_bytes": 6000, "tx_packets": 20, "tx_stop": 1, "tx_wake": 1},
		{"rx_packets": 41, "rx_bytes": 4000},
	}, queues, "ethtool's rx_queue_1_packets before qstats's")
	assert.Equal(t, uint64(100), tot["rx_packets"], "sysfs's total")
	assert.Equal(t, uint64(10000), tot["rx_bytes"], "the queues' sum where sysfs has none")
	assert.Equal(t, uint64(1), tot["tx_stop"])
	for name := range tot {
		_, ok := vocab.Lookup(name)
		assert.True(t, ok, "%s is in engine/vocab", name)
	}
	f := s.Figures()
	assert.Equal(t, 60.0, f["rx0_packets"], "the tutorials' per-queue name")
	assert.Equal(t, 20.0, f["tx0_packets"])
}

func TestFiguresAreCountersUnderTheTutorialsNames(t *testing.T) {
	f := sampleOfEveryKind().Figures()
	assert.Equal(t, 3.0, f["rx0_kicks"], "per-queue under the per-queue name")
	assert.Equal(t, 4.0, f["rx1_kicks"])
	assert.Equal(t, 3.0, f["ethtool.rx0_kicks"], "every ethtool statistic by the driver's name")
	assert.Equal(t, 7.0, f["ethtool.rx_csum_good"])
	assert.Equal(t, 110.0, f["softnet.processed"])
	assert.Equal(t, 2.0, f["cpu0.softnet.time_squeeze"], "per-CPU under the engine's per-CPU name")
	assert.Equal(t, 60.0, f["cpu1.softnet.processed"])
	assert.Equal(t, 4.0, f["ethtool_count"])

	lo := (&Sample{Stats: map[string]uint64{"rx_packets": 1}}).Counters
	tot, queues := lo()
	assert.Nil(t, queues)
	assert.NotContains(t, tot, "rx_pp_alloc_fast", "no pool statistics without CONFIG_PAGE_POOL_STATS")
}

// TestCPUCountersPerSoftnetLine: each CPU's softnet_stat line under the
// names of the sums, index = the CPU's id, as kernels of each era print
// it, node_exporter's columns (received_rps, flow_limit_count,
// backlog_len) where the kernel prints them; the CPUs sum to the totals.
func TestCPUCountersPerSoftnetLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []map[string]uint64
	}{
		{"15 columns (6.x)", softnet15, []map[string]uint64{
			{"softnet.processed": 0xf, "softnet.dropped": 1, "softnet.time_squeeze": 2,
				"softnet.received_rps": 3, "softnet.flow_limit_count": 4, "softnet.backlog_len": 5},
			{"softnet.processed": 0xc9f, "softnet.dropped": 0, "softnet.time_squeeze": 0,
				"softnet.received_rps": 0, "softnet.flow_limit_count": 0, "softnet.backlog_len": 0},
		}},
		{"13 columns (5.10): CPUs 1 and 2 offline", softnet13, []map[string]uint64{
			{"softnet.processed": 0x19e4b5, "softnet.dropped": 0, "softnet.time_squeeze": 0x1a,
				"softnet.received_rps": 7, "softnet.flow_limit_count": 0, "softnet.backlog_len": 1},
			{}, {},
			{"softnet.processed": 0xffffffff, "softnet.dropped": 0, "softnet.time_squeeze": 0,
				"softnet.received_rps": 0, "softnet.flow_limit_count": 0, "softnet.backlog_len": 0},
		}},
		{"11 columns (before 5.10): numbered by line, no backlog_len", softnet11, []map[string]uint64{
			{"softnet.processed": 0x6dcad223, "softnet.dropped": 0, "softnet.time_squeeze": 1,
				"softnet.received_rps": 0, "softnet.flow_limit_count": 9},
			{"softnet.processed": 0x6f0e1565, "softnet.dropped": 0xa, "softnet.time_squeeze": 2,
				"softnet.received_rps": 0, "softnet.flow_limit_count": 0},
		}},
		{"an id past maxCPU is left out", "00000001 00000002 00000003 0 0 0 0 0 0 0 0 0 00002000\n", nil},
		{"unread", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cpus, err := ParseSoftnet([]byte(tc.in), nil)
			require.NoError(t, err)
			s := &Sample{Softnet: cpus}
			got := s.CPUCounters()
			assert.Equal(t, tc.want, got)
			if got == nil {
				return
			}
			tot, _ := s.Counters()
			sums := map[string]uint64{}
			for _, m := range got {
				for k, v := range m {
					sums[k] += v
				}
			}
			for k, v := range sums {
				assert.Equal(t, tot[k], v, "%s: the CPUs sum to the total", k)
			}
		})
	}
}
