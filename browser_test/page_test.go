package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/server/httpsec"
)

// page is one open playground tab.
type page struct {
	t   *testing.T
	ctx context.Context
	url string
}

// open navigates to the playground (with query q, "" or "?...") and waits
// until the game has sent its first state.
func open(t *testing.T, ctx context.Context, base, q string) *page {
	t.Helper()
	return openURL(t, ctx, base+"/index.html"+q)
}

// openURL is open with the whole address.
func openURL(t *testing.T, ctx context.Context, url string) *page {
	t.Helper()
	p := &page{t: t, ctx: ctx, url: url}
	require.NoError(t, chromedp.Do(timeout(t, ctx, minPatience), chromedp.Navigate(p.url)))
	p.waitJS(`document.body.dataset.ready === "1"`, 60*time.Second)
	return p
}

// eval evaluates a JavaScript expression (awaiting a promise) into T.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(timeout(p.t, p.ctx, minPatience), chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, "evaluate %s", expr)
	return v
}

// minPatience is the least time waitJS gives a condition, and what a
// navigation, an evaluation or a screenshot may take. The tests run
// in parallel pages on two cores, often beside other builds: a wait's
// bound says when to give up on a condition that never holds, never how
// fast the page must be (speed is the benchmarks' to check).
const minPatience = 2 * time.Minute

// waitJS polls a JavaScript condition until it holds, for at least
// minPatience (d when longer).
func (p *page) waitJS(cond string, d time.Duration) {
	p.t.Helper()
	d = max(d, minPatience)
	deadline := time.Now().Add(d)
	for {
		ok, err := chromedp.Run(timeout(p.t, p.ctx, 10*time.Second), chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for %s (last error %v); the page then: %s", d, cond, err, p.situation())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// situation is what a failed wait reports of the page: its address, its
// readiness, the workshop's state and what its panel and toast say.
func (p *page) situation() string {
	const js = `JSON.stringify({url: location.href, ready: document.body.dataset.ready,
		workshop: window.ringlab && window.ringlab.workshop,
		status: (document.getElementById("ws-status") || {}).textContent,
		toast: (document.getElementById("ws-toast") || {}).textContent})`
	s, err := chromedp.Run(timeout(p.t, p.ctx, 10*time.Second), chromedp.Evaluate[string](js))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return s[:min(len(s), 2000)]
}

// waitPicture waits until the canvas shows what the page says: the game
// kept its picture for a tick (nothing changed since it last drew), or,
// while something moves, drew two more frames.
func (p *page) waitPicture() {
	p.t.Helper()
	const game = `document.getElementById("game").contentWindow`
	n := eval[float64](p, game+`.ringlabDrawn || 0`)
	p.waitJS(fmt.Sprintf(`(() => { const g = %s; return g.ringlabAtRest === true || (g.ringlabDrawn || 0) >= %v; })()`, game, n+2), time.Minute)
}

// playFor waits, while pane A plays, until it has run n more events.
func (p *page) playFor(n float64) {
	p.t.Helper()
	e := eval[float64](p, `window.ringlab.state.position.events`)
	p.waitJS(fmt.Sprintf(`window.ringlab.state.position.events >= %v`, e+n), time.Minute)
}

// do runs actions in the tab.
func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(timeout(p.t, p.ctx, minPatience), actions...))
}

// counter reads a row of the counters table (pane 0: A, 1: B); -1 when
// the row is missing.
func (p *page) counter(name string, pane int) float64 {
	p.t.Helper()
	expr := fmt.Sprintf(`(() => { const td = document.querySelector('#counters tr[data-name=%q] td:nth-child(%d)');
		return td && td.dataset.value !== undefined && td.dataset.value !== "" ? Number(td.dataset.value) : -1; })()`, name, 2+pane)
	return eval[float64](p, expr)
}

// counters reads the whole table: name -> values of the shown columns.
func (p *page) counters() map[string][]string {
	return eval[map[string][]string](p, `Object.fromEntries([...document.querySelectorAll('#counters tbody tr')].map(
		tr => [tr.dataset.name, [...tr.querySelectorAll('td')].slice(1).map(td => td.dataset.value || "")]))`)
}

// send posts a message to the game.
func (p *page) send(msg map[string]any) {
	p.t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(p.t, err)
	eval[chromedp.Void](p, fmt.Sprintf(`window.ringlab.send(%s)`, b))
}

// request posts a message with an id and returns the game's reply.
func (p *page) request(msg map[string]any) map[string]any {
	p.t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(p.t, err)
	return eval[map[string]any](p, fmt.Sprintf(`window.ringlab.request(%s)`, b))
}

// settle waits until the game has handled every message sent before and
// finished the work they queued; the page then holds the state that
// follows (the game sends a state, then the reply to sync).
func (p *page) settle() {
	p.t.Helper()
	r := p.request(map[string]any{"type": "sync"})
	require.Equal(p.t, "synced", r["type"], "%v", r)
}

// setParam changes a parameter's field as a person would (value, then a
// change event) and waits for the game to take it.
func (p *page) setParam(pane int, key, value string) {
	p.t.Helper()
	eval[chromedp.Void](p, fmt.Sprintf(`(() => { const el = document.getElementById("param-%d-%s");
		el.value = %q; el.dispatchEvent(new Event("change")); })()`, pane, key, value))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.panes[%d] && window.ringlab.state.panes[%d].params[%q] === %q`, pane, pane, key, value), 30*time.Second)
	p.settle()
}

// pause stops playing and waits for the game to say so.
func (p *page) pause() {
	p.t.Helper()
	p.send(map[string]any{"type": "pause"})
	p.waitJS(`window.ringlab.state && window.ringlab.state.playing === false`, 20*time.Second)
	p.settle()
}

func (p *page) playing() bool { return eval[bool](p, `window.ringlab.state.playing`) }

// frameRect is the game iframe's rectangle in the page.
func (p *page) frameRect() (x, y, w, h float64) {
	r := eval[[]float64](p, `(() => { const r = document.getElementById('game').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`)
	return r[0], r[1], r[2], r[3]
}

// canvasImage screenshots the viewport and crops the game's frame.
func (p *page) canvasImage() image.Image {
	p.t.Helper()
	b, err := chromedp.Run(timeout(p.t, p.ctx, 30*time.Second), chromedp.CaptureScreenshot())
	require.NoError(p.t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(p.t, err)
	x, y, w, h := p.frameRect()
	r := image.Rect(int(x), int(y), int(x+w), int(y+h)).Intersect(img.Bounds())
	return img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(r)
}

func distinctColours(img image.Image) int {
	seen := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
		}
	}
	return len(seen)
}

// consoleErrors collects the console errors and uncaught exceptions of a
// tab, the game's frame included, from now on.
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

func watchConsole(ctx context.Context) *consoleErrors {
	c := &consoleErrors{}
	events := chromedp.Console(ctx)
	go func() {
		for m, err := range events {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.msgs = append(c.msgs, m.String())
				c.mu.Unlock()
			}
		}
	}()
	return c
}

func (c *consoleErrors) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

// TestPageLoadsCleanAndDraws: a fresh browser opens the page; the engine
// starts playing the default preset by itself, nothing is written to the
// console as an error, and the canvas shows a picture. It logs the phases
// of the start (TestLoadPhases measures them over many loads); the target,
// the first frame within 2 s of navigation, is not asserted.
func TestPageLoadsCleanAndDraws(t *testing.T) {
	t.Parallel()
	ts := server(t)
	ctx := freshBrowser(t)
	errs := watchConsole(ctx)
	start := time.Now()
	p := open(t, ctx, ts.URL, "")
	wall := time.Since(start)
	readyMs := eval[float64](p, `window.ringlab.readyAt`)
	p.waitJS(`window.ringlab.frameAt > 0`, 60*time.Second)
	frameMs := eval[float64](p, `window.ringlab.frameAt`)
	t.Logf("after navigation started: first state from the engine at %.0f ms, first frame at %.0f ms (%s with the test's round trips)",
		readyMs, frameMs, wall.Round(time.Millisecond))
	t.Logf("the start, ms after navigation: %s", formatLoad(eval[map[string]float64](p, loadTimesJS)))
	assert.Positive(t, readyMs, "the engine sent its first message")
	assert.Equal(t, 1.0, eval[float64](p, `document.getElementById("game").contentWindow.performance.getEntriesByType("resource").filter(
		(e) => e.name.endsWith("/main.wasm")).length`), "main.wasm is fetched once (compiled while it streams)")
	assert.True(t, eval[bool](p, `!document.getElementById("game").contentDocument.getElementById("loading")`),
		"the game's loading note is gone once the first frame is drawn")
	assert.True(t, p.playing(), "the default preset plays without a click")
	assert.Equal(t, "default", eval[string](p, `document.getElementById('preset').value`))
	p.waitJS(`Number(document.querySelector('#counters tr[data-name="events"] td:nth-child(2)').dataset.value) > 2`, 30*time.Second)
	p.waitPicture()
	img := p.canvasImage()
	n := distinctColours(img)
	t.Logf("the canvas shows %d distinct colours", n)
	assert.Greater(t, n, 20, "the canvas is not a uniform picture")
	screenshot(t, ctx, "page-default")
	assert.Contains(t, eval[string](p, `document.getElementById('server-text').textContent`), "need", "without the server, the page says what needs it")
	assert.Empty(t, errs.get(), "console errors (a Content-Security-Policy violation is one)")
	resp, err := http.Get(ts.URL + "/game.html")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, httpsec.CSP, resp.Header.Get("Content-Security-Policy"), "the page ran under the server's policy")
}

// TestPlayPauseStep: play advances the counters table, pause stops it, a
// step runs exactly one event, a packet step receives at least one packet.
func TestPlayPauseStep(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	require.True(t, p.playing())
	e0 := p.counter("events", 0)
	p.waitJS(fmt.Sprintf(`Number(document.querySelector('#counters tr[data-name="events"] td:nth-child(2)').dataset.value) > %v`, e0), 30*time.Second)

	p.do(chromedp.Click(chromedp.ID("play"))) // pause
	p.waitJS(`window.ringlab.state.playing === false`, 20*time.Second)
	p.settle()
	e1 := p.counter("events", 0)
	time.Sleep(1500 * time.Millisecond)
	p.settle()
	assert.Equal(t, e1, p.counter("events", 0), "paused: the counters stand still")

	p.do(chromedp.Click(chromedp.ID("step-event")))
	p.waitJS(fmt.Sprintf(`Number(document.querySelector('#counters tr[data-name="events"] td:nth-child(2)').dataset.value) === %v`, e1+1), 20*time.Second)
	p.settle()
	assert.Equal(t, e1+1, p.counter("events", 0), "a step is exactly one event")
	// The event log lists it, numbered as the counter counts it.
	p.waitJS(fmt.Sprintf(`(() => { const li = document.querySelector("#events li:last-child");
		return li && li.dataset.seq === "%d"; })()`, int(e1+1)), 10*time.Second)
	last := eval[string](p, `document.querySelector("#events li:last-child strong").textContent`)
	assert.Regexp(t, fmt.Sprintf(`^#%d [0-9.]+us (napi poll|host lands frames|rx interrupt) rx0:$`, int(e1+1)), last)
	assert.Regexp(t, `^[A-Z].*\.$`, eval[string](p, `document.querySelector("#events li:last-child .say").textContent`), "it says what it did")
	p.do(chromedp.Click(chromedp.ID("step-event")))
	p.settle()
	assert.Equal(t, e1+2, p.counter("events", 0))

	rx := p.counter("rx_packets", 0)
	p.do(chromedp.Click(chromedp.ID("step-packet")))
	p.settle()
	assert.Greater(t, p.counter("rx_packets", 0), rx, "a packet step receives a packet")
	log := eval[string](p, `document.getElementById("events").textContent`)
	assert.Contains(t, log, "rx_packets", "the packet step's events are listed with what they changed")
	screenshot(t, p.ctx, "events")
	assert.False(t, p.playing(), "stepping leaves the run paused")

	p.do(chromedp.Click(chromedp.ID("play")))
	p.waitJS(`window.ringlab.state.playing === true`, 20*time.Second)
	e2 := p.counter("events", 0)
	p.waitJS(fmt.Sprintf(`Number(document.querySelector('#counters tr[data-name="events"] td:nth-child(2)').dataset.value) > %v`, e2), 30*time.Second)
}

// TestReducedMotion: a browser that asks for reduced motion gets a
// playing page drawn in steps, at most one each play.MotionStep (250 ms),
// where it draws one every frame the browser gives it.
func TestReducedMotion(t *testing.T) {
	t.Parallel()
	ts := server(t)
	ctx := browser(t)
	_, err := chromedp.Call(timeout(t, ctx, minPatience), emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
	require.NoError(t, err)
	p := open(t, ctx, ts.URL, "")
	require.True(t, p.playing())
	p.waitJS(`window.ringlab.state.view && window.ringlab.state.view.reduced_motion === true`, 10*time.Second)
	p.playFor(2)
	r := eval[[]float64](p, `new Promise((done) => { const g = document.getElementById("game").contentWindow,
		d0 = g.ringlabDrawn, t0 = performance.now();
		setTimeout(() => done([g.ringlabDrawn - d0, performance.now() - t0]), 3000); })`)
	assert.Positive(t, r[0], "a playing page with reduced motion still draws")
	assert.LessOrEqual(t, r[0], r[1]/250+2, "pictures drawn in %.0f ms with reduced motion", r[1])
}

// TestLinkReproducesRun: the URL after some steps and a parameter change,
// opened in a fresh tab, replays to the same counters, and the same
// further steps keep them equal.
func TestLinkReproducesRun(t *testing.T) {
	t.Parallel()
	ts := server(t)
	ctx := browser(t)
	p := open(t, ctx, ts.URL, "")
	p.pause()
	p.setParam(0, "ring_size", "32")
	for i := 0; i < 7; i++ {
		p.do(chromedp.Click(chromedp.ID("step-event")))
	}
	p.send(map[string]any{"type": "step", "unit": "packet", "n": 25})
	p.do(chromedp.Click(chromedp.ID("step-packet")))
	p.settle()
	link := eval[string](p, `location.href`)
	t.Logf("link: %s", link)
	require.Contains(t, link, "recipe=default+ring_size=32&")
	require.Contains(t, link, "log=e")
	want := p.counters()
	require.NotEmpty(t, want)

	q := openURL(t, browser(t), link)
	q.settle()
	assert.False(t, q.playing(), "a link with a log opens paused where the sender was")
	assert.Equal(t, want, q.counters(), "the link reproduces every counter")

	for _, pg := range []*page{p, q} {
		pg.do(chromedp.Click(chromedp.ID("step-event")))
		pg.do(chromedp.Click(chromedp.ID("step-packet")))
		pg.settle()
	}
	assert.Equal(t, p.counters(), q.counters(), "the same steps keep them equal")
	assert.Equal(t, eval[string](p, `location.search`), eval[string](q, `location.search`))
}

// TestCompareShowsTwoPanes: compare mode runs two configurations in
// lockstep; the panes and the table show their different counters.
func TestCompareShowsTwoPanes(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=r3-napi-local-off&speed=0")
	p.pause()
	p.do(chromedp.Click(chromedp.ID("compare")))
	p.waitJS(`window.ringlab.state.compare === true && document.getElementById('param-1-kernel') !== null`, 20*time.Second)
	p.setParam(1, "kernel", "6.5")
	p.send(map[string]any{"type": "step", "unit": "packet", "n": 3000})
	p.settle()
	assert.False(t, eval[bool](p, `document.getElementById('compare-panel').hidden`))
	a, b := p.counter("rx_pp_recycle_cached", 0), p.counter("rx_pp_recycle_cached", 1)
	ta, tb := p.counter("sim_time_ns", 0), p.counter("sim_time_ns", 1)
	t.Logf("recycle_cached: A (6.4, before NAPI-local recycling) %v, B (6.5) %v; time A %v B %v", a, b, ta, tb)
	assert.Equal(t, ta, tb, "the two run in lockstep on simulated time")
	assert.NotEqual(t, a, b, "different configurations, different counters")
	paneA := eval[string](p, `document.getElementById('pane-a').textContent`)
	paneB := eval[string](p, `document.getElementById('pane-b').textContent`)
	assert.Contains(t, paneA, "preset r3-napi-local-off")
	assert.NotContains(t, paneA, "kernel=6.5")
	assert.Contains(t, paneB, "kernel=6.5")
	assert.Contains(t, paneB, "packets/s")
	p.waitPicture()
	screenshot(t, p.ctx, "compare")
	p.do(chromedp.ScrollIntoView(chromedp.ID("compare-panel")))
	screenshot(t, p.ctx, "compare-panes")
}

// TestInspectDescriptorByClick: a click on a descriptor of the ring shows
// its fields in the inspect panel.
func TestInspectDescriptorByClick(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	p.pause()
	where := p.request(map[string]any{"type": "where", "kind": "desc", "index": 3})
	require.Equal(t, true, where["ok"], "%v", where)
	fx, fy, _, _ := p.frameRect()
	x, y := fx+where["x"].(float64), fy+where["y"].(float64)
	p.do(chromedp.MouseClickXY(x, y))
	p.waitJS(`document.getElementById('inspect').dataset.kind === "desc" && document.getElementById('inspect').dataset.index === "3"`, 20*time.Second)
	fields := eval[map[string]string](p, `Object.fromEntries([...document.querySelectorAll('#inspect dd')].map(dd => [dd.dataset.field, dd.textContent]))`)
	for _, f := range []string{"state", "addr", "len", "flags", "next"} {
		assert.Contains(t, fields, f)
	}
	assert.Regexp(t, `^0x[0-9a-f]+$`, fields["addr"])
	assert.Contains(t, eval[string](p, `document.querySelector('#inspect .title').textContent`), "descriptor 3")
	p.waitPicture()
	screenshot(t, p.ctx, "inspect-descriptor")

	// A page and a CPU, the same way.
	for _, k := range []struct {
		kind  string
		index int
		field string
	}{{"page", 5, "refcount"}, {"cpu", 0, "busy"}} {
		where := p.request(map[string]any{"type": "where", "kind": k.kind, "index": k.index})
		require.Equal(t, true, where["ok"], "%v", where)
		p.do(chromedp.MouseClickXY(fx+where["x"].(float64), fy+where["y"].(float64)))
		p.waitJS(fmt.Sprintf(`document.getElementById('inspect').dataset.kind === %q && document.getElementById('inspect').dataset.index === "%d"`, k.kind, k.index), 20*time.Second)
		assert.True(t, eval[bool](p, fmt.Sprintf(`document.querySelector('#inspect dd[data-field=%q]') !== null`, k.field)))
	}
	screenshot(t, p.ctx, "inspect-cpu")
}

// TestKeyboard: space toggles play wherever the focus is (the page or the
// canvas), the right arrow steps, ? opens the help.
func TestKeyboard(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	require.True(t, p.playing())
	p.do(chromedp.Click(chromedp.ID("description")), chromedp.KeyEvent(" "))
	p.waitJS(`window.ringlab.state.playing === false`, 20*time.Second)
	p.settle()
	p.do(chromedp.KeyEvent(" "))
	p.waitJS(`window.ringlab.state.playing === true`, 20*time.Second)

	// With a button focused, space toggles play and does not press it.
	p.do(chromedp.Focus(chromedp.ID("step-event")), chromedp.KeyEvent(" "))
	p.waitJS(`window.ringlab.state.playing === false`, 20*time.Second)
	p.settle()
	e := p.counter("events", 0)
	p.do(chromedp.KeyEvent(kb.ArrowRight))
	p.waitJS(fmt.Sprintf(`Number(document.querySelector('#counters tr[data-name="events"] td:nth-child(2)').dataset.value) === %v`, e+1), 20*time.Second)

	// Keys pressed on the canvas reach the page too.
	fx, fy, fw, fh := p.frameRect()
	p.do(chromedp.MouseClickXY(fx+fw-5, fy+fh-5), chromedp.KeyEvent(" "))
	p.waitJS(`window.ringlab.state.playing === true`, 20*time.Second)

	p.do(chromedp.Click(chromedp.ID("description")), chromedp.KeyEvent("?"))
	p.waitJS(`document.getElementById('help').open`, 10*time.Second)
	screenshot(t, p.ctx, "help")
	p.do(chromedp.KeyEvent(kb.Escape))
	p.waitJS(`!document.getElementById('help').open`, 10*time.Second)
}

// TestXDPObjectFromDisk: an ELF object loaded from disk runs; one the
// interpreter cannot run shows its error.
func TestXDPObjectFromDisk(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	p.pause()
	obj := filepath.Join(repoRoot(t), "engine", "bpf", "testdata", "xdp_filter.o")
	p.do(chromedp.SetUploadFiles(chromedp.ID("xdp-file"), []string{obj}))
	p.waitJS(`window.ringlab.state.panes[0].params.xdp === "object:xdp_filter.o"`, 30*time.Second)
	p.send(map[string]any{"type": "step", "unit": "packet", "n": 50})
	p.settle()
	assert.GreaterOrEqual(t, p.counter("rx_xdp_packets", 0), 50.0, "the loaded program runs on every packet")
	assert.Contains(t, eval[string](p, `location.search`), "obj=", "the link carries the object")

	bad := filepath.Join(repoRoot(t), "engine", "bpf", "testdata", "tc_prog.o")
	p.do(chromedp.SetUploadFiles(chromedp.ID("xdp-file"), []string{bad}))
	p.waitJS(`document.getElementById('status').textContent.includes("not an XDP program")`, 30*time.Second)
	assert.Equal(t, "object:xdp_filter.o", eval[string](p, `window.ringlab.state.panes[0].params.xdp`), "a refused object changes nothing")
	screenshot(t, p.ctx, "xdp-object-error")
}

// TestExportAndPresets: the counters export as CSV and JSON, and each
// view of a few presets is photographed.
func TestExportAndPresets(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	p.pause()
	csv := eval[string](p, `window.ringlab.csv()`)
	assert.True(t, strings.HasPrefix(csv, "counter,value\n"))
	assert.Contains(t, csv, "\nrx_packets,")
	var js map[string]any
	require.NoError(t, json.Unmarshal([]byte(eval[string](p, `window.ringlab.json()`)), &js))
	assert.Contains(t, js, "panes")

	for _, preset := range []string{"xdp-drop", "big-9000", "cpumap", "r4-page-alloc-2flows"} {
		eval[chromedp.Void](p, fmt.Sprintf(`(() => { const el = document.getElementById("preset");
			el.value = %q; el.dispatchEvent(new Event("change")); })()`, preset))
		p.waitJS(fmt.Sprintf(`window.ringlab.state.panes[0].name === %q`, preset), 20*time.Second)
		p.send(map[string]any{"type": "step", "unit": "ns", "n": 2_000_000})
		p.settle()
		p.waitPicture()
		screenshot(t, p.ctx, "preset-"+preset)
	}
}

// TestViewScreenshots photographs each view of the default preset after a
// few seconds of play, cropped from the page, into test-artifacts/view-*.png.
func TestViewScreenshots(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=cpumap&speed=2000")
	p.playFor(8000) // four seconds at its speed: rates to draw
	p.pause()
	p.waitPicture()
	lay := p.request(map[string]any{"type": "layout"})
	panes, ok := lay["panes"].([]any)
	require.True(t, ok, "%v", lay)
	b, err := chromedp.Run(timeout(t, p.ctx, 30*time.Second), chromedp.CaptureScreenshot())
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	fx, fy, _, _ := p.frameRect()
	for name, v := range panes[0].(map[string]any) {
		r := v.(map[string]any)
		x, y, w, h := r["X"].(float64), r["Y"].(float64), r["W"].(float64), r["H"].(float64)
		if w <= 0 || h <= 0 {
			continue
		}
		rect := image.Rect(int(fx+x), int(fy+y), int(fx+x+w), int(fy+y+h)).Intersect(img.Bounds())
		sub := img.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(rect)
		assert.Greater(t, distinctColours(sub), 4, "view %s draws something", name)
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, sub))
		artifact(t, "view-"+name+".png", buf.Bytes())
	}
}

// TestServerPresent: when healthz answers "ok", as `ringlab serve` does,
// the page says the server is there and offers the live backend.
func TestServerPresent(t *testing.T) {
	t.Parallel()
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	})
	p := open(t, browser(t), ts.URL, "")
	p.waitJS(`document.getElementById('server-text').textContent.includes("connected")`, 20*time.Second)
	assert.False(t, eval[bool](p, `document.getElementById('live-btn').disabled`))
}

// TestLiveTwinSideBySide: a twin source's predicted_<name> counters show
// beside the measured ones in the live table, not as rows of their own.
func TestLiveTwinSideBySide(t *testing.T) {
	t.Parallel()
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		mux.HandleFunc("/ws/metrics", func(w http.ResponseWriter, r *http.Request) {
			c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","schema":1,"source":"twin:fake","description":"test twin","counters":["rx_packets","predicted_rx_packets","rx_kicks"],"labels":{"kind":"twin","follows":"fake"}}`))
			// Ten snapshots a second: rx_packets grows by 100 a second, its
			// prediction by 90 (the table's rates are over about a second).
			t0 := time.Now()
			for i := 0; i < 50; i++ {
				c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"snapshot","seq":%d,"time":%q,"counters":{"rx_packets":%d,"predicted_rx_packets":%d,"rx_kicks":7},"rates":{"rx_packets":100,"predicted_rx_packets":90,"rx_kicks":0}}`,
					i+1, t0.Add(time.Duration(i)*100*time.Millisecond).Format(time.RFC3339Nano), 1000+10*i, 980+9*i)))
				time.Sleep(100 * time.Millisecond)
			}
		})
	})
	p := open(t, browser(t), ts.URL, "")
	p.waitJS(`document.getElementById('server-text').textContent.includes("connected")`, 20*time.Second)
	eval[bool](p, `(document.getElementById("live-btn").click(), true)`)
	p.waitJS(`document.querySelectorAll('#live-table tbody tr').length === 2`, 20*time.Second)
	rows := eval[[][]string](p, `[...document.querySelectorAll('#live-table tbody tr')].map(r => [...r.children].map(c => c.textContent))`)
	require.Len(t, rows, 2, "predicted_rx_packets has no row of its own")
	assert.Equal(t, "rx_packets", rows[0][0], "the counter that moves first")
	p.waitJS(`(() => { const r = document.querySelector('#live-table tr[data-name="rx_packets"]').children;
		return r[3].textContent === "packets" && r[2].textContent === "100"; })()`, 20*time.Second)
	rows = eval[[][]string](p, `[...document.querySelectorAll('#live-table tbody tr')].map(r => [...r.children].map(c => c.textContent))`)
	assert.Equal(t, []string{"100", "packets"}, rows[0][2:4], "rate and unit")
	assert.Equal(t, "90", rows[0][5], "the prediction's rate")
	assert.NotEmpty(t, rows[0][1], "the value")
	assert.NotEmpty(t, rows[0][4], "the prediction")
	assert.Contains(t, rows[0][6], "buffers the driver received", "the meaning")
	assert.Equal(t, "rx_kicks", rows[1][0])
	assert.Equal(t, "", rows[1][4], "no prediction for rx_kicks")
}

// TestCountersShowDropsByReason: the counters table has a row per drop
// reason of the world (drops.NAME), with the vocabulary's meaning, and an
// XDP_DROP world counts every verdict there as the driver does in
// rx_xdp_drops; at 6.1 a flooded vhost-net tap queue is the kernel's
// FULL_RING. The table scrolled to the drops is saved as an artifact.
func TestCountersShowDropsByReason(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=xdp-drop&speed=2000")
	p.waitJS(`(() => { const td = document.querySelector('#counters tr[data-name="drops.xdp_drop"] td:nth-child(2)');
		return td && Number(td.dataset.value) > 1000; })()`, 60*time.Second)
	p.pause()
	assert.Equal(t, p.counter("rx_xdp_drops", 0), p.counter("drops.xdp_drop", 0))
	meaning := eval[string](p, `document.querySelector('#counters tr[data-name="drops.xdp_drop"] td.meaning').textContent`)
	assert.Contains(t, meaning, "XDP_DROP")
	assert.Contains(t, meaning, "SKB_DROP_REASON_XDP", "it says which reason generic XDP would give")
	rows := p.counters()
	assert.Contains(t, rows, "drops.nic_fifo_full", "the NIC's own reason")
	assert.NotContains(t, rows, "drops.FULL_RING", "no tap queue on a NIC")
	eval[chromedp.Void](p, `document.querySelector('#counters tr[data-name="drops.virtnet_rx_length"]').scrollIntoView({block: "start"})`)
	screenshot(t, p.ctx, "counters-drops")

	p = open(t, browser(t), ts.URL, "?preset=default&set=kernel:6.1,rate_pps:20000000&speed=2000")
	p.waitJS(`(() => { const td = document.querySelector('#counters tr[data-name="drops.FULL_RING"] td:nth-child(2)');
		return td && Number(td.dataset.value) > 0; })()`, 60*time.Second)
	p.pause()
	assert.Equal(t, p.counter("host_drops", 0), p.counter("drops.FULL_RING", 0))
}
