package xdp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
)

// The package's components built with the least around them: a sim.Sim,
// the frame and skb pools, a softirq stack, and a releaser that records
// every page reference given back instead of a world's page pools.

// released is one page reference given back through the releaser.
type released struct {
	cpu  int
	page mem.PageID
	pp   bool // ppRecycle: the holder marked it for its page_pool
	ctx  skb.Context
}

// recorder is an skb.Releaser and a PoolReleaser that records what it is
// given.
type recorder struct {
	got      []released
	fromPool []mem.PageID // ReleasePoolPage calls (page_pool_release_page)
}

func (r *recorder) Release(c *sim.CPU, page mem.PageID, pp bool, ctx skb.Context) error {
	r.got = append(r.got, released{cpu: c.ID, page: page, pp: pp, ctx: ctx})
	return nil
}

func (r *recorder) ReleasePoolPage(c *sim.CPU, page mem.PageID) error {
	r.fromPool = append(r.fromPool, page)
	return nil
}

func (r *recorder) pages() []mem.PageID {
	var out []mem.PageID
	for _, g := range r.got {
		out = append(out, g.page)
	}
	return out
}

// rig is a machine of ncpu CPUs with what the cpumap and the devmap need.
type rig struct {
	sim    *sim.Sim
	frames *FramePool
	skbs   *skb.Pool
	stack  *skb.Stack
	net    *softnet.Softnet
	rel    *recorder
}

func newRig(t *testing.T, ncpu int) *rig {
	t.Helper()
	s, err := sim.New(ncpu, sim.DefaultCosts())
	require.NoError(t, err)
	r := &rig{sim: s, frames: NewFramePool(256), skbs: skb.NewPool(256), rel: &recorder{}}
	// The stack consumes in softirq where the skb arrives: its free is
	// the releaser's record of where the kthread passed each packet.
	r.net = softnet.New(s, softnet.Config{})
	r.stack = skb.NewStack(s, r.net, r.skbs, r.rel, skb.StackConfig{CPU: -1, Cost: 100})
	return r
}

// frame allocates a one-buffer frame whose page is page, received on
// CPU rxCPU from a buffer of memory type mt.
func (r *rig) frame(t *testing.T, page mem.PageID, mt MemType, rxCPU int) FrameID {
	t.Helper()
	id := r.frames.Alloc()
	require.NotEqual(t, NoFrame, id)
	r.frames.Get(id).Set(page, 0, 1000, PacketHeadroom, 2048, mt, 0, int16(rxCPU))
	return id
}

// run runs every event up to t and fails on an internal error.
func (r *rig) run(t *testing.T, until sim.Time) {
	t.Helper()
	for {
		at, ok := r.sim.Queue.Peek()
		if !ok || at > until {
			break
		}
		r.sim.Queue.Step()
	}
	require.NoError(t, r.sim.Err())
}

// TestCpumapBulkQueueFlushesAtBulkSize holds Enqueue to bq_enqueue: a
// redirected frame waits in the redirecting CPU's per-target bulk queue of
// CPU_MAP_BULK_SIZE (8); the ninth frame first flushes the eight into the
// target's ptr_ring (bq_flush_to_queue), and xdp_do_flush (__cpu_map_flush)
// flushes the rest and wakes the kthread once.
func TestCpumapBulkQueueFlushesAtBulkSize(t *testing.T) {
	r := newRig(t, 2)
	m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, 64, CpumapKernel{})
	c := r.sim.CPU(0)
	c.Begin(0)
	const bulk = 8 // CPU_MAP_BULK_SIZE
	for i := 0; i < bulk; i++ {
		require.True(t, m.Enqueue(c, 1, r.frame(t, mem.PageID(i), MemPageShared, 0)))
	}
	assert.Equal(t, CpumapCounters{}, m.C, "eight frames stay in the bulk queue")
	assert.Equal(t, bulk, m.Queued())
	assert.Equal(t, 0, r.sim.Queue.Len(), "no kthread woken before a flush")

	require.True(t, m.Enqueue(c, 1, r.frame(t, 100, MemPageShared, 0)))
	assert.Equal(t, uint64(bulk), m.C.Enqueued, "the ninth frame flushes the eight before it")
	assert.Equal(t, uint64(1), m.C.Flushes)
	assert.Equal(t, uint64(1), m.C.Wakeups)

	m.Flush(c)
	c.End()
	assert.Equal(t, uint64(bulk+1), m.C.Enqueued)
	assert.Equal(t, uint64(2), m.C.Flushes)
	assert.Equal(t, uint64(1), m.C.Wakeups, "a kthread already woken is not woken again")
	assert.Zero(t, m.C.Drops)
	assert.Equal(t, bulk+1, m.Queued())
}

// TestCpumapEnqueueWithoutEntry holds Enqueue to cpu_map_enqueue's
// caller: a key with no entry (__cpu_map_lookup_elem returns NULL) fails
// the redirect, and the frame is the caller's to drop.
func TestCpumapEnqueueWithoutEntry(t *testing.T) {
	r := newRig(t, 2)
	m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, 64, CpumapKernel{})
	c := r.sim.CPU(0)
	c.Begin(0)
	f := r.frame(t, 1, MemPageShared, 0)
	assert.False(t, m.Enqueue(c, 0, f), "CPU 0 has no entry")
	assert.False(t, m.Enqueue(c, 7, f), "no CPU 7")
	assert.Zero(t, m.Queued())
	assert.Equal(t, 1, r.frames.Live(), "the frame is still the caller's")
	assert.Equal(t, 64+2*8, m.Capacity(), "one ring and a bulk queue of CPU_MAP_BULK_SIZE per source CPU")
}

// TestCpumapFullRingDrops holds flushOne to bq_flush_to_queue: frames the
// ptr_ring cannot take (__ptr_ring_produce fails) are counted as drops
// and given back at once with xdp_return_frame_rx_napi (direct, in
// softirq, on the redirecting CPU).
func TestCpumapFullRingDrops(t *testing.T) {
	r := newRig(t, 2)
	const qsize = 4
	m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, qsize, CpumapKernel{})
	c := r.sim.CPU(0)
	c.Begin(0)
	for i := 0; i < qsize+2; i++ {
		require.True(t, m.Enqueue(c, 1, r.frame(t, mem.PageID(10+i), MemPagePool, 0)))
	}
	m.Flush(c)
	c.End()
	assert.Equal(t, uint64(qsize), m.C.Enqueued)
	assert.Equal(t, uint64(2), m.C.Drops)
	assert.Equal(t, uint64(2), m.C.Reasons[drop.CpumapFull], "every drop carries the full ring as its reason")
	assert.Equal(t, qsize, m.Queued())
	require.Len(t, r.rel.got, 2)
	for i, g := range r.rel.got {
		assert.Equal(t, mem.PageID(10+qsize+i), g.page, "the frames past the ring's size are dropped")
		assert.Equal(t, released{cpu: 0, page: g.page, pp: true, ctx: skb.Context{Softirq: true, Direct: true, Frame: true}}, g)
	}
	assert.Equal(t, qsize, r.frames.Live(), "the dropped frames went back to the pool")
}

// TestCpumapKthreadBatches holds kthread to cpu_map_kthread_run: on the
// target CPU it takes at most CPUMAP_BATCH (8) frames per round, builds
// an skb around each (__xdp_build_skb_from_frame) and passes it up, and
// runs again at once while frames remain; the skbs are freed on the
// target CPU.
func TestCpumapKthreadBatches(t *testing.T) {
	r := newRig(t, 2)
	m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, 64, CpumapKernel{})
	c := r.sim.CPU(0)
	c.Begin(0)
	const n = 2*8 + 4 // CPUMAP_BATCH is 8
	for i := 0; i < n; i++ {
		require.True(t, m.Enqueue(c, 1, r.frame(t, mem.PageID(i), MemPageShared, 0)))
	}
	m.Flush(c)
	c.End()
	require.Zero(t, m.C.Passed)

	var rounds []uint64
	for r.sim.Queue.Step() {
		rounds = append(rounds, m.C.Passed)
	}
	require.NoError(t, r.sim.Err())
	assert.Equal(t, []uint64{8, 16, 20}, rounds, "CPUMAP_BATCH frames a round")
	assert.Equal(t, uint64(1), m.C.Wakeups)
	assert.Zero(t, m.Queued())
	assert.Zero(t, r.frames.Live(), "every frame became an skb")
	assert.Zero(t, r.skbs.Live())
	require.Len(t, r.rel.got, n)
	for i, g := range r.rel.got {
		assert.Equal(t, mem.PageID(i), g.page, "in ring order")
		assert.Equal(t, 1, g.cpu, "freed on the target CPU")
		assert.False(t, g.ctx.Frame, "freed with the skb, not as a frame")
	}
	assert.Equal(t, uint64(n), r.stack.Counters().Delivered)
	assert.NotZero(t, r.sim.CPU(1).Busy(), "the kthread's work is the target's")
}

// TestCpumapSKBRecycleByKernel holds the kthread's skbs of page_pool
// frames to __xdp_build_skb_from_frame: from 6.4 the skb is marked for
// recycling (skb_mark_for_recycle) and its page goes back to its pool;
// before, xdp_release_frame takes the page out of its pool
// (page_pool_release_page) and the skb's free puts it.
func TestCpumapSKBRecycleByKernel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		k        CpumapKernel
		wantPP   bool
		fromPool int
	}{
		{"6.4 skb_mark_for_recycle", CpumapKernel{}, true, 0},
		{"6.3 xdp_release_frame", CpumapKernel{ReleaseFrames: true}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 2)
			m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, 64, tc.k)
			c := r.sim.CPU(0)
			c.Begin(0)
			require.True(t, m.Enqueue(c, 1, r.frame(t, 42, MemPagePool, 0)))
			m.Flush(c)
			c.End()
			r.run(t, sim.Time(sim.Millisecond))
			require.Len(t, r.rel.got, 1)
			assert.Equal(t, mem.PageID(42), r.rel.got[0].page)
			assert.Equal(t, tc.wantPP, r.rel.got[0].pp, "pp_recycle of the kthread's skb")
			assert.Len(t, r.rel.fromPool, tc.fromPool)
		})
	}
}

// TestCpumapConsumerLockByKernel holds the kthread's consume to
// cpu_map_kthread_run: ptr_ring_consume_batched under the ring's
// consumer_lock on 5.2 to 5.8, the lockless __ptr_ring_consume_batched
// of the ring's single consumer otherwise. The producer lock is taken
// once per flush (bq_flush_to_queue's spin_lock(&q->producer_lock)).
func TestCpumapConsumerLockByKernel(t *testing.T) {
	for _, locked := range []bool{false, true} {
		r := newRig(t, 2)
		m := NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, []int{1}, 64, CpumapKernel{LockedConsume: locked})
		c := r.sim.CPU(0)
		c.Begin(0)
		for i := 0; i < 8+1; i++ { // CPUMAP_BATCH and one
			require.True(t, m.Enqueue(c, 1, r.frame(t, mem.PageID(i), MemPageShared, 0)))
		}
		m.Flush(c)
		c.End()
		r.run(t, sim.Time(sim.Millisecond))
		want := uint64(0)
		if locked {
			want = 2 // one per round: 8 frames, then 1
		}
		assert.Equal(t, want, m.ConsumerLock(1).Acquisitions, "locked consume %v", locked)
		locks := m.Locks(nil)
		require.Len(t, locks, 2)
		assert.Equal(t, uint64(2), locks[0].Stats().Acquisitions, "producer lock: one per flush (the ninth frame's and xdp_do_flush's)")
	}
}

// TestReturnFrame holds Return to xdp_return_frame and
// xdp_return_frame_rx_napi (__xdp_return): each frag's page, then the
// head's, goes back, to its page_pool when the frame's memory type is
// MEM_TYPE_PAGE_POOL, with the caller's context marked as a frame's; the
// frame and its shared info go back to the pool.
func TestReturnFrame(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mt     MemType
		direct bool
	}{
		{"page_pool rx_napi", MemPagePool, true},
		{"page_pool", MemPagePool, false},
		{"page_shared", MemPageShared, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 1)
			r.frames.ReserveFrags(1)
			c := r.sim.CPU(0)
			f := r.frame(t, 7, tc.mt, 0)
			require.True(t, r.frames.AddFrag(f, 8, 0, 4096))
			require.True(t, r.frames.AddFrag(f, 9, 0, 100))
			assert.Equal(t, 2, r.frames.LiveFrags())
			require.NoError(t, r.frames.Return(c, f, r.rel, skb.Context{Softirq: true, Direct: tc.direct}))
			assert.Equal(t, []mem.PageID{8, 9, 7}, r.rel.pages(), "frags first, then the head")
			for _, g := range r.rel.got {
				assert.Equal(t, tc.mt == MemPagePool, g.pp)
				assert.Equal(t, skb.Context{Softirq: true, Direct: tc.direct, Frame: true}, g.ctx)
			}
			assert.Zero(t, r.frames.Live())
			assert.Zero(t, r.frames.LiveFrags())
			// The shared info is free again: the next frame can carry frags.
			g := r.frame(t, 1, tc.mt, 0)
			assert.True(t, r.frames.AddFrag(g, 2, 0, 10))
		})
	}
}

// TestFramePoolFrags holds AddFrag to virtnet_build_xdp_buff_mrg's limits
// on an xdp_buff's skb_shared_info: at most MAX_SKB_FRAGS frags, none
// without a shared info (ReserveFrags), and Free gives a frame and its
// shared info back without touching its pages (the caller keeps them).
func TestFramePoolFrags(t *testing.T) {
	r := newRig(t, 1)
	f := r.frame(t, 1, MemPageShared, 0)
	assert.False(t, r.frames.AddFrag(f, 2, 0, 10), "no shared info reserved")
	r.frames.ReserveFrags(1)
	for i := 0; i < skb.MaxSkbFrags; i++ {
		require.True(t, r.frames.AddFrag(f, mem.PageID(10+i), 0, 10), "frag %d", i)
	}
	assert.False(t, r.frames.AddFrag(f, 99, 0, 10), "MAX_SKB_FRAGS reached")
	assert.Len(t, r.frames.Frags(f), skb.MaxSkbFrags)
	g := r.frame(t, 3, MemPageShared, 0)
	assert.False(t, r.frames.AddFrag(g, 4, 0, 10), "the one shared info is taken")
	r.frames.Free(f)
	assert.Empty(t, r.rel.got, "Free releases no page")
	assert.Zero(t, r.frames.LiveFrags())
	assert.True(t, r.frames.AddFrag(g, 4, 0, 10), "Free gave the shared info back")
}

// TestFramePoolExhausted: the pool hands out its frames and then NoFrame
// (the driver drops: xdp_convert_buff_to_frame fails), and a returned
// frame is handed out again.
func TestFramePoolExhausted(t *testing.T) {
	p := NewFramePool(2)
	a, b := p.Alloc(), p.Alloc()
	require.NotEqual(t, NoFrame, a)
	require.NotEqual(t, NoFrame, b)
	assert.Equal(t, NoFrame, p.Alloc())
	assert.Equal(t, 2, p.Live())
	p.Free(a)
	assert.Equal(t, a, p.Alloc())
}

// TestToSKB holds ToSKB to __xdp_build_skb_from_frame and
// xdp_update_skb_shared_info: the skb's head is the frame's page with its
// length, every frag keeps its page, offset and length and adds the
// frame's frame_sz to the truesize, and the frame's number goes with it.
func TestToSKB(t *testing.T) {
	r := newRig(t, 1)
	r.frames.ReserveFrags(1)
	r.frames.TrackSeqs()
	c := r.sim.CPU(0)
	f := r.frame(t, 5, MemPagePool, 0)
	r.frames.SetSeq(f, 77)
	require.True(t, r.frames.AddFrag(f, 6, 64, 1000))
	id, err := r.frames.ToSKB(f, r.skbs, c, false, r.rel)
	require.NoError(t, err)
	require.NotEqual(t, skb.NoSKB, id)
	s := r.skbs.Get(id)
	assert.Equal(t, mem.PageID(5), s.Head)
	assert.Equal(t, uint32(1000+1000), s.Len, "the head's bytes and the frag's")
	assert.Equal(t, uint32(2048+2048), s.Truesize, "frame_sz for the head and for each frag")
	assert.Equal(t, uint64(77), s.Seq)
	assert.True(t, s.PPRecycle)
	require.Equal(t, uint8(1), s.NrFrags)
	assert.Equal(t, skb.Frag{Page: 6, Off: 64, Len: 1000}, s.Frags[0])
	assert.Zero(t, r.frames.Live())
	assert.Zero(t, r.frames.LiveFrags())
}

// TestDevmapBulkQueue holds Enqueue and Flush to devmap.c's bq_enqueue
// and bq_xmit_all: frames wait in the CPU's bulk queue of
// DEV_MAP_BULK_SIZE (16); the seventeenth sends the sixteen with one
// ndo_xdp_xmit, and xdp_do_flush (__dev_flush) sends the rest.
func TestDevmapBulkQueue(t *testing.T) {
	r := newRig(t, 1)
	m := NewDevmap(r.sim, r.net, r.frames, r.rel, 1e6, 64, -1)
	c := r.sim.CPU(0)
	c.Begin(0)
	const bulk = 16 // DEV_MAP_BULK_SIZE
	for i := 0; i < bulk; i++ {
		m.Enqueue(c, r.frame(t, mem.PageID(i), MemPageShared, 0))
	}
	assert.Equal(t, DevmapCounters{}, m.C)
	assert.Equal(t, bulk, m.InFlight())
	m.Enqueue(c, r.frame(t, 100, MemPageShared, 0))
	assert.Equal(t, DevmapCounters{Sent: bulk, Xmits: 1}, m.C)
	m.Flush(c)
	assert.Equal(t, DevmapCounters{Sent: bulk + 1, Xmits: 2}, m.C)
	m.Flush(c)
	c.End()
	assert.Equal(t, uint64(2), m.C.Xmits, "an empty bulk queue sends nothing")
	assert.Equal(t, bulk+1, m.InFlight())
}

// TestDevmapFullRingDrops holds xmit to bq_xmit_all: the frames the next
// device's TX ring cannot take (ndo_xdp_xmit sends fewer than asked) are
// counted and freed by the caller with xdp_return_frame_rx_napi.
func TestDevmapFullRingDrops(t *testing.T) {
	r := newRig(t, 1)
	const ring = 4
	m := NewDevmap(r.sim, r.net, r.frames, r.rel, 1e6, ring, -1)
	c := r.sim.CPU(0)
	c.Begin(0)
	for i := 0; i < ring+3; i++ {
		m.Enqueue(c, r.frame(t, mem.PageID(i), MemPagePool, 0))
	}
	m.Flush(c)
	c.End()
	var why drop.Counts
	why[drop.DevmapFull] = 3 // bq_xmit_all's drops, all of them for the full ring
	assert.Equal(t, DevmapCounters{Sent: ring, Drops: 3, Xmits: 1, Reasons: why}, m.C)
	assert.Equal(t, []mem.PageID{ring, ring + 1, ring + 2}, r.rel.pages())
	for _, g := range r.rel.got {
		assert.Equal(t, skb.Context{Softirq: true, Direct: true, Frame: true}, g.ctx)
	}
	assert.Equal(t, ring, m.InFlight())
}

// TestDevmapCompletions holds completion to the next device's TX
// completion: frames leave at the device's rate (one per 1/max_pps), the
// completion interrupt runs on the completion CPU after the last frame
// sent by then and the IRQ latency, and gives every frame sent back with
// xdp_return_frame_bulk (softirq, not direct: not the receiving queue's
// NAPI), re-arming for frames still on the wire.
func TestDevmapCompletions(t *testing.T) {
	r := newRig(t, 2)
	const pps = 1e6 // a frame a microsecond
	m := NewDevmap(r.sim, r.net, r.frames, r.rel, pps, 64, 1)
	c := r.sim.CPU(0)
	c.Begin(0)
	for i := 0; i < 4; i++ {
		m.Enqueue(c, r.frame(t, mem.PageID(i), MemPagePool, 0))
	}
	m.Flush(c)
	c.End()
	at, ok := r.sim.Queue.Peek()
	require.True(t, ok)
	// The first frame starts on the wire once ndo_xdp_xmit has written
	// it, and is done a 1/max_pps later.
	costs := r.sim.Costs
	first := sim.Time(0).Add(costs.NDOXmit + costs.XmitFrame + sim.Microsecond)
	assert.Equal(t, first.Add(costs.IRQLatency), at, "armed for the first frame's end")
	r.run(t, sim.Time(sim.Millisecond))
	assert.Equal(t, uint64(4), m.Next().Completed)
	assert.Zero(t, m.InFlight())
	assert.Zero(t, r.frames.Live())
	require.Len(t, r.rel.got, 4)
	for _, g := range r.rel.got {
		assert.Equal(t, 1, g.cpu, "completed on the completion CPU")
		assert.Equal(t, skb.Context{Softirq: true, Frame: true}, g.ctx)
		assert.True(t, g.pp)
	}
	assert.Equal(t, []mem.PageID{0, 1, 2, 3}, r.rel.pages())
}
