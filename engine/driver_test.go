package engine

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/bpf"

	"ringlab/engine/mem"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

func preset(t *testing.T, name string, edit func(*scenario.Scenario)) *World {
	t.Helper()
	s, err := scenario.LookupPreset(name)
	require.NoError(t, err)
	if edit != nil {
		edit(&s)
	}
	require.NoError(t, s.Validate())
	w, err := New(s)
	require.NoError(t, err)
	return w
}

func counter(t *testing.T, w *World, name string) uint64 {
	t.Helper()
	v, ok := w.Counter(name)
	require.True(t, ok, "no counter %s", name)
	return v
}

// Big mode posts big_packets_num_skbfrags + 2 descriptors per buffer: 5 at
// MTU 9000 after the 2022 fix, 19 before it. The ring holds 204 buffers
// instead of 53 (R2's mechanism).
func TestBigModeDescriptorsPerBuffer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel string
		frags  int
		bufs   int
	}{
		{"6.1, after the fix: DIV_ROUND_UP(9000, 4096) pages", "6.1", 3, 1024 / 5},
		{"6.0, before the fix: MAX_SKB_FRAGS pages", "6.0", 17, 1024 / 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "r2-mtu9000-after", func(s *scenario.Scenario) { s.Kernel = tc.kernel })
			rq := w.Driver.RQ[0]
			assert.Equal(t, "big", w.Driver.Mode())
			assert.Equal(t, tc.frags, w.Driver.NumSkbFrags())
			assert.Equal(t, tc.bufs*(tc.frags+2), rq.PostedDescriptors())
			assert.Equal(t, 1024-tc.bufs*(tc.frags+2), rq.VQ.NumFree())
			require.NoError(t, w.RunPackets(2000))
			require.NoError(t, w.Check())
			assert.Equal(t, uint64(0), counter(t, w, "rx_drops"))
		})
	}
}

// Mergeable buffers are sized by the EWMA of packet lengths, clamped to
// [min_buf_len, PAGE_SIZE - hdr_len]; min_buf_len is never below
// GOOD_PACKET_LEN. 3000-byte GSO packets grow the buffers to 3072 bytes
// (12 + 3000, L1-aligned); 1000-byte packets keep them at 1536.
func TestMergeableEWMABufferLength(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) {
		s.RingSize = 256
		s.Features.GuestGSO = true
		s.Traffic = scenario.Traffic{Size: 3000, Flows: 1, Proto: "tcp", GSOSize: 3000}
	})
	rq := w.Driver.RQ[0]
	assert.Equal(t, uint32(1536), rq.MergeableBufLen(), "before any packet")
	require.NoError(t, w.RunPackets(5000))
	require.NoError(t, w.Check())
	assert.InDelta(t, 3000, float64(rq.EWMA()), 2)
	assert.Equal(t, uint32(3072), rq.MergeableBufLen())
	w2 := preset(t, "default", func(s *scenario.Scenario) { s.Traffic.Size = 1000; s.Traffic.RatePPS = 0 })
	require.NoError(t, w2.RunPackets(2000))
	assert.InDelta(t, 1000, float64(w2.Driver.RQ[0].EWMA()), 2)
	assert.Equal(t, uint32(1536), w2.Driver.RQ[0].MergeableBufLen())
}

// Packets of up to GOOD_COPY_LEN bytes are copied into a small skb head and
// their buffer is freed at once.
func TestGoodCopyLenCopiesAndFreesAtOnce(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) { s.Traffic.Size = 100; s.Traffic.RatePPS = 0 })
	require.NoError(t, w.RunPackets(3000))
	rq := w.Driver.RQ[0]
	assert.Equal(t, rq.Stats.Packets, rq.Stats.Copied)
	w2 := preset(t, "default", func(s *scenario.Scenario) { s.Traffic.Size = 1000; s.Traffic.RatePPS = 0 })
	require.NoError(t, w2.RunPackets(3000))
	assert.Zero(t, w2.Driver.RQ[0].Stats.Copied)
}

// XDP verdicts land in their counters, and every page comes back.
func TestXDPVerdicts(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   map[string]bool // counters that must equal rx_packets
	}{
		{"xdp-drop", map[string]bool{"rx_xdp_packets": true, "rx_xdp_drops": true, "rx_drops": true}},
		{"xdp-pass", map[string]bool{"rx_xdp_packets": true}},
		{"xdp-tx", map[string]bool{"rx_xdp_packets": true, "rx_xdp_tx": true, "tx_xdp_tx": true}},
		{"cpumap", map[string]bool{"rx_xdp_packets": true, "rx_xdp_redirects": true}},
		{"devmap", map[string]bool{"rx_xdp_packets": true, "rx_xdp_redirects": true}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			w := preset(t, tc.preset, nil)
			require.NoError(t, w.RunPackets(20000))
			rx := counter(t, w, "rx_packets")
			for name := range tc.want {
				assert.Equal(t, rx, counter(t, w, name), name)
			}
			require.NoError(t, w.Check())
		})
	}
}

// With NAPI-local recycling, an skb freed in softirq on the pool's CPU
// recycles into the alloc cache; without, through the ptr_ring (R3).
func TestNAPILocalRecycling(t *testing.T) {
	on := preset(t, "r3-napi-local-on", nil)
	off := preset(t, "r3-napi-local-off", nil)
	for _, w := range []*World{on, off} {
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
	}
	assert.Zero(t, counter(t, off, "rx_pp_recycle_cached"))
	assert.Positive(t, counter(t, off, "rx_pp_recycle_ring"))
	assert.Positive(t, counter(t, on, "rx_pp_recycle_cached"))
	// On, only the frees that find the alloc cache full take the ring
	// (recycle_cache_full, then recycle_ring).
	assert.Less(t, counter(t, on, "rx_pp_recycle_ring"), counter(t, on, "rx_pp_recycle_cached")/20)
	assert.LessOrEqual(t, counter(t, on, "rx_pp_recycle_ring"), counter(t, on, "rx_pp_recycle_cache_full"))
	assert.Positive(t, counter(t, on, "stack_deferred_frees"), "frees on the app CPU are deferred to the NAPI CPU")
}

// EVENT_IDX suppresses kicks while the host is busy; without it the host
// uses NO_NOTIFY.
func TestKicksAndInterrupts(t *testing.T) {
	w := preset(t, "small-ring", nil)
	require.NoError(t, w.RunPackets(5000))
	kicks := counter(t, w, "rx_kicks")
	assert.Positive(t, kicks)
	assert.Equal(t, counter(t, w, "host_wakeups"), kicks, "every kick woke a starved host")
	w2 := preset(t, "small-ring", func(s *scenario.Scenario) { s.Features.EventIdx = false })
	require.NoError(t, w2.RunPackets(5000))
	assert.Positive(t, counter(t, w2, "rx_kicks"))
	require.NoError(t, w2.Check())
}

// A world's pages all come back: after traffic stops and everything drains,
// nothing is left in skbs, frames, cpumap rings or TX queues.
func TestPagesAreNotLost(t *testing.T) {
	w := preset(t, "cpumap", func(s *scenario.Scenario) { s.Traffic.RatePPS = 2e6 })
	require.NoError(t, w.RunUntil(sim.Time(2*sim.Millisecond)))
	require.NoError(t, w.Check())
	pages := w.Pages()
	total := int64(0)
	for _, n := range pages {
		total += n
	}
	assert.Equal(t, int64(w.Mem.NumPages()), total)
	_ = mem.NoPage
}

// rx_bytes counts each packet's bytes once (virtnet_rq_stats.bytes, without
// the virtio header), with XDP or without: a regression test for a double
// count in the mergeable XDP path.
func TestRxBytesCountedOnce(t *testing.T) {
	for _, name := range []string{"xdp-drop", "xdp-pass", "default", "cpumap"} {
		t.Run(name, func(t *testing.T) {
			w := preset(t, name, nil)
			require.NoError(t, w.RunPackets(5000))
			size := uint64(w.Scenario.Traffic.Size)
			assert.Equal(t, counter(t, w, "rx_packets")*size, counter(t, w, "rx_bytes"))
		})
	}
}

// An XDP program that reads past the packet aborts (XDP_ABORTED): the
// packet is dropped and counted, and the interpreter's fault (instruction
// offset and reason) is kept for the summary.
func TestXDPAbortedIsCountedWithItsFault(t *testing.T) {
	spec := &bpf.CollectionSpec{Name: "oob", Programs: []*bpf.ProgramSpec{{
		Name: "xdp_oob", License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),    // r2 = ctx->data
			asm.LoadMem(asm.R0, asm.R2, 5000, asm.Byte), // past data_end: aborts
			asm.Mov.Imm(asm.R0, 2),
			asm.Return(),
		},
	}}}
	s, err := scenario.LookupPreset("xdp-pass")
	require.NoError(t, err)
	s.XDP.Program = "" // the object's only program
	w, err := NewWithXDP(s, spec)
	require.NoError(t, err)
	require.NoError(t, w.RunPackets(1000))
	rx := counter(t, w, "rx_packets")
	assert.Equal(t, rx, counter(t, w, "xdp_aborted"))
	assert.Equal(t, rx, counter(t, w, "rx_xdp_drops"))
	sum := w.Summarize()
	require.Len(t, sum.XDPFaults, 1)
	assert.Contains(t, sum.XDPFaults[0], "insn 1")
	require.NoError(t, w.Check())
}

// Only a NIC interrupts the kernel directly. A guest's interrupts are
// injected by KVM from an irqfd: vhost's, and a vDPA device's too, which
// the host's interrupt handler signals because the 6.0 mlx5 vDPA driver
// offers no irq bypass (mlx5_get_vq_irq returns -EOPNOTSUPP, so
// vhost_vdpa_setup_vq_irq registers no producer).
func TestVDPAInterruptsAreInjected(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		virtual bool
	}{{scenario.DeviceNIC, false}, {scenario.DeviceVDPA, true}, {scenario.DeviceVhost, true}} {
		w := preset(t, "r2-mtu9000-after", func(s *scenario.Scenario) { s.Device.Kind = tc.kind })
		require.NoError(t, w.RunUntil(sim.Time(2*sim.Millisecond)))
		irqs := counter(t, w, "interrupts")
		require.Positive(t, irqs, tc.kind)
		costs := &w.Sim.Costs
		want := costs.IRQ
		if tc.virtual {
			want = costs.IRQVirt
		}
		prof := w.Driver.RQ[0].CPU.Profile()
		assert.Equal(t, want*sim.Duration(irqs), prof[sim.SymVringInterrupt], "%s: each interrupt costs %v", tc.kind, want)
		assert.Equal(t, tc.virtual, w.Driver.RQ[0].IRQLatency() == costs.IRQLatencyVirt, tc.kind)
	}
}

// Without VIRTIO_F_ACCESS_PLATFORM the guest's virtio core passes
// guest-physical addresses (vring_use_dma_api false, FIDELITY D1): a
// ring that maps every buffer with the DMA API pays dma_map_page and
// dma_unmap_page per buffer, and the same ring on QEMU's default device
// pays nothing for it.
func TestRingMapsOnlyWithAccessPlatform(t *testing.T) {
	run := func(ap bool) *World {
		w := preset(t, "default", func(s *scenario.Scenario) {
			s.Driver.BufferSource, s.Driver.DMA = scenario.SourcePageFrag, scenario.DMARing
			s.Features.AccessPlatform = ap
		})
		require.NoError(t, w.RunPackets(2000))
		return w
	}
	plain, mapped := run(false), run(true)
	prof := func(w *World, sym sim.Sym) sim.Duration { return w.Sim.CPU(0).Profile()[sym] }
	assert.Zero(t, prof(plain, sim.SymDMAMap))
	assert.Zero(t, prof(plain, sim.SymDMAUnmap))
	assert.Positive(t, prof(mapped, sim.SymDMAMap))
	assert.Positive(t, prof(mapped, sim.SymDMAUnmap))
}

// TestEmulatedIOMMUCostsTheGuestAndTheHost is FIDELITY row D2 in a world:
// behind QEMU's emulated intel-iommu (driver.viommu) a ring that maps
// every buffer gives vhost a mapping it has not seen for every buffer it
// takes (vhost_iotlb_miss each), and the guest's lazy unmaps one
// invalidation exit per 255; caching mode adds one exit per map and, from
// 5.11, makes every unmap strict (29b32839725f). A bare-metal IOMMU's
// costs have neither.
func TestEmulatedIOMMUCostsTheGuestAndTheHost(t *testing.T) {
	run := func(viommu, cm bool, kernel string) *World {
		w := preset(t, "default", func(s *scenario.Scenario) {
			s.Driver.BufferSource, s.Driver.DMA = scenario.SourcePageFrag, scenario.DMARing
			s.Features.AccessPlatform, s.Driver.IOMMU = true, true
			s.Driver.VIOMMU, s.Driver.IOMMUCachingMode = viommu, cm
			if kernel != "" {
				s.Kernel = kernel
			}
		})
		require.NoError(t, w.RunPackets(3000))
		return w
	}
	// 6.1: the ring maps each buffer as it posts it (no premapped
	// page_frag blocks before 6.6).
	bare := run(false, false, "6.1")
	assert.Nil(t, bare.Stats().VIOMMU)

	lazy := run(true, false, "6.1")
	st := lazy.Stats()
	require.NotNil(t, st.VIOMMU)
	taken := st.RX.Packets // one buffer a frame here
	assert.InDelta(t, float64(taken), float64(st.VIOMMU.HostMisses), float64(taken)/50, "a fresh mapping every buffer: a miss each")
	unmaps := lazy.DMA.Stats().Unmaps
	assert.Equal(t, unmaps/mem.FQFlushUnmaps, st.VIOMMU.Invalidations, "lazy: one flush per 255 unmaps")
	assert.Less(t, lazy.Sim.CPU(0).Profile()[sim.SymDMAUnmap], bare.Sim.CPU(0).Profile()[sim.SymDMAUnmap],
		"lazy unmaps skip the bare-metal invalidation wait")
	costs := &lazy.Sim.Costs
	assert.GreaterOrEqual(t, st.Host.Busy, bare.Stats().Host.Busy+sim.Duration(st.VIOMMU.HostMisses)*costs.VhostIOTLBMiss,
		"vhost waits on QEMU for each miss")

	// 6.6 premaps each page_frag block once: one miss a block.
	pre := run(true, false, "6.6")
	pd, pv := pre.DMA.Stats(), pre.Stats().VIOMMU
	assert.Less(t, pv.HostMisses, pre.Stats().RX.Packets/8, "many buffers a mapping")
	assert.LessOrEqual(t, pv.HostMisses, pd.Maps)
	assert.GreaterOrEqual(t, pv.HostMisses+uint64(pd.Live), pd.Maps, "each mapping missed once, but those not yet reached")

	cmw := run(true, true, "6.6")
	cm, d := cmw.Stats().VIOMMU, cmw.DMA.Stats()
	assert.Equal(t, d.Maps+d.Unmaps, cm.Invalidations, "caching mode: an exit per map and, strict from 5.11, per unmap")
	oldw := run(true, true, "5.10")
	old, od := oldw.Stats().VIOMMU, oldw.DMA.Stats()
	assert.Equal(t, od.Maps+od.Unmaps/mem.FQFlushUnmaps, old.Invalidations, "before 5.11 caching mode kept the flush queue")
}
