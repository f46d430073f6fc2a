package browsertest

import (
	"encoding/base64"
	"encoding/json"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/view"
)

// The CPU lanes: who ran when over the last 200 µs (engine/view's
// CPUView.Lane), drawn by the shell (wasm/lanes.go) in the colours of
// wasm/colors.go's laneColors. The state the game posts says nothing of
// the lanes (play builds it), so the test reads the canvas itself: where
// the lane is from the layout reply and engine/view's geometry, what is
// drawn there from a screenshot.

// Lane colours, as wasm/colors.go's laneColors writes them.
var (
	laneKsoftirqd = [3]uint8{0xa3, 0x71, 0xf7}
	laneTask      = [3]uint8{0x3f, 0xb9, 0x50}
)

// floodQuery is the query of tutorial 10's step 5 at 5 ms: a UDP flood
// on one CPU of kernel 6.4, whose NET_RX ksoftirqd/0 runs in turns with
// the reader, app/0.
func floodQuery(t *testing.T) string {
	t.Helper()
	sc, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	for _, kv := range [][2]string{
		{"kernel", `"6.4"`}, {"ring_size", "256"}, {"device.kind", `"vdpa"`},
		{"consumer", `{"cpu": 0, "context": "process", "cost_ns": 300}`},
		{"traffic", `{"kind": "udp_stream", "proto": "udp", "flows": 1, "rate_pps": 6000000, "dst_port": 9, "size": 64}`},
	} {
		sc, err = scenario.SetText(sc, kv[0], kv[1])
		require.NoError(t, err, kv[0])
	}
	b, err := json.Marshal(sc)
	require.NoError(t, err)
	return "?scenario=" + base64.RawURLEncoding.EncodeToString(b) + "&log=t5000000"
}

// colourCount counts the pixels of r (canvas pixels) in img, the
// canvas's picture, within a few levels of c.
func colourCount(img image.Image, r view.Rect, c [3]uint8) int {
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -6 && d <= 6 }
	n := 0
	o := img.Bounds().Min
	for y := int(r.Y); y < int(r.Y+r.H); y++ {
		for x := int(r.X); x < int(r.X+r.W); x++ {
			cr, cg, cb, _ := img.At(o.X+x, o.Y+y).RGBA()
			if near(cr, c[0]) && near(cg, c[1]) && near(cb, c[2]) {
				n++
			}
		}
	}
	return n
}

// TestCPULanesDrawWhoRanWhen: a UDP flood on one CPU, opened at 5 ms:
// the CPU view's title names the window and the legend's kinds, and says
// what they are when hovered; the lane's run row shows ksoftirqd/0 and
// app/0 taking turns, and the thin row under it each one's waits; no two
// texts overlap.
func TestCPULanesDrawWhoRanWhen(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 1280, 720, floodQuery(t))
	p.settle()
	require.False(t, p.playing(), "a link with a log opens paused")
	require.Equal(t, 5e6, p.counter("sim_time_ns", 0))
	l := p.laidOut(1)
	checkTexts(t, l, "flood at 1280x720")

	var title struct{ X, Y, W, H float64 }
	var texts []string
	for _, tx := range l.Texts {
		if tx.View == "cpus" {
			texts = append(texts, tx.Text)
			if strings.HasPrefix(tx.Text, "CPUs") {
				title = struct{ X, Y, W, H float64 }{tx.X, tx.Y, tx.W, tx.H}
			}
		}
	}
	t.Logf("the CPU view's texts: %q", texts)
	require.NotEmpty(t, texts)
	for _, k := range view.LaneKindNames {
		assert.Contains(t, texts[0], k, "the legend names %s", k)
	}
	assert.Contains(t, texts, "app/0", "the work the CPU began last")

	cr := l.Panes[0]["cpus"]
	pl := view.PaneLayout{CPUs: view.Rect{X: cr.X, Y: cr.Y, W: cr.W, H: cr.H}}
	g := view.CPULaneGeom(pl.CPULane(0, 1))
	require.Positive(t, g.Timeline.W, "the lane has room for its timeline")
	p.waitPicture() // the paused world drawn
	img := p.canvasImage()
	runK, runT := colourCount(img, g.Run, laneKsoftirqd), colourCount(img, g.Run, laneTask)
	waitK, waitT := colourCount(img, g.Wait, laneKsoftirqd), colourCount(img, g.Wait, laneTask)
	t.Logf("run row %.0fx%.0f: %d px ksoftirqd, %d px task; wait row: %d px ksoftirqd waiting, %d px app waiting",
		g.Run.W, g.Run.H, runK, runT, waitK, waitT)
	area := int(g.Run.W * g.Run.H)
	assert.Greater(t, runK, area/10, "ksoftirqd/0 runs NET_RX a good part of the window")
	assert.Greater(t, runT, area/10, "app/0 runs a good part of it")
	assert.Positive(t, waitK, "ksoftirqd/0 waits while app/0 runs")
	assert.Positive(t, waitT, "app/0 waits while ksoftirqd/0 runs")
	frameShot(t, p, "cpu-lanes-flood")

	// The title explains the lanes when hovered.
	fx, fy, _, _ := p.frameRect()
	p.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, fx+title.X+20, fy+title.Y+title.H/2))
	p.waitJS(`(window.ringlab.state.view.tip || []).join(" ").includes("who ran when")`, 10*time.Second)
	tip := eval[[]string](p, `window.ringlab.state.view.tip`)
	t.Logf("the tip: %q", tip)
	assert.Contains(t, strings.Join(tip, " "), "ksoftirqd")
}
