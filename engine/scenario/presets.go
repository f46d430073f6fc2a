package scenario

import (
	"fmt"
	"sort"
)

// Preset is a named scenario: one per configuration of each published
// result in docs/published.md, and a few for teaching.
type Preset struct {
	Name        string
	Description string
	Seed        string // R1..R4 for the reproductions, "" for teaching presets
	Build       func() Scenario
}

// Presets returns every preset, teaching presets first, then R1..R4.
func Presets() []Preset {
	return append(teachingPresets(), seedPresets()...)
}

// PresetNames lists the names in order.
func PresetNames() []string {
	var out []string
	for _, p := range Presets() {
		out = append(out, p.Name)
	}
	return out
}

// LookupPreset returns the scenario of a preset by name.
func LookupPreset(name string) (Scenario, error) {
	for _, p := range Presets() {
		if p.Name == name {
			s := p.Build()
			s.Name = p.Name
			if s.Description == "" {
				s.Description = p.Description
			}
			if err := s.Validate(); err != nil {
				return Scenario{}, fmt.Errorf("preset %s: %w", name, err)
			}
			return s, nil
		}
	}
	names := PresetNames()
	sort.Strings(names)
	return Scenario{}, fmt.Errorf("%w: no preset named %q (presets: %v)", ErrInvalid, name, names)
}

func with(f func(*Scenario)) func() Scenario {
	return func() Scenario {
		s := Default()
		f(&s)
		return s
	}
}

func teachingPresets() []Preset {
	return []Preset{
		{Name: "default", Description: "A 16-entry ring at a rate slow enough to follow: mergeable buffers from page_pool (page_pool_alloc_frag, two 1536-byte buffers to a pool page), one queue, 128-byte UDP frames at 50,000 per second.",
			Build: with(func(s *Scenario) {
				s.RingSize = 16
				s.TxRingSize = 16
				s.Traffic.RatePPS = 50_000
				s.Traffic.Size = 128
			})},
		{Name: "small-ring", Description: "The same 16-entry ring at full speed: watch the host starve and wait for kicks.",
			Build: with(func(s *Scenario) {
				s.RingSize = 16
				s.TxRingSize = 16
			})},
		{Name: "xdp-drop", Description: "XDP_DROP at line rate: mergeable, page_pool, one queue, 64-byte frames from a NIC; every page goes straight back into the alloc cache.",
			Build: with(func(s *Scenario) {
				s.RingSize = 1024
				s.Device.Kind = DeviceNIC
				s.XDP = &XDP{Program: "xdp_drop"}
			})},
		{Name: "xdp-pass", Description: "XDP_PASS with skb building and a consumer on the same CPU.",
			Build: with(func(s *Scenario) {
				s.RingSize = 1024
				s.Device.Kind = DeviceNIC
				s.XDP = &XDP{Program: "xdp_pass"}
				s.Consumer.CostNs = 50
			})},
		{Name: "xdp-tx", Description: "XDP_TX: swap the MACs and send each frame back out of the XDP send queue; pages return on TX completion.",
			Build: with(func(s *Scenario) {
				s.RingSize = 256
				s.XDP = &XDP{Program: "xdp_tx"}
				s.Traffic.RatePPS = 1_000_000
			})},
		{Name: "cpumap", Description: "XDP_REDIRECT into a cpumap: CPU 0 receives, CPU 1's kthread builds skbs and frees them.",
			Build: with(func(s *Scenario) {
				s.CPUs = 2
				s.RingSize = 1024
				s.Device.Kind = DeviceNIC
				s.XDP = &XDP{Program: "xdp_redirect_cpu", CpumapCPUs: []int{1}}
				s.Consumer.CostNs = 50
			})},
		{Name: "devmap", Description: "XDP_REDIRECT through a devmap to a second device at 13 Mpps; frames come back on its TX completion.",
			Build: with(func(s *Scenario) {
				s.RingSize = 1024
				s.Device.Kind = DeviceNIC
				s.XDP = &XDP{Program: "xdp_redirect_dev"}
				s.Next = &Next{MaxPPS: 13e6, RingSize: 512, CompletionCPU: -1}
			})},
		{Name: "big-9000", Description: "Big-packet mode at MTU 9000 (reported by the device, VIRTIO_NET_F_MTU) without guest GSO: buffers of DIV_ROUND_UP(9000, 4096) + 1 = 4 pages chained through page->private, 5 descriptors each.",
			Build: with(func(s *Scenario) {
				s.MTU = 9000
				s.Features.MrgRxbuf = false
				s.Driver.BufferSource = SourcePage
				s.Driver.DMA = DMARing
				s.Traffic.Size = 9014
				s.Traffic.Proto = "tcp"
			})},
		{Name: "small-mode", Description: "Small buffers: no MRG_RXBUF, MTU 1500, no guest GSO; one GOOD_PACKET_LEN buffer per packet.",
			Build: with(func(s *Scenario) {
				s.Features.MrgRxbuf = false
				s.Traffic.Size = 1514
			})},
	}
}
