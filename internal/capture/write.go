package capture

import (
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
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

// WritePcapng writes pkts to w as one pcapng section of one Ethernet
// interface with nanosecond timestamps, every packet inbound with its
// comment. app names the application in the section header.
func WritePcapng(w io.Writer, app, iface string, pkts []Out) error {
	intf := pcapgo.DefaultNgInterface
	intf.Name, intf.OS, intf.LinkType = iface, "", layers.LinkTypeEthernet
	nw, err := pcapgo.NewNgWriterInterface(w, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: app}})
	if err != nil {
		return err
	}
	inbound := &pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionInbound}
	var opts pcapgo.NgPacketOptions
	opts.Flags = inbound
	comment := make([]string, 1)
	for i, p := range pkts {
		if len(p.Comment) > maxComment {
			return fmt.Errorf("capture: packet %d: a comment of %d bytes, at most %d", i+1, len(p.Comment), maxComment)
		}
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, p.Time), CaptureLength: len(p.Data), Length: p.Len}
		opts.Comments = nil
		if p.Comment != "" {
			comment[0] = p.Comment
			opts.Comments = comment
		}
		if err := nw.WritePacketWithOptions(ci, p.Data, opts); err != nil {
			return fmt.Errorf("capture: packet %d: %w", i+1, err)
		}
	}
	return nw.Flush()
}
