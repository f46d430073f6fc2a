package virtq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceLoneMatchesPopAndAddUsed: DevicePeekLone finds what
// DeviceChain finds for a lone writable descriptor and refuses everything
// else, and DeviceUseLone leaves the queue exactly as DevicePop,
// DeviceAddUsed and DevicePublishUsed do.
func TestDeviceLoneMatchesPopAndAddUsed(t *testing.T) {
	for _, event := range []bool{false, true} {
		build := func() *Queue {
			q, err := New(8, Config{Name: "rx", EventIdx: event, Ctx: true})
			require.NoError(t, err)
			require.NoError(t, q.AddInbuf(SG{Addr: 0x1000, Len: 1500}, 1, 7))                              // lone writable
			require.NoError(t, q.Add(nil, []SG{{Addr: 0x2000, Len: 12}, {Addr: 0x3000, Len: 4096}}, 2, 0)) // chain
			require.NoError(t, q.Add([]SG{{Addr: 0x4000, Len: 64}}, nil, 3, 0))                            // readable
			require.NoError(t, q.AddInbuf(SG{Addr: 0x5000, Len: 2048}, 4, 0))                              // lone writable
			return q
		}
		fast, slow := build(), build()
		for i, wantLone := range []bool{true, false, false, true} {
			head, writable, ok := fast.DevicePeekLone()
			require.Equal(t, wantLone, ok, "event %v, buffer %d", event, i)
			sh, popped := slow.DevicePop()
			require.True(t, popped)
			ci, err := slow.DeviceChain(sh)
			require.NoError(t, err)
			if ok {
				assert.Equal(t, sh, head)
				assert.Equal(t, ChainInfo{Descs: 1, Writable: uint64(writable)}, ci)
				fast.DeviceUseLone(head, writable-3)
			} else {
				_, _ = fast.DevicePop()
				fast.DeviceAddUsed(uint32(sh), 0)
				fast.DevicePublishUsed()
			}
			length := uint32(0)
			if ok {
				length = writable - 3
			}
			slow.DeviceAddUsed(uint32(sh), length)
			slow.DevicePublishUsed()
			assert.Equal(t, slow, fast, "event %v, buffer %d", event, i)
			require.NoError(t, checkInvariants(fast))
		}
		_, _, ok := fast.DevicePeekLone()
		assert.False(t, ok, "nothing available")
	}
}
