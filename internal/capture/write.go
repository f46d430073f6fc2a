package capture

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Out is one packet to write: when, its bytes and length on the wire, and
// the comment that goes into its block (EPB opt_comment), which Wireshark
// shows as pkt_comment and tcpdump -v prints.
type Out struct {
	Time    int64 // ns since 1970
	Len     int
	Data    []byte
	Comment string
}

// maxComment bounds a comment: an option's length is 16 bits.
const maxComment = 0xfff0

// pcapng block types and option codes (draft-ietf-opsawg-pcapng).
const (
	ngIDB          = 1
	ngEPB          = 6
	optEnd         = 0
	optComment     = 1
	shbUserAppl    = 4
	ifName         = 2
	ifTsresol      = 9
	epbFlags       = 2
	epbInbound     = 1 // direction bits 01: inbound
	tsresolNanos   = 9 // 10^-9 s
	ngVersionMajor = 1
)

// WritePcapng writes pkts to w as one little-endian pcapng section of one
// Ethernet interface with nanosecond timestamps, every packet an Enhanced
// Packet Block marked inbound with its comment. app names the
// application in the section header, iface the interface.
//
// The writer is the format's few blocks written out (a section header,
// an interface description, enhanced packet blocks), shared by the
// command line and the page: gopacket's pcapgo did the same but linked
// its layers package, megabytes in the WebAssembly.
func WritePcapng(w io.Writer, app, iface string, pkts []Out) error {
	var b block
	// Section Header Block: byte-order magic, version 1.0, section
	// length unknown (-1).
	b.start(ngSHB)
	b.u32(ngByteOrder)
	b.u16(ngVersionMajor)
	b.u16(0)
	b.u64(^uint64(0))
	b.option(shbUserAppl, []byte(app))
	b.end()
	// Interface Description Block: Ethernet, no snap length below the
	// largest, timestamps in ns.
	b.start(ngIDB)
	b.u16(LinkEthernet)
	b.u16(0)
	b.u32(MaxSnapLen)
	b.option(ifName, []byte(iface))
	b.option(ifTsresol, []byte{tsresolNanos})
	b.end()
	if _, err := w.Write(b.buf); err != nil {
		return err
	}
	var flags [4]byte
	binary.LittleEndian.PutUint32(flags[:], epbInbound)
	for i, p := range pkts {
		switch {
		case len(p.Comment) > maxComment:
			return fmt.Errorf("capture: packet %d: a comment of %d bytes, at most %d", i+1, len(p.Comment), maxComment)
		case len(p.Data) > MaxSnapLen:
			return fmt.Errorf("capture: packet %d: %d bytes captured, at most %d", i+1, len(p.Data), MaxSnapLen)
		case p.Len < len(p.Data):
			return fmt.Errorf("capture: packet %d: %d bytes captured of a %d-byte frame", i+1, len(p.Data), p.Len)
		case p.Time < 0:
			return fmt.Errorf("capture: packet %d: timestamp %d ns is before 1970", i+1, p.Time)
		}
		b.buf = b.buf[:0]
		b.start(ngEPB)
		b.u32(0) // interface 0
		b.u32(uint32(uint64(p.Time) >> 32))
		b.u32(uint32(p.Time))
		b.u32(uint32(len(p.Data)))
		b.u32(uint32(p.Len))
		b.padded(p.Data)
		if p.Comment != "" {
			b.option(optComment, []byte(p.Comment))
		}
		b.option(epbFlags, flags[:])
		b.end()
		if _, err := w.Write(b.buf); err != nil {
			return fmt.Errorf("capture: packet %d: %w", i+1, err)
		}
	}
	return nil
}

// block builds pcapng blocks in buf, little-endian.
type block struct {
	buf  []byte
	at   int  // where the open block starts
	opts bool // the open block has options (it ends with opt_endofopt)
}

func (b *block) start(typ uint32) {
	b.at, b.opts = len(b.buf), false
	b.u32(typ)
	b.u32(0) // total length, set by end
}

func (b *block) u16(v uint16) { b.buf = binary.LittleEndian.AppendUint16(b.buf, v) }
func (b *block) u32(v uint32) { b.buf = binary.LittleEndian.AppendUint32(b.buf, v) }
func (b *block) u64(v uint64) { b.buf = binary.LittleEndian.AppendUint64(b.buf, v) }

// padded appends v and zeros up to a multiple of 4 bytes.
func (b *block) padded(v []byte) {
	b.buf = append(b.buf, v...)
	b.buf = append(b.buf, make([]byte, (4-len(v)%4)%4)...)
}

// option appends an option: its code, length and padded value.
func (b *block) option(code uint16, v []byte) {
	b.opts = true
	b.u16(code)
	b.u16(uint16(len(v)))
	b.padded(v)
}

// end closes the open block: opt_endofopt after its options, the
// trailing length, and the length in its header.
func (b *block) end() {
	if b.opts {
		b.u16(optEnd)
		b.u16(0)
	}
	total := uint32(len(b.buf) - b.at + 4)
	b.u32(total)
	binary.LittleEndian.PutUint32(b.buf[b.at+4:], total)
}
