package bpf

import (
	"encoding/binary"
	"net/netip"
)

// Frame builders for tests: Ethernet, IPv4 (with header checksum and
// optional options), IPv6, UDP and TCP, all in network byte order.

var (
	macA = [6]byte{0x02, 0, 0, 0, 0, 0x0a}
	macB = [6]byte{0x02, 0, 0, 0, 0, 0x0b}
)

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeARP  = 0x0806
)

func ethFrame(dst, src [6]byte, etherType uint16, payload []byte) []byte {
	b := append(dst[:], src[:]...)
	b = binary.BigEndian.AppendUint16(b, etherType)
	return append(b, payload...)
}

func ipv4Packet(proto uint8, src, dst string, options []byte, payload []byte) []byte {
	ihl := 5 + len(options)/4
	h := make([]byte, ihl*4)
	h[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)+len(payload)))
	h[8] = 64
	h[9] = proto
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	copy(h[20:], options)
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	return append(h, payload...)
}

func ipv6Packet(next uint8, src, dst string, payload []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(payload)))
	h[6] = next
	h[7] = 64
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, payload...)
}

func udpDatagram(sport, dport uint16, payload []byte) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], uint16(8+len(payload)))
	return append(h, payload...)
}

func tcpSegment(sport, dport uint16) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	h[12] = 5 << 4
	h[13] = 0x02 // SYN
	return h
}

// Ready-made frames.
func udp4Frame(sport, dport uint16) []byte {
	return ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(17, "10.0.0.1", "10.0.0.2", nil, udpDatagram(sport, dport, []byte("hello"))))
}

func udp6Frame(sport, dport uint16) []byte {
	return ethFrame(macB, macA, etherTypeIPv6, ipv6Packet(17, "fd00::1", "fd00::2", udpDatagram(sport, dport, []byte("hello"))))
}

func tcp4Frame(sport, dport uint16) []byte {
	return ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(6, "10.0.0.1", "10.0.0.2", nil, tcpSegment(sport, dport)))
}

func tcp6Frame(sport, dport uint16) []byte {
	return ethFrame(macB, macA, etherTypeIPv6, ipv6Packet(6, "fd00::1", "fd00::2", tcpSegment(sport, dport)))
}

func arpFrame() []byte {
	return ethFrame([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, macA, etherTypeARP, make([]byte, 28))
}

// testHeadroom is XDP_PACKET_HEADROOM; a test buffer is one page.
const testHeadroom = 256

// newInput places frame in a fresh page after XDP_PACKET_HEADROOM, as a
// driver's receive buffer holds it.
func newInput(frame []byte) *Input {
	buf := make([]byte, PageSize)
	copy(buf[testHeadroom:], frame)
	return &Input{
		Buf:            buf,
		Data:           testHeadroom,
		DataEnd:        testHeadroom + len(frame),
		DataMeta:       testHeadroom,
		IngressIfindex: 3,
		RxQueueIndex:   0,
	}
}

// packet returns the frame bytes of in as a run left them.
func packet(in *Input, res Result) []byte {
	return in.Buf[res.Data:res.DataEnd]
}
