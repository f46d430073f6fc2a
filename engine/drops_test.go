package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/vocab"
)

// TestDropsCarryTheirReason runs worlds that drop at each kind of site and
// holds each drop counter to its reasons: the part's own counter (ethtool's
// or the engine's) equals the drops.NAME counters of its reasons, named as
// the scenario's kernel names them, and a world's Totals list only the
// reasons its parts can count. The sum over every reason is checked on
// every world by Check (checkDrops).
func TestDropsCarryTheirReason(t *testing.T) {
	udp := func(kernel string) func(*scenario.Scenario) {
		return func(s *scenario.Scenario) {
			s.Kernel = kernel
			s.CPUs = 2
			s.RingSize = 256
			s.Traffic = scenario.Traffic{Kind: scenario.TrafficUDPStream, Proto: "udp", Flows: 1, RatePPS: 1e6, DstPort: 9}
			s.Consumer = scenario.Consumer{CPU: 1, Context: scenario.FreeProcess, CostNs: 2000}
		}
	}
	tooBig := func(kind string) func(*scenario.Scenario) {
		return func(s *scenario.Scenario) {
			s.Features.MTU, s.MTU = false, 9000
			s.Traffic.Size, s.Traffic.Sizes = 0, []int{64, 9014}
			s.Device.Kind = kind
		}
	}
	flood := func(kernel string) func(*scenario.Scenario) {
		return func(s *scenario.Scenario) {
			s.Traffic.RatePPS = 20e6 // past what the guest takes: the host's queue overflows
			if kernel != "" {
				s.Kernel = kernel
			}
		}
	}
	for _, tc := range []struct {
		name, preset string
		edit         func(*scenario.Scenario)
		until        sim.Time // else packets, or 5000
		counter      string   // the part's counter
		reasons      []string // its drops.NAME, at the scenario's kernel
		absent       []string // names Totals must not list
		packets      uint64
	}{
		{"XDP_DROP", "xdp-drop", nil, 0, "rx_xdp_drops", []string{"xdp_drop"}, []string{"FULL_RING", "cpumap_queue_full"}, 0},
		{"a full cpumap ring", "cpumap", nil, 0, "cpumap_drops", []string{"cpumap_queue_full"}, nil, 20000},
		{"a vDPA ring with no buffer", "r2-mtu9000-before", nil, 0, "host_no_buffer_drops", []string{"vdpa_no_buffer"}, []string{"FULL_RING", "tap_queue_full"}, 0},
		{"TCP past sk_rcvbuf", "r1-upstream", nil, 0, "socket_drops", []string{"PROTO_MEM", "socket_queue_limit"}, []string{"SOCKET_RCVBUFF"}, 0},
		{"UDP past sk_rcvbuf on 7.0", "default", udp("7.0"), sim.Time(20 * sim.Millisecond), "socket_drops", []string{"SOCKET_RCVBUFF", "socket_queue_limit"}, []string{"udp_rcvbuf", "PROTO_MEM"}, 0},
		{"UDP past sk_rcvbuf on 5.17, before SOCKET_RCVBUFF", "default", udp("5.17"), sim.Time(20 * sim.Millisecond), "socket_drops", []string{"udp_rcvbuf", "socket_queue_limit"}, []string{"SOCKET_RCVBUFF"}, 0},
		{"vhost-net's tap queue full", "default", flood(""), 0, "host_drops", []string{"FULL_RING"}, []string{"tap_queue_full", "nic_fifo_full"}, 0},
		{"vhost-net's tap queue full on 5.17, before FULL_RING", "default", flood("5.17"), 0, "host_drops", []string{"tap_queue_full"}, []string{"FULL_RING"}, 0},
		{"a NIC's FIFO full", "xdp-pass", flood(""), 0, "host_drops", []string{"nic_fifo_full"}, []string{"FULL_RING", "tap_queue_full"}, 0},
		{"a frame too big for vhost-net", "small-mode", tooBig(scenario.DeviceVhost), 0, "host_too_big", []string{"vhost_too_big"}, []string{"nic_fifo_full"}, 0},
		{"a frame too big for a NIC: the driver's length check", "small-mode", tooBig(scenario.DeviceNIC), 0, "rx_length_errors", []string{"virtnet_rx_length"}, []string{"vhost_too_big", "FULL_RING"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, tc.preset, tc.edit)
			if tc.until > 0 {
				require.NoError(t, w.RunUntil(tc.until))
			} else {
				n := tc.packets
				if n == 0 {
					n = 5000
				}
				require.NoError(t, w.RunPackets(n))
			}
			require.NoError(t, w.Err())
			require.NoError(t, w.Check())
			want := counter(t, w, tc.counter)
			require.Positive(t, want, "the scenario drops")
			var got uint64
			for _, r := range tc.reasons {
				got += counter(t, w, vocab.Drops(r))
			}
			assert.Equal(t, want, got, "%s = the drops of %v", tc.counter, tc.reasons)
			for _, r := range tc.absent {
				_, listed := w.Counter(vocab.Drops(r))
				assert.False(t, listed, "%s listed", vocab.Drops(r))
			}
		})
	}
}
