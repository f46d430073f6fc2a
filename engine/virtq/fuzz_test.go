package virtq

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// opReader decodes fuzz bytes; past the end it yields zeros.
type opReader struct {
	b []byte
	i int
}

func (r *opReader) done() bool { return r.i >= len(r.b) }

func (r *opReader) u8() byte {
	if r.i >= len(r.b) {
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *opReader) u16() uint16 { return uint16(r.u8()) | uint16(r.u8())<<8 }

// stepSize is the bytes one fuzz step takes: op, a, b, c (u16).
const stepSize = 5

// hostileOp is the first op byte that decodes to a hostile device write or
// a driver call that is only valid on a stopped device.
const hostileOp = 0xe0

// runOps decodes data into a queue configuration (first byte) and steps of
// stepSize bytes: driver operations and honest device work for op bytes
// below hostileOp, hostile device writes above. After every step: no panic,
// the invariants hold (the driver never corrupts its own state, broken or
// not), a broken queue has a reason, and every token GetBuf or
// DetachUnusedBuf returns was posted and not yet returned. At the end
// DetachUnusedBuf returns exactly the tokens still outstanding. It returns
// the queue and how many buffers GetBuf returned, for choosing seeds.
func runOps(t *testing.T, data []byte) (*Queue, int) {
	r := &opReader{b: data}
	c0 := r.u8()
	num := 1 << (c0 % 6) // 1..32
	cfg := Config{Name: "fuzz", EventIdx: c0&0x08 != 0, IndirectDesc: c0&0x10 != 0, Ctx: c0&0x20 != 0}
	q, err := New(num, cfg)
	require.NoError(t, err)

	outstanding := map[Token]bool{}
	var popped []uint16
	next := Token(1)
	var sgs [8]SG
	for i := range sgs {
		sgs[i] = SG{Addr: uint64(i+1) << 12, Len: 64 * uint32(i+1)}
	}
	var ctx uint64
	if cfg.Ctx {
		ctx = 7
	}
	added := func(err error) {
		if err == nil {
			outstanding[next] = true
			next++
		}
	}
	gets := 0
	returned := func(tok Token, ok bool) {
		if !ok {
			return
		}
		require.True(t, outstanding[tok], "token %d returned but not outstanding", tok)
		delete(outstanding, tok)
	}
	// takePopped removes and returns one head the device has popped.
	takePopped := func(k byte) (uint16, bool) {
		if len(popped) == 0 {
			return 0, false
		}
		i := int(k) % len(popped)
		h := popped[i]
		popped = append(popped[:i], popped[i+1:]...)
		return h, true
	}
	writable := func(h uint16) uint64 {
		ci, err := q.DeviceChain(h)
		if err != nil {
			return 0
		}
		return ci.Writable
	}

	for step := 0; !r.done() && step < 4096; step++ {
		op, a, b, c := r.u8(), r.u8(), r.u8(), r.u16()
		if op < hostileOp {
			switch op % 16 {
			case 0:
				added(q.AddInbuf(SG{Addr: 0x1000, Len: uint32(a) * 16}, next, ctx))
			case 1:
				out, in := int(a%3), int(b%4)
				added(q.Add(sgs[:out], sgs[out:out+in], next, ctx))
			case 2:
				q.Kick()
			case 3:
				q.KickPrepare()
			case 4:
				if h, ok := q.DevicePop(); ok {
					popped = append(popped, h)
				}
			case 5: // complete a popped head with a length it can hold
				if h, ok := takePopped(a); ok {
					q.DevicePushUsed(uint32(h), uint32(uint64(c)%(writable(h)+1)))
				}
			case 6:
				tok, _, _, ok := q.GetBuf()
				returned(tok, ok)
				if ok {
					gets++
				}
			case 7:
				q.DisableCB()
			case 8:
				q.EnableCB()
			case 9:
				q.EnableCBDelayed()
			case 10:
				q.Poll(q.EnableCBPrepare())
			case 11:
				if q.DeviceNeedInterrupt() {
					q.Interrupt()
				}
			case 12:
				q.DeviceSetNoNotify(a&1 != 0)
			case 13:
				q.DeviceSetAvailEvent(q.DeviceLastAvail() + uint16(int8(a)))
			case 14: // batch: write used entries now, publish on a later step
				if h, ok := takePopped(a); ok {
					q.DeviceAddUsed(uint32(h), uint32(uint64(c)%(writable(h)+1)))
				}
			case 15:
				q.DevicePublishUsed()
			}
		} else {
			switch op % 8 {
			case 0: // only valid on a stopped device
				returned(q.DetachUnusedBuf())
			case 1:
				q.DeviceWriteUsedRaw(c, uint32(a)%uint32(num+2), uint32(b)*64)
			case 2:
				q.DeviceSetUsedIdx(q.DeviceUsedIdx() + uint16(int8(a)))
			case 3:
				q.DeviceSetUsedIdx(c)
			case 4:
				q.DeviceChain(uint16(a) % uint16(num+1))
			case 5:
				q.DeviceAddUsed(uint32(a)%uint32(num+2), uint32(c))
				if b&1 == 0 {
					q.DevicePublishUsed()
				}
			case 6:
				q.DeviceIndirect(uint16(a), int(b))
			case 7: // complete a popped head with too long a length
				if h, ok := takePopped(a); ok {
					q.DevicePushUsed(uint32(h), uint32(writable(h))+1+uint32(b))
				}
			}
		}
		if broken, reason := q.Broken(); broken {
			require.NotEmpty(t, reason)
		}
		require.NoError(t, checkInvariants(q), "step %d", step)
	}
	for {
		tok, ok := q.DetachUnusedBuf()
		if !ok {
			break
		}
		returned(tok, ok)
		require.NoError(t, checkInvariants(q))
	}
	require.Empty(t, outstanding, "tokens lost")
	require.Equal(t, num, q.NumFree())
	return q, gets
}

// opStream builds fuzz input: a config byte, then steps.
func opStream(cfg byte, steps ...[stepSize]byte) []byte {
	b := []byte{cfg}
	for _, s := range steps {
		b = append(b, s[:]...)
	}
	return b
}

func FuzzDeviceWrites(f *testing.F) {
	// Honest round trip on 8 descriptors: add, add, kick, pop, pop,
	// complete both, interrupt, get, get.
	f.Add(opStream(0x03,
		[5]byte{0, 10}, [5]byte{0, 20}, [5]byte{2}, [5]byte{4}, [5]byte{4},
		[5]byte{5, 0, 0, 100}, [5]byte{5, 0, 0, 200}, [5]byte{11}, [5]byte{6}, [5]byte{6}))
	// EVENT_IDX + indirect on 4: chains, batched used entries, delayed callbacks.
	f.Add(opStream(0x1a,
		[5]byte{1, 1, 2}, [5]byte{1, 0, 3}, [5]byte{2}, [5]byte{4}, [5]byte{4}, [5]byte{7},
		[5]byte{14, 1, 0, 50}, [5]byte{14, 0, 0, 0xff, 0xff}, [5]byte{15}, [5]byte{11},
		[5]byte{9}, [5]byte{6}, [5]byte{6}, [5]byte{10}))
	// Hostile: a raw used entry naming a free descriptor, then published.
	f.Add(opStream(0x02,
		[5]byte{0, 1}, [5]byte{4}, [5]byte{hostileOp + 1, 3, 0, 0, 0}, [5]byte{hostileOp + 2, 1}, [5]byte{6}))
	f.Fuzz(func(t *testing.T, data []byte) { runOps(t, data) })
}

// TestRandomOps runs the fuzz harness on seeded pseudo-random inputs, so
// plain `go test` explores more than the seed corpus. One seed in four is
// entirely honest; the others make about 1 step in 50, 25 or 17 hostile.
// A failing subtest is named after its seed.
func TestRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			hostileEvery := []int{0, 50, 25, 17}[seed%4]
			data := []byte{byte(rng.Uint32())}
			for range 600 {
				var s [stepSize]byte
				for i := range s {
					s[i] = byte(rng.Uint32())
				}
				s[0] %= hostileOp
				if hostileEvery > 0 && rng.IntN(hostileEvery) == 0 {
					s[0] = hostileOp + byte(rng.IntN(0x100-hostileOp))
				}
				data = append(data, s[:]...)
			}
			runOps(t, data)
		})
	}
}
