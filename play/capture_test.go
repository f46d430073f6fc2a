package play

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/device"
	"ringlab/engine/view"
	"ringlab/internal/capture"
)

// pcapFixture is a classic pcap of drop UDP frames to port 9 (which
// xdp_drop_udp_port drops), then pass to port 53, 10 µs apart.
func pcapFixture(drop, pass int) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint32(b, 262144)
	b = le.AppendUint32(b, 1)
	for i := 0; i < drop+pass; i++ {
		port, size := uint16(9), 64+i%3*100
		if i >= drop {
			port = 53
		}
		f := device.MakeFlow(i%4, false, device.ProtoUDP, port)
		fr := make([]byte, size)
		f.Build(fr, uint64(i), size)
		b = le.AppendUint32(b, 1)
		b = le.AppendUint32(b, uint32(i*10))
		b = le.AppendUint32(b, uint32(size))
		b = le.AppendUint32(b, uint32(size))
		b = append(b, fr...)
	}
	return b
}

const dropUDP9 = "preset=xdp-pass&set=xdp:xdp_drop_udp_port&speed=0" // the discard port, 9

// runToEnd plays c until its pane A's capture has every frame's fate,
// and returns the last state.
func runToEnd(t *testing.T, c *Controller) StateOut {
	t.Helper()
	require.NoError(t, c.Step(Play{}))
	var last StateOut
	for range 2000 {
		c.Tick(125e6)
		for c.Work(1 << 14) {
		}
		for _, o := range c.Ready().Send {
			if s, ok := o.(StateOut); ok {
				last = s
			}
		}
		if cs := last.Panes[0].Capture; cs != nil && cs.Decided == cs.Frames {
			return last
		}
	}
	t.Fatalf("the capture's frames were not all decided: %+v", last.Panes[0].Capture)
	return last
}

func metric(ps PaneState, name string) any {
	for _, m := range ps.Metrics {
		if m[0] == name {
			return m[1]
		}
	}
	return nil
}

// TestCaptureInThePage: a capture loaded in a pane feeds its device;
// every frame's verdict shows in the state (counted and listed), in the
// counters table and in its inspect record, and the export holds every
// frame as captured with its verdict and drop reason in its comment.
func TestCaptureInThePage(t *testing.T) {
	const drop, pass = 12, 7
	file := pcapFixture(drop, pass)
	c := New(dropUDP9)
	c.Ready()
	require.NoError(t, c.Step(Pcap{Name: "fixture.pcap", Bytes: file}))
	st := runToEnd(t, c)
	ps := st.Panes[0]
	cs := ps.Capture
	assert.Equal(t, "fixture.pcap", cs.Name)
	assert.Equal(t, "pcap", cs.Format)
	assert.Equal(t, drop+pass, cs.Frames)
	assert.Equal(t, map[string]int{"dropped": drop, "delivered": pass}, cs.Fates)
	assert.Equal(t, map[string]int{"XDP_DROP": drop, "XDP_PASS": pass}, cs.Verdicts)
	assert.Equal(t, map[string]int{"xdp_drop": drop}, cs.Reasons)
	require.Len(t, cs.Rows, CaptureRows)
	last := cs.Rows[len(cs.Rows)-1]
	assert.Equal(t, drop+pass-1, last.Index)
	assert.Equal(t, "XDP_PASS", last.Verdict)
	assert.Contains(t, last.Flow, ":53")
	first := cs.Rows[0]
	assert.Equal(t, drop+pass-CaptureRows, first.Index)
	assert.Equal(t, "XDP_DROP", first.Verdict)
	assert.Equal(t, "xdp_drop", first.Reason)
	// The counters table counts the same drops by the same reason.
	assert.EqualValues(t, drop, metric(ps, "drops.xdp_drop"))
	assert.EqualValues(t, drop, metric(ps, "rx_xdp_drops"))
	assert.Contains(t, ps.Config, "capture fixture.pcap")

	// A frame's whole record in the inspect panel.
	require.NoError(t, c.Step(Inspect{view.Target{Kind: KindFrame, Index: 0}}))
	var rec *view.Record
	for _, o := range c.Ready().Send {
		if in, ok := o.(InspectOut); ok {
			rec = &in.Record
		}
	}
	require.NotNil(t, rec)
	assert.Equal(t, "frame 1 of the capture", rec.Title)
	fields := map[string]string{}
	for _, f := range rec.Fields {
		fields[f.Name] = f.Value
	}
	assert.Equal(t, "XDP_DROP", fields["verdict"])
	assert.Equal(t, "xdp_drop", fields["drop reason"])
	assert.Equal(t, "byte offset 24", fields["in the file"])
	assert.NotEqual(t, "nothing", fields["program read"], "the program read the frame's headers")
	require.NoError(t, c.Step(Inspect{view.Target{Kind: KindFrame, Index: drop + pass}}))
	var refused *ErrorOut
	for _, o := range c.Ready().Send {
		if e, ok := o.(ErrorOut); ok {
			refused = &e
		}
	}
	require.NotNil(t, refused, "no frame past the capture's last")
	assert.Contains(t, refused.Message, "the capture has 19")

	// The export, read back.
	require.NoError(t, c.Step(Request{ID: 9, In: PcapExport{}}))
	var ex *PcapExportOut
	for _, o := range c.Ready().Send {
		if e, ok := o.(PcapExportOut); ok {
			ex = &e
		}
	}
	require.NotNil(t, ex)
	assert.Equal(t, 9, ex.ID)
	assert.Equal(t, "fixture-verdicts.pcapng", ex.Name)
	back, err := capture.Parse(ex.Bytes)
	require.NoError(t, err)
	orig, err := capture.Parse(file)
	require.NoError(t, err)
	require.Len(t, back.Packets, drop+pass)
	comments := ngComments(t, ex.Bytes)
	for i, p := range back.Packets {
		assert.Equal(t, orig.Packets[i].Data, p.Data, "frame %d as captured", i+1)
		if i < drop {
			assert.Contains(t, comments[i], "ringlab: fate=dropped verdict=XDP_DROP reason=xdp_drop")
		} else {
			assert.Contains(t, comments[i], "ringlab: fate=delivered verdict=XDP_PASS")
		}
	}

	// The link carries the capture: the same run again.
	st2, err := DecodeState(st.Query)
	require.NoError(t, err)
	assert.Equal(t, file, st2.A.Capture)
	assert.Equal(t, "fixture.pcap", st2.A.CaptureName)
}

// ngComments reads each Enhanced Packet Block's opt_comment of a
// little-endian pcapng file, in order.
func ngComments(t *testing.T, b []byte) []string {
	var out []string
	le := binary.LittleEndian
	for off := 0; off < len(b); {
		typ, n := le.Uint32(b[off:]), int(le.Uint32(b[off+4:]))
		if typ == 6 {
			capLen := int(le.Uint32(b[off+20:]))
			o := off + 28 + (capLen+3)&^3
			comment := ""
			for o+4 <= off+n-4 {
				code, l := le.Uint16(b[o:]), int(le.Uint16(b[o+2:]))
				if code == 0 {
					break
				}
				if code == 1 {
					comment = string(b[o+4 : o+4+l])
				}
				o += 4 + (l+3)&^3
			}
			out = append(out, comment)
		}
		require.Positive(t, n)
		off += n
	}
	return out
}

// TestCaptureRefused: a truncated or malformed capture, one past the
// page's limit, or one a stream's scenario cannot take is refused with
// a reason (the byte offset for a malformed one) and the run is left as
// it was.
func TestCaptureRefused(t *testing.T) {
	file := pcapFixture(3, 2)
	big := append(bytes.Clone(file), make([]byte, MaxCapture)...)
	for _, tc := range []struct {
		name, query string
		b           []byte
		want        string
	}{
		{"truncated", dropUDP9, file[:len(file)-10], "at byte offset "},
		{"not a capture", dropUDP9, []byte("GIF89a, not a capture"), "at byte offset 0: magic number"},
		{"too big", dropUDP9, big, "at most 262144"},
		{"a stream", "preset=r1-upstream&speed=0", file, "decides its own frames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.query)
			c.Ready()
			before := c.sess.State().Encode()
			w := c.sess.Panes[0].World
			err := c.Step(Pcap{Name: "x.pcap", Bytes: tc.b})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, c.sess.State().Encode(), "the run's state is unchanged")
			assert.Same(t, w, c.sess.Panes[0].World, "the same world runs on")
			assert.Nil(t, c.sess.Panes[0].capture)
		})
	}
}
