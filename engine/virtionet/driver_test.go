package virtionet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/mem"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// udp is open traffic of one UDP flow of frames of size bytes at pps.
func udp(size int, pps float64) *scenario.Traffic {
	return &scenario.Traffic{Size: size, Flows: 1, Proto: "udp", DstPort: 9, RatePPS: pps}
}

// chainLens is the lengths of the descriptors of the chain at head.
func chainLens(q *virtq.Queue, head uint16) []uint32 {
	var out []uint32
	for i := head; ; {
		d := q.DeviceDesc(i)
		out = append(out, d.Len)
		if d.Flags&virtq.DescFNext == 0 {
			return out
		}
		i = d.Next
	}
}

// TestAddRecvbufSmall holds the small-mode refill to add_recvbuf_small:
// every ring entry gets one buffer of one descriptor, hdr_len +
// GOOD_PACKET_LEN writable, taken from a page_frag block of
// SKB_DATA_ALIGN(hdr_len + VIRTNET_RX_PAD + GOOD_PACKET_LEN +
// xdp_headroom) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) bytes:
// 1920 without XDP, 2176 with its 256 bytes of headroom.
func TestAddRecvbufSmall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prog     *bpf.CollectionSpec
		truesize uint32
	}{
		{"no XDP", nil, 1920},
		{"XDP", bpf.ProgPass(), 2176},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ring = 64
			r := newRig(t, testConfig(scenario.ModeSmall, ring), rigOpts{prog: tc.prog})
			rq := r.rq()
			assert.Zero(t, rq.VQ.NumFree(), "try_fill_recv fills the ring")
			bufs := r.posted()
			require.Len(t, bufs, ring, "one buffer per entry")
			for _, b := range bufs {
				assert.Equal(t, uint32(HdrLen+GoodPacketLen), b.len)
				assert.Equal(t, tc.truesize, b.truesize)
				assert.Equal(t, []uint32{HdrLen + GoodPacketLen}, chainLens(rq.VQ, b.head))
			}
			assert.Equal(t, 1, rq.DescPerBuf())
			assert.Equal(t, 0, rq.PagesPerBuf(), "page_frag buffers share their pages")
			assert.Equal(t, uint64(1), rq.Stats.Refills)
		})
	}
}

// TestAddRecvbufBig holds the big-mode refill to add_recvbuf_big: each
// buffer is big_packets_num_skbfrags + 1 pages chained through
// page->private, posted as num_skbfrags + 2 entries (the header, the rest
// of the first page after the padded header, a page each); in as many
// descriptors of the ring, or, with INDIRECT_DESC, in a table of their own
// behind one (virtqueue_add_split's descs_used = 1). A ring that cannot
// take a whole chain is left with its free entries (-ENOSPC).
func TestAddRecvbufBig(t *testing.T) {
	const ring, frags = 64, 3 // 3: DIV_ROUND_UP(9000, PAGE_SIZE), the 6.1+ sizing
	for _, tc := range []struct {
		name     string
		indirect bool
		bufs     int
		free     int
	}{
		{"direct", false, ring / (frags + 2), ring % (frags + 2)},
		{"indirect", true, ring, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(scenario.ModeBig, ring)
			cfg.NumSkbFrags, cfg.DeviceMTU, cfg.BigPackets, cfg.IndirectDesc = frags, 9000, true, tc.indirect
			r := newRig(t, cfg, rigOpts{})
			rq := r.rq()
			bufs := r.posted()
			require.Len(t, bufs, tc.bufs)
			assert.Equal(t, tc.free, rq.VQ.NumFree())
			assert.Equal(t, int64(tc.bufs*(frags+1)), r.mem.Count(mem.Virtqueue), "num_skbfrags + 1 pages a buffer")
			assert.Zero(t, r.mem.Count(mem.BigChain), "-ENOSPC before taking pages: none left on rq->pages")
			assert.Equal(t, tc.indirect, rq.Indirect())
			assert.Equal(t, frags+2, rq.SGPerBuf())
			want := []uint32{HdrLen, mem.PageSize - PaddedVnetHdrLen, mem.PageSize, mem.PageSize, mem.PageSize}
			for _, b := range bufs {
				if tc.indirect {
					assert.Equal(t, []uint32{uint32(len(want)) * 16}, chainLens(rq.VQ, b.head), "one ring descriptor: the table")
					assert.Equal(t, len(want), rq.VQ.IndirectLen(b.head))
				} else {
					assert.Equal(t, want, chainLens(rq.VQ, b.head))
				}
			}
		})
	}
}

// TestAddRecvbufMergeable holds the mergeable refill to
// add_recvbuf_mergeable and get_mergeable_buf_len: without XDP a buffer
// is the EWMA of packet lengths clamped to [min_buf_len, PAGE_SIZE -
// hdr_len] plus the header, L1-aligned, its truesize its length (the
// page's hole goes to the buffer that cannot be followed by another);
// with XDP it is PAGE_SIZE less the room for the headroom and
// skb_shared_info, truesize PAGE_SIZE, whatever the EWMA.
func TestAddRecvbufMergeable(t *testing.T) {
	t.Run("no XDP", func(t *testing.T) {
		cfg := testConfig(scenario.ModeMergeable, 256)
		r := newRig(t, cfg, rigOpts{})
		rq := r.rq()
		// mergeable_min_buf_len: a ring of 256 holds a 1500-byte packet
		// in far less than GOOD_PACKET_LEN a buffer.
		assert.Equal(t, uint32(GoodPacketLen), rq.MinBufLen())
		assert.Equal(t, uint32(1536), rq.MergeableBufLen(), "SKB_DATA_ALIGN(12 + 1518)")
		plain := 0
		for _, b := range r.posted() {
			assert.Equal(t, b.truesize, b.len, "no room without XDP")
			assert.GreaterOrEqual(t, b.len, uint32(1536))
			assert.Less(t, b.len, uint32(2*1536), "a hole is less than another buffer")
			if b.len == 1536 {
				plain++
			}
		}
		assert.Greater(t, plain, 200)
	})
	t.Run("XDP", func(t *testing.T) {
		r := newRig(t, testConfig(scenario.ModeMergeable, 256), rigOpts{prog: bpf.ProgPass()})
		room := uint32(skbDataAlign(XDPHeadroom + ShinfoSize))
		for _, b := range r.posted() {
			assert.Equal(t, mem.PageSize-room, b.len)
			assert.Equal(t, uint32(mem.PageSize), b.truesize)
		}
	})
}

// runPackets steps the rig until its queue has received n packets
// (rx_packets), or a second has passed.
func (r *rig) runPackets(n uint64) {
	r.t.Helper()
	for r.rq().Stats.Packets < n {
		at, ok := r.sim.Queue.Peek()
		require.True(r.t, ok && at < sim.Time(sim.Second), "%d packets of %d", r.rq().Stats.Packets, n)
		r.sim.Queue.Step()
	}
	require.NoError(r.t, r.sim.Err())
}

// TestMergeableLengthFollowsTheEWMA holds receive_mergeable's
// ewma_pkt_len_add (precision 0, weight 64) and get_mergeable_buf_len:
// the first packet sets the average, each next one moves it by 1/64th,
// and the refill that follows (virtnet_receive, more than half of
// min(budget, ring) free) posts buffers of the new length. A packet
// longer than a buffer spans num_buffers of them.
func TestMergeableLengthFollowsTheEWMA(t *testing.T) {
	cfg := testConfig(scenario.ModeMergeable, 256)
	cfg.DeviceMTU, cfg.BigPackets = 9000, true
	cfg.Budget = 4 // refill when more than 2 entries are free
	tr := udp(0, 1000)
	tr.Sizes = []int{3000, 1000}
	r := newRig(t, cfg, rigOpts{traffic: tr})
	rq := r.rq()

	r.runPackets(1)
	assert.Equal(t, uint32(3000), rq.EWMA(), "the first packet sets the average")
	assert.Equal(t, 254, len(r.posted()), "3000 bytes took two buffers of 1536")
	assert.Equal(t, uint64(1), rq.Stats.Refills, "two entries free: no refill")

	r.runPackets(2)
	assert.Equal(t, uint32((3000*63+1000)/64), rq.EWMA())
	assert.Equal(t, uint32(skbDataAlign(HdrLen+(3000*63+1000)/64)), rq.MergeableBufLen())
	assert.Equal(t, uint64(2), rq.Stats.Refills, "three entries free: refilled")
	longer := 0
	for _, b := range r.posted() {
		if b.len >= rq.MergeableBufLen() {
			longer++
		}
	}
	assert.Equal(t, 3, longer, "the refill's buffers are of the average's length")
	assert.Zero(t, rq.VQ.NumFree())
	assert.Equal(t, uint64(4000), rq.Stats.Bytes)
	assert.Equal(t, uint64(2), r.stack.Counters().Delivered)
	assert.Zero(t, rq.Stats.LengthErrors)
}

// TestReceiveBufLengthChecks holds receive_buf and the receive paths to
// their length checks, the device here writing what used lengths and
// num_buffers it likes: a buffer shorter than the header and an Ethernet
// header is a length error in every mode (receive_buf), as is a small
// packet longer than GOOD_PACKET_LEN (receive_small), a mergeable one
// longer than its buffer's truesize less room, or with num_buffers 0 or
// more buffers than the device used ("%d buffers out of %d missing",
// receive_mergeable); a big packet longer than its pages is dropped
// without one (receive_big). Each drop gives its buffer back.
func TestReceiveBufLengthChecks(t *testing.T) {
	fixed := func(n uint32) func(rxBuf) uint32 { return func(rxBuf) uint32 { return n } }
	for _, tc := range []struct {
		name      string
		mode      string
		prog      *bpf.CollectionSpec
		length    func(b rxBuf) uint32
		numBufs   uint16
		lenErrs   uint64
		drops     uint64
		delivered uint64
		puts      int // pages put back (put_page)
		chain     int64
	}{
		{"small ok", scenario.ModeSmall, nil, fixed(100), 0, 0, 0, 1, 1, 0},
		{"small runt", scenario.ModeSmall, nil, fixed(HdrLen + EthHlen - 1), 0, 1, 1, 0, 1, 0},
		{"small over GOOD_PACKET_LEN", scenario.ModeSmall, nil, fixed(HdrLen + GoodPacketLen + 1), 0, 1, 1, 0, 1, 0},
		{"mergeable ok", scenario.ModeMergeable, nil, fixed(1000), 1, 0, 0, 1, 1, 0},
		{"mergeable runt", scenario.ModeMergeable, nil, fixed(HdrLen + EthHlen - 1), 1, 1, 1, 0, 1, 0},
		{"mergeable over truesize", scenario.ModeMergeable, nil, func(b rxBuf) uint32 { return b.truesize + 1 }, 1, 1, 1, 0, 1, 0},
		{"mergeable XDP over truesize less room", scenario.ModeMergeable, bpf.ProgPass(), func(b rxBuf) uint32 {
			return b.truesize - uint32(skbDataAlign(XDPHeadroom+ShinfoSize)) + 1
		}, 1, 1, 1, 0, 1, 0},
		{"mergeable num_buffers 0", scenario.ModeMergeable, nil, fixed(1000), 0, 1, 1, 0, 1, 0},
		{"mergeable buffers missing", scenario.ModeMergeable, nil, fixed(1000), 2, 1, 1, 0, 1, 0},
		{"big over its pages", scenario.ModeBig, nil, fixed(4*mem.PageSize + 1), 0, 0, 1, 0, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mode, 16)
			if tc.mode == scenario.ModeBig {
				cfg.NumSkbFrags, cfg.DeviceMTU, cfg.BigPackets = 3, 9000, true
			}
			r := newRig(t, cfg, rigOpts{prog: tc.prog})
			r.run(0)
			rq := r.rq()
			chainBefore := r.mem.Count(mem.BigChain)
			r.useOne(t, tc.numBufs, tc.length)
			assert.Equal(t, uint64(1), rq.Stats.Packets)
			assert.Equal(t, tc.lenErrs, rq.Stats.LengthErrors, "rx_length_errors")
			assert.Equal(t, tc.drops, rq.Stats.Drops, "rx_drops")
			assert.Equal(t, tc.delivered, r.stack.Counters().Delivered)
			assert.Equal(t, tc.puts, r.rel.pagePuts, "the buffer's page reference went back")
			assert.Equal(t, tc.chain, r.mem.Count(mem.BigChain)-chainBefore, "give_pages: the chain back on rq->pages")
			assert.Zero(t, r.skbs.Live())
		})
	}
}

// useOne has the device use the next posted buffer: num_buffers numBufs
// in its header when not 0, the used length length(the buffer); then the
// interrupt, and a millisecond for the driver to take it.
func (r *rig) useOne(t *testing.T, numBufs uint16, length func(rxBuf) uint32) {
	t.Helper()
	rq := r.rq()
	head, ok := rq.VQ.DevicePop()
	require.True(t, ok)
	var b rxBuf
	for _, p := range r.posted() {
		if p.head == head {
			b = p
		}
	}
	if numBufs > 0 {
		h := device.VirtioNetHdr{NumBuffers: numBufs}
		h.Put(rq.Dev.Window(head))
	}
	rq.VQ.DevicePushUsed(uint32(head), length(b))
	r.irq()
	r.run(sim.Time(sim.Millisecond))
}

// TestDriverPutsAreDirect is FIDELITY row P1: the page_pool series for
// virtio_net give a buffer the driver drops or copies out of in its NAPI
// poll back through virtnet_put_page(rq, page, true), allow_direct (the
// alloc cache when it is the page's last reference); only
// virtnet_rq_free_buf (a runt) passes false. Before, every driver-side
// put but XDP_DROP's was a plain softirq put, the ptr_ring until 6.5.
func TestDriverPutsAreDirect(t *testing.T) {
	fixed := func(n uint32) func(rxBuf) uint32 { return func(rxBuf) uint32 { return n } }
	for _, tc := range []struct {
		name      string
		mode      string
		length    func(b rxBuf) uint32
		numBufs   uint16
		direct    bool
		delivered uint64
	}{
		{"small over GOOD_PACKET_LEN (receive_small's err)", scenario.ModeSmall, fixed(HdrLen + GoodPacketLen + 1), 0, true, 0},
		{"mergeable over truesize (err_skb)", scenario.ModeMergeable, func(b rxBuf) uint32 { return b.truesize + 1 }, 1, true, 0},
		{"mergeable copied whole (page_to_free)", scenario.ModeMergeable, fixed(HdrLen + 60), 1, true, 1},
		{"runt (virtnet_rq_free_buf)", scenario.ModeMergeable, fixed(HdrLen + EthHlen - 1), 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.mode, 16)
			cfg.BufferSource, cfg.Premapped, cfg.VirtioNetPagePool = scenario.SourcePagePool, true, true
			r := newRig(t, cfg, rigOpts{})
			r.run(0)
			rq := r.rq()
			r.useOne(t, tc.numBufs, tc.length)
			require.Equal(t, uint64(1), rq.Stats.Packets)
			assert.Equal(t, tc.delivered, r.stack.Counters().Delivered)
			require.Equal(t, 1, r.rel.poolPuts, "the buffer's page went back to its pool once")
			if tc.direct {
				assert.Equal(t, 1, r.rel.direct, "virtnet_put_page(rq, page, true)")
				return
			}
			assert.Zero(t, r.rel.direct, "virtnet_rq_free_buf: allow_direct false")
		})
	}
}

// TestRefillWhenHalfFree holds virtnet_receive's refill: after the
// receive loop, try_fill_recv runs only when more than half of
// min(budget, ring size) entries are free, and then fills the ring.
func TestRefillWhenHalfFree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int
		used   int
		refill bool
	}{
		{"ring 16, budget 64: 8 free", 64, 8, false},
		{"ring 16, budget 64: 9 free", 64, 9, true},
		{"ring 16, budget 4: 2 free", 4, 2, false},
		{"ring 16, budget 4: 3 free", 4, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(scenario.ModeSmall, 16)
			cfg.Budget = tc.budget
			r := newRig(t, cfg, rigOpts{})
			r.run(0)
			rq := r.rq()
			for i := 0; i < tc.used; i++ {
				r.use(100, 0)
			}
			r.irq()
			r.run(sim.Time(sim.Millisecond))
			assert.Equal(t, uint64(tc.used), rq.Stats.Packets)
			if tc.refill {
				assert.Equal(t, uint64(2), rq.Stats.Refills)
				assert.Zero(t, rq.VQ.NumFree())
			} else {
				assert.Equal(t, uint64(1), rq.Stats.Refills, "only the open's")
				assert.Equal(t, tc.used, rq.VQ.NumFree())
			}
		})
	}
}

// exhaust takes every free page of the rig's memory, and returns them.
func exhaust(r *rig) []mem.PageID {
	var held []mem.PageID
	c := r.sim.CPU(0)
	for {
		p, err := r.mem.AllocPages(c, 0, mem.Driver, 0)
		if err != nil {
			return held
		}
		held = append(held, p)
	}
}

func (r *rig) putAll(held []mem.PageID) {
	r.t.Helper()
	c := r.sim.CPU(0)
	c.Begin(r.sim.Now())
	for _, p := range held {
		_, err := r.mem.PutPage(c, p)
		require.NoError(r.t, err)
	}
	c.End()
}

// TestTryFillRecvFailsRefillWork holds the driver before 6.19 to
// try_fill_recv's failure and refill_work: a ring that could not be
// filled (virtnet_open's "if oom use wq") queues refill_work, which runs
// in process context on a kworker after its wake-up, retries with
// GFP_KERNEL, and, still short, queues itself again after HZ/2; once
// pages are back it fills the ring and schedules NAPI
// (virtnet_napi_enable).
func TestTryFillRecvFailsRefillWork(t *testing.T) {
	var held []mem.PageID
	r := newRig(t, testConfig(scenario.ModeSmall, 16), rigOpts{pages: 1 << 10, before: func(r *rig) { held = exhaust(r) }})
	rq := r.rq()
	assert.Equal(t, 16, rq.VQ.NumFree(), "nothing posted")
	assert.NotZero(t, rq.Stats.AllocFails)
	r.run(sim.Time(sim.Millisecond))
	assert.Equal(t, RefillStats{Runs: 1, Retries: 1}, r.d.Refill, "refill_work ran and requeued itself")
	assert.Equal(t, 16, rq.VQ.NumFree())

	r.putAll(held)
	const hz2 = 500 * sim.Millisecond // HZ/2
	r.run(sim.Time(hz2) - 1)
	assert.Equal(t, uint64(1), r.d.Refill.Runs, "the retry waits HZ/2")
	r.run(sim.Time(hz2 + sim.Millisecond))
	assert.Equal(t, RefillStats{Runs: 2, Retries: 1}, r.d.Refill)
	assert.Zero(t, rq.VQ.NumFree(), "the ring is full")
	assert.False(t, r.d.refillQueued)
	assert.False(t, rq.NAPIScheduled(), "virtnet_napi_enable's poll ran and completed")
}

// TestTryFillRecvFailsRetriedInNAPI holds the driver since 6.19 to
// virtnet_receive's "we must return budget to make sure the NAPI is
// repolled": a failed refill makes the poll report its whole budget, so
// net_rx_action polls again and the next poll retries; refill_work is
// never queued.
func TestTryFillRecvFailsRetriedInNAPI(t *testing.T) {
	cfg := testConfig(scenario.ModeSmall, 16)
	cfg.RefillRetryInNAPI = true
	var held []mem.PageID
	r := newRig(t, cfg, rigOpts{pages: 1 << 10, before: func(r *rig) { held = exhaust(r) }})
	rq := r.rq()
	r.run(sim.Time(100 * sim.Microsecond))
	assert.Greater(t, rq.Stats.NAPIPolls, uint64(2), "polled again and again")
	assert.True(t, rq.NAPIScheduled())
	assert.Equal(t, 16, rq.VQ.NumFree())
	assert.Zero(t, r.d.Refill.Runs)
	assert.False(t, r.d.refillQueued)

	r.putAll(held) // CPU 0 frees the pages until about 370 us
	r.run(sim.Time(500 * sim.Microsecond))
	assert.Zero(t, rq.VQ.NumFree(), "the next poll filled the ring")
	assert.False(t, rq.NAPIScheduled(), "and completed")
	assert.Zero(t, r.d.Refill.Runs)
}

// TestNAPIBudget holds virtnet_poll to its budget and
// virtqueue_napi_complete: a poll receives at most budget packets; one
// that used it all stays scheduled and runs again (net_rx_action); one
// that received fewer completes NAPI and re-enables callbacks, so the
// next used buffer asks for an interrupt again.
func TestNAPIBudget(t *testing.T) {
	for _, tc := range []struct {
		used     int
		polls    []uint64 // rx_packets after each poll
		eventIdx bool
	}{
		{20, []uint64{8, 16, 20}, true},
		{16, []uint64{8, 16, 16}, true},
		{20, []uint64{8, 16, 20}, false},
	} {
		cfg := testConfig(scenario.ModeSmall, 32)
		cfg.Budget, cfg.EventIdx = 8, tc.eventIdx
		r := newRig(t, cfg, rigOpts{})
		r.run(0)
		rq := r.rq()
		require.False(t, rq.NAPIScheduled())
		for i := 0; i < tc.used; i++ {
			r.use(100, 0)
		}
		r.irq()
		require.True(t, r.sim.Queue.Step(), "the interrupt")
		require.True(t, rq.NAPIScheduled())
		var got []uint64
		var scheduled []bool
		for r.sim.Queue.Step() {
			got = append(got, rq.Stats.Packets)
			scheduled = append(scheduled, rq.NAPIScheduled())
		}
		require.NoError(t, r.sim.Err())
		assert.Equal(t, tc.polls, got, "%d used", tc.used)
		assert.Equal(t, []bool{true, true, false}, scheduled, "%d used: complete only below budget", tc.used)
		assert.Equal(t, uint64(1+len(tc.polls)), rq.Stats.NAPIPolls, "the open's poll and these")

		r.use(100, 0)
		assert.True(t, rq.VQ.DeviceNeedInterrupt(), "%d used: callbacks on again after napi_complete", tc.used)
	}
}

// TestXDPVerdicts holds runXDP to virtnet_xdp_handler and its callers in
// receive_small and receive_mergeable: XDP_DROP frees the buffer at once
// into its page_pool's alloc cache (a direct recycle from the pool's
// NAPI); XDP_PASS builds an skb around the buffer (build_skb) that the
// stack frees through the pool's ring; XDP_TX converts it to an
// xdp_frame queued on the XDP send queue (virtnet_xdp_xmit), which the
// next transmit reclaims; XDP_REDIRECT into a cpumap enqueues the frame
// (xdp_do_redirect) for the kthread on the target CPU.
func TestXDPVerdicts(t *testing.T) {
	for _, mode := range []string{scenario.ModeSmall, scenario.ModeMergeable} {
		for _, tc := range []struct {
			name string
			prog *bpf.CollectionSpec
		}{
			{"drop", bpf.ProgDrop()},
			{"pass", bpf.ProgPass()},
			{"tx", bpf.ProgTx()},
			{"redirect", bpf.ProgRedirectCPU(bpf.RedirectCPUConfig{Mode: bpf.CPUFixed, CPU: 1, NumCPUs: 2, QSize: 64})},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				cfg := testConfig(mode, 256)
				cfg.BufferSource, cfg.Premapped, cfg.VirtioNetPagePool = scenario.SourcePagePool, true, true
				r := newRig(t, cfg, rigOpts{cpus: 2, traffic: udp(64, 1e5), prog: tc.prog})
				r.run(sim.Time(sim.Millisecond))
				rq := r.rq()
				st := rq.Stats
				n := st.Packets
				require.Greater(t, n, uint64(50))
				assert.Equal(t, n, st.XDPPackets, "the program saw every packet")
				assert.Equal(t, n*64, st.Bytes)
				rec := rq.Pool.RecycleStats()
				delivered := r.stack.Counters().Delivered
				sq := r.d.SQ[0]
				switch tc.name {
				case "drop":
					assert.Equal(t, n, st.XDPDrops)
					assert.Equal(t, n, st.Drops)
					assert.Zero(t, delivered)
					assert.Equal(t, n, rec.Cached, "recycled into the alloc cache")
					assert.Zero(t, rec.Ring)
				case "pass":
					assert.Zero(t, st.XDPDrops)
					assert.Equal(t, n, delivered)
					assert.Equal(t, int(n), r.rel.poolPuts, "the skb's free gives the page back")
					assert.Zero(t, r.rel.direct, "not from the pool's NAPI")
					assert.Equal(t, n, rec.Ring)
				case "tx":
					assert.Equal(t, n, st.XDPTx)
					assert.Equal(t, n, sq.Stats.XDPTx)
					assert.Zero(t, delivered)
					assert.NotZero(t, sq.Stats.Packets, "free_old_xmit reclaimed sent frames")
					assert.Equal(t, n, sq.Stats.Packets+uint64(sq.VQ.Outstanding()), "each frame sent or still queued")
					assert.Equal(t, int(n-sq.Stats.Packets), r.frames.Live())
				case "redirect":
					assert.Equal(t, n, st.XDPRedirects)
					require.NotNil(t, r.cpumap)
					c := r.cpumap.C
					assert.Equal(t, n, c.Enqueued+uint64(r.cpumap.Queued()))
					assert.Equal(t, c.Enqueued, c.Passed+uint64(r.cpumap.Queued()))
					assert.Equal(t, c.Passed, delivered)
					assert.NotZero(t, r.sim.CPU(1).Busy(), "the kthread ran on the target CPU")
				}
			})
		}
	}
}

// TestReceiveMergeableSpansBuffers holds receive_mergeable: a packet
// longer than one buffer comes in num_buffers of them, the first
// page_to_skb's head (the Ethernet header copied when the buffer leaves
// no room for skb_shared_info) and the rest its frags, coalesced into the
// previous frag when they continue it in the same page
// (skb_coalesce_rx_frag); rx_bytes counts the packet once.
func TestReceiveMergeableSpansBuffers(t *testing.T) {
	cfg := testConfig(scenario.ModeMergeable, 256)
	cfg.DeviceMTU, cfg.BigPackets = 9000, true
	r := newRig(t, cfg, rigOpts{traffic: udp(3000, 1e5)})
	r.run(sim.Time(sim.Millisecond))
	rq := r.rq()
	n := rq.Stats.Packets
	require.Greater(t, n, uint64(50))
	assert.Equal(t, n*3000, rq.Stats.Bytes)
	assert.Equal(t, n, r.stack.Counters().Delivered)
	assert.Zero(t, rq.Stats.LengthErrors)
	assert.Zero(t, rq.Stats.Drops)
	assert.Equal(t, uint32(3000), rq.EWMA())
	assert.GreaterOrEqual(t, rq.Dev.Counters().Buffers, 2*n, "two buffers a packet at least")
	assert.Zero(t, r.skbs.Live())
}

// TestReceiveBig holds receive_big and page_to_skb on a chain of pages:
// from 5.13 a packet longer than GOOD_COPY_LEN whose data leaves room for
// skb_shared_info in the first page becomes an skb built around it, the
// rest of the chain going back to rq->pages (give_pages); before, and for
// short packets always, a small head gets the first bytes copied.
func TestReceiveBig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  bool
		size   int
		built  bool
		copied bool
	}{
		{"5.13 build_skb", true, 1000, true, false},
		{"5.12 copy", false, 1000, false, false},
		{"5.13 short", true, 100, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(scenario.ModeBig, 256)
			cfg.NumSkbFrags, cfg.DeviceMTU, cfg.BigPackets = 3, 9000, true
			cfg.PageToSKBBuild = tc.build
			r := newRig(t, cfg, rigOpts{traffic: udp(tc.size, 1e5)})
			r.run(sim.Time(sim.Millisecond))
			rq := r.rq()
			n := rq.Stats.Packets
			require.Greater(t, n, uint64(50))
			assert.Equal(t, n, r.stack.Counters().Delivered)
			if tc.built {
				assert.Equal(t, n, rq.Stats.BigBuilt)
			} else {
				assert.Zero(t, rq.Stats.BigBuilt)
			}
			if tc.copied {
				assert.Equal(t, n, rq.Stats.Copied, "GOOD_COPY_LEN: copied whole")
			} else {
				assert.Zero(t, rq.Stats.Copied)
			}
			// The skb holds the first page, as its head or its frag,
			// unless the packet was copied whole; the pages it did not
			// reach went back to rq->pages for the refill (get_a_page).
			wantPuts := n
			if tc.copied {
				wantPuts = 0
			}
			assert.Equal(t, wantPuts, uint64(r.rel.pagePuts), "pages freed with the skbs")
			assert.Zero(t, r.mem.Count(mem.Driver), "no page left outside the ring and rq->pages")
			assert.Zero(t, r.skbs.Live())
		})
	}
}
