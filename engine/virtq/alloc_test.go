package virtq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSteadyStateDoesNotAllocate guards the hot paths: add (one inbuf, a
// direct chain, an indirect chain), kick, device pop/chain/push, interrupt
// decision and delivery, get, callback toggling.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	out := []SG{{Addr: 0x100, Len: 12}}
	in := []SG{{Addr: 0x1000, Len: 1000}, {Addr: 0x2000, Len: 500}}
	tests := []struct {
		name string
		cfg  Config
		add  func(q *Queue, tok Token) error
	}{
		{"AddInbuf", Config{EventIdx: true, Ctx: true}, func(q *Queue, tok Token) error {
			return q.AddInbuf(SG{Addr: 0x1000, Len: 1536}, tok, 99)
		}},
		{"AddOutbuf", Config{}, func(q *Queue, tok Token) error { return q.AddOutbuf(SG{Len: 60}, tok) }},
		{"Add direct chain", Config{}, func(q *Queue, tok Token) error { return q.Add(out, in, tok, 0) }},
		{"Add indirect", Config{IndirectDesc: true, EventIdx: true}, func(q *Queue, tok Token) error { return q.Add(out, in, tok, 0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQ(t, 256, tc.cfg)
			tok := Token(1)
			round := func() {
				for range 8 {
					if err := tc.add(q, tok); err != nil {
						t.Fatal(err)
					}
					tok++
				}
				q.Kick()
				for {
					h, ok := q.DevicePop()
					if !ok {
						break
					}
					if _, err := q.DeviceChain(h); err != nil {
						t.Fatal(err)
					}
					q.DevicePushUsed(uint32(h), 0)
				}
				if q.DeviceNeedInterrupt() {
					q.Interrupt()
				}
				q.DisableCB()
				for {
					if _, _, _, ok := q.GetBuf(); !ok {
						break
					}
				}
				q.EnableCB()
				q.EnableCBDelayed()
			}
			for range 64 { // warm up: every head gets its indirect table
				round()
			}
			allocs := testing.AllocsPerRun(200, round)
			assert.Zero(t, allocs, "allocations per round")
			verify(t, q)
		})
	}
}

func TestNoSpaceDoesNotAllocate(t *testing.T) {
	q := newQ(t, 2, Config{})
	in := []SG{{Len: 1}, {Len: 1}}
	require.NoError(t, q.Add(nil, in, 1, 0))
	allocs := testing.AllocsPerRun(100, func() {
		if err := q.Add(nil, in, 2, 0); err != ErrNoSpace {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkAddGet(b *testing.B) {
	q, err := New(256, Config{Name: "rx0", EventIdx: true, Ctx: true})
	require.NoError(b, err)
	b.ReportAllocs()
	tok := Token(1)
	for b.Loop() {
		if err := q.AddInbuf(SG{Addr: 0x1000, Len: 1536}, tok, 1); err != nil {
			b.Fatal(err)
		}
		h, _ := q.DevicePop()
		q.DevicePushUsed(uint32(h), 64)
		if _, _, _, ok := q.GetBuf(); !ok {
			b.Fatal("no buffer")
		}
		tok++
	}
}

// BenchmarkAddGetBatch is one NAPI-like round of 64 buffers: refill, kick,
// device pops and completes all, interrupt decision, driver reaps all.
// Reported per buffer.
func BenchmarkAddGetBatch(b *testing.B) {
	const batch = 64
	for _, bc := range []struct {
		name string
		cfg  Config
		in   []SG
	}{
		{"inbuf", Config{EventIdx: true, Ctx: true}, []SG{{Addr: 0x1000, Len: 1536}}},
		{"indirect3", Config{EventIdx: true, IndirectDesc: true}, []SG{{Len: 12}, {Len: 1500}, {Len: 1500}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := New(256, bc.cfg)
			require.NoError(b, err)
			b.ReportAllocs()
			tok := Token(1)
			n := 0
			for b.Loop() {
				for range batch {
					if err := q.Add(nil, bc.in, tok, 0); err != nil {
						b.Fatal(err)
					}
					tok++
				}
				q.Kick()
				for {
					h, ok := q.DevicePop()
					if !ok {
						break
					}
					q.DevicePushUsed(uint32(h), 64)
				}
				if q.DeviceNeedInterrupt() {
					q.Interrupt()
				}
				for {
					if _, _, _, ok := q.GetBuf(); !ok {
						break
					}
				}
				n += batch
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/buf")
		})
	}
}
