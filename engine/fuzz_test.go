package engine

import (
	"encoding/json"
	"errors"
	"testing"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
)

// Bits of FuzzWorld's seventh knob: the combinations a JSON mutation
// rarely reaches, among them the one that stalled the world for good
// (FIDELITY row 16: EVENT_IDX, mergeable buffers, 64 KiB GSO frames
// spanning dozens of buffers, an IOMMU slowing the refill).
const (
	fuzzGSO       = 1 << iota // guest GSO, 64 KiB TCP frames mixed with smaller ones
	fuzzIOMMU                 // DMA through an IOMMU
	fuzzEventIdx              // flip features.event_idx
	fuzzIndirect              // indirect descriptors negotiated
	fuzzPopEvent              // device.avail_event "pop" (QEMU's rule)
	fuzzSmallRing             // a ring of 16 to 128 entries (eighth knob)
	fuzzMrgOff                // no mergeable buffers: big or small mode
)

// FuzzWorld's ninth knob picks the workload (open, tcp_stream,
// udp_stream) and its tenth a stream's round trip and receive buffer.
const (
	fuzzOpen = iota
	fuzzTCPStream
	fuzzUDPStream
)

// FuzzWorld builds worlds from arbitrary scenario bytes: a bad scenario is
// an error, never a panic, and a valid one keeps the world's invariants
// (CheckEveryEvent) and keeps delivering (CheckLiveness). The choices a
// byte string cannot easily reach through JSON (modes, sources, XDP
// programs, CPUs, device kinds, the feature combinations above) are taken
// from the first bytes. A failure prints the scenario as JSON.
func FuzzWorld(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0}, []byte(`{}`))
	f.Add([]byte{1, 2, 3, 1, 4, 2}, []byte(`{"ring_size": 64, "traffic": {"size": 1514}}`))
	f.Add([]byte{2, 1, 1, 3, 0, 1}, []byte(`{"mtu": 9000, "features": {"mrg_rxbuf": false}, "driver": {"buffer_source": "page", "dma": "ring"}}`))
	f.Add([]byte{3, 3, 2, 4, 1, 0}, []byte(`{"queues": 2, "cpus": 2, "traffic": {"flows": 4, "rate_pps": 100000}}`))
	f.Add([]byte{0, 0, 0, 0, 0, 0}, []byte(`{"ring_size": "x"}`))
	// Row 16's stall: page_frag, ring DMA, 64 KiB GSO frames, an IOMMU.
	f.Add([]byte{2, 0, 0, 0, 0, 0, fuzzGSO | fuzzIOMMU}, []byte(`{}`))
	f.Add([]byte{2, 0, 1, 0, 0, 3, fuzzGSO | fuzzIOMMU | fuzzPopEvent | fuzzSmallRing, 1}, []byte(`{"traffic": {"sizes": [1514, 100], "random_sizes": true}}`))
	f.Add([]byte{3, 0, 0, 0, 0, 5, fuzzGSO | fuzzIOMMU | fuzzMrgOff | fuzzIndirect}, []byte(`{}`))
	// vdpa: a hardware virtqueue at line rate.
	f.Add([]byte{0, 1, 0, 2, 2, 0, fuzzSmallRing, 0}, []byte(`{"traffic": {"burst": 64, "rate_pps": 200000}}`))
	f.Add([]byte{2, 0, 1, 0, 2, 4, fuzzGSO | fuzzEventIdx}, []byte(`{"traffic": {"line_gbps": 100}}`))
	// Streams: TCP into a vdpa ring too short for its window, with XDP
	// redirecting to another CPU; TCP with GSO on vhost; UDP.
	f.Add([]byte{0, 0, 1, 4, 2, 0, fuzzSmallRing, 1, fuzzTCPStream, 3}, []byte(`{"traffic": {"line_gbps": 100}}`))
	f.Add([]byte{2, 0, 1, 0, 0, 5, fuzzGSO | fuzzIOMMU, 0, fuzzTCPStream, 20}, []byte(`{}`))
	f.Add([]byte{1, 1, 2, 0, 1, 3, 0, 0, fuzzUDPStream, 0}, []byte(`{"traffic": {"rate_pps": 2000000}}`))
	programs := []string{"", "xdp_pass", "xdp_drop", "xdp_tx", "xdp_redirect_cpu", "xdp_redirect_dev", "xdp_drop_udp_port", "xdp_count_proto"}
	sources := []string{scenario.SourcePagePool, scenario.SourcePagePoolFrag, scenario.SourcePageFrag, scenario.SourcePage}
	kinds := []string{scenario.DeviceVhost, scenario.DeviceNIC, scenario.DeviceVDPA}
	f.Fuzz(func(t *testing.T, knobs []byte, js []byte) {
		s, err := scenario.DecodeBytes(js)
		if err != nil {
			return
		}
		k := func(i int) int {
			if i < len(knobs) {
				return int(knobs[i])
			}
			return 0
		}
		s.Driver.BufferSource = sources[k(0)%len(sources)]
		s.Driver.DMA = scenario.DMARing
		if k(1)%2 == 1 && (s.Driver.BufferSource == scenario.SourcePagePool || s.Driver.BufferSource == scenario.SourcePagePoolFrag) {
			s.Driver.DMA = scenario.DMAPremapped
		}
		s.CPUs = 1 + k(2)%3
		if s.Queues > s.CPUs*2 {
			s.Queues = s.CPUs * 2
		}
		if p := programs[k(3)%len(programs)]; p != "" {
			s.XDP = &scenario.XDP{Program: p, CpumapCPUs: []int{s.CPUs - 1}}
			s.Next = &scenario.Next{MaxPPS: 5e6, RingSize: 64, CompletionCPU: -1}
		}
		s.Device.Kind = kinds[k(4)%len(kinds)]
		if s.Device.Kind == scenario.DeviceVDPA && s.Traffic.PPS() == 0 {
			s.Traffic.LineGbps = 25 // a vdpa device takes frames from a wire
		}
		releases := kernel.Releases()
		s.Kernel = releases[k(5)%len(releases)].String()
		combo := k(6)
		if combo&fuzzGSO != 0 {
			s.Features.GuestGSO = true
			s.Traffic.GSOSize = 65535
			s.Traffic.Proto = "tcp"
			s.Traffic.Size = 65000
			if len(s.Traffic.Sizes) > 0 {
				s.Traffic.Sizes = []int{65000, 1514, 9000, 65000}
			}
		}
		if combo&fuzzIOMMU != 0 {
			s.Driver.IOMMU, s.Features.AccessPlatform = true, true
		}
		if combo&fuzzEventIdx != 0 {
			s.Features.EventIdx = !s.Features.EventIdx
		}
		if combo&fuzzIndirect != 0 {
			s.Features.IndirectDesc = true
		}
		if combo&fuzzPopEvent != 0 {
			s.Device.AvailEvent = scenario.AvailEventPop
		}
		if combo&fuzzSmallRing != 0 {
			s.RingSize = 16 << (k(7) % 4)
		}
		if combo&fuzzMrgOff != 0 {
			s.Features.MrgRxbuf = false
		}
		switch k(8) % 3 {
		case fuzzTCPStream:
			s.Traffic = scenario.Traffic{Kind: scenario.TrafficTCPStream, Proto: "tcp", Flows: 1, DstPort: 5201,
				LineGbps: s.Traffic.LineGbps, RTTUs: float64(5 + k(9)*4)}
			s.Consumer.Context = scenario.FreeProcess
			s.Consumer.RcvbufBytes = (64 << 10) << (k(9) % 7)
		case fuzzUDPStream:
			s.Traffic = scenario.Traffic{Kind: scenario.TrafficUDPStream, Proto: "udp", Flows: 1, DstPort: 9,
				RatePPS: s.Traffic.RatePPS, LineGbps: s.Traffic.LineGbps}
			s.Consumer.Context = scenario.FreeProcess
		}
		if s.MemoryPages > 1<<14 {
			s.MemoryPages = 1 << 14
		}
		if s.RingSize > 1024 {
			s.RingSize = 1024
		}
		if s.TxRingSize > 1024 {
			s.TxRingSize = 1024
		}
		if s.Validate() != nil {
			return
		}
		w, err := New(s)
		if err != nil {
			return
		}
		fail := func(format string, args ...any) {
			t.Helper()
			js, _ := json.MarshalIndent(w.Scenario, "", "  ")
			t.Fatalf(format+"\nscenario:\n%s", append(args, js)...)
		}
		// Checked after every event, with the full Check every 64, and for
		// liveness.
		if err := w.CheckEveryEvent(64); err != nil {
			fail("new world: %v", err)
		}
		w.CheckLiveness(0)
		for i := 0; i < 2000 && w.Step(); i++ {
		}
		if err := w.Err(); err != nil {
			var ie *InternalError
			if errors.As(err, &ie) { // a panic, caught by Step: show where
				fail("world stopped: %v\n%s", err, ie.Stack)
			}
			// The kernel's own deadlock (a small ring, 64 KiB frames) is
			// the model being faithful, not a lost wakeup.
			if le := (*LivenessError)(nil); errors.As(err, &le) && le.Kernel {
				return
			}
			fail("world stopped: %v", err)
		}
		if err := w.CheckNow(); err != nil {
			fail("after %d events: %v", w.Sim.Queue.Fired(), err)
		}
	})
}
