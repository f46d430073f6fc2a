package vocab

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTableIsWellFormed(t *testing.T) {
	seen := map[string]bool{}
	groups := map[string]bool{}
	for _, d := range Table() {
		assert.False(t, seen[d.Name], "%s is listed twice", d.Name)
		seen[d.Name] = true
		assert.NotEmpty(t, d.Help, d.Name)
		assert.NotEmpty(t, d.Group, d.Name)
		assert.Contains(t, []Kind{Counter, Gauge, Text}, d.Kind, d.Name)
		if d.Same != "" {
			other, ok := Lookup(d.Same)
			require.True(t, ok, "%s: Same %q is not in the table", d.Name, d.Same)
			assert.Equal(t, d.Unit, other.Unit, "%s names the same number as %s: the same unit", d.Name, d.Same)
			assert.Empty(t, other.Same, "%s: Same points at a name that is itself another's", d.Name)
		}
		groups[d.Group] = true
	}
	for _, g := range []string{GroupDevice, GroupPagePool, GroupEngine, GroupFlow, GroupRun, GroupPages, GroupRing, GroupPool, GroupWorld, GroupHost, GroupLab, GroupTwin} {
		assert.True(t, groups[g], "group %s has entries", g)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct{ name, want string }{
		{"rx_packets", "rx_packets"},
		{"rx0_packets", "rxN_packets"},
		{"tx13_kicks", "txN_kicks"},
		{"rq2.num_free", "rqN.num_free"},
		{"cpu7.util", "cpuN.util"},
		{"pages.buddy", "pages.buddy"},
		{"pool0.recycle_ring_full", "poolN.recycle_ring_full"},
		{"cost.vhost_desc", "cost.*"},
		{"scenario.traffic.size", "scenario.*"},
		{"softnet.processed", "softnet.processed"},
		{"page_pool.inflight", "page_pool.inflight"},
		{"ethtool.rx_queue_0_packets", "ethtool.*"},
		{"predicted_rx_packets", "predicted_*"},
		{"UdpInDatagrams", "Udp*"},
	}
	for _, tc := range tests {
		d, ok := Lookup(tc.name)
		if assert.True(t, ok, tc.name) {
			assert.Equal(t, tc.want, d.Name, tc.name)
		}
	}
	for _, bad := range []string{"", "rx_packet", "rxN_packets0", "cpu.util", "pages.nowhere", "rq.num_free"} {
		_, ok := Lookup(bad)
		assert.False(t, ok, "%q is not a name", bad)
	}
}

func TestNameBuilders(t *testing.T) {
	assert.Equal(t, "rx0_packets", Queue("rx", 0, "packets"))
	assert.Equal(t, "rx_packets", Total("rx", "packets"))
	assert.Equal(t, "rq3.last_used", Ring(3, "last_used"))
	assert.Equal(t, "sq1.num_free", SendRing(1, "num_free"))
	assert.Equal(t, "pool2.cache", Pool(2, "cache"))
	assert.Equal(t, "pages.skb", Pages("skb"))
	assert.Equal(t, "cpu1.util", CPUUtil(1))
	assert.Equal(t, "alloc_fast", PagePoolStat("rx_pp_alloc_fast"))
	assert.Equal(t, "predicted_rx_packets", Predicted("rx_packets"))
	for _, n := range []string{Queue("rx", 0, "packets"), Ring(3, "last_used"), Pool(2, "cache"), CPUUtil(1)} {
		_, ok := Lookup(n)
		assert.True(t, ok, n)
	}
}

// TestDescribe: a known name is its entry; a twin's prediction takes the
// unit and kind of what it predicts; an unknown name is a counter with
// the generic meaning.
func TestDescribe(t *testing.T) {
	d, known := Describe("rx_packets")
	assert.True(t, known)
	assert.Equal(t, "packets", d.Unit)

	p, known := Describe("predicted_socket_skbs")
	assert.True(t, known)
	assert.Equal(t, Gauge, p.Kind, "a prediction of a gauge is a gauge")
	assert.Equal(t, "skbs", p.Unit)
	assert.Contains(t, p.Help, "the twin's prediction of socket_skbs")
	assert.Equal(t, GroupTwin, p.Group)

	u, known := Describe("rx_queue_7_weird")
	assert.False(t, known)
	assert.Equal(t, Counter, u.Kind)
	assert.Equal(t, UnknownHelp, u.Help)

	_, known = Describe("predicted_weird")
	assert.False(t, known, "a prediction of an unknown name is unknown")
}
