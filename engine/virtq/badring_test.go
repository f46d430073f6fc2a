package virtq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadRing feeds the driver what a buggy or hostile device could write.
// Each case must mark the queue broken with the reason, count bad_ring once,
// return nothing from GetBuf, refuse further adds, and never panic.
func TestBadRing(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, q *Queue)
		reason string
	}{
		{"id out of range", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			q.DevicePop()
			q.DevicePushUsed(99, 0)
		}, "rx0: id 99 out of range"},
		{"id huge", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			q.DevicePushUsed(0xffffffff, 0)
		}, "id 4294967295 out of range"},
		{"id is a free descriptor", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			q.DevicePushUsed(5, 0)
		}, "id 5 is not a head!"},
		{"id is the middle of a chain", func(t *testing.T, q *Queue) {
			require.NoError(t, q.Add(nil, []SG{{Len: 10}, {Len: 10}}, 1, 0))
			q.DevicePushUsed(1, 0)
		}, "id 1 is not a head!"},
		{"id returned twice", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			inbuf(t, q, 2, 1500)
			q.DevicePushUsed(0, 10)
			q.DevicePushUsed(0, 10)
			get(t, q)
		}, "id 0 is not a head!"},
		{"used idx jumped ahead: the stale entries fail the id check", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			inbuf(t, q, 2, 1500)
			q.DeviceSetUsedIdx(5)
			// The kernel takes used.ring[0] = {0, 0} as head 0, used
			// with 0 bytes; the next entry names head 0 again.
			tok, l := get(t, q)
			assert.Equal(t, Token(1), tok)
			assert.Zero(t, l)
		}, "id 0 is not a head!"},
		{"used idx moved backwards", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			serve(t, q, 0)
			get(t, q)
			q.DeviceSetUsedIdx(0)
		}, "id 0 is not a head!"},
		{"stale entry published", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			serve(t, q, 0)
			get(t, q)
			inbuf(t, q, 2, 1500)
			q.DeviceWriteUsedRaw(1, 7, 0) // garbage in the next slot
			q.DeviceSetUsedIdx(2)
		}, "id 7 is not a head!"},
		{"device pops past avail idx", func(t *testing.T, q *Queue) {
			inbuf(t, q, 1, 1500)
			q.DevicePop()
			_, ok := q.DetachUnusedBuf() // driver rolled avail idx back under a live device
			require.True(t, ok)
			_, ok = q.DevicePop()
			require.False(t, ok)
		}, "avail idx 0 is 65535 ahead of last_avail 1, more than num 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 8, Config{Name: "rx0", IndirectDesc: true})
			tc.setup(t, q)
			verify(t, q)
			_, _, _, ok := q.GetBuf()
			assert.False(t, ok)
			verify(t, q)

			broken, reason := q.Broken()
			require.True(t, broken)
			assert.Contains(t, reason, tc.reason)
			assert.Contains(t, reason, "rx0: ")
			assert.Equal(t, uint64(1), q.Counters().BadRing)

			// The queue refuses further work and the first reason sticks.
			require.ErrorIs(t, q.AddInbuf(SG{Len: 1}, 100, 0), ErrBroken)
			q.DevicePushUsed(200, 0)
			_, _, _, ok = q.GetBuf()
			assert.False(t, ok)
			assert.False(t, q.Poll(q.LastUsed()-1))
			assert.False(t, q.Notify())
			_, again := q.Broken()
			assert.Equal(t, reason, again)
			assert.Equal(t, uint64(1), q.Counters().BadRing)
			verify(t, q)

			// Buffers can still be detached for teardown.
			for {
				if _, ok := q.DetachUnusedBuf(); !ok {
					break
				}
			}
			assert.Equal(t, 8, q.NumFree())
			verify(t, q)
		})
	}
}

// TestUsedLenIsNotChecked holds GetBuf to virtqueue_get_buf_ctx_split,
// which checks only the id (FIDELITY.md row 20): a used length larger
// than the buffer's writable bytes is returned as the device wrote it, for
// the driver to check against what it posted (receive_small's
// GOOD_PACKET_LEN, receive_mergeable's truesize - room: rx_length_errors).
// The engine used to mark the queue broken for it, a check virtio_ring
// had briefly (939779f5152d) and reverted.
func TestUsedLenIsNotChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(t *testing.T, q *Queue)
		len  uint32
	}{
		{"larger than the buffer", func(t *testing.T, q *Queue) { inbuf(t, q, 1, 1500) }, 1501},
		{"larger than an indirect buffer", func(t *testing.T, q *Queue) {
			require.NoError(t, q.Add(nil, []SG{{Len: 100}, {Len: 200}}, 1, 0))
		}, 301},
		{"on an out-only buffer", func(t *testing.T, q *Queue) { require.NoError(t, q.AddOutbuf(SG{Len: 60}, 1)) }, 1},
		{"the largest a u32 holds", func(t *testing.T, q *Queue) { inbuf(t, q, 1, 1500) }, 0xffffffff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 8, Config{Name: "rx0", IndirectDesc: true})
			tc.add(t, q)
			serve(t, q, tc.len)
			tok, l := get(t, q)
			assert.Equal(t, Token(1), tok)
			assert.Equal(t, tc.len, l)
			broken, _ := q.Broken()
			assert.False(t, broken)
			assert.Zero(t, q.Counters().BadRing)
			assert.Equal(t, 8, q.NumFree())
		})
	}
}

func TestUnpublishedUsedEntriesAreInvisible(t *testing.T) {
	q := newQ(t, 8, Config{})
	inbuf(t, q, 1, 1500)
	q.DeviceWriteUsedRaw(0, 99, 99999)
	_, _, _, ok := q.GetBuf()
	assert.False(t, ok)
	broken, _ := q.Broken()
	assert.False(t, broken)
}

func TestDeviceChain(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		out, in []SG
		corrupt func(q *Queue, head uint16) // scribble on guest memory
		want    ChainInfo
		reason  string // "" = no error
	}{
		{"direct out+in", Config{}, []SG{{Len: 12}}, []SG{{Len: 1000}, {Len: 500}}, nil,
			ChainInfo{Descs: 3, Readable: 12, Writable: 1500}, ""},
		{"indirect out+in", Config{IndirectDesc: true}, []SG{{Len: 12}}, []SG{{Len: 1000}, {Len: 500}}, nil,
			ChainInfo{Descs: 3, Readable: 12, Writable: 1500, Indirect: true}, ""},
		{"loop", Config{}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[1].Flags |= DescFNext
			q.desc[1].Next = 0
		}, ChainInfo{}, "loop detected: chain from head 0 longer than num 4"},
		{"next out of range", Config{}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[0].Next = 9
		}, ChainInfo{}, "desc 0: next 9 out of range"},
		{"readable after writable", Config{}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[1].Flags &^= DescFWrite
		}, ChainInfo{}, "readable descriptor after writable"},
		{"indirect in the middle of a chain", Config{}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[1].Flags |= DescFIndirect
		}, ChainInfo{}, "desc 1 in chain from head 0 is INDIRECT"},
		{"indirect with NEXT", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[h].Flags |= DescFNext
		}, ChainInfo{}, "indirect desc 0 also has NEXT"},
		{"indirect table length not a multiple of 16", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[h].Len = 17
		}, ChainInfo{}, "not mapped"},
		{"indirect table longer than allocated", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.desc[h].Len = 64 * DescSize
		}, ChainInfo{}, "not mapped"},
		{"indirect without the feature", Config{}, nil, []SG{{Len: 1}}, func(q *Queue, h uint16) {
			q.desc[h].Flags = DescFIndirect
			q.desc[h].Len = DescSize
		}, ChainInfo{}, "not mapped"},
		{"nested indirect", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.indir[h][1].Flags |= DescFIndirect
		}, ChainInfo{}, "nested indirect desc 1"},
		{"loop in an indirect table", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.indir[h][1].Flags |= DescFNext
			q.indir[h][1].Next = 0
		}, ChainInfo{}, "loop detected in indirect table of head 0"},
		{"indirect next out of range", Config{IndirectDesc: true}, nil, []SG{{Len: 1}, {Len: 1}}, func(q *Queue, h uint16) {
			q.indir[h][0].Next = 5
		}, ChainInfo{}, "next 5 out of range 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 4, tc.cfg)
			require.NoError(t, q.Add(tc.out, tc.in, 1, 0))
			h, ok := q.DevicePop()
			require.True(t, ok)
			if tc.corrupt != nil {
				tc.corrupt(q, h)
			}
			ci, err := q.DeviceChain(h)
			broken, reason := q.Broken()
			if tc.reason == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, ci)
				assert.False(t, broken)
				return
			}
			require.ErrorIs(t, err, ErrBadRing)
			assert.Contains(t, err.Error(), tc.reason)
			assert.True(t, broken)
			assert.Contains(t, reason, tc.reason)
			assert.Equal(t, uint64(1), q.Counters().BadRing)
			require.ErrorIs(t, q.AddInbuf(SG{Len: 1}, 2, 0), ErrBroken)
		})
	}
}

func TestDeviceChainHeadOutOfRange(t *testing.T) {
	q := newQ(t, 4, Config{})
	_, err := q.DeviceChain(4)
	require.ErrorIs(t, err, ErrBadRing)
	_, reason := q.Broken()
	assert.Contains(t, reason, "chain head 4 out of range")
}

// TestDeviceNeverPanics drives every device method with extreme arguments.
func TestDeviceNeverPanics(t *testing.T) {
	for _, cfg := range []Config{{}, {EventIdx: true, IndirectDesc: true}} {
		q := newQ(t, 1, cfg)
		for _, v := range []uint32{0, 1, 2, 0xffff, 0x10000, 0xffffffff} {
			q.DeviceWriteUsedRaw(uint16(v), v, v)
			q.DeviceSetUsedIdx(uint16(v))
			q.DeviceSetAvailEvent(uint16(v))
			q.DeviceAddUsed(v, v)
			q.DevicePublishUsed()
			q.DevicePushUsed(v, v)
			q.DeviceNeedInterrupt()
			q.DeviceChain(uint16(v))
			q.DeviceIndirect(uint16(v), int(int32(v)))
			q.DeviceDesc(uint16(v))
			q.DevicePop()
			q.GetBuf()
			q.Interrupt()
			q.EnableCBDelayed()
			verify(t, q)
		}
	}
}
