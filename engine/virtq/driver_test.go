package virtq

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		num  int
		ok   bool
	}{
		{"one", 1, true},
		{"two", 2, true},
		{"virtio_net default", 256, true},
		{"largest", 32768, true},
		{"zero", 0, false},
		{"negative", -4, false},
		{"not a power of two", 6, false},
		{"one past the largest", 32769, false},
		{"power of two too large", 65536, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := New(tc.num, Config{Name: "rx0"})
			if !tc.ok {
				require.ErrorIs(t, err, ErrBadSize)
				assert.Contains(t, err.Error(), fmt.Sprintf("size %d", tc.num))
				assert.Contains(t, err.Error(), "rx0")
				assert.Nil(t, q)
				return
			}
			require.NoError(t, err)
			verify(t, q)
			assert.Equal(t, tc.num, q.Size())
			assert.Equal(t, tc.num, q.NumFree())
			assert.Zero(t, q.AvailIdx())
			assert.Zero(t, q.UsedIdx())
		})
	}
}

func TestNewCtxForbidsIndirect(t *testing.T) {
	q := newQ(t, 8, Config{IndirectDesc: true, Ctx: true})
	assert.False(t, q.Indirect(), "__vring_new_virtqueue: indirect = feature && !context")
	q = newQ(t, 8, Config{IndirectDesc: true})
	assert.True(t, q.Indirect())
}

func TestAddCallerErrors(t *testing.T) {
	sg := []SG{{Addr: 0x1000, Len: 64}}
	tests := []struct {
		name    string
		cfg     Config
		out, in []SG
		token   Token
		ctx     uint64
		want    error
	}{
		{"zero token", Config{}, nil, sg, 0, 0, ErrZeroToken},
		{"no entries", Config{}, nil, nil, 1, 0, ErrNoSG},
		{"ctx on a queue without ctx", Config{}, nil, sg, 1, 7, ErrCtx},
		{"more entries than num", Config{}, make([]SG, 3), make([]SG, 2), 1, 0, ErrTooManySG},
		{"more entries than num, indirect", Config{IndirectDesc: true}, make([]SG, 5), nil, 1, 0, ErrTooManySG},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 4, tc.cfg)
			err := q.Add(tc.out, tc.in, tc.token, tc.ctx)
			require.ErrorIs(t, err, tc.want)
			verify(t, q)
			assert.Equal(t, 4, q.NumFree())
			assert.Zero(t, q.AvailIdx())
		})
	}
}

func TestAddUntilNoSpace(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		out, in  int // entries per buffer
		wantAdds int
		wantFree int // num_free left when ENOSPC
		wantKick bool
	}{
		{"one inbuf each", Config{}, 0, 1, 8, 0, false},
		{"three-entry chains", Config{}, 1, 2, 2, 2, true},
		{"three entries, indirect", Config{IndirectDesc: true}, 1, 2, 8, 0, true},
		{"two inbufs, ctx queue never indirect", Config{IndirectDesc: true, Ctx: true}, 0, 2, 4, 0, false},
		{"one outbuf each", Config{}, 1, 0, 8, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 8, tc.cfg)
			out := make([]SG, tc.out)
			in := make([]SG, tc.in)
			for i := range in {
				in[i] = SG{Addr: uint64(i) << 12, Len: 100}
			}
			adds := 0
			for tok := Token(1); ; tok++ {
				err := q.Add(out, in, tok, 0)
				verify(t, q)
				if err != nil {
					require.ErrorIs(t, err, ErrNoSpace)
					break
				}
				adds++
			}
			assert.Equal(t, tc.wantAdds, adds)
			assert.Equal(t, tc.wantFree, q.NumFree())
			assert.Equal(t, uint16(adds), q.AvailIdx())
			assert.Equal(t, uint64(1), q.Counters().NoSpace)
			// virtqueue_add_split notifies on ENOSPC when there are out entries.
			assert.Equal(t, tc.wantKick, q.Counters().Kicks == 1, "kicks %d", q.Counters().Kicks)
		})
	}
}

func TestFreeListIsLIFO(t *testing.T) {
	q := newQ(t, 8, Config{})
	for tok := Token(1); tok <= 4; tok++ {
		inbuf(t, q, tok, 1500)
	}
	assert.Equal(t, []uint16{4, 5, 6, 7}, freeList(q))
	for range 4 {
		_, ok := q.DevicePop()
		require.True(t, ok)
	}
	// The device completes out of order: heads 2, 0, 3, 1.
	for _, h := range []uint32{2, 0, 3, 1} {
		q.DevicePushUsed(h, 60)
	}
	var toks []Token
	for range 4 {
		tok, l := get(t, q)
		assert.Equal(t, uint32(60), l)
		toks = append(toks, tok)
	}
	assert.Equal(t, []Token{3, 1, 4, 2}, toks, "tokens come back in used-ring order")
	// Each freed head was pushed on the front of the list.
	assert.Equal(t, []uint16{1, 3, 0, 2, 4, 5, 6, 7}, freeList(q))
	inbuf(t, q, 10, 1500)
	assert.Equal(t, uint16(1), q.AvailEntry(4), "the last freed head is reused first")
}

func TestDetachChainLinksTailToOldFreeHead(t *testing.T) {
	q := newQ(t, 8, Config{})
	in := []SG{{Addr: 0x1000, Len: 10}, {Addr: 0x2000, Len: 20}, {Addr: 0x3000, Len: 30}}
	require.NoError(t, q.Add(nil, in, 1, 0)) // descs 0,1,2
	inbuf(t, q, 2, 100)                      // desc 3
	assert.Equal(t, []uint16{4, 5, 6, 7}, freeList(q))
	h := serve(t, q, 60)
	require.Equal(t, uint16(0), h)
	tok, l := get(t, q)
	assert.Equal(t, Token(1), tok)
	assert.Equal(t, uint32(60), l)
	assert.Equal(t, []uint16{0, 1, 2, 4, 5, 6, 7}, freeList(q))
}

// TestIndexWrap runs more than 65536 add/get cycles on a small ring with
// chains of varying length and out-of-order completion: indices wrap,
// every token comes back exactly once and in the device's order.
func TestIndexWrap(t *testing.T) {
	const cycles = 70000
	for _, cfg := range []Config{{}, {IndirectDesc: true}, {EventIdx: true}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			q := newQ(t, 8, cfg) // two chains of up to 3 descriptors fit
			out := []SG{{Addr: 0x100, Len: 12}}
			in := []SG{{Addr: 0x1000, Len: 1000}, {Addr: 0x2000, Len: 1000}}
			next := Token(1)
			added, got := 0, 0
			for got < cycles {
				// Post two buffers of 1..3 descriptors: tokens a and b.
				a, b := next, next+1
				for _, tok := range []Token{a, b} {
					n := added % 3
					require.NoError(t, q.Add(out, in[:n], tok, 0), "add %d", added)
					added++
					verify(t, q)
				}
				next += 2
				q.Kick()
				h1, ok1 := q.DevicePop()
				h2, ok2 := q.DevicePop()
				require.True(t, ok1 && ok2)
				// Every other round the device completes b first.
				swap := added%4 == 0
				if swap {
					h1, h2 = h2, h1
				}
				q.DevicePushUsed(uint32(h1), 0)
				q.DevicePushUsed(uint32(h2), 0)
				verify(t, q)
				x, _ := get(t, q)
				y, _ := get(t, q)
				if swap {
					require.Equal(t, []Token{b, a}, []Token{x, y})
				} else {
					require.Equal(t, []Token{a, b}, []Token{x, y})
				}
				got += 2
				_, _, _, ok := q.GetBuf()
				require.False(t, ok)
			}
			require.Greater(t, added, 1<<16)
			assert.Equal(t, uint16(added), q.AvailIdx())
			assert.Equal(t, uint16(got), q.LastUsed())
			assert.Equal(t, uint16(got), q.UsedIdx())
			assert.Equal(t, 8, q.NumFree())
			assert.Equal(t, Token(got+1), next)
		})
	}
}

func TestForcedKickAt65535(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		noNotify  bool
		wantKicks uint64
	}{
		{"flags, notify wanted", Config{}, false, 1},
		{"flags, NO_NOTIFY: prepare says no", Config{}, true, 0},
		{"event idx at 0: window covers it", Config{EventIdx: true}, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 1, tc.cfg)
			q.DeviceSetNoNotify(tc.noNotify)
			cycle := func(tok Token) {
				require.NoError(t, q.AddInbuf(SG{Addr: 0x1000, Len: 64}, tok, 0))
				h, ok := q.DevicePop()
				require.True(t, ok)
				if tc.cfg.EventIdx {
					// A device that never re-arms: avail_event stays at 0.
					q.DeviceSetAvailEvent(0)
				}
				q.DevicePushUsed(uint32(h), 0)
				_, _, _, ok = q.GetBuf()
				require.True(t, ok)
			}
			for tok := Token(1); tok < 1<<16-1; tok++ {
				cycle(tok)
				if tok%4096 == 0 {
					verify(t, q)
				}
			}
			verify(t, q)
			assert.Equal(t, 1<<16-2, q.NumAdded())
			assert.Zero(t, q.Counters().Kicks)
			cycle(1<<16 - 1)
			verify(t, q)
			assert.Zero(t, q.NumAdded(), "the forced kick ran kick_prepare")
			assert.Equal(t, uint64(1), q.Counters().ForcedKicks)
			assert.Equal(t, tc.wantKicks, q.Counters().Kicks)
		})
	}
}

func TestKickSuppression(t *testing.T) {
	add := func(t *testing.T, q *Queue, n int) {
		for range n {
			inbuf(t, q, Token(q.AvailIdx())+1, 100)
		}
	}
	pop := func(t *testing.T, q *Queue, n int) {
		for range n {
			_, ok := q.DevicePop()
			require.True(t, ok)
		}
	}
	tests := []struct {
		name  string
		cfg   Config
		setup func(t *testing.T, q *Queue)
		want  bool
	}{
		{"flags: notify", Config{}, func(t *testing.T, q *Queue) { add(t, q, 1) }, true},
		{"flags: NO_NOTIFY", Config{}, func(t *testing.T, q *Queue) {
			q.DeviceSetNoNotify(true)
			add(t, q, 1)
		}, false},
		{"flags: NO_NOTIFY cleared", Config{}, func(t *testing.T, q *Queue) {
			q.DeviceSetNoNotify(true)
			q.DeviceSetNoNotify(false)
			add(t, q, 1)
		}, true},
		{"flags: nothing added still kicks", Config{}, func(t *testing.T, q *Queue) {}, true},
		{"event: avail_event 0, first add", Config{EventIdx: true}, func(t *testing.T, q *Queue) { add(t, q, 1) }, true},
		{"event: nothing added", Config{EventIdx: true}, func(t *testing.T, q *Queue) {}, false},
		{"event: used.flags ignored", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceSetNoNotify(true)
			add(t, q, 1)
		}, true},
		{"event: avail_event ahead of batch", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceSetAvailEvent(5)
			add(t, q, 5) // old 0, new 5: event 5 not in [0,5)
		}, false},
		{"event: batch crosses avail_event", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceSetAvailEvent(5)
			add(t, q, 6)
		}, true},
		{"event, QEMU's pop rule: device still busy, no kick", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceSetAvailEventOnPop(true)
			add(t, q, 2)
			require.True(t, q.KickPrepare())
			pop(t, q, 1) // avail_event = 1: the device has not reached entry 2
			add(t, q, 1) // old 2, new 3
		}, false},
		{"event, QEMU's pop rule: device caught up, kick", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceSetAvailEventOnPop(true)
			add(t, q, 2)
			require.True(t, q.KickPrepare())
			pop(t, q, 2) // avail_event = 2
			add(t, q, 1)
		}, true},
		// vhost (vhost_get_vq_desc) writes nothing while it pops: once the
		// driver's index passed avail_event it stops kicking, however far
		// the device has come, until vhost_enable_notify re-arms.
		{"event, vhost: popping writes no avail_event, no kick", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			add(t, q, 2)
			require.True(t, q.KickPrepare()) // crosses avail_event 0
			pop(t, q, 2)
			assert.Zero(t, q.AvailEvent())
			add(t, q, 1) // old 2, new 3: 0 is behind
		}, false},
		{"event, vhost: enable_notify with the seen index, kick", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			add(t, q, 4)
			require.True(t, q.KickPrepare())
			pop(t, q, 2)
			// A frame needing more than the two buffers left: the device
			// re-arms with avail.idx, not with its last_avail (row 16).
			q.DeviceEnableNotify()
			assert.Equal(t, uint16(4), q.AvailEvent())
			add(t, q, 1) // old 4, new 5: 4 is in the window
		}, true},
		{"flags, vhost: disable_notify sets NO_NOTIFY, enable clears it", Config{}, func(t *testing.T, q *Queue) {
			q.DeviceDisableNotify()
			assert.Equal(t, uint16(UsedFNoNotify), q.UsedFlags())
			q.DeviceEnableNotify()
			add(t, q, 1)
		}, true},
		{"event, vhost: disable_notify writes nothing", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			q.DeviceDisableNotify()
			assert.Zero(t, q.UsedFlags())
			add(t, q, 1) // avail_event 0 still in the window
		}, true},
		{"event: wrapped avail_event", Config{EventIdx: true}, func(t *testing.T, q *Queue) {
			for i := range 65534 { // move avail idx to 65534
				require.NoError(t, q.AddInbuf(SG{Len: 100}, Token(i+1), 0))
				h, _ := q.DevicePop()
				q.DevicePushUsed(uint32(h), 0)
				_, _, _, ok := q.GetBuf()
				require.True(t, ok)
			}
			verify(t, q)
			q.KickPrepare()
			q.DeviceSetAvailEvent(65535)
			add(t, q, 3) // old 65534, new 1: 65535 is in the window
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 8, tc.cfg)
			tc.setup(t, q)
			kicks := q.Counters().Kicks
			assert.Equal(t, tc.want, q.Kick())
			assert.Zero(t, q.NumAdded())
			wantKicks := kicks
			if tc.want {
				wantKicks++
			}
			assert.Equal(t, wantKicks, q.Counters().Kicks)
			verify(t, q)
		})
	}
}

func TestInterruptSuppressionFlags(t *testing.T) {
	q := newQ(t, 8, Config{})
	inbuf(t, q, 1, 100)
	inbuf(t, q, 2, 100)
	inbuf(t, q, 3, 100)

	serve(t, q, 10)
	assert.True(t, q.DeviceNeedInterrupt())
	assert.True(t, q.Interrupt())
	q.DisableCB()
	assert.Equal(t, uint16(AvailFNoInterrupt), q.AvailFlags())
	get(t, q)

	serve(t, q, 10)
	assert.False(t, q.DeviceNeedInterrupt(), "NO_INTERRUPT set")
	assert.False(t, q.EnableCB(), "a buffer raced in: poll again")
	assert.Zero(t, q.AvailFlags())
	get(t, q)
	assert.True(t, q.EnableCB())

	serve(t, q, 10)
	assert.True(t, q.DeviceNeedInterrupt())
	assert.Equal(t, uint64(2), q.Counters().Interrupts)
	verify(t, q)
}

func TestInterruptSuppressionEventIdx(t *testing.T) {
	q := newQ(t, 8, Config{EventIdx: true})
	for tok := Token(1); tok <= 6; tok++ {
		inbuf(t, q, tok, 100)
	}
	serve(t, q, 10)
	assert.True(t, q.DeviceNeedInterrupt(), "first decision always signals")
	get(t, q)
	assert.Equal(t, uint16(1), q.UsedEvent(), "get_buf points used_event at last_used")

	serve(t, q, 10) // used 2, old 1, event 1
	assert.True(t, q.DeviceNeedInterrupt())
	serve(t, q, 10) // used 3, old 2, event 1: already signalled
	assert.False(t, q.DeviceNeedInterrupt())

	q.DisableCB()
	assert.Zero(t, q.AvailFlags(), "with EVENT_IDX avail.flags stays 0")
	assert.Zero(t, q.UsedEvent(), "disable_cb writes used_event = 0")
	get(t, q)
	get(t, q)
	assert.Zero(t, q.UsedEvent(), "no used_event update while disabled")
	serve(t, q, 10)
	assert.False(t, q.DeviceNeedInterrupt())

	last := q.EnableCBPrepare()
	assert.Equal(t, uint16(3), last)
	assert.Equal(t, uint16(3), q.UsedEvent())
	assert.True(t, q.Poll(last), "entry 3 is already used")
	get(t, q)
	assert.True(t, q.EnableCB())
	serve(t, q, 10) // used 5, old 4, event 4
	assert.True(t, q.DeviceNeedInterrupt())
	assert.Equal(t, uint64(3), q.Counters().Interrupts)
	verify(t, q)
}

// TestDisableCBAfterEventTriggered: with EVENT_IDX, once vring_interrupt has
// run the device will not interrupt again, so disable_cb only sets the
// shadow flag and leaves used_event alone.
func TestDisableCBAfterEventTriggered(t *testing.T) {
	q := newQ(t, 8, Config{EventIdx: true})
	inbuf(t, q, 1, 100)
	inbuf(t, q, 2, 100)
	serve(t, q, 10)
	require.True(t, q.DeviceNeedInterrupt())
	require.True(t, q.Interrupt())
	q.DisableCB()
	assert.True(t, q.CallbacksDisabled())
	assert.Zero(t, q.UsedEvent(), "used_event was never set, so it reads 0 anyway")
	get(t, q)
	q.EnableCBPrepare()
	assert.Equal(t, uint16(1), q.UsedEvent())
	q.DisableCB() // event_triggered was cleared by enable: writes 0
	assert.Zero(t, q.UsedEvent())

	q.EnableCBPrepare()
	serve(t, q, 10)
	require.True(t, q.Interrupt())
	q.DisableCB()
	assert.Equal(t, uint16(1), q.UsedEvent(), "event_triggered: used_event left as it was")
}

func TestSpuriousInterrupt(t *testing.T) {
	q := newQ(t, 8, Config{})
	assert.False(t, q.Interrupt())
	assert.Equal(t, uint64(1), q.Counters().SpuriousIRQs)
}

func TestEnableCBDelayed(t *testing.T) {
	tests := []struct {
		name          string
		cfg           Config
		num           int
		posted        int
		used          int // used by the device but not yet reclaimed
		warmup        int // add/get cycles first, to move the indices
		wantUsedEvent uint16
		want          bool
	}{
		{"8 outstanding: event 6 ahead", Config{}, 16, 8, 0, 0, 6, true},
		{"6 of 8 used: still fine", Config{EventIdx: true}, 16, 8, 6, 0, 6, true},
		{"7 of 8 used: race", Config{EventIdx: true}, 16, 8, 7, 0, 6, false},
		{"1 outstanding: 3/4 rounds to 0", Config{EventIdx: true}, 16, 1, 0, 0, 0, true},
		{"32768 outstanding: no u16 overflow", Config{EventIdx: true}, 32768, 32768, 0, 0, 24576, true},
		{"across the wrap", Config{EventIdx: true}, 8, 8, 0, 65533, 3, true}, // 65533 + 6 mod 2^16
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, tc.num, tc.cfg)
			for i := range tc.warmup {
				require.NoError(t, q.AddInbuf(SG{Len: 1}, Token(i+1), 0))
				h, _ := q.DevicePop()
				q.DevicePushUsed(uint32(h), 0)
				_, _, _, ok := q.GetBuf()
				require.True(t, ok)
			}
			verify(t, q)
			for i := range tc.posted {
				require.NoError(t, q.AddInbuf(SG{Len: 100}, Token(i+1), 0))
			}
			for range tc.used {
				h, ok := q.DevicePop()
				require.True(t, ok)
				q.DevicePushUsed(uint32(h), 10)
			}
			q.DisableCB()
			assert.Equal(t, tc.want, q.EnableCBDelayed())
			assert.Equal(t, tc.wantUsedEvent, q.UsedEvent())
			assert.False(t, q.CallbacksDisabled())
			assert.Zero(t, q.AvailFlags())
			verify(t, q)
		})
	}
}

func TestIndirect(t *testing.T) {
	out := []SG{{Addr: 0x100, Len: 12}}
	in2 := []SG{{Addr: 0x1000, Len: 1000}, {Addr: 0x2000, Len: 500}}
	tests := []struct {
		name     string
		cfg      Config
		out, in  []SG
		indirect bool
		descs    int // main-table descriptors used
	}{
		{"negotiated, 3 entries", Config{IndirectDesc: true}, out, in2, true, 1},
		{"negotiated, 2 in entries", Config{IndirectDesc: true}, nil, in2, true, 1},
		{"negotiated, 1 entry", Config{IndirectDesc: true}, nil, in2[:1], false, 1},
		{"not negotiated", Config{}, out, in2, false, 3},
		{"ctx queue", Config{IndirectDesc: true, Ctx: true}, out, in2, false, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 8, tc.cfg)
			require.NoError(t, q.Add(tc.out, tc.in, 1, 0))
			verify(t, q)
			assert.Equal(t, 8-tc.descs, q.NumFree())
			h, ok := q.DevicePop()
			require.True(t, ok)
			d := q.DeviceDesc(h)
			assert.Equal(t, tc.indirect, d.Flags&DescFIndirect != 0)
			ci, err := q.DeviceChain(h)
			require.NoError(t, err)
			var rd, wr uint64
			for _, sg := range tc.out {
				rd += uint64(sg.Len)
			}
			for _, sg := range tc.in {
				wr += uint64(sg.Len)
			}
			assert.Equal(t, ChainInfo{Descs: len(tc.out) + len(tc.in), Readable: rd, Writable: wr, Indirect: tc.indirect}, ci)
			if tc.indirect {
				assert.Equal(t, uint32(DescSize*(len(tc.out)+len(tc.in))), d.Len)
				for j, sg := range append(append([]SG{}, tc.out...), tc.in...) {
					e, ok := q.DeviceIndirect(h, j)
					require.True(t, ok)
					assert.Equal(t, sg.Addr, e.Addr)
					assert.Equal(t, j >= len(tc.out), e.Flags&DescFWrite != 0, "entry %d WRITE", j)
					assert.Equal(t, j < len(tc.out)+len(tc.in)-1, e.Flags&DescFNext != 0, "entry %d NEXT", j)
				}
				_, ok := q.DeviceIndirect(h, len(tc.out)+len(tc.in))
				assert.False(t, ok)
			} else {
				_, ok := q.DeviceIndirect(h, 0)
				assert.False(t, ok)
			}
			q.DevicePushUsed(uint32(h), uint32(wr))
			tok, l := get(t, q)
			assert.Equal(t, Token(1), tok)
			assert.Equal(t, uint32(wr), l)
			assert.Equal(t, 8, q.NumFree())
		})
	}
}

func TestIndirectNotUsedWhenRingFull(t *testing.T) {
	// virtqueue_use_indirect needs num_free > 0; with none left the add
	// fails with ENOSPC rather than allocating a table.
	q := newQ(t, 2, Config{IndirectDesc: true})
	in := []SG{{Len: 1}, {Len: 2}}
	require.NoError(t, q.Add(nil, in, 1, 0))
	require.NoError(t, q.Add(nil, in, 2, 0))
	require.ErrorIs(t, q.Add(nil, in, 3, 0), ErrNoSpace)
	verify(t, q)
	assert.Equal(t, uint64(2), q.Counters().IndirectAllocs)
}

func TestIndirectTablesAreReused(t *testing.T) {
	q := newQ(t, 4, Config{IndirectDesc: true})
	in := []SG{{Len: 100}, {Len: 100}, {Len: 100}}
	for tok := Token(1); tok <= 100; tok++ {
		require.NoError(t, q.Add(nil, in, tok, 0))
		serve(t, q, 300)
		get(t, q)
	}
	assert.Equal(t, uint64(1), q.Counters().IndirectAllocs, "LIFO: head 0 every time, one table")
}

func TestCtxRoundTrip(t *testing.T) {
	q := newQ(t, 4, Config{Ctx: true})
	const ctx = 256<<22 | 2048 // virtio_net mergeable: headroom << 22 | truesize
	require.NoError(t, q.AddInbuf(SG{Addr: 0x1000, Len: 1536}, 42, ctx))
	serve(t, q, 1000)
	tok, l, gotCtx, ok := q.GetBuf()
	require.True(t, ok)
	assert.Equal(t, Token(42), tok)
	assert.Equal(t, uint32(1000), l)
	assert.Equal(t, uint64(ctx), gotCtx)
	verify(t, q)
}

func TestDetachUnusedBuf(t *testing.T) {
	for _, cfg := range []Config{{}, {IndirectDesc: true}, {EventIdx: true, Ctx: true}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			q := newQ(t, 16, cfg)
			in := []SG{{Len: 100}, {Len: 100}}
			posted := map[Token]bool{}
			for tok := Token(1); tok <= 7; tok++ {
				require.NoError(t, q.Add(nil, in[:1+int(tok)%2], tok, 0))
				posted[tok] = true
				verify(t, q)
			}
			// The device takes three and completes one; the driver reclaims it.
			serve(t, q, 0)
			q.DevicePop()
			q.DevicePop()
			tok, _ := get(t, q)
			delete(posted, tok)

			availBefore := q.AvailIdx()
			seen := map[Token]int{}
			for {
				tok, ok := q.DetachUnusedBuf()
				verify(t, q)
				if !ok {
					break
				}
				seen[tok]++
			}
			assert.Len(t, seen, len(posted))
			for tok := range posted {
				assert.Equal(t, 1, seen[tok], "token %d", tok)
			}
			assert.Equal(t, 16, q.NumFree())
			assert.Equal(t, availBefore-uint16(len(posted)), q.AvailIdx())
			for i := range uint16(16) {
				assert.Equal(t, SlotFree, q.Slot(i))
			}
		})
	}
}

func TestSlotStates(t *testing.T) {
	q := newQ(t, 4, Config{})
	in := []SG{{Len: 100}, {Len: 100}}
	require.NoError(t, q.Add(nil, in, 1, 0))
	want := []SlotState{SlotAvail, SlotAvail, SlotFree, SlotFree}
	assert.Equal(t, want, q.AppendSlots(nil))
	h, _ := q.DevicePop()
	assert.Equal(t, []SlotState{SlotDevice, SlotDevice, SlotFree, SlotFree}, q.AppendSlots(nil))
	q.DeviceAddUsed(uint32(h), 50)
	assert.Equal(t, []SlotState{SlotUsed, SlotUsed, SlotFree, SlotFree}, q.AppendSlots(nil))
	_, _, _, ok := q.GetBuf()
	assert.False(t, ok, "not published yet")
	q.DevicePublishUsed()
	get(t, q)
	assert.Equal(t, []SlotState{SlotFree, SlotFree, SlotFree, SlotFree}, q.AppendSlots(nil))
	assert.Equal(t, "device", SlotDevice.String())
}
