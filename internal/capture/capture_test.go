package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frames are three Ethernet frames of 60, 98 and 1514 bytes.
func frames() [][]byte {
	var out [][]byte
	for i, n := range []int{60, 98, 1514} {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		out = append(out, b)
	}
	return out
}

// pcapFile is a classic pcap of fs, with timestamps 1.5 s + i ms (in µs
// or ns), in byte order bo; snap cuts what is captured.
func pcapFile(bo binary.ByteOrder, nano bool, snap int, fs [][]byte) []byte {
	var b bytes.Buffer
	h := make([]byte, 24)
	magic := uint32(pcapMagicMicro)
	if nano {
		magic = pcapMagicNano
	}
	bo.PutUint32(h, magic)
	bo.PutUint16(h[4:], 2)
	bo.PutUint16(h[6:], 4)
	bo.PutUint32(h[16:], uint32(snap))
	bo.PutUint32(h[20:], LinkEthernet)
	b.Write(h)
	for i, f := range fs {
		r := make([]byte, 16)
		bo.PutUint32(r, 1)
		frac := uint32(500_000 + i*1000)
		if nano {
			frac *= 1000
		}
		bo.PutUint32(r[4:], frac)
		c := min(len(f), snap)
		bo.PutUint32(r[8:], uint32(c))
		bo.PutUint32(r[12:], uint32(len(f)))
		b.Write(r)
		b.Write(f[:c])
	}
	return b.Bytes()
}

func pcapngFile(t testing.TB, fs [][]byte, comments ...string) []byte {
	var out []Out
	for i, f := range fs {
		o := Out{Time: 1_500_000_000 + int64(i)*1_000_000, Len: len(f), Data: f}
		if i < len(comments) {
			o.Comment = comments[i]
		}
		out = append(out, o)
	}
	var b bytes.Buffer
	require.NoError(t, WritePcapng(&b, "test", "eth0", out))
	return b.Bytes()
}

func checkPackets(t *testing.T, c *Capture, fs [][]byte, snap int) {
	t.Helper()
	require.Len(t, c.Packets, len(fs))
	for i, p := range c.Packets {
		assert.Equal(t, len(fs[i]), p.Len, "packet %d", i)
		assert.Equal(t, fs[i][:min(snap, len(fs[i]))], p.Data, "packet %d", i)
		assert.Equal(t, int64(1_500_000_000+i*1_000_000), p.Time, "packet %d", i)
		assert.True(t, p.Timed)
	}
}

func TestParsePcap(t *testing.T) {
	fs := frames()
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nano=%v", bo, nano), func(t *testing.T) {
				c, err := Parse(pcapFile(bo, nano, 65535, fs))
				require.NoError(t, err)
				assert.Equal(t, FormatPcap, c.Format)
				checkPackets(t, c, fs, 65535)
				assert.Equal(t, int64(24), c.Packets[0].Offset)
				assert.Equal(t, int64(24+16+60), c.Packets[1].Offset)
			})
		}
	}
	// A snap length keeps the length on the wire.
	c, err := Parse(pcapFile(binary.LittleEndian, false, 128, fs))
	require.NoError(t, err)
	checkPackets(t, c, fs, 128)
}

func TestParsePcapng(t *testing.T) {
	fs := frames()
	c, err := Parse(pcapngFile(t, fs, "a", "", "c"))
	require.NoError(t, err)
	assert.Equal(t, FormatPcapng, c.Format)
	checkPackets(t, c, fs, 1<<20)
}

// ngBlock is one pcapng block of type typ around body.
func ngBlock(typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	b := binary.LittleEndian.AppendUint32(nil, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)+12))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, uint32(len(body)+12))
}

// TestParsePcapngResolutions reads interfaces of microsecond (the
// default), 2^-10 s and 10^-9 s timestamps with an offset, and a simple
// packet block, by hand-made blocks.
func TestParsePcapngResolutions(t *testing.T) {
	le := binary.LittleEndian
	shb := le.AppendUint32(nil, ngByteOrder)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	idb := func(opts ...byte) []byte {
		b := le.AppendUint16(nil, LinkEthernet)
		b = le.AppendUint16(b, 0)
		b = le.AppendUint32(b, 0)
		return append(b, opts...)
	}
	epb := func(iface uint32, ts uint64, data []byte) []byte {
		b := le.AppendUint32(nil, iface)
		b = le.AppendUint32(b, uint32(ts>>32))
		b = le.AppendUint32(b, uint32(ts))
		b = le.AppendUint32(b, uint32(len(data)))
		b = le.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	f := frames()[0]
	var file []byte
	file = append(file, ngBlock(ngSHB, shb)...)
	file = append(file, ngBlock(1, idb())...)                                                  // µs
	file = append(file, ngBlock(1, idb(9, 0, 1, 0, 0x8a, 0, 0, 0, 0, 0, 0, 0))...)             // 2^-10 s
	tsoff := append([]byte{9, 0, 1, 0, 9, 0, 0, 0, 14, 0, 8, 0}, le.AppendUint64(nil, 100)...) // ns, +100 s
	file = append(file, ngBlock(1, idb(tsoff...))...)
	file = append(file, ngBlock(0xbad, []byte("skipped"))...)
	file = append(file, ngBlock(6, epb(0, 2_000_001, f))...)
	file = append(file, ngBlock(6, epb(1, 3*1024, f))...)
	file = append(file, ngBlock(6, epb(2, 7, f))...)
	file = append(file, ngBlock(3, append(le.AppendUint32(nil, uint32(len(f))), f...))...)
	c, err := Parse(file)
	require.NoError(t, err)
	require.Len(t, c.Packets, 4)
	assert.Equal(t, int64(2_000_001_000), c.Packets[0].Time)
	assert.Equal(t, int64(3_000_000_000), c.Packets[1].Time)
	assert.Equal(t, int64(100_000_000_007), c.Packets[2].Time)
	assert.False(t, c.Packets[3].Timed, "a simple packet block has no timestamp")
	assert.Equal(t, f, c.Packets[3].Data)
}

// TestTruncatedNamesTheOffset cuts captures at every length: each cut
// inside a record is an error naming the record's offset (or where the
// file ends inside a header), never a panic and never a shorter capture
// read as whole.
func TestTruncatedNamesTheOffset(t *testing.T) {
	fs := frames()
	for name, file := range map[string][]byte{
		"pcap":   pcapFile(binary.LittleEndian, false, 65535, fs),
		"pcapng": pcapngFile(t, fs, "x"),
	} {
		t.Run(name, func(t *testing.T) {
			whole, err := Parse(file)
			require.NoError(t, err)
			// A cut at a record's or block's start is a whole, shorter
			// capture.
			ends := map[int]bool{}
			if name == "pcap" {
				ends[24] = true
				for _, p := range whole.Packets {
					ends[int(p.Offset)] = true
				}
			} else {
				for off := 0; off < len(file); off += int(binary.LittleEndian.Uint32(file[off+4:])) {
					ends[off] = true
				}
			}
			for n := 4; n < len(file); n++ {
				c, err := Parse(file[:n])
				if ends[n] {
					require.NoError(t, err, "cut at %d, a record boundary", n)
					continue
				}
				var ce *Error
				require.True(t, errors.As(err, &ce), "cut at %d: want a capture error, got %v (%d packets)", n, err, packetsOf(c))
				assert.Contains(t, err.Error(), fmt.Sprintf("at byte offset %d:", ce.Offset))
				assert.Contains(t, err.Error(), "truncated")
				// The offset is the last record's or block's start, or
				// where the file ends inside the file header.
				assert.True(t, ends[int(ce.Offset)] || ce.Offset == int64(n) || ce.Offset == 0, "cut at %d: offset %d", n, ce.Offset)
			}
		})
	}
	_, err := Parse(pcapFile(binary.LittleEndian, false, 65535, fs)[:24+16+60+10])
	assert.EqualError(t, err, "capture: at byte offset 100: truncated: the file ends inside a 16-byte record header (10 bytes left)")
	_, err = Parse(pcapFile(binary.LittleEndian, false, 65535, fs)[:24+16+60+16+50])
	assert.EqualError(t, err, "capture: at byte offset 100: truncated: the record holds 98 captured bytes, the file has 50 left")
}

func packetsOf(c *Capture) int {
	if c == nil {
		return 0
	}
	return len(c.Packets)
}

func TestMalformed(t *testing.T) {
	fs := frames()
	bad := func(f func(b []byte)) []byte {
		b := pcapFile(binary.LittleEndian, false, 65535, fs)
		f(b)
		return b
	}
	for _, c := range []struct {
		file []byte
		want string
	}{
		{[]byte("GIF89a..."), "at byte offset 0: magic number 0x47494638"},
		{bad(func(b []byte) { b[20] = 113 }), "at byte offset 20: link type 113"},
		{bad(func(b []byte) { binary.LittleEndian.PutUint32(b[24+12:], 10) }), "at byte offset 24: record of 10 bytes on the wire and 60 captured"},
		{bad(func(b []byte) { binary.LittleEndian.PutUint32(b[24+8:], 1<<30) }), "at byte offset 24: record of 1073741824 captured bytes"},
		{bad(func(b []byte) { binary.LittleEndian.PutUint32(b[24+4:], 2e6) }), "at byte offset 28: timestamp fraction"},
	} {
		_, err := Parse(c.file)
		assert.ErrorContains(t, err, c.want)
	}
	ng := pcapngFile(t, fs)
	b := append([]byte(nil), ng...)
	b[len(b)-1] ^= 0xff // the last block's trailing length
	_, err := Parse(b)
	assert.ErrorContains(t, err, fmt.Sprintf("at byte offset %d: block of type 0x6", len(b)-4))
}

// TestWriteReadsBack: what WritePcapng writes, pcapgo's own reader and
// Parse read back, comments included.
func TestWriteReadsBack(t *testing.T) {
	fs := frames()
	comments := []string{"verdict=XDP_DROP reason=xdp_drop", "", "verdict=XDP_PASS"}
	file := pcapngFile(t, fs, comments...)
	c, err := Parse(file)
	require.NoError(t, err)
	checkPackets(t, c, fs, 1<<20)
	r, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.DefaultNgReaderOptions)
	require.NoError(t, err)
	for i := range fs {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		require.NoError(t, err)
		assert.Equal(t, fs[i], data)
		assert.Equal(t, int64(1_500_000_000+i*1_000_000), ci.Timestamp.UnixNano())
		if comments[i] == "" {
			assert.Empty(t, opts.Comments)
		} else {
			assert.Equal(t, []string{comments[i]}, opts.Comments)
		}
	}
	_, _, _, err = r.ReadPacketDataWithOptions()
	assert.ErrorIs(t, err, io.EOF)
}

func FuzzParse(f *testing.F) {
	fs := frames()
	f.Add(pcapFile(binary.LittleEndian, false, 65535, fs))
	f.Add(pcapFile(binary.BigEndian, true, 100, fs))
	f.Add(pcapngFile(f, fs, "a", "b"))
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 12, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.Offset < 0 || ce.Offset > int64(len(b)) {
				t.Fatalf("error %v: want a capture error with an offset within the file", err)
			}
			return
		}
		for i, p := range c.Packets {
			if len(p.Data) > p.Len || len(p.Data) > MaxSnapLen || p.Offset < 0 || p.Offset >= int64(len(b)) {
				t.Fatalf("packet %d: %d of %d bytes at %d in a file of %d", i, len(p.Data), p.Len, p.Offset, len(b))
			}
		}
	})
}
