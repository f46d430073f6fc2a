// Package capture reads packet captures (pcap and pcapng, Ethernet) into
// frames the engine can replay, and writes what a replay did with them
// as pcapng with a comment on each packet.
//
// The reader is the project's own, over the capture's bytes in memory:
// every error names the byte offset of the record or block it is about
// (a truncated file, a length that points past the end, a block whose
// trailing length disagrees), which the buffered readers of the
// libraries do not know (FuzzParse holds it). The writer is the
// project's own too (write.go). Replay turns a capture into the engine's
// frames, Records says what became of each and Count counts them by
// fate, verdict and drop reason, for `ringlab run --pcap` and the page's
// Capture (play/capture.go) alike, which hand the frames to
// engine.NewReplay (docs/replay.md). The package is outside the
// engine, on engine/device, bpf, kernel and sim.
package capture

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Limits of a capture.
const (
	// MaxSnapLen bounds a record's captured length: libpcap's largest
	// snapshot length (MAXIMUM_SNAPLEN).
	MaxSnapLen = 262144
	// MaxPackets bounds the packets of one capture.
	MaxPackets = 1 << 22
)

// LinkEthernet is LINKTYPE_ETHERNET, the only link type the model
// receives.
const LinkEthernet = 1

// Format is a capture's file format.
type Format string

// Formats.
const (
	FormatPcap   Format = "pcap"
	FormatPcapng Format = "pcapng"
)

// Packet is one captured frame.
type Packet struct {
	// Offset is the byte offset of its record (pcap) or block (pcapng)
	// in the file.
	Offset int64
	// Time is its timestamp in ns since the Unix epoch; Timed is false
	// for a pcapng Simple Packet Block, which has none.
	Time  int64
	Timed bool
	// Len is its length on the wire; Data what was captured of it (at
	// most Len bytes, a slice of the file's bytes).
	Len  int
	Data []byte
}

// Capture is a parsed capture file.
type Capture struct {
	Format  Format
	Packets []Packet
}

// Error is a malformed or truncated capture: what is wrong, at which
// byte offset.
type Error struct {
	Offset int64
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("capture: at byte offset %d: %s", e.Offset, e.Reason)
}

func errAt(off int, format string, args ...any) error {
	return &Error{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
}

// pcap magic numbers (the file's first four bytes as written).
const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapMagicNano  = 0xa1b23c4d
	ngSHB          = 0x0a0d0d0a
	ngByteOrder    = 0x1a2b3c4d
)

// Parse reads a pcap or pcapng capture of Ethernet frames from b. The
// packets' Data are slices of b.
func Parse(b []byte) (*Capture, error) {
	if len(b) < 4 {
		return nil, errAt(0, "%d bytes: too short for a capture's magic number", len(b))
	}
	switch binary.LittleEndian.Uint32(b) {
	case pcapMagicMicro, pcapMagicNano:
		return parsePcap(b, binary.LittleEndian)
	case ngSHB:
		return parsePcapng(b)
	}
	switch binary.BigEndian.Uint32(b) {
	case pcapMagicMicro, pcapMagicNano:
		return parsePcap(b, binary.BigEndian)
	}
	return nil, errAt(0, "magic number %#08x is neither pcap's (a1b2c3d4, a1b23c4d) nor pcapng's (0a0d0d0a)", binary.BigEndian.Uint32(b))
}

func parsePcap(b []byte, bo binary.ByteOrder) (*Capture, error) {
	if len(b) < 24 {
		return nil, errAt(len(b), "truncated: the file ends inside pcap's 24-byte file header")
	}
	nano := bo.Uint32(b) == pcapMagicNano
	if major := bo.Uint16(b[4:]); major != 2 {
		return nil, errAt(4, "pcap version %d.%d: want 2.4", major, bo.Uint16(b[6:]))
	}
	if lt := bo.Uint32(b[20:]) & 0x0fffffff; lt != LinkEthernet { // the high bits carry the FCS length
		return nil, errAt(20, "link type %d: only Ethernet (1) frames can be received by the model", lt)
	}
	c := &Capture{Format: FormatPcap}
	off := 24
	for off < len(b) {
		if len(b)-off < 16 {
			return nil, errAt(off, "truncated: the file ends inside a 16-byte record header (%d bytes left)", len(b)-off)
		}
		if len(c.Packets) == MaxPackets {
			return nil, errAt(off, "more than %d packets", MaxPackets)
		}
		h := b[off:]
		sec, frac := int64(bo.Uint32(h)), int64(bo.Uint32(h[4:]))
		incl, orig := bo.Uint32(h[8:]), bo.Uint32(h[12:])
		if incl > MaxSnapLen {
			return nil, errAt(off, "record of %d captured bytes, more than the %d a snapshot may hold", incl, MaxSnapLen)
		}
		if int(incl) > len(b)-off-16 {
			return nil, errAt(off, "truncated: the record holds %d captured bytes, the file has %d left", incl, len(b)-off-16)
		}
		if orig < incl {
			return nil, errAt(off, "record of %d bytes on the wire and %d captured: more captured than sent", orig, incl)
		}
		ns := frac * 1000
		if nano {
			ns = frac
		}
		if frac >= 1e9 || (!nano && frac >= 1e6) {
			return nil, errAt(off+4, "timestamp fraction %d is a whole second or more", frac)
		}
		c.Packets = append(c.Packets, Packet{
			Offset: int64(off), Time: sec*1e9 + ns, Timed: true,
			Len: int(orig), Data: h[16 : 16+incl : 16+incl],
		})
		off += 16 + int(incl)
	}
	return c, nil
}

// ngIface is what a pcapng Interface Description Block says.
type ngIface struct {
	link    uint16
	snap    uint32
	tsUnit  float64 // ns per timestamp unit
	tsScale int64   // ns per unit when whole (0: use tsUnit)
	tsOff   int64   // seconds added (if_tsoffset)
	offset  int
}

func parsePcapng(b []byte) (*Capture, error) {
	c := &Capture{Format: FormatPcapng}
	var bo binary.ByteOrder = binary.LittleEndian
	var ifaces []ngIface
	var last int64
	off := 0
	for off < len(b) {
		if len(b)-off < 12 {
			return nil, errAt(off, "truncated: the file ends inside a block's header (%d bytes left, a block has at least 12)", len(b)-off)
		}
		typ := bo.Uint32(b[off:])
		if typ == ngSHB {
			// A section header sets the byte order of its section.
			switch binary.LittleEndian.Uint32(b[off+8:]) {
			case ngByteOrder:
				bo = binary.LittleEndian
			case 0x4d3c2b1a:
				bo = binary.BigEndian
			default:
				return nil, errAt(off+8, "section header's byte-order magic %#08x is not 1a2b3c4d either way round", binary.LittleEndian.Uint32(b[off+8:]))
			}
			ifaces = ifaces[:0]
		} else if off == 0 {
			return nil, errAt(0, "pcapng file does not start with a section header block")
		}
		total := bo.Uint32(b[off+4:])
		if total < 12 || total%4 != 0 {
			return nil, errAt(off+4, "block of type %#x has length %d: want a multiple of 4, at least 12", typ, total)
		}
		if uint64(total) > uint64(len(b)-off) {
			return nil, errAt(off, "truncated: the block of type %#x is %d bytes long, the file has %d left", typ, total, len(b)-off)
		}
		end := off + int(total)
		if trail := bo.Uint32(b[end-4:]); trail != total {
			return nil, errAt(end-4, "block of type %#x at %d ends with length %d, starts with %d", typ, off, trail, total)
		}
		body := b[off+8 : end-4]
		switch typ {
		case ngSHB:
			if len(body) < 16 {
				return nil, errAt(off, "section header block of %d bytes: too short", total)
			}
			if major := bo.Uint16(body[4:]); major != 1 {
				return nil, errAt(off+12, "pcapng version %d.%d: want 1.x", major, bo.Uint16(body[6:]))
			}
		case 1: // Interface Description Block
			if len(body) < 8 {
				return nil, errAt(off, "interface description block of %d bytes: too short", total)
			}
			in := ngIface{link: bo.Uint16(body), snap: bo.Uint32(body[4:]), tsScale: 1000, offset: off}
			if err := in.options(body[8:], off+16, bo); err != nil {
				return nil, err
			}
			ifaces = append(ifaces, in)
		case 6, 2: // Enhanced Packet Block, obsolete Packet Block
			if len(body) < 20 {
				return nil, errAt(off, "packet block of %d bytes: too short", total)
			}
			var id uint32
			if typ == 6 {
				id = bo.Uint32(body)
			} else {
				id = uint32(bo.Uint16(body))
			}
			if int(id) >= len(ifaces) {
				return nil, errAt(off+8, "packet of interface %d, but the section has described %d interfaces", id, len(ifaces))
			}
			in := &ifaces[id]
			if in.link != LinkEthernet {
				return nil, errAt(off, "packet of interface %d, whose link type is %d (described at byte offset %d): only Ethernet (1) frames can be received by the model", id, in.link, in.offset)
			}
			ts := uint64(bo.Uint32(body[4:]))<<32 | uint64(bo.Uint32(body[8:]))
			capLen, orig := bo.Uint32(body[12:]), bo.Uint32(body[16:])
			if capLen > MaxSnapLen {
				return nil, errAt(off+20, "packet of %d captured bytes, more than the %d a snapshot may hold", capLen, MaxSnapLen)
			}
			if uint64(capLen) > uint64(len(body)-20) {
				return nil, errAt(off+20, "packet of %d captured bytes in a block that holds %d", capLen, len(body)-20)
			}
			if orig < capLen {
				return nil, errAt(off+20, "packet of %d bytes on the wire and %d captured: more captured than sent", orig, capLen)
			}
			t, ok := in.nanos(ts)
			if !ok {
				return nil, errAt(off+12, "timestamp %d does not fit in nanoseconds since 1970", ts)
			}
			last = t
			if err := c.add(off, Packet{Offset: int64(off), Time: t, Timed: true, Len: int(orig), Data: body[20 : 20+capLen : 20+capLen]}); err != nil {
				return nil, err
			}
		case 3: // Simple Packet Block: interface 0, no timestamp
			if len(body) < 4 {
				return nil, errAt(off, "simple packet block of %d bytes: too short", total)
			}
			if len(ifaces) == 0 {
				return nil, errAt(off, "simple packet block before any interface description")
			}
			if ifaces[0].link != LinkEthernet {
				return nil, errAt(off, "packet of interface 0, whose link type is %d: only Ethernet (1) frames can be received by the model", ifaces[0].link)
			}
			orig := bo.Uint32(body)
			capLen := uint64(orig)
			if s := ifaces[0].snap; s > 0 && uint64(s) < capLen {
				capLen = uint64(s)
			}
			if capLen > uint64(len(body)-4) || capLen > MaxSnapLen {
				return nil, errAt(off+8, "simple packet of %d bytes in a block that holds %d", capLen, len(body)-4)
			}
			if err := c.add(off, Packet{Offset: int64(off), Time: last, Len: int(orig), Data: body[4 : 4+capLen : 4+capLen]}); err != nil {
				return nil, err
			}
		}
		off = end
	}
	return c, nil
}

func (c *Capture) add(off int, p Packet) error {
	if len(c.Packets) == MaxPackets {
		return errAt(off, "more than %d packets", MaxPackets)
	}
	c.Packets = append(c.Packets, p)
	return nil
}

// options reads an interface's if_tsresol (9) and if_tsoffset (14); the
// options start at file offset at.
func (in *ngIface) options(b []byte, at int, bo binary.ByteOrder) error {
	for o := 0; o+4 <= len(b); {
		code, n := bo.Uint16(b[o:]), int(bo.Uint16(b[o+2:]))
		if code == 0 { // opt_endofopt
			return nil
		}
		v := o + 4
		if n > len(b)-v {
			return errAt(at+o, "option %d of %d bytes runs past its block", code, n)
		}
		switch {
		case code == 9 && n >= 1:
			r := b[v]
			if r&0x80 != 0 {
				if r&0x7f > 63 {
					return errAt(at+v, "timestamp resolution 2^-%d: past 2^-63", r&0x7f)
				}
				in.tsScale, in.tsUnit = 0, 1e9/math.Ldexp(1, int(r&0x7f))
			} else {
				if r > 18 {
					return errAt(at+v, "timestamp resolution 10^-%d: past 10^-18", r)
				}
				in.tsScale, in.tsUnit = 0, math.Pow(10, float64(9-int(r)))
				if r <= 9 {
					in.tsScale = int64(math.Pow(10, float64(9-int(r))))
				}
			}
		case code == 14 && n >= 8:
			in.tsOff = int64(bo.Uint64(b[v:]))
			if in.tsOff > math.MaxInt64/1_000_000_000 || in.tsOff < math.MinInt64/1_000_000_000 {
				return errAt(at+v, "timestamp offset of %d seconds does not fit", in.tsOff)
			}
		}
		o = v + (n+3)&^3
	}
	return nil
}

// nanos is timestamp ts of the interface in ns since 1970.
func (in *ngIface) nanos(ts uint64) (int64, bool) {
	var ns float64
	if in.tsScale > 0 {
		if ts > math.MaxInt64/uint64(in.tsScale) {
			return 0, false
		}
		t := int64(ts) * in.tsScale
		if t > math.MaxInt64-in.tsOff*1e9 && in.tsOff > 0 {
			return 0, false
		}
		return t + in.tsOff*1e9, true
	}
	ns = float64(ts)*in.tsUnit + float64(in.tsOff)*1e9
	if ns != ns || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, false
	}
	return int64(ns), true
}
