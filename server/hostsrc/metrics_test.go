package hostsrc

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/metrics"
)

func sysStat(t *testing.T, ifname, name string) uint64 {
	b, err := os.ReadFile("/sys/class/net/" + ifname + "/statistics/" + name)
	require.NoError(t, err)
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	return v
}

// The host source reads the loopback and eth0 counters, and they match
// what /sys/class/net shows.
func TestMetricsSourceMatchesSysfs(t *testing.T) {
	for _, ifname := range []string{"lo", "eth0"} {
		t.Run(ifname, func(t *testing.T) {
			if _, err := os.Stat("/sys/class/net/" + ifname); err != nil {
				testenv.Missing(t, "no interface "+ifname)
			}
			src, err := OpenMetrics(ifname)
			require.NoError(t, err)
			defer src.Close()
			assert.Equal(t, "host:"+ifname, src.Info().Name)
			assert.Equal(t, metrics.Labels{Kind: "host", Device: ifname}, src.Info().Labels)
			before := sysStat(t, ifname, "rx_packets")
			smp, err := src.Sample()
			require.NoError(t, err)
			after := sysStat(t, ifname, "rx_packets")
			got := smp.Totals["rx_packets"]
			assert.LessOrEqual(t, before, got)
			assert.LessOrEqual(t, got, after)
			if ifname == "eth0" && smp.Queues != nil {
				_, ok := smp.Queues[0]["rx_kicks"]
				assert.True(t, ok, "virtio_net's rx0_kicks is queue 0's rx_kicks")
				_, ok = smp.Totals["rx_kicks"]
				assert.True(t, ok)
			}
		})
	}
}

func TestMetricsSourceBadName(t *testing.T) {
	_, err := OpenMetrics("")
	assert.ErrorContains(t, err, "name an interface")
	_, err = OpenMetrics("../x")
	assert.Error(t, err)
}

func TestPerQueueNames(t *testing.T) {
	for name, want := range map[string][]string{
		"rx0_kicks":              {"rx", "0", "kicks"},
		"tx12_xdp_tx_drops":      {"tx", "12", "xdp_tx_drops"},
		"rx_queue_0_xdp_packets": {"rx", "0", "xdp_packets"},
		"tx_queue_3_xdp_xmit":    {"tx", "3", "xdp_xmit"},
	} {
		g := perQueueName.FindStringSubmatch(name)
		require.NotNil(t, g, name)
		assert.Equal(t, want, g[1:], name)
	}
	for _, name := range []string{"rx_kicks", "rx_xdp_packets", "peer_ifindex"} {
		assert.Nil(t, perQueueName.FindStringSubmatch(name), name)
	}
}
