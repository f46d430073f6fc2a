package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/engine/scenario"
)

// FIDELITY.md row 18: mergeable_min_buf_len sizes the floor of mergeable
// buffers for the largest packet the device may send: IP_MAX_MTU when
// vi->big_packets (guest GSO, or a device MTU above 1500), else
// dev->max_mtu, which is the device's MTU with VIRTIO_NET_F_MTU and
// ETH_MAX_MTU (65535) without. On a 16-entry ring a 65535-byte packet
// needs DIV_ROUND_UP(12 + 14 + 4 + 65535, 16) - 12 = 4086-byte buffers;
// 1500 bytes need no more than GOOD_PACKET_LEN. The engine used the
// scenario's MTU in every case.
func TestMergeableMinBufLen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ring   int
		mtu    int
		fmtu   bool
		gso    bool
		minBuf uint32
		bufLen uint32
	}{
		{"F_MTU 1500: max_mtu is the device's", 16, 1500, true, false, 1518, 1536},
		{"no F_MTU: max_mtu is ETH_MAX_MTU", 16, 1500, false, false, 4086, 4096},
		{"F_MTU 9000: big_packets, IP_MAX_MTU", 16, 9000, true, false, 4086, 4096},
		{"guest GSO: big_packets, IP_MAX_MTU", 16, 1500, true, true, 4086, 4096},
		{"no F_MTU, 256 entries: GOOD_PACKET_LEN", 256, 1500, false, false, 1518, 1536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "default", func(s *scenario.Scenario) {
				s.RingSize = tc.ring
				s.MTU = tc.mtu
				s.Features.MTU = tc.fmtu
				s.Features.GuestGSO = tc.gso
			})
			rq := w.Driver.RQ[0]
			assert.Equal(t, "mergeable", w.Driver.Mode())
			assert.Equal(t, tc.minBuf, rq.MinBufLen())
			// get_mergeable_buf_len clamps to PAGE_SIZE - hdr_len before
			// adding the header: a floor above it gives whole pages.
			assert.Equal(t, tc.bufLen, rq.MergeableBufLen())
		})
	}
}
