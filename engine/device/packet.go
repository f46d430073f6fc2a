package device

import "encoding/binary"

// VirtioNetHdrLen is sizeof(struct virtio_net_hdr_mrg_rxbuf): the 10-byte
// virtio_net_hdr plus num_buffers. virtio 1.0 devices always use it.
const VirtioNetHdrLen = 12

// VirtioNetHdr is struct virtio_net_hdr_mrg_rxbuf
// (include/uapi/linux/virtio_net.h), little endian on the wire.
type VirtioNetHdr struct {
	Flags      uint8  // VIRTIO_NET_HDR_F_NEEDS_CSUM=1, DATA_VALID=2
	GSOType    uint8  // VIRTIO_NET_HDR_GSO_NONE=0, TCPV4=1, UDP=3, TCPV6=4
	HdrLen     uint16 // header bytes to copy into the skb head
	GSOSize    uint16 // bytes per segment when GSOType != NONE
	CsumStart  uint16
	CsumOffset uint16
	NumBuffers uint16 // buffers this packet spans (mergeable)
}

// GSO types.
const (
	GSONone  = 0
	GSOTCPv4 = 1
	GSOTCPv6 = 4
)

// Put writes h into b[:VirtioNetHdrLen].
func (h *VirtioNetHdr) Put(b []byte) {
	_ = b[VirtioNetHdrLen-1]
	b[0] = h.Flags
	b[1] = h.GSOType
	binary.LittleEndian.PutUint16(b[2:], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
	binary.LittleEndian.PutUint16(b[10:], h.NumBuffers)
}

// ParseVirtioNetHdr reads a header from b.
func ParseVirtioNetHdr(b []byte) (VirtioNetHdr, bool) {
	if len(b) < VirtioNetHdrLen {
		return VirtioNetHdr{}, false
	}
	return VirtioNetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
		NumBuffers: binary.LittleEndian.Uint16(b[10:]),
	}, true
}

// NumBuffers reads num_buffers from the header at the start of b, 0 when
// b is too short: ParseVirtioNetHdr(b).NumBuffers without building the
// whole header (the receive path reads only this field).
func NumBuffers(b []byte) uint16 {
	if len(b) < VirtioNetHdrLen {
		return 0
	}
	return binary.LittleEndian.Uint16(b[10:])
}

// Flow is one 5-tuple of generated traffic.
type Flow struct {
	SrcMAC, DstMAC [6]byte
	IPv6           bool
	Src, Dst       [16]byte // IPv4 addresses use the first 4 bytes
	Proto          uint8    // 6 TCP, 17 UDP
	SrcPort        uint16
	DstPort        uint16
}

// IP protocol numbers.
const (
	ProtoTCP = 6
	ProtoUDP = 17
)

// MakeFlow returns flow number i of a traffic mix: 10.0.0.0/8 (or
// fd00::/8) sources spread by i, one destination, source ports spread by i.
func MakeFlow(i int, ipv6 bool, proto uint8, dstPort uint16) Flow {
	f := Flow{
		SrcMAC:  [6]byte{0x52, 0x54, 0x00, 0x00, 0x00, 0x01},
		DstMAC:  [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56},
		IPv6:    ipv6,
		Proto:   proto,
		SrcPort: uint16(10000 + i%50000),
		DstPort: dstPort,
	}
	if ipv6 {
		f.Src = [16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, byte(i >> 8), byte(i)}
		f.Dst = [16]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1}
	} else {
		f.Src = [16]byte{10, 1, byte(i >> 8), byte(i)}
		f.Dst = [16]byte{10, 2, 0, 1}
	}
	return f
}

// HeaderLen is the Ethernet + IP + L4 header length of f's packets.
func (f *Flow) HeaderLen() int {
	n := 14 + 20
	if f.IPv6 {
		n = 14 + 40
	}
	if f.Proto == ProtoTCP {
		return n + 20
	}
	return n + 8
}

// PayloadByte is the generated payload byte at offset off of packet seq.
// Payload is never stored past what a program can see: it is computed on
// read, so a 9000-byte frame costs no memory.
func PayloadByte(seq uint64, off int) byte {
	return byte(uint64(off)*31 + seq*7 + 0x5a)
}

// Build writes frame number seq of flow f, frameLen bytes long, into b
// (which may be shorter than frameLen: the frame is cut at len(b), as only
// that much is stored). It returns the number of bytes written.
// Headers are real: Ethernet, IPv4 (with its checksum) or IPv6, UDP or TCP.
func (f *Flow) Build(b []byte, seq uint64, frameLen int) int {
	var hdr [14 + 40 + 20]byte
	h := hdr[:]
	copy(h[0:6], f.DstMAC[:])
	copy(h[6:12], f.SrcMAC[:])
	l3 := 14
	var l4 int
	if f.IPv6 {
		binary.BigEndian.PutUint16(h[12:], 0x86dd)
		ip := h[l3 : l3+40]
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(frameLen-l3-40))
		ip[6] = f.Proto
		ip[7] = 64
		copy(ip[8:24], f.Src[:])
		copy(ip[24:40], f.Dst[:])
		l4 = l3 + 40
	} else {
		binary.BigEndian.PutUint16(h[12:], 0x0800)
		ip := h[l3 : l3+20]
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(frameLen-l3))
		binary.BigEndian.PutUint16(ip[4:], uint16(seq))
		ip[6] = 0x40 // DF
		ip[8] = 64
		ip[9] = f.Proto
		copy(ip[12:16], f.Src[:4])
		copy(ip[16:20], f.Dst[:4])
		binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip))
		l4 = l3 + 20
	}
	binary.BigEndian.PutUint16(h[l4:], f.SrcPort)
	binary.BigEndian.PutUint16(h[l4+2:], f.DstPort)
	hl := f.HeaderLen()
	if f.Proto == ProtoUDP {
		binary.BigEndian.PutUint16(h[l4+4:], uint16(frameLen-l4))
	} else {
		binary.BigEndian.PutUint32(h[l4+4:], uint32(seq*1448)) // seq
		h[l4+12] = 5 << 4                                      // data offset
		h[l4+13] = 0x18                                        // PSH|ACK
		binary.BigEndian.PutUint16(h[l4+14:], 65535)
	}
	n := copy(b, h[:hl])
	if n > frameLen {
		n = frameLen
	}
	for n < len(b) && n < frameLen {
		b[n] = PayloadByte(seq, n)
		n++
	}
	return n
}

func ipv4Checksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// frameTemplate is a flow's headers prepared once, so that writing a frame
// costs the few per-packet fields and the payload rather than the whole
// Build. build writes exactly what Flow.Build writes.
type frameTemplate struct {
	hdr   [14 + 40 + 20]byte         // headers with the per-packet fields zero
	words [(14 + 40 + 20) / 8]uint64 // hdr as little-endian words
	n     int                        // header length (Flow.HeaderLen)
	l4    int                        // offset of the L4 header
	ipv6  bool
	udp   bool
	// sum is the integer sum of the IPv4 header's 16-bit words other than
	// the total length, the id and the checksum: adding those two and
	// folding gives the same checksum as ipv4Checksum over the whole
	// header, since the fold only depends on the integer total.
	sum uint32
}

func newFrameTemplate(f *Flow) frameTemplate {
	var t frameTemplate
	// Build with zero per-packet fields: seq 0 and a frame length that
	// makes every length field zero is not possible for all of them at
	// once, so build with frameLen = header length and clear the fields.
	t.n = f.HeaderLen()
	t.ipv6 = f.IPv6
	t.udp = f.Proto == ProtoUDP
	t.l4 = 14 + 20
	if f.IPv6 {
		t.l4 = 14 + 40
	}
	f.Build(t.hdr[:t.n], 0, t.n)
	h := t.hdr[:]
	if f.IPv6 {
		h[18], h[19] = 0, 0 // payload length
	} else {
		h[16], h[17] = 0, 0 // total length
		h[18], h[19] = 0, 0 // id
		h[24], h[25] = 0, 0 // checksum
		for i := 14; i < 34; i += 2 {
			t.sum += uint32(binary.BigEndian.Uint16(h[i:]))
		}
	}
	if t.udp {
		h[t.l4+4], h[t.l4+5] = 0, 0 // UDP length
	} else {
		binary.BigEndian.PutUint32(h[t.l4+4:], 0) // TCP sequence number
	}
	for w := range t.words {
		t.words[w] = binary.LittleEndian.Uint64(h[8*w:])
	}
	return t
}

// build is Flow.Build for the template's flow.
func (t *frameTemplate) build(b []byte, seq uint64, frameLen int) int {
	hl := t.n
	if len(b) >= hl {
		// The header as 8-byte words, then the last few bytes: a handful
		// of moves instead of a call to memmove.
		i := 0
		for w := 0; i+8 <= hl; w, i = w+1, i+8 {
			binary.LittleEndian.PutUint64(b[i:], t.words[w])
		}
		for ; i < hl; i++ {
			b[i] = t.hdr[i]
		}
		t.fill(b[:hl], seq, frameLen)
	} else {
		var tmp [14 + 40 + 20]byte
		h := tmp[:hl]
		copy(h, t.hdr[:hl])
		t.fill(h, seq, frameLen)
		copy(b, h)
	}
	n := min(len(b), hl)
	if n > frameLen {
		n = frameLen
	}
	end := min(len(b), frameLen)
	if n < end {
		fillPayload(b[n:end], PayloadByte(seq, n))
		n = end
	}
	return n
}

// payloadRun holds byte(31*j) for j in 0..2*256: any run of payload bytes
// v, v+31, v+62, ... (mod 256) up to 256 long is a slice of it, starting
// at k where 31*k = v (mod 256), k = v * 223 (223 is 31's inverse mod 256).
var payloadRun = func() (t [2 * 256]byte) {
	for j := range t {
		t[j] = byte(31 * j)
	}
	return t
}()

// fillPayload writes payload bytes v, v+31, v+62, ... (mod 256) into b:
// PayloadByte(seq, off+i) when v is PayloadByte(seq, off).
func fillPayload(b []byte, v byte) {
	for len(b) > 0 {
		k := int(v * 223)
		n := copy(b, payloadRun[k:k+256])
		b = b[n:]
		v += byte(31 * n) // n is 256 when the loop goes on: v is unchanged
	}
}

// fill writes the per-packet fields into a copy of the template's headers.
func (t *frameTemplate) fill(h []byte, seq uint64, frameLen int) {
	l4 := t.l4
	if t.ipv6 {
		binary.BigEndian.PutUint16(h[18:], uint16(frameLen-14-40))
	} else {
		totLen, id := uint16(frameLen-14), uint16(seq)
		binary.BigEndian.PutUint16(h[16:], totLen)
		binary.BigEndian.PutUint16(h[18:], id)
		sum := t.sum + uint32(totLen) + uint32(id)
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(h[24:], ^uint16(sum))
	}
	if t.udp {
		binary.BigEndian.PutUint16(h[l4+4:], uint16(frameLen-l4))
	} else {
		binary.BigEndian.PutUint32(h[l4+4:], uint32(seq*1448))
	}
}
