package browsertest

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
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
	t.Parallel()
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
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=small-ring")
	b64 := eval[string](p, `(async () => { const b64 = `+jsBase64+`; return b64(await window.ringlab.capture()); })()`)
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
	// Recorded until its chunks hold some frames (a loaded machine
	// draws few a second), not for a fixed time.
	p.waitJS(`window.ringlab.clipBytes > 2000`, 60*time.Second)
	eval[chromedp.Void](p, `window.ringlab.record()`)
	p.waitJS(`!!window.ringlab.lastClip`, 20*time.Second)
	size := eval[float64](p, `window.ringlab.lastClip.size`)
	assert.Greater(t, size, 2000.0, "a clip of the views")
	assert.Equal(t, "video/webm", eval[string](p, `window.ringlab.lastClip.type`))
}

// TestExportedPNGOpaque: the PNG the page exports (its PNG button saves
// ui.capture's) has no transparent pixel: what the views leave undrawn is
// the colour the canvas is seen on, so its labels read on a white slide;
// what they draw is kept as the game drew it.
func TestExportedPNGOpaque(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=default&speed=2000")
	p.waitJS(`window.ringlab.state.position.events > 1000`, 30*time.Second)
	p.pause()
	decode := func(s string) image.Image {
		b, err := base64.StdEncoding.DecodeString(s)
		require.NoError(t, err)
		img, err := png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
		return img
	}
	// The export as the PNG button saves it.
	exp := decode(eval[string](p, `(async () => { const b64 = `+jsBase64+`; return b64(await window.ringlab.capture()); })()`))
	b := exp.Bounds()
	transparent := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := exp.At(x, y).RGBA(); a < 0xffff {
				transparent++
			}
		}
	}
	assert.Zero(t, transparent, "every pixel of the export is opaque (of %dx%d)", b.Dx(), b.Dy())
	assert.Greater(t, distinctColours(exp), 8, "the views are in the export")

	// The game's own frame, and that same frame as the export lays it
	// (two captures are two frames, whose animations differ even paused).
	shots := eval[[]string](p, `(async () => {
		const b64 = `+jsBase64+`;
		const raw = new Blob([(await window.ringlab.request({ type: "capture" })).png], { type: "image/png" });
		const laid = await window.ringlab.opaque(raw);
		const bg = getComputedStyle(document.getElementById("game").contentDocument.body).backgroundColor;
		return [await b64(raw), await b64(laid), bg]; })()`)
	raw, laid := decode(shots[0]), decode(shots[1])
	require.Equal(t, raw.Bounds(), exp.Bounds(), "the export is the game's frame, pixel for pixel")
	require.Equal(t, raw.Bounds(), laid.Bounds())
	var bg [3]uint32
	_, err := fmt.Sscanf(shots[2], "rgb(%d, %d, %d)", &bg[0], &bg[1], &bg[2])
	require.NoError(t, err, "the frame's background %q", shots[2])

	var clear, onBG, drawn, kept, seeThrough int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := laid.At(x, y).RGBA()
			if a < 0xffff {
				seeThrough++
			}
			rr, rg, rb, ra := raw.At(x, y).RGBA()
			switch ra {
			case 0:
				clear++
				if r>>8 == bg[0] && g>>8 == bg[1] && bl>>8 == bg[2] {
					onBG++
				}
			case 0xffff:
				drawn++
				if near(r, rr) && near(g, rg) && near(bl, rb) {
					kept++
				}
			}
		}
	}
	t.Logf("%dx%d: %d pixels left undrawn by the game, %d drawn opaque", b.Dx(), b.Dy(), clear, drawn)
	assert.Zero(t, seeThrough, "the frame laid by the export is opaque")
	assert.Equal(t, clear, onBG, "what the game leaves undrawn is the frame's background, %s", shots[2])
	assert.Equal(t, drawn, kept, "what the game draws is kept")
}

// near: two 16-bit colour channels within one 8-bit step.
func near(a, b uint32) bool { return max(a, b)-min(a, b) <= 0x101 }

// jsBase64 is a JavaScript function from a Blob to its bytes in base64
// (how a test reads a file the page makes).
const jsBase64 = `async (blob) => { const u = new Uint8Array(await blob.arrayBuffer()); let s = "";
	for (let i = 0; i < u.length; i += 8192) s += String.fromCharCode(...u.subarray(i, i + 8192));
	return btoa(s); }`
