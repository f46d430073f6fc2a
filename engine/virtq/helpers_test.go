package virtq

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkInvariants returns the first broken invariant of q, or nil:
//   - the free list from free_head has exactly num_free distinct in-range
//     entries (no cycle), all with slot state free;
//   - each head with data owns a chain (walked by desc_extra) whose
//     descriptors are neither free nor in another chain, and the shared
//     descriptor table mirrors desc_extra for them;
//   - num_free + descriptors in chains == num, and nothing is in neither;
//   - heads with data == avail_idx_shadow - last_used_idx, avail.idx ==
//     avail_idx_shadow, num_added < 65535.
func checkInvariants(q *Queue) error {
	num := int(q.num)
	owner := make([]int, num) // 0: nobody, -1: free list, h+1: chain of head h
	i := q.freeHead
	for n := 0; n < int(q.numFree); n++ {
		if int(i) >= num {
			return fmt.Errorf("free list entry %d: index %d out of range", n, i)
		}
		if owner[i] != 0 {
			return fmt.Errorf("free list revisits %d after %d entries (cycle)", i, n)
		}
		owner[i] = -1
		if q.slots[i] != SlotFree {
			return fmt.Errorf("free desc %d has slot state %v", i, q.slots[i])
		}
		i = q.extra[i].next
	}
	heads, inChains := 0, 0
	for h := range num {
		st := q.state[h]
		if st.data == 0 {
			continue
		}
		heads++
		j := uint16(h)
		for n := 0; ; n++ {
			if n >= num {
				return fmt.Errorf("chain of head %d longer than num", h)
			}
			if int(j) >= num {
				return fmt.Errorf("chain of head %d: index %d out of range", h, j)
			}
			switch {
			case owner[j] == -1:
				return fmt.Errorf("desc %d is both free and in the chain of head %d", j, h)
			case owner[j] != 0:
				return fmt.Errorf("desc %d is in the chains of heads %d and %d", j, owner[j]-1, h)
			}
			owner[j] = h + 1
			inChains++
			if q.slots[j] == SlotFree {
				return fmt.Errorf("desc %d in chain of head %d has slot state free", j, h)
			}
			e, d := q.extra[j], q.desc[j]
			if d.Addr != e.addr || d.Len != e.len || d.Flags != e.flags {
				return fmt.Errorf("desc %d = %+v does not mirror desc_extra %+v", j, d, e)
			}
			if st.indir {
				if e.flags != DescFIndirect {
					return fmt.Errorf("indirect head %d has flags %#x", h, e.flags)
				}
				break
			}
			if e.flags&DescFIndirect != 0 {
				return fmt.Errorf("direct chain of head %d has INDIRECT desc %d", h, j)
			}
			if e.flags&DescFNext == 0 {
				break
			}
			j = e.next
		}
	}
	if int(q.numFree)+inChains != num {
		return fmt.Errorf("num_free %d + in chains %d != num %d", q.numFree, inChains, num)
	}
	for k, o := range owner {
		if o == 0 {
			return fmt.Errorf("desc %d is neither free nor in a chain", k)
		}
	}
	if want := int(q.availIdxShadow - q.lastUsedIdx); heads != want {
		return fmt.Errorf("%d heads posted, avail_idx_shadow %d - last_used %d = %d", heads, q.availIdxShadow, q.lastUsedIdx, want)
	}
	if q.avail.idx != q.availIdxShadow {
		return fmt.Errorf("avail.idx %d != avail_idx_shadow %d", q.avail.idx, q.availIdxShadow)
	}
	if q.numAdded >= 1<<16-1 {
		return fmt.Errorf("num_added %d reached the forced-kick limit", q.numAdded)
	}
	if q.counters.BadRing > 1 {
		return fmt.Errorf("bad_ring counted %d times", q.counters.BadRing)
	}
	if q.broken && q.reason == "" {
		return fmt.Errorf("broken without a reason")
	}
	return nil
}

// verify fails t at once if an invariant of q is broken.
func verify(t testing.TB, q *Queue) {
	t.Helper()
	require.NoError(t, checkInvariants(q))
}

func newQ(t testing.TB, num int, cfg Config) *Queue {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "vq"
	}
	q, err := New(num, cfg)
	require.NoError(t, err)
	verify(t, q)
	return q
}

// inbuf posts one receive buffer of length l and verifies.
func inbuf(t testing.TB, q *Queue, tok Token, l uint32) {
	t.Helper()
	require.NoError(t, q.AddInbuf(SG{Addr: uint64(tok) << 12, Len: l}, tok, 0))
	verify(t, q)
}

// serve lets the device pop one head and return it with length l.
func serve(t testing.TB, q *Queue, l uint32) uint16 {
	t.Helper()
	h, ok := q.DevicePop()
	require.True(t, ok, "device found nothing to pop")
	verify(t, q)
	q.DevicePushUsed(uint32(h), l)
	verify(t, q)
	return h
}

// get reclaims one used buffer and verifies.
func get(t testing.TB, q *Queue) (Token, uint32) {
	t.Helper()
	tok, l, _, ok := q.GetBuf()
	require.True(t, ok, "GetBuf found nothing")
	verify(t, q)
	return tok, l
}

// freeList returns the free list from free_head, num_free entries long.
func freeList(q *Queue) []uint16 {
	var l []uint16
	i := q.freeHead
	for range q.numFree {
		l = append(l, i)
		i = q.extra[i].next
	}
	return l
}
