package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// checked builds a preset with CheckEveryEvent on and runs n packets.
func checked(t *testing.T, name string, n uint64, edit func(*scenario.Scenario)) *World {
	t.Helper()
	w := preset(t, name, edit)
	require.NoError(t, w.CheckEveryEvent(0))
	require.NoError(t, w.RunPackets(n))
	require.NoError(t, w.Check())
	return w
}

// TestR1UpstreamPageFragRefcountBounces is FIDELITY row 6 at the scale of
// R1's "before" (6.4, cpumap to CPU 1): skb_page_frag_refill and get_page
// per buffer on CPU 0, page_frag_free of every buffer on CPU 1. The
// blocks' refcount lines move between the CPUs, and every block is freed
// on CPU 1, which did not allocate it: page_remote_frees counts them.
func TestR1UpstreamPageFragRefcountBounces(t *testing.T) {
	w := checked(t, "r1-upstream", 5000, nil)
	frees := counter(t, w, "page_frees")
	require.Positive(t, frees)
	assert.Equal(t, frees, counter(t, w, "page_remote_frees"), "CPU 1 frees every block CPU 0 allocated")
	assert.Positive(t, counter(t, w, "page_ref_transfers"))
	assert.Positive(t, w.Sim.CPU(0).Transfers(), "CPU 0's get_page pulls the line back from CPU 1")
	assert.Positive(t, w.Sim.CPU(1).Transfers(), "CPU 1's put_page pulls it from CPU 0")
	// With XDP every buffer is PAGE_SIZE: 8 per 32 KiB block.
	assert.InDelta(t, float64(counter(t, w, "rx_packets"))/8, float64(counter(t, w, "page_allocs")), 40)
}

// TestPCPFreeHighByKernel is FIDELITY row 8 (free_unref_page_commit's
// free_high, 5.19): in R1's "before", CPU 1 only frees order-3 blocks. On
// 5.18 they wait on CPU 1's per-CPU list until high; from 5.19 a CPU that
// frees without allocating sends them to the buddy under zone->lock.
func TestPCPFreeHighByKernel(t *testing.T) {
	for _, tc := range []struct {
		kernel   string
		freeHigh bool
	}{
		{"5.18", false},
		{"5.19", true},
		{"6.4", true},
		{"6.7", true},
		{"7.0", true},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			w := checked(t, "r1-upstream", 5000, func(s *scenario.Scenario) { s.Kernel = tc.kernel })
			n := counter(t, w, "pcp_free_high")
			if !tc.freeHigh {
				assert.Zero(t, n)
				assert.GreaterOrEqual(t, w.Mem.PCPCount(1), w.Mem.PCPHigh()-w.Mem.PCPBatch(), "CPU 1's blocks wait on its list")
				return
			}
			assert.Positive(t, n)
			assert.Less(t, w.Mem.PCPCount(1), w.Mem.PCPBatch()+8, "CPU 1's list is drained by free_high")
		})
	}
}

// TestSkbAttemptDeferFreeByProtocol is FIDELITY row 14: an application on
// CPU 1 reading packets NAPI allocated on CPU 0 hands the skbs back with
// skb_attempt_defer_free only where the protocol does (TCP since 5.19,
// UDP since 6.18); otherwise it frees them itself, remotely.
func TestSkbAttemptDeferFreeByProtocol(t *testing.T) {
	for _, tc := range []struct {
		name, proto, kernel string
		deferred            bool
	}{
		{"UDP on 6.4 frees on CPU 1", "udp", "6.4", false},
		{"TCP on 6.4 defers", "tcp", "6.4", true},
		{"TCP on 5.16 frees on CPU 1", "tcp", "5.16", false},
		{"UDP on 6.18 defers", "udp", "6.18", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checked(t, "r3-napi-local-off", 20000, func(s *scenario.Scenario) {
				s.Kernel = tc.kernel
				s.Traffic.Proto = tc.proto
				if tc.proto == "udp" {
					s.Traffic.Kind = scenario.TrafficUDPStream
					s.Traffic.LineGbps = 0
					s.Traffic.RatePPS = 5e6
				}
			})
			d := counter(t, w, "stack_deferred_frees")
			if !tc.deferred {
				assert.Zero(t, d)
				assert.Zero(t, counter(t, w, "stack_defer_ipis"))
				return
			}
			assert.Positive(t, d)
			if tc.proto == "udp" {
				// TCP merges most segments into the socket's tail skb
				// (tcp_try_coalesce), so its lists seldom reach half of
				// the max between two polls; engine/skb's
				// TestSkbAttemptDeferFreeCapAndIPI holds the IPI rule.
				assert.Positive(t, counter(t, w, "stack_defer_ipis"), "the 33rd skb on a list sends its CPU an IPI")
			}
			assert.LessOrEqual(t, w.Stack.Deferred(0), w.Stack.DeferMax())
		})
	}
}

// TestPageFragPremapByKernel is FIDELITY row 22: with an IOMMU, virtio_net
// before 6.6 maps and unmaps every page_frag buffer (vring_map_one_sg);
// 6.6 maps each block once (virtnet_rq_alloc), with struct virtnet_rq_dma
// in its first 16 bytes, so an XDP block of 4 KiB buffers holds 7, not 8.
// 6.11 and 6.12 have it off by default, 6.13 on again.
func TestPageFragPremapByKernel(t *testing.T) {
	for _, tc := range []struct {
		kernel   string
		perBlock bool
	}{
		{"6.5", false},
		{"6.6", true},
		{"6.10", true},
		{"6.11", false},
		{"6.12", false},
		{"6.13", true},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			w := checked(t, "r1-upstream", 3000, func(s *scenario.Scenario) { s.Kernel = tc.kernel })
			maps := w.DMA.Stats().Maps
			rx := counter(t, w, "rx_packets")
			allocs := counter(t, w, "page_allocs")
			if !tc.perBlock {
				assert.GreaterOrEqual(t, maps, rx, "one map per buffer")
				assert.InDelta(t, float64(rx)/8, float64(allocs), 40, "8 buffers per block")
				assert.Zero(t, w.Driver.RQ[0].PremappedBlocks())
				return
			}
			assert.InDelta(t, float64(allocs), float64(maps), 2, "one map per block")
			assert.InDelta(t, float64(rx)/7, float64(allocs), 40, "7 buffers per block after the header")
			assert.Positive(t, w.Driver.RQ[0].PremappedBlocks())
		})
	}
}
