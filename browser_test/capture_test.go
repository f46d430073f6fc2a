package browsertest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/device"
	"ringlab/internal/capture"
)

// capturePcap writes a classic pcap of drop UDP frames to port 9 (the
// discard port, which xdp_drop_udp_port drops) then pass to port 53, 10
// µs apart, and returns its path and bytes.
func capturePcap(t *testing.T, drop, pass int) (string, []byte) {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint32(b, 262144)
	b = le.AppendUint32(b, 1)
	for i := range drop + pass {
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
	path := filepath.Join(t.TempDir(), "fixture.pcap")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path, b
}

// TestCaptureLoadVerdictsExport: a capture loaded from disk feeds the
// device: every frame's verdict shows in the capture's list, its
// inspect record and the counters; the export holds every frame as
// captured with its verdict and drop reason in its comment; a truncated
// capture is refused naming its byte offset and changes nothing.
func TestCaptureLoadVerdictsExport(t *testing.T) {
	t.Parallel()
	const drop, pass = 12, 7
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=xdp-pass&set=xdp:xdp_drop_udp_port")
	p.pause()
	path, file := capturePcap(t, drop, pass)
	p.do(chromedp.SetUploadFiles(chromedp.ID("pcap-file"), []string{path}))
	p.waitJS(`(window.ringlab.state.panes[0].capture || {}).frames === 19`, 30*time.Second)
	assert.Contains(t, eval[string](p, `location.search`), "pcap=", "the link carries the capture")

	p.send(map[string]any{"type": "speed", "eps": 0})
	p.send(map[string]any{"type": "play"})
	p.waitJS(`(c => c.decided === c.frames)(window.ringlab.state.panes[0].capture)`, 60*time.Second)
	p.pause()

	summary := eval[string](p, `document.getElementById("capture-summary").textContent`)
	assert.Contains(t, summary, fmt.Sprintf("Verdicts: XDP_DROP %d, XDP_PASS %d.", drop, pass))
	assert.Contains(t, summary, fmt.Sprintf("Drop reasons: xdp_drop %d.", drop))
	rows := eval[[]string](p, `[...document.querySelectorAll("#capture-frames li strong")].map(e => e.textContent)`)
	require.NotEmpty(t, rows)
	assert.Equal(t, fmt.Sprintf("#%d delivered XDP_PASS", drop+pass), rows[len(rows)-1])
	assert.Contains(t, rows, fmt.Sprintf("#%d dropped XDP_DROP (xdp_drop)", drop))
	assert.Equal(t, float64(drop), p.counter("drops.xdp_drop", 0), "the counters count the same drops")
	assert.Equal(t, float64(drop), p.counter("rx_xdp_drops", 0))

	// A frame of the list, inspected.
	p.do(chromedp.Click(fmt.Sprintf(`#capture-frames li[data-index="%d"]`, drop-1)))
	p.waitJS(`document.getElementById("inspect").dataset.kind === "frame"`, 20*time.Second)
	field := func(name string) string {
		return eval[string](p, fmt.Sprintf(`(document.querySelector('#inspect dd[data-field=%q]') || {}).textContent || ""`, name))
	}
	assert.Equal(t, "XDP_DROP", field("verdict"))
	assert.Equal(t, "xdp_drop", field("drop reason"))
	assert.Contains(t, field("flow"), ":9")
	screenshot(t, p.ctx, "capture-verdicts")

	// The export, read back.
	p.do(chromedp.Click(chromedp.ID("pcap-export")))
	p.waitJS(`!!window.ringlab.lastExport`, 20*time.Second)
	assert.Equal(t, "fixture-verdicts.pcapng", eval[string](p, `window.ringlab.lastExport.name`))
	b64 := eval[string](p, `(() => { let s = ""; for (const x of window.ringlab.lastExport.bytes) s += String.fromCharCode(x); return btoa(s); })()`)
	out, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	orig, err := capture.Parse(file)
	require.NoError(t, err)
	r, err := pcapgo.NewNgReader(bytes.NewReader(out), pcapgo.DefaultNgReaderOptions)
	require.NoError(t, err)
	for i := range drop + pass {
		data, _, opts, err := r.ReadPacketDataWithOptions()
		require.NoError(t, err, "frame %d", i+1)
		assert.Equal(t, orig.Packets[i].Data, data, "frame %d as captured", i+1)
		require.Len(t, opts.Comments, 1)
		if i < drop {
			assert.Contains(t, opts.Comments[0], "ringlab: fate=dropped verdict=XDP_DROP reason=xdp_drop")
		} else {
			assert.Contains(t, opts.Comments[0], "ringlab: fate=delivered verdict=XDP_PASS")
		}
	}

	// A truncated capture: refused at its offset, the run as it was.
	before := eval[string](p, `window.ringlab.state.query`)
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	require.NoError(t, os.WriteFile(cut, file[:len(file)-30], 0o644))
	p.do(chromedp.SetUploadFiles(chromedp.ID("pcap-file"), []string{cut}))
	p.waitJS(`document.getElementById("status").textContent.includes("at byte offset")`, 30*time.Second)
	status := eval[string](p, `document.getElementById("status").textContent`)
	assert.Contains(t, status, "cut.pcap")
	assert.Contains(t, status, "truncated")
	p.settle()
	assert.Equal(t, before, eval[string](p, `window.ringlab.state.query`), "a refused capture changes nothing")
	assert.Equal(t, "fixture.pcap", eval[string](p, `window.ringlab.state.panes[0].capture.name`))
	screenshot(t, p.ctx, "capture-refused")
}
