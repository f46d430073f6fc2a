package virtionet

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ringlab/engine/device"
	"ringlab/engine/scenario"
)

// TestConfigOf: the driver's Config is the scenario decoded once, the
// dated behaviours those of its kernel (7.0's page_pool and NAPI refill
// retry, 6.4's neither), the device's Config beside it.
func TestConfigOf(t *testing.T) {
	s := scenario.Default()
	s.Kernel = "7.0"
	s.Device.MaxPPS = 1e6
	s.XDP = &scenario.XDP{Program: "xdp_pass", Frags: true}
	want := Config{
		Queues: 1, RingSize: 256, TxRingSize: 256,
		Mode: scenario.ModeMergeable, NumSkbFrags: 1, DeviceMTU: 1500, EventIdx: true,
		Budget: 64, BufferSource: scenario.SourcePagePool, Premapped: true, XDPFrags: true,
		GRO: true, MTU: 1500,
		PageToSKBBuild: true, VirtioNetPagePool: true, RefillRetryInNAPI: true, PageFragPremap: true,
		Device: device.Config{Kind: scenario.DeviceVhost, Mode: scenario.ModeMergeable, Backlog: 1000, MaxPPS: 1e6},
	}
	assert.Equal(t, want, ConfigOf(&s))

	s.Kernel = "6.4"
	s.Features.GuestGSO = true
	s.Device.AvailEvent = scenario.AvailEventPop
	got := ConfigOf(&s)
	assert.False(t, got.VirtioNetPagePool)
	assert.False(t, got.RefillRetryInNAPI)
	assert.False(t, got.PageFragPremap)
	assert.True(t, got.BigPackets, "guest GSO")
	assert.Equal(t, 17, got.NumSkbFrags, "MAX_SKB_FRAGS with guest GSO")
	assert.True(t, got.Device.AvailEventOnPop)
}
