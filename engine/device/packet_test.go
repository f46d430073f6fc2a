package device

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildIPv4UDP(t *testing.T) {
	f := MakeFlow(3, false, ProtoUDP, 9)
	b := make([]byte, 128)
	n := f.Build(b, 7, 100)
	require.Equal(t, 100, n)
	assert.Equal(t, uint16(0x0800), binary.BigEndian.Uint16(b[12:]))
	assert.Equal(t, byte(0x45), b[14])
	assert.Equal(t, uint16(86), binary.BigEndian.Uint16(b[16:]), "IPv4 total length")
	assert.Equal(t, byte(ProtoUDP), b[23])
	assert.Equal(t, []byte{10, 1, 0, 3}, b[26:30])
	// A header with a correct checksum sums to 0xffff.
	var sum uint32
	for i := 14; i < 34; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	assert.Equal(t, uint32(0xffff), sum, "IPv4 header checksum")
	assert.Equal(t, uint16(10003), binary.BigEndian.Uint16(b[34:]))
	assert.Equal(t, uint16(9), binary.BigEndian.Uint16(b[36:]))
	assert.Equal(t, uint16(66), binary.BigEndian.Uint16(b[38:]), "UDP length")
	assert.Equal(t, PayloadByte(7, 42), b[42])
}

func TestBuildIPv6TCPCutAtBuffer(t *testing.T) {
	f := MakeFlow(1, true, ProtoTCP, 5201)
	b := make([]byte, 80)
	n := f.Build(b, 1, 9014)
	assert.Equal(t, 80, n, "only what fits is stored")
	assert.Equal(t, uint16(0x86dd), binary.BigEndian.Uint16(b[12:]))
	assert.Equal(t, uint16(9014-54), binary.BigEndian.Uint16(b[18:]), "IPv6 payload length")
	assert.Equal(t, byte(ProtoTCP), b[20])
	assert.Equal(t, uint16(5201), binary.BigEndian.Uint16(b[56:]))
	assert.Equal(t, 74, f.HeaderLen())
}

func TestVirtioNetHdrRoundTrip(t *testing.T) {
	h := VirtioNetHdr{Flags: 2, GSOType: GSOTCPv4, HdrLen: 66, GSOSize: 1448, NumBuffers: 3}
	var b [VirtioNetHdrLen]byte
	h.Put(b[:])
	got, ok := ParseVirtioNetHdr(b[:])
	require.True(t, ok)
	assert.Equal(t, h, got)
	_, ok = ParseVirtioNetHdr(b[:5])
	assert.False(t, ok)
}

// TestFrameTemplateMatchesBuild guards the per-packet fast path: a frame
// written from the template is byte for byte what Flow.Build writes, for
// every protocol, buffers shorter than the headers, frames shorter than
// the headers, and sequence numbers that wrap the 16-bit fields.
func TestFrameTemplateMatchesBuild(t *testing.T) {
	for _, ipv6 := range []bool{false, true} {
		for _, proto := range []uint8{ProtoUDP, ProtoTCP} {
			for i := 0; i < 40; i += 7 {
				f := MakeFlow(i*977, ipv6, proto, uint16(i*131))
				tmpl := newFrameTemplate(&f)
				for _, bufLen := range []int{0, 10, 41, 42, 73, 74, 80, 256} {
					for _, frameLen := range []int{0, 14, 42, 60, 64, 74, 100, 1514, 9014, 65535} {
						for _, seq := range []uint64{0, 1, 7, 0xffff, 0x10000, 1<<32 + 5, 1<<63 + 12345} {
							want := make([]byte, bufLen)
							got := make([]byte, bufLen)
							for k := range want {
								want[k], got[k] = byte(k*13), byte(k*13) // stale bytes stay stale
							}
							nw := f.Build(want, seq, frameLen)
							ng := tmpl.build(got, seq, frameLen)
							require.Equal(t, nw, ng, "ipv6 %v proto %d buf %d frame %d seq %d", ipv6, proto, bufLen, frameLen, seq)
							require.Equal(t, want, got, "ipv6 %v proto %d buf %d frame %d seq %d", ipv6, proto, bufLen, frameLen, seq)
						}
					}
				}
			}
		}
	}
}

func TestFillPayloadMatchesPayloadByte(t *testing.T) {
	for _, seq := range []uint64{0, 1, 5, 255, 1 << 40} {
		for _, off := range []int{0, 3, 42, 200} {
			for _, n := range []int{0, 1, 7, 255, 256, 257, 1000} {
				b := make([]byte, n)
				fillPayload(b, PayloadByte(seq, off))
				for i := range b {
					require.Equal(t, PayloadByte(seq, off+i), b[i], "seq %d off %d byte %d of %d", seq, off, i, n)
				}
			}
		}
	}
}
