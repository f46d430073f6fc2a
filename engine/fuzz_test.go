package engine

import (
	"errors"
	"testing"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
)

// FuzzWorld builds worlds from arbitrary scenario bytes: a bad scenario is
// an error, never a panic, and a valid one keeps the world's invariants.
// The choices a byte string cannot easily reach through JSON (modes,
// sources, XDP programs, CPUs) are taken from the first bytes.
func FuzzWorld(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0}, []byte(`{}`))
	f.Add([]byte{1, 2, 3, 1, 4, 2}, []byte(`{"ring_size": 64, "traffic": {"size": 1514}}`))
	f.Add([]byte{2, 1, 1, 3, 0, 1}, []byte(`{"mtu": 9000, "features": {"mrg_rxbuf": false}, "driver": {"buffer_source": "page", "dma": "ring"}}`))
	f.Add([]byte{3, 3, 2, 4, 1, 0}, []byte(`{"queues": 2, "cpus": 2, "traffic": {"flows": 4, "rate_pps": 100000}}`))
	f.Add([]byte{0, 0, 0, 0, 0, 0}, []byte(`{"ring_size": "x"}`))
	programs := []string{"", "xdp_pass", "xdp_drop", "xdp_tx", "xdp_redirect_cpu", "xdp_redirect_dev", "xdp_drop_udp_port", "xdp_count_proto"}
	sources := []string{scenario.SourcePagePool, scenario.SourcePagePoolFrag, scenario.SourcePageFrag, scenario.SourcePage}
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
		s.Device.Kind = []string{scenario.DeviceVhost, scenario.DeviceNIC}[k(4)%2]
		releases := kernel.Releases()
		s.Kernel = releases[k(5)%len(releases)].String()
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
		// Checked after every event, with the full Check every 64.
		if err := w.CheckEveryEvent(64); err != nil {
			t.Fatalf("new world: %v", err)
		}
		for i := 0; i < 2000 && w.Step(); i++ {
		}
		if err := w.Err(); err != nil {
			var ie *InternalError
			if errors.As(err, &ie) { // a panic, caught by Step: show where
				t.Fatalf("world stopped: %v\n%s", err, ie.Stack)
			}
			t.Fatalf("world stopped: %v", err)
		}
		if err := w.CheckNow(); err != nil {
			t.Fatalf("after %d events: %v", w.Sim.Queue.Fired(), err)
		}
	})
}
