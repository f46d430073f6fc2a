package browsertest

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// TestEmbed: ?embed=1, served as static files, shows the canvas and its
// controls and nothing else; the canvas takes the width; the controls
// drive it; the address keeps embed=1 as the run changes, and a link
// opens the run in the full playground.
func TestEmbed(t *testing.T) {
	ts := server(t) // web/ as static files: no ringlab server behind it
	p := open(t, browser(t), ts.URL, "?preset=default&embed=1")
	shown := func(sel string) bool {
		return eval[bool](p, `(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return !!e && e.getClientRects().length > 0; })()`)
	}
	assert.False(t, shown("header.top"), "no header")
	assert.False(t, shown("main aside"), "no side panels")
	assert.False(t, shown("#description"), "no description")
	assert.True(t, shown("#game"), "the canvas")
	assert.True(t, shown("#play"), "the controls")
	assert.True(t, shown("#scrub"), "the timeline")
	assert.True(t, shown("#embed-open"), "a link to the full playground")
	_, _, fw, _ := p.frameRect()
	vw := eval[float64](p, `window.innerWidth`)
	assert.Greater(t, fw, 0.9*vw, "the canvas takes the width")

	p.pause()
	p.do(chromedp.Click(chromedp.ID("step-event")))
	p.settle()
	p.waitJS(`location.search.includes("log=e") && location.search.includes("embed=1")`, 10*time.Second)
	open := eval[string](p, `document.getElementById("embed-open").href`)
	assert.Contains(t, open, "log=e")
	assert.NotContains(t, open, "embed=1", "the link opens the full playground at the same place")
	screenshot(t, p.ctx, "embed")
}

// TestExportPNGAndClip: the views save as a PNG of the whole canvas (the
// game reads its own frame) and as a WebM clip of the canvas while it
// plays.
func TestExportPNGAndClip(t *testing.T) {
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=small-ring")
	b64 := eval[string](p, `(async () => { const b = await window.ringlab.capture();
		const buf = new Uint8Array(await b.arrayBuffer()); let s = "";
		for (let i = 0; i < buf.length; i += 8192) s += String.fromCharCode(...buf.subarray(i, i + 8192));
		return btoa(s); })()`)
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err, "a PNG")
	_, _, fw, fh := p.frameRect()
	dsf := eval[float64](p, `window.devicePixelRatio`)
	assert.InDelta(t, fw*dsf, float64(img.Bounds().Dx()), 2*dsf, "the whole canvas, at its pixel size")
	assert.InDelta(t, fh*dsf, float64(img.Bounds().Dy()), 2*dsf)
	assert.Greater(t, distinctColours(img), 8, "the views are drawn in it")

	if !eval[bool](p, `typeof MediaRecorder !== "undefined" && MediaRecorder.isTypeSupported("video/webm")`) {
		testenv.Missing(t, "a Chromium that records WebM (MediaRecorder)")
	}
	eval[chromedp.Void](p, `window.ringlab.record()`)
	p.waitJS(`document.getElementById("record").getAttribute("aria-pressed") === "true"`, 10*time.Second)
	time.Sleep(2 * time.Second)
	eval[chromedp.Void](p, `window.ringlab.record()`)
	p.waitJS(`!!window.ringlab.lastClip`, 20*time.Second)
	size := eval[float64](p, `window.ringlab.lastClip.size`)
	assert.Greater(t, size, 2000.0, "a clip of two seconds of views")
	assert.Equal(t, "video/webm", eval[string](p, `window.ringlab.lastClip.type`))
}
