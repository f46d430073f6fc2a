package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/kernel"
	"ringlab/engine/mem"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
)

// The recycling paths of page_pool and the return of xdp_frames, by kernel
// version (FIDELITY rows 11, 13, 21 and the multi-buffer part of 23).

// TestXDPReturnFrameNAPILocalFrom610 is FIDELITY row 11 for frames:
// xdp_return_frame asks page_pool_napi_local only from 6.10
// (page_pool_put_unrefed_netmem, 4a96a4e807c3). R4's same-CPU setup on 6.9
// returns every devmap completion through the ptr_ring although it runs on
// the RX CPU; on 6.10 the completions, in softirq on the CPU whose poll
// list holds the RX NAPI, go into the alloc cache.
func TestXDPReturnFrameNAPILocalFrom610(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		cached bool
	}{
		{"6.5", false}, {"6.9", false}, {"6.10", true},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			w := preset(t, "r4-page-pool-same-cpu", func(s *scenario.Scenario) { s.Kernel = tc.kernel })
			require.NoError(t, w.RunFor(2*sim.Millisecond))
			done := counter(t, w, "devmap_completed")
			require.Positive(t, done)
			cached, ring := counter(t, w, "rx_pp_recycle_cached"), counter(t, w, "rx_pp_recycle_ring")
			if !tc.cached {
				assert.Zero(t, cached, "xdp_return_frame before 6.10 never recycles direct")
				assert.Equal(t, done, ring)
				return
			}
			// Those that run while the RX NAPI is not on the poll list
			// (between its polls, the TX completion's own poll in the
			// same net_rx_action) still go to the ring.
			assert.Greater(t, cached, done*3/4, "6.10: the completions on the RX CPU go to the cache")
			assert.Equal(t, done, cached+ring)
		})
	}
}

// poolPageWhen runs w until queue 0's NAPI is (scheduled) or is not on its
// CPU's poll list (list_owner is CPU 0, or -1), then returns a pool page
// allocated on that CPU.
func poolPageWhen(t *testing.T, w *World, scheduled bool) mem.PageID {
	t.Helper()
	rq := w.Driver.RQ[0]
	for i := 0; rq.NAPIScheduled() != scheduled; i++ {
		require.Less(t, i, 1_000_000, "the NAPI never changed state")
		require.True(t, w.Step())
	}
	c := rq.CPU
	c.Begin(w.Now())
	defer c.End()
	id, err := rq.Pool.Alloc(c)
	require.NoError(t, err)
	return id
}

// TestSKBFreeNAPILocalNeedsScheduledNAPI is FIDELITY row 11 for skbs, on
// 6.5 (page_pool_return_skb_page: napi_safe && napi->list_owner ==
// smp_processor_id()): an skb page freed in softirq on the NAPI CPU is
// cached only while that NAPI is scheduled there; list_owner is -1 once
// napi_complete_done took it off the poll list. And 6.5 asks only for
// napi_safe frees (napi_consume_skb with a budget, as skb_defer_free_flush
// frees): a kfree_skb in softirq on the same CPU takes the ring until 6.6
// (napi_pp_put_page's napi_safe || in_softirq()).
func TestSKBFreeNAPILocalNeedsScheduledNAPI(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kernel    string
		scheduled bool
		ctx       skb.Context
		cached    bool
	}{
		{"6.5 napi_safe, NAPI scheduled", "6.5", true, skb.Context{Softirq: true, NAPISafe: true}, true},
		{"6.5 napi_safe, NAPI not scheduled", "6.5", false, skb.Context{Softirq: true, NAPISafe: true}, false},
		{"6.5 kfree_skb in softirq, NAPI scheduled", "6.5", true, skb.Context{Softirq: true}, false},
		{"6.6 kfree_skb in softirq, NAPI scheduled", "6.6", true, skb.Context{Softirq: true}, true},
		{"6.6 kfree_skb in softirq, NAPI not scheduled", "6.6", false, skb.Context{Softirq: true}, false},
		{"6.4 napi_safe, NAPI scheduled", "6.4", true, skb.Context{Softirq: true, NAPISafe: true}, false},
		{"6.10 process context, NAPI scheduled", "6.10", true, skb.Context{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "r3-napi-local-on", func(s *scenario.Scenario) {
				s.Kernel = tc.kernel
				// Open traffic slow enough that the NAPI completes
				// between packets.
				s.Traffic = scenario.Traffic{Proto: "tcp", Size: 1514, Flows: 1, RatePPS: 200_000, DstPort: 5201}
			})
			require.NoError(t, w.RunPackets(2000))
			rq := w.Driver.RQ[0]
			id := poolPageWhen(t, w, tc.scheduled)
			c := rq.CPU
			c.Begin(w.Now())
			st := rq.Pool.RecycleStats()
			require.NoError(t, w.Release(c, id, true, tc.ctx))
			c.End()
			after := rq.Pool.RecycleStats()
			if tc.cached {
				assert.Equal(t, st.Cached+1, after.Cached)
				assert.Equal(t, st.Ring, after.Ring)
			} else {
				assert.Equal(t, st.Cached, after.Cached)
				assert.Equal(t, st.Ring+1, after.Ring)
			}
			require.NoError(t, w.Check())
		})
	}
}

// TestPagePoolRefillConsumerLock is FIDELITY row 13 for page_pool:
// page_pool_refill_alloc_cache consumed the ptr_ring under consumer_lock
// until 5.16 (R4's 4.17), once per refill, and without any lock from 5.17
// (07b17f0f7485, __ptr_ring_consume).
func TestPagePoolRefillConsumerLock(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		locked bool
	}{{"4.17", true}, {"5.16", true}, {"5.17", false}, {"6.4", false}} {
		t.Run(tc.kernel, func(t *testing.T) {
			w := preset(t, "r4-page-pool-same-cpu", func(s *scenario.Scenario) { s.Kernel = tc.kernel })
			require.NoError(t, w.RunFor(sim.Millisecond))
			refills := counter(t, w, "rx_pp_alloc_refill")
			require.Positive(t, refills)
			lock := w.Driver.RQ[0].Pool.Ring().ConsumerLock.Stats()
			if tc.locked {
				assert.Equal(t, refills, lock.Acquisitions, "one consumer_lock per refill")
			} else {
				assert.Zero(t, lock.Acquisitions)
			}
		})
	}
}

// TestCpumapKthreadConsumerLock is FIDELITY row 13 for the cpumap: the
// kthread is its ptr_ring's single consumer and takes frames without the
// consumer lock (cpu_map_kthread_run: __ptr_ring_consume from 4.15,
// __ptr_ring_consume_batched from 5.9), except from 5.2 to 5.8, when it
// called ptr_ring_consume_batched, which takes consumer_lock
// (77361825bb01, fixed by "cpumap: use non-locked version
// __ptr_ring_consume_batched").
func TestCpumapKthreadConsumerLock(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		locked bool
	}{{"4.17", false}, {"5.4", true}, {"5.8", true}, {"5.9", false}, {"6.4", false}} {
		t.Run(tc.kernel, func(t *testing.T) {
			w := preset(t, "cpumap", func(s *scenario.Scenario) {
				s.Kernel = tc.kernel
				s.Driver.BufferSource = scenario.SourcePagePool
			})
			require.NoError(t, w.RunPackets(20_000))
			passed := counter(t, w, "cpumap_passed")
			require.Positive(t, passed)
			lock := w.Cpumap.ConsumerLock(1)
			if tc.locked {
				// One consumer_lock per batch of up to CPUMAP_BATCH.
				assert.GreaterOrEqual(t, lock.Acquisitions, passed/8)
				assert.LessOrEqual(t, lock.Acquisitions, passed)
			} else {
				assert.Zero(t, lock.Acquisitions)
			}
		})
	}
}

// TestCpumapRefusedBefore415: BPF_MAP_TYPE_CPUMAP is 4.15+; a scenario that
// redirects through one on an older kernel is refused, naming the kernel.
func TestCpumapRefusedBefore415(t *testing.T) {
	s, err := scenario.LookupPreset("cpumap")
	require.NoError(t, err)
	s.Kernel = "4.14"
	_, err = New(s)
	var fe *scenario.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "kernel", fe.Field)
	s.Kernel = "4.15"
	_, err = New(s)
	assert.NoError(t, err)
	// Fragments of a pool page under a cpumap before 6.4: xdp_release_frame
	// would take a page still shared by other fragments out of its pool.
	s.Kernel = "6.3"
	s.Driver.BufferSource = scenario.SourcePagePoolFrag
	_, err = New(s)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "driver.buffer_source", fe.Field)
}

// TestCpumapSKBRecycleFrom64 is FIDELITY row 21: the skb the cpumap
// kthread builds from a page_pool frame is marked for recycling from 6.4
// (__xdp_build_skb_from_frame: skb_mark_for_recycle, 9c94bbf9a87b), so
// CPU 1's frees go back through the pool's ptr_ring. On 6.3
// xdp_release_frame takes each page out of its pool first
// (page_pool_release_page: unmapped, release_cnt grows), and the skb's free
// gives it to the page allocator on CPU 1; the pool allocates new pages.
func TestCpumapSKBRecycleFrom64(t *testing.T) {
	for _, kernel := range []string{"6.3", "6.4"} {
		t.Run(kernel, func(t *testing.T) {
			w := preset(t, "r1-page-pool", func(s *scenario.Scenario) { s.Kernel = kernel })
			require.NoError(t, w.CheckEveryEvent(0))
			pool := w.Driver.RQ[0].Pool
			hold := pool.HoldCnt()
			require.NoError(t, w.RunPackets(20_000))
			require.NoError(t, w.CheckNow())
			passed := counter(t, w, "cpumap_passed")
			require.Positive(t, passed)
			frees := counter(t, w, "page_frees")
			ring, full := counter(t, w, "rx_pp_recycle_ring"), counter(t, w, "rx_pp_recycle_ring_full")
			if kernel == "6.3" {
				waiting := uint64(w.Mem.Count(mem.SKB))
				assert.Equal(t, passed, pool.ReleaseCnt(), "every frame's page left the pool")
				assert.Equal(t, passed, frees+waiting, "and went to the page allocator when the skb was freed")
				assert.Positive(t, w.Mem.PCPCount(1), "on CPU 1, through its per-CPU list")
				assert.Zero(t, ring+full)
				assert.Greater(t, pool.HoldCnt()-hold, passed*9/10, "the pool takes new pages from the page allocator")
				return
			}
			waiting := uint64(w.Mem.Count(mem.SKB)) // on the socket, not read yet
			assert.Equal(t, passed, ring+full+waiting, "CPU 1 recycles through the ptr_ring")
			assert.Greater(t, ring, passed*9/10)
			assert.Equal(t, full, pool.ReleaseCnt(), "only what found the ring full left the pool")
			assert.Equal(t, full, frees)
		})
	}
}

// fragsScenario is the cpumap preset receiving 9014-byte frames at MTU
// 9000 with a program that declares multi-buffer support: with XDP each
// mergeable buffer is one page (PAGE_SIZE - room), so a frame takes three
// buffers, the first the xdp_buff's head and the other two its frags.
// EVENT_IDX is off: with it, multi-buffer frames can stall the host
// (FIDELITY row 16, not this test's subject).
func fragsScenario(s *scenario.Scenario) {
	s.MTU = 9000
	s.Traffic.Size = 9014
	s.XDP.Frags = true
	s.Features.EventIdx = false
}

// TestMultiBufferXDPFragsRideWithFrame is FIDELITY row 23 (multi-buffer
// XDP): a redirected packet's frags stay in the head buffer's
// skb_shared_info (virtnet_build_xdp_buff_mrg, xdp_convert_buff_to_frame),
// ride with the xdp_frame through the cpumap, become the skb's frags on
// CPU 1 (__xdp_build_skb_from_frame) and are freed there with it. None is
// freed on CPU 0 at receive time.
func TestMultiBufferXDPFragsRideWithFrame(t *testing.T) {
	w := preset(t, "cpumap", fragsScenario)
	require.NoError(t, w.CheckEveryEvent(0))
	frames := 0
	for w.Received() < 6000 {
		require.True(t, w.Step(), "world stopped: %v", w.Err())
		if w.Frames.LiveFrags() > 0 && frames == 0 {
			frames = w.Frames.Live()
			assert.Equal(t, 2*(w.Cpumap.Queued()), w.Cpumap.QueuedFrags(), "two frags per queued frame")
		}
	}
	require.NoError(t, w.CheckNow())
	require.Positive(t, frames, "frames carried frags")
	passed := counter(t, w, "cpumap_passed")
	require.Positive(t, passed)
	assert.Zero(t, counter(t, w, "rx_pp_recycle_cached"), "no page is freed on CPU 0")
	assert.Equal(t, 3*passed, counter(t, w, "rx_pp_recycle_ring"), "head and frags recycle from CPU 1")
	assert.Zero(t, counter(t, w, "rx_xdp_drops"))
}

// TestMultiBufferXDPFragsOnTXAndPass is FIDELITY row 23 for the other
// verdicts: XDP_TX sends the frags with the head, one sg entry each
// (__virtnet_xdp_xmit_one), and returns them on completion; XDP_PASS makes
// them the skb's frags (build_skb_from_xdp_buff). Each packet's three pages
// come back together.
func TestMultiBufferXDPFragsOnTXAndPass(t *testing.T) {
	for _, prog := range []string{"xdp_tx", "xdp_pass"} {
		t.Run(prog, func(t *testing.T) {
			w := preset(t, "cpumap", func(s *scenario.Scenario) {
				fragsScenario(s)
				s.XDP = &scenario.XDP{Program: prog, Frags: true}
			})
			require.NoError(t, w.CheckEveryEvent(0))
			require.NoError(t, w.RunPackets(3000))
			require.NoError(t, w.CheckNow())
			pkts := counter(t, w, "rx_packets")
			cached, ring := counter(t, w, "rx_pp_recycle_cached"), counter(t, w, "rx_pp_recycle_ring")
			assert.Zero(t, counter(t, w, "rx_xdp_drops"))
			if prog == "xdp_tx" {
				sent := counter(t, w, "tx_packets")
				require.Positive(t, sent)
				assert.Equal(t, 3*sent, cached+ring, "every sent frame returned its three pages")
				assert.Equal(t, 9014*sent, counter(t, w, "tx_bytes"), "xdp_get_frame_len counts the frags")
				return
			}
			assert.Equal(t, 3*pkts, cached+ring, "every skb freed its head and two frags")
		})
	}
}

// TestMultiBufferXDPDoesNotAllocate: frames carrying frags take their
// shared infos from the frame pool's preallocated array, and XDP_TX builds
// its sg list in the send queue's scratch array.
func TestMultiBufferXDPDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two worlds for a while")
	}
	for _, prog := range []string{"xdp_redirect_cpu", "xdp_tx"} {
		t.Run(prog, func(t *testing.T) {
			w := preset(t, "cpumap", func(s *scenario.Scenario) {
				fragsScenario(s)
				if prog != "xdp_redirect_cpu" {
					s.XDP = &scenario.XDP{Program: prog, Frags: true}
				}
			})
			require.NoError(t, w.RunPackets(20_000))
			allocs := testing.AllocsPerRun(5, func() {
				require.NoError(t, w.RunPackets(2_000))
			})
			assert.Zero(t, allocs)
		})
	}
}

// TestCoalescePPRuleByKernel dates skb_try_coalesce's page_pool rule
// (FIDELITY row C1): none before 5.14, pp_recycle must match from 5.14, a
// cloned page_pool skb only into a plain one from 5.18 (1effe8ca4e34),
// never from 6.3 (0646dc31ca88), and the match alone again from 6.8
// (skb_pp_frag_ref, f7dc3248dcfb).
func TestCoalescePPRuleByKernel(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		want   skb.CoalescePP
	}{
		{"5.10", skb.CoalescePPAny},
		{"5.15", skb.CoalescePPMatch},
		{"5.17", skb.CoalescePPMatch},
		{"5.18", skb.CoalescePPClonedToPlain},
		{"6.2", skb.CoalescePPClonedToPlain},
		{"6.3", skb.CoalescePPNoClone},
		{"6.6", skb.CoalescePPNoClone},
		{"6.8", skb.CoalescePPMatch},
		{"7.0", skb.CoalescePPMatch},
	} {
		v, err := kernel.Parse(tc.kernel)
		require.NoError(t, err)
		assert.Equal(t, tc.want, coalescePPRule(v.Behaviours()), tc.kernel)
	}
}
