package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtionet"
)

// Regression tests for the receive paths against the kernel functions
// they stand for (FIDELITY.md rows 4, 9, 10 and 12).

// gsoMergeable is the default preset with guest GSO, 60000-byte TCP
// segments between 1514-byte ones, buffers from page_frag.
func gsoMergeable(t *testing.T, edit func(*scenario.Scenario)) *World {
	return preset(t, "default", func(s *scenario.Scenario) {
		s.RingSize = 256
		s.Features.GuestGSO = true
		s.Traffic = scenario.Traffic{Size: 1514, Sizes: []int{1514, 60000}, Flows: 1, Proto: "tcp", GSOSize: 60000}
		s.Driver.BufferSource = scenario.SourcePageFrag
		s.Driver.DMA = scenario.DMARing
		if edit != nil {
			edit(s)
		}
	})
}

// FIDELITY row 4: receive_mergeable coalesces a buffer into the previous
// frag when skb_can_coalesce says it continues it in the same page, and
// skb_can_coalesce has no clone test: the skb is new there. A listening
// packet socket (driver.clone_skbs) changes nothing in the driver.
func TestReceiveMergeableCoalescesWithPacketSocket(t *testing.T) {
	for _, clone := range []bool{false, true} {
		w := gsoMergeable(t, func(s *scenario.Scenario) { s.Driver.CloneSKBs = clone })
		require.NoError(t, w.CheckEveryEvent(0))
		require.NoError(t, w.RunPackets(2000))
		require.NoError(t, w.CheckNow())
		assert.Positive(t, w.Driver.RQ[0].Stats.Coalesced, "clone_skbs=%v: skb_can_coalesce holds for contiguous buffers", clone)
		assert.Zero(t, counter(t, w, "rx_drops"))
	}
	w := gsoMergeable(t, nil)
	w2 := gsoMergeable(t, func(s *scenario.Scenario) { s.Driver.CloneSKBs = true })
	require.NoError(t, w.RunPackets(2000))
	require.NoError(t, w2.RunPackets(2000))
	assert.Equal(t, w.Driver.RQ[0].Stats.Coalesced, w2.Driver.RQ[0].Stats.Coalesced, "the same traffic coalesces the same in the driver")
	assert.Positive(t, counter(t, w2, "packet_socket_clones"))
}

// tcpSocket is a TCP stream read by an application on CPU 1 slower than
// the traffic, so skbs wait on the socket's receive queue.
func tcpSocket(t *testing.T, clone bool) *World {
	return preset(t, "default", func(s *scenario.Scenario) {
		s.CPUs = 2
		s.RingSize = 256
		s.Traffic = scenario.Traffic{Size: 1514, Flows: 1, Proto: "tcp", RatePPS: 400_000}
		s.Consumer = scenario.Consumer{CPU: 1, Context: scenario.FreeProcess, CostNs: 5000}
		s.Driver.CloneSKBs = clone
	})
}

// FIDELITY row 4: the cloned-skb effect is on the socket. tcp_queue_rcv
// merges a new skb into the tail of the receive queue with
// skb_try_coalesce (tcp_try_coalesce), which refuses a cloned tail
// (skb_cloned(to)): with a packet socket's clones every skb stays on its
// own, to be read and freed on its own (TestSocketMemoryWithClones, in
// engine/skb, counts what they hold).
func TestTCPSocketCoalescesUnlessCloned(t *testing.T) {
	plain, cloned := tcpSocket(t, false), tcpSocket(t, true)
	for _, w := range []*World{plain, cloned} {
		require.NoError(t, w.CheckEveryEvent(0))
		require.NoError(t, w.RunUntil(sim.Time(10*sim.Millisecond)))
		require.NoError(t, w.CheckNow())
		assert.Zero(t, counter(t, w, "rx_drops"))
		assert.Zero(t, counter(t, w, "socket_drops"))
		assert.Equal(t, counter(t, w, "rx_packets"), counter(t, w, "socket_queued")+counter(t, w, "tcp_rcv_coalesce"),
			"every packet was queued on the socket, merged or on its own")
	}
	rx := counter(t, plain, "rx_packets")
	assert.Greater(t, counter(t, plain, "tcp_rcv_coalesce"), rx/2, "most skbs merge into the tail")
	assert.Less(t, counter(t, plain, "socket_queued"), rx/2)
	assert.Zero(t, counter(t, cloned, "tcp_rcv_coalesce"), "skb_try_coalesce never merges into a cloned tail")
	assert.Equal(t, counter(t, cloned, "rx_packets"), counter(t, cloned, "socket_queued"), "one skb per packet")
	assert.Equal(t, counter(t, cloned, "rx_packets"), counter(t, cloned, "packet_socket_clones"))
	// The driver coalesced the same either way: the clone is not its
	// business (skb_can_coalesce).
	assert.Equal(t, plain.Driver.RQ[0].Stats.Coalesced, cloned.Driver.RQ[0].Stats.Coalesced)
}

// FIDELITY row 4: only TCP's receive queue coalesces (tcp_queue_rcv); a
// UDP socket queues every skb, and a consumer in softirq queues none.
func TestSocketCoalescingIsTCPInProcessContext(t *testing.T) {
	udp := preset(t, "default", func(s *scenario.Scenario) {
		s.CPUs = 2
		s.Traffic = scenario.Traffic{Size: 1514, Flows: 1, Proto: "udp", RatePPS: 400_000, DstPort: 9}
		s.Consumer = scenario.Consumer{CPU: 1, Context: scenario.FreeProcess, CostNs: 5000}
	})
	soft := preset(t, "default", func(s *scenario.Scenario) {
		s.Traffic = scenario.Traffic{Size: 1514, Flows: 1, Proto: "tcp", RatePPS: 400_000}
	})
	for _, w := range []*World{udp, soft} {
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
		assert.Zero(t, counter(t, w, "tcp_rcv_coalesce"))
	}
	// The UDP socket queues every packet it has room for; a 5 µs reader
	// of 400,000 packets a second fills its 212992-byte buffer and the
	// rest is dropped (__udp_enqueue_schedule_skb).
	assert.Equal(t, counter(t, udp, "rx_packets"), counter(t, udp, "socket_queued")+counter(t, udp, "socket_drops"))
	assert.Positive(t, counter(t, udp, "socket_drops"))
	assert.Zero(t, counter(t, soft, "socket_queued"))
}

// FIDELITY row 9: the 2026 driver takes mergeable buffers with
// page_pool_alloc_frag(len + room) and reports truesize len + room; the
// rest of a page that cannot hold another buffer goes to the last one
// (the hole). 1536-byte buffers: two per 4 KiB pool page, truesize 1536
// and then 1536 + the 1024-byte hole.
func TestPagePoolFragmentsInMergeableMode70(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) { s.RingSize = 1024; s.Traffic.Size = 1514 })
	require.Equal(t, "7.0", w.Scenario.KernelVersion().String())
	rq := w.Driver.RQ[0]
	pages := map[mem.PageID]int{}
	rq.PostedBuffers(func(p mem.PageID, length, truesize uint32) {
		pages[p]++
		assert.Equal(t, length, truesize, "truesize is len + room (room 0 without XDP)")
		assert.Contains(t, []uint32{1536, 1536 + 1024}, truesize)
	})
	assert.Len(t, pages, 1024/2, "PAGE_SIZE / (len + room) = 2 buffers per pool page")
	hold := rq.Pool.HoldCnt()
	assert.Less(t, hold, uint64(1024/2+pagepool.AllocCacheRefill), "the pool took pages 64 at a time, for 512")
	require.NoError(t, w.CheckEveryEvent(0))
	require.NoError(t, w.RunPackets(20000))
	require.NoError(t, w.CheckNow())
	assert.Zero(t, counter(t, w, "page_frees"), "fragments recycle through the pool")
	assert.Less(t, rq.Pool.HoldCnt(), uint64(1024), "still about half a page per buffer")
}

// FIDELITY row 9: before 7.0 a page_pool is the 2023 series: 2/5 takes a
// whole page per mergeable buffer (page_pool_dev_alloc_pages) and still
// posts ctx truesize len + room, no hole.
func TestPagePoolWholePageIn2023Series(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) { s.Kernel = "6.4"; s.RingSize = 1024 })
	rq := w.Driver.RQ[0]
	n := 0
	rq.PostedBuffers(func(p mem.PageID, length, truesize uint32) {
		n++
		assert.Equal(t, uint32(1536), truesize, "mergeable_len_to_ctx(len + room, headroom)")
		assert.Equal(t, uint32(1536), length)
	})
	assert.Equal(t, 1024, n)
	assert.Equal(t, uint64(1024), rq.Pool.HoldCnt(), "one pool page per buffer")
	require.NoError(t, w.RunPackets(5000))
	require.NoError(t, w.Check())
}

// FIDELITY row 9: in small mode the 2026 driver also takes its buffers
// from the pool with page_pool_alloc_frag: SKB_DATA_ALIGN(hdr + pad +
// GOOD_PACKET_LEN) + shinfo = 1920 bytes, two to a page.
func TestSmallModeUsesPagePool70(t *testing.T) {
	w := preset(t, "small-mode", func(s *scenario.Scenario) { s.RingSize = 1024 })
	require.Equal(t, "small", w.Driver.Mode())
	rq := w.Driver.RQ[0]
	require.NotNil(t, rq.Pool)
	pages := map[mem.PageID]int{}
	rq.PostedBuffers(func(p mem.PageID, _, truesize uint32) {
		pages[p]++
		assert.Equal(t, uint32(1920), truesize)
	})
	assert.Len(t, pages, 1024/2)
	require.NoError(t, w.CheckEveryEvent(0))
	require.NoError(t, w.RunPackets(20000))
	require.NoError(t, w.CheckNow())
	assert.Positive(t, counter(t, w, "rx_pp_recycle_cached"))
	assert.Zero(t, counter(t, w, "rx_drops"))
}

// FIDELITY row 10: at MAX_SKB_FRAGS frags receive_mergeable chains a new
// skb through frag_list (virtnet_skb_append_frag: alloc_skb(0),
// skb_shinfo(head)->frag_list = nskb) and nothing is lost. A 64 KiB GSO
// packet in 1536-byte buffers of whole pool pages (the 2023 series on
// 6.4: nothing coalesces) takes 43 buffers: a head of 17 frags and two
// chained skbs. Read by an application, so chained skbs wait on a socket
// under the checker.
func TestMergeableFragListPastMaxSkbFrags(t *testing.T) {
	const size = 65535
	for _, ctx := range []string{scenario.FreeSoftirq, scenario.FreeProcess} {
		t.Run(ctx, func(t *testing.T) {
			w := preset(t, "default", func(s *scenario.Scenario) {
				s.Kernel = "6.4"
				s.RingSize = 1024
				s.Features.GuestGSO = true
				s.Traffic = scenario.Traffic{Size: size, Flows: 1, Proto: "tcp", GSOSize: size, RatePPS: 2000}
				s.Consumer = scenario.Consumer{CPU: -1, Context: ctx, CostNs: 200}
			})
			require.NoError(t, w.CheckEveryEvent(0))
			require.NoError(t, w.RunPackets(3))
			require.NoError(t, w.CheckNow())
			rx := counter(t, w, "rx_packets")
			assert.Zero(t, counter(t, w, "rx_drops"))
			assert.Zero(t, counter(t, w, "rx_length_errors"))
			assert.Equal(t, rx*size, counter(t, w, "rx_bytes"))
			assert.GreaterOrEqual(t, counter(t, w, "frag_list_skbs"), 2*uint64(1), "43 buffers need two skbs behind the head")
			delivered := w.Stack.Counters()
			waiting, _ := w.Stack.SocketMem()
			assert.Equal(t, rx, delivered.Delivered+uint64(waiting))
			assert.Equal(t, delivered.Delivered*size, delivered.Bytes, "every byte of each packet reaches the stack")
			require.NoError(t, w.RunUntil(w.Now().Add(5*sim.Millisecond)))
			require.NoError(t, w.CheckNow())
		})
	}
}

// starvedByCpumap redirects every packet to CPU 1 through a cpumap whose
// consumer spends a millisecond on each, in 4 MiB of memory: the
// cpumap's queue ends up holding every page, the refill fails, the ring
// drains and the host starves, while CPU 1 gives a page back every
// millisecond.
func starvedByCpumap(t *testing.T, kernel string) *World {
	return preset(t, "cpumap", func(s *scenario.Scenario) {
		s.Kernel = kernel
		s.RingSize = 256
		s.MemoryPages = 1024
		s.Traffic = scenario.Traffic{Size: 1514, Flows: 1, Proto: "udp", RatePPS: 200_000, DstPort: 9}
		s.Consumer.CostNs = 1_000_000
	})
}

// runToAllocFail runs w until the refill first fails to allocate.
func runToAllocFail(t *testing.T, w *World) sim.Time {
	t.Helper()
	for w.Driver.RQ[0].Stats.AllocFails == 0 {
		require.True(t, w.Step(), "the world stopped before memory ran out: %v", w.Err())
		require.Less(t, w.Now(), sim.Time(sim.Second), "memory never ran out")
	}
	return w.Now()
}

// FIDELITY row 12: before 6.19, when virtnet_receive's refill fails
// (try_fill_recv with GFP_ATOMIC), it schedules refill_work, which runs
// in process context, refills with GFP_KERNEL and, still short, queues
// itself again after HZ/2 (half a second). With the ring drained nothing
// else polls the queue: the host starves until refill_work finds the
// pages CPU 1 has given back meanwhile.
func TestRefillWorkRetriesAfterHalfASecond(t *testing.T) {
	w := starvedByCpumap(t, "6.18")
	fail := runToAllocFail(t, w)
	rq := w.Driver.RQ[0]
	require.NoError(t, w.RunUntil(fail.Add(10*sim.Millisecond)))
	rx, polls := counter(t, w, "rx_packets"), rq.Stats.NAPIPolls
	assert.Equal(t, rq.VQ.Size(), rq.VQ.NumFree(), "the host used every buffer left")
	require.NoError(t, w.RunUntil(fail.Add(virtionet.RefillRetry-sim.Millisecond)))
	require.NoError(t, w.Check())
	assert.Equal(t, uint64(1), w.Driver.Refill.Runs, "one run at once, which failed")
	assert.Equal(t, uint64(1), w.Driver.Refill.Retries)
	assert.Equal(t, rq.VQ.Size(), rq.VQ.NumFree(), "the ring sits empty until the retry")
	assert.Equal(t, rx, counter(t, w, "rx_packets"), "nothing received meanwhile")
	assert.Equal(t, polls, rq.Stats.NAPIPolls, "nothing polls a queue with no buffers")
	assert.Positive(t, counter(t, w, "stack_delivered"), "CPU 1 has been giving pages back")
	require.NoError(t, w.RunUntil(fail.Add(virtionet.RefillRetry+5*sim.Millisecond)))
	require.NoError(t, w.Check())
	assert.Equal(t, uint64(2), w.Driver.Refill.Runs, "the retry after HZ/2")
	assert.Greater(t, counter(t, w, "rx_packets"), rx, "the queue got buffers again after the retry")
}

// FIDELITY row 12: since 6.19 ("virtio-net: don't schedule delayed refill
// worker") virtnet_receive returns the whole budget when the refill
// fails, so NAPI is polled again at once and retries: no refill_work,
// and the queue gets each page back as soon as CPU 1 frees it.
func TestRefillRetriesInNAPISince619(t *testing.T) {
	w := starvedByCpumap(t, "7.0")
	fail := runToAllocFail(t, w)
	rq := w.Driver.RQ[0]
	polls := rq.Stats.NAPIPolls
	host := rq.Dev.Counters().Packets
	require.NoError(t, w.RunUntil(fail.Add(20*sim.Millisecond)))
	require.NoError(t, w.Check())
	assert.Zero(t, w.Driver.Refill.Runs, "no refill_work")
	assert.Greater(t, rq.Stats.NAPIPolls-polls, uint64(1000), "NAPI repolls while the refill fails")
	assert.Greater(t, rq.Dev.Counters().Packets-host, uint64(5), "pages CPU 1 frees are posted at once")
}
