package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// FIDELITY.md row 3: virtnet_find_vqs gives the receive queues a ctx only
// when !big_packets || mergeable_rx_bufs, and a queue without ctx uses
// indirect descriptors when INDIRECT_DESC is negotiated
// (virtqueue_use_indirect: total_sg > 1 and num_free). So with
// indirect_desc every big buffer of num_skbfrags + 2 entries takes one
// ring slot, and the 1024-entry ring holds 1024 buffers; without it, a
// buffer is a chain of num_skbfrags + 2 ring descriptors and the ring
// holds 1024 / (num_skbfrags + 2). The engine used to create every receive
// queue with a ctx, so big buffers never went indirect.
func TestBigModeIndirectDescriptorsTakeOneSlot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kernel   string
		indirect bool
		frags    int
		bufs     int
		perBuf   int
	}{
		{"6.1, indirect: one slot per 4-page buffer", "6.1", true, 3, 1024, 1},
		{"6.0, indirect: one slot per 18-page buffer", "6.0", true, 17, 1024, 1},
		{"6.1, direct: 5 descriptors per buffer", "6.1", false, 3, 1024 / 5, 5},
		{"6.0, direct: 19 descriptors per buffer", "6.0", false, 17, 1024 / 19, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "r2-mtu9000-after", func(s *scenario.Scenario) {
				s.Kernel = tc.kernel
				s.Features.IndirectDesc = tc.indirect
			})
			require.NoError(t, w.CheckEveryEvent(0))
			rq := w.Driver.RQ[0]
			assert.Equal(t, "big", w.Driver.Mode())
			assert.Equal(t, tc.indirect, rq.VQ.Indirect(), "a big-mode queue has no ctx, so it may go indirect")
			assert.Equal(t, tc.indirect, rq.Indirect())
			assert.Equal(t, tc.frags, w.Driver.NumSkbFrags())
			assert.Equal(t, tc.perBuf, rq.DescPerBuf())
			assert.Equal(t, tc.frags+2, rq.SGPerBuf())
			assert.Equal(t, tc.bufs, rq.VQ.Outstanding())
			assert.Equal(t, tc.bufs*tc.perBuf, rq.PostedDescriptors())
			assert.Equal(t, 1024-tc.bufs*tc.perBuf, rq.VQ.NumFree())
			assert.Equal(t, int64(tc.bufs*(tc.frags+1)), w.Mem.Count(mem.Virtqueue), "num_skbfrags + 1 pages per buffer")
			for i := 0; i < rq.VQ.Outstanding(); i++ {
				head := rq.VQ.AvailEntry(rq.VQ.LastUsed() + uint16(i))
				want := 0
				if tc.indirect {
					want = tc.frags + 2
				}
				require.Equal(t, want, rq.VQ.IndirectLen(head), "head %d", head)
			}
			require.NoError(t, w.RunPackets(3000))
			require.NoError(t, w.Err())
			require.NoError(t, w.CheckNow())
			assert.Zero(t, counter(t, w, "rx_drops"))
			assert.GreaterOrEqual(t, counter(t, w, "rx_packets"), uint64(3000))
		})
	}
}

// The indirect table is kmalloc'ed per add (alloc_indirect_split, with the
// refill's GFP_ATOMIC) and kfree'd per detach (detach_buf_split): the
// driver's CPU pays for both with indirect descriptors and for neither
// without.
func TestBigModeIndirectTableCosts(t *testing.T) {
	busy := func(indirect bool, kmalloc int64) sim.Duration {
		w := preset(t, "r2-mtu9000-after", func(s *scenario.Scenario) {
			s.Features.IndirectDesc = indirect
			s.Costs = map[string]int64{"kmalloc": kmalloc, "kfree": kmalloc}
		})
		require.NoError(t, w.RunPackets(2000))
		var total sim.Duration
		for i := 0; i < w.Sim.NumCPU(); i++ {
			total += w.Sim.CPU(i).Busy()
		}
		return total
	}
	assert.Greater(t, busy(true, 10_000), busy(true, 0))
	assert.Equal(t, busy(false, 10_000), busy(false, 0))
}

// Small and mergeable queues have a ctx (virtnet_find_vqs), which rules
// indirect descriptors out even when INDIRECT_DESC is negotiated.
func TestCtxQueuesNeverGoIndirect(t *testing.T) {
	for _, name := range []string{"default", "small-mode"} {
		w := preset(t, name, func(s *scenario.Scenario) { s.Features.IndirectDesc = true })
		rq := w.Driver.RQ[0]
		assert.False(t, rq.VQ.Indirect(), name)
		assert.Equal(t, 1, rq.DescPerBuf(), name)
	}
}

// FIDELITY.md row 18: mergeable_min_buf_len sizes the floor of mergeable
// buffers for the largest packet the device may send: IP_MAX_MTU when
// vi->big_packets (guest GSO, or a device MTU above 1500), else
// dev->max_mtu, which is the device's MTU with VIRTIO_NET_F_MTU and
// ETH_MAX_MTU (65535) without. On a 16-entry ring a 65535-byte packet
// needs DIV_ROUND_UP(12 + 14 + 4 + 65535, 16) - 12 = 4086-byte buffers;
// 1500 bytes need no more than GOOD_PACKET_LEN. The engine used the
// scenario's MTU in every case.
func TestMergeableMinBufLen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ring   int
		mtu    int
		fmtu   bool
		gso    bool
		minBuf uint32
		bufLen uint32
	}{
		{"F_MTU 1500: max_mtu is the device's", 16, 1500, true, false, 1518, 1536},
		{"no F_MTU: max_mtu is ETH_MAX_MTU", 16, 1500, false, false, 4086, 4096},
		{"F_MTU 9000: big_packets, IP_MAX_MTU", 16, 9000, true, false, 4086, 4096},
		{"guest GSO: big_packets, IP_MAX_MTU", 16, 1500, true, true, 4086, 4096},
		{"no F_MTU, 256 entries: GOOD_PACKET_LEN", 256, 1500, false, false, 1518, 1536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "default", func(s *scenario.Scenario) {
				s.RingSize = tc.ring
				s.MTU = tc.mtu
				s.Features.MTU = tc.fmtu
				s.Features.GuestGSO = tc.gso
			})
			rq := w.Driver.RQ[0]
			assert.Equal(t, "mergeable", w.Driver.Mode())
			assert.Equal(t, tc.minBuf, rq.MinBufLen())
			// get_mergeable_buf_len clamps to PAGE_SIZE - hdr_len before
			// adding the header: a floor above it gives whole pages.
			assert.Equal(t, tc.bufLen, rq.MergeableBufLen())
		})
	}
}

// FIDELITY.md row 19: since 5.13 page_to_skb builds the skb around the
// buffer (build_skb) when the packet is longer than GOOD_COPY_LEN and
// leaves room for skb_shared_info: for a big buffer (truesize PAGE_SIZE,
// hdr_padded_len 32) data of up to 4096 - 32 - 320 = 3744 bytes. The rest
// of the chain goes back to rq->pages. Longer packets, and every packet
// before 5.13, get a small head with the first bytes copied. The engine
// used to copy always.
func TestBigModePageToSKBBuildsAroundTheFirstPage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel string
		size   int
		built  bool
	}{
		{"5.13, 1514-byte frames fit the first page", "5.13", 1514, true},
		{"7.0, 3744 bytes of data, the most that fits", "7.0", 3744, true},
		{"7.0, 3745 bytes do not fit", "7.0", 3745, false},
		{"7.0, 9014-byte frames span pages", "7.0", 9014, false},
		{"5.12, always copied", "5.12", 1514, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := preset(t, "big-9000", func(s *scenario.Scenario) {
				s.Kernel = tc.kernel
				s.Traffic.Size = tc.size
			})
			require.NoError(t, w.CheckEveryEvent(0))
			require.NoError(t, w.RunPackets(2000))
			require.NoError(t, w.Err())
			require.NoError(t, w.CheckNow())
			rq := w.Driver.RQ[0]
			rx := counter(t, w, "rx_packets")
			assert.GreaterOrEqual(t, rx, uint64(2000))
			assert.Zero(t, counter(t, w, "rx_drops"))
			assert.Zero(t, rq.Stats.Copied)
			if tc.built {
				assert.Equal(t, rx, rq.Stats.BigBuilt)
			} else {
				assert.Zero(t, rq.Stats.BigBuilt)
			}
		})
	}
}

// FIDELITY.md row 20: virtqueue_get_buf_ctx_split checks the used id, not
// the used length. A length longer than the buffer reaches the driver,
// which counts it: receive_small's GOOD_PACKET_LEN check is an
// rx_length_errors drop, big mode's receive_big check an rx_drops one;
// the queue stays up. A used id the driver never posted is BAD_RING: the
// queue is broken and receives nothing more. The engine used to break the
// queue for the length too.
func TestUsedLengthIsTheDriversCheckAndIDTheRings(t *testing.T) {
	inject := func(t *testing.T, name string, id func(head uint16) uint32, length uint32) *World {
		w := preset(t, name, func(s *scenario.Scenario) { s.Traffic.RatePPS = 1 })
		vq := w.Driver.RQ[0].VQ
		head, ok := vq.DevicePop()
		require.True(t, ok)
		vq.DevicePushUsed(id(head), length)
		require.NoError(t, w.RunUntil(sim.Time(100*sim.Microsecond)))
		require.NoError(t, w.Err())
		return w
	}
	same := func(head uint16) uint32 { return uint32(head) }
	t.Run("small: length past GOOD_PACKET_LEN", func(t *testing.T) {
		w := inject(t, "small-mode", same, 12+1600)
		rq := w.Driver.RQ[0]
		broken, _ := rq.VQ.Broken()
		assert.False(t, broken)
		assert.Zero(t, rq.VQ.Counters().BadRing)
		assert.Equal(t, uint64(1), counter(t, w, "rx_length_errors"))
		assert.Equal(t, uint64(1), counter(t, w, "rx_drops"))
		require.NoError(t, w.Check())
	})
	t.Run("big: length past the pages posted", func(t *testing.T) {
		w := inject(t, "big-9000", same, 4*4096+1)
		rq := w.Driver.RQ[0]
		broken, _ := rq.VQ.Broken()
		assert.False(t, broken)
		assert.Zero(t, counter(t, w, "rx_length_errors"))
		assert.Equal(t, uint64(1), counter(t, w, "rx_drops"))
		require.NoError(t, w.Check())
	})
	t.Run("an id out of range is BAD_RING", func(t *testing.T) {
		w := inject(t, "small-mode", func(uint16) uint32 { return 4096 }, 100)
		rq := w.Driver.RQ[0]
		broken, why := rq.VQ.Broken()
		assert.True(t, broken)
		assert.Contains(t, why, "id 4096 out of range")
		assert.Equal(t, uint64(1), rq.VQ.Counters().BadRing)
		assert.Zero(t, counter(t, w, "rx_packets"))
	})
}

// TestVhostDropsAFrameTooBigForItsBuffer: a host that sends frames larger
// than the guest's buffers (here 9014 bytes into small mode, the device's
// MTU not offered, so the guest posts GOOD_PACKET_LEN buffers). vhost's
// get_rx_bufs takes one buffer (quota 1), finds it too short (its
// overrun check), gives it back (vhost_discard_vq_desc) and returns
// UIO_MAXIOV + 1; handle_rx then drops the packet with a truncating
// recvmsg. So the guest sees nothing of it: no used entry, no
// rx_length_errors, and the buffer takes the next frame. The engine used
// to return the buffer used with length 0, which the driver counted as a
// length error; a hardware device still does so (its behaviour is the
// device's, not sourced).
func TestVhostDropsAFrameTooBigForItsBuffer(t *testing.T) {
	for _, kind := range []string{scenario.DeviceVhost, scenario.DeviceNIC} {
		t.Run(kind, func(t *testing.T) {
			w := preset(t, "small-mode", func(s *scenario.Scenario) {
				s.Features.MTU, s.MTU = false, 9000
				s.Traffic.Size, s.Traffic.Sizes = 0, []int{64, 9014}
				s.Device.Kind = kind
			})
			require.NoError(t, w.RunPackets(2000))
			require.NoError(t, w.Err())
			require.NoError(t, w.Check())
			tooBig, rx := counter(t, w, "host_too_big"), counter(t, w, "rx_packets")
			assert.Positive(t, tooBig)
			if kind == scenario.DeviceVhost {
				assert.Zero(t, counter(t, w, "rx_length_errors"), "vhost drops it on the host")
				assert.Zero(t, counter(t, w, "rx_drops"))
				assert.InDelta(t, float64(rx), float64(tooBig), 64, "every other frame is dropped on the host, the rest received")
			} else {
				assert.Equal(t, counter(t, w, "rx_length_errors"), counter(t, w, "rx_drops"), "a hardware device returns it empty")
				assert.Positive(t, counter(t, w, "rx_length_errors"))
			}
		})
	}
}

// XDP in big mode: virtnet_xdp_set attaches the program (CTRL_GUEST_OFFLOADS
// turns the guest offloads off), and receive_big never runs it, on every
// kernel: an xdp_drop program drops nothing and sees nothing, and every
// packet goes up the stack.
func TestXDPInBigModeNeverRuns(t *testing.T) {
	w := preset(t, "default", func(s *scenario.Scenario) {
		s.Features.MrgRxbuf, s.Features.GuestGSO = false, true
		s.Driver.BufferSource, s.Driver.DMA = scenario.SourcePage, scenario.DMARing
		s.RingSize = 256
		s.XDP = &scenario.XDP{Program: "xdp_drop"}
	})
	require.Equal(t, scenario.ModeBig, w.Scenario.Mode())
	require.NoError(t, w.RunPackets(2000))
	assert.GreaterOrEqual(t, counter(t, w, "rx_packets"), uint64(2000))
	assert.Zero(t, counter(t, w, "rx_xdp_packets"), "receive_big runs no program")
	assert.Zero(t, counter(t, w, "rx_xdp_drops"))
	assert.Equal(t, counter(t, w, "rx_packets"), counter(t, w, "stack_delivered"), "everything passes up")
}
