package virtq

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// checkInvariants is Queue.Check: the invariants after every operation.
func checkInvariants(q *Queue) error { return q.Check() }

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
