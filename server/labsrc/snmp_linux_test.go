//go:build linux

package labsrc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSNMP(t *testing.T) {
	text := "Ip: Forwarding DefaultTTL\nIp: 2 64\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n" +
		"Udp: 5000 1 2 3 4 5 6 7 8\n" +
		"UdpLite: InDatagrams NoPorts\nUdpLite: 9 9\n"
	got := map[string]uint64{}
	require.NoError(t, parseSNMP(text, "Udp", got))
	assert.Equal(t, map[string]uint64{
		"UdpInDatagrams": 5000, "UdpNoPorts": 1, "UdpInErrors": 2, "UdpOutDatagrams": 3, "UdpRcvbufErrors": 4,
		"UdpSndbufErrors": 5, "UdpInCsumErrors": 6, "UdpIgnoredMulti": 7, "UdpMemErrors": 8,
	}, got)
	assert.Error(t, parseSNMP("Ip: a\nIp: 1\n", "Udp", got))
	assert.Error(t, parseSNMP("Udp: a b\nUdp: 1\n", "Udp", got))
	assert.Error(t, parseSNMP("Udp: a\nUdp: x\n", "Udp", got))
}
