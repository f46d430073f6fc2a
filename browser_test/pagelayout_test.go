package browsertest

import (
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page around the canvas at a student's sizes: no black stage under
// the canvas, no sideways scroll, a go-to-event box that shows its
// number, an Inspect record that belongs to the world on show, a perf
// top that does not call time 0 busy, a tutorial step that survives a
// reload, and a plain word when the browser has no WebGL2.

// TestPageAt1280: at 1280x720 the stage is as tall as the canvas (the
// side panel beside it runs on), the go-to-event box shows ten digits,
// and nothing scrolls sideways.
func TestPageAt1280(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 1280, 720, "?preset=default&speed=2000")
	p.pause()
	sizes := eval[map[string]float64](p, `(() => {
		const r = (id) => document.getElementById(id).getBoundingClientRect();
		const g = document.getElementById("goto-event");
		g.value = "1234567890";
		return { stage: r("game-stage").height, game: r("game").height, aside: document.querySelector("main aside").getBoundingClientRect().height,
			gotoScroll: g.scrollWidth, gotoClient: g.clientWidth,
			pageW: document.documentElement.scrollWidth, winW: window.innerWidth };
	})()`)
	require.Greater(t, sizes["aside"], sizes["game"]+500, "the side panel is the taller: the case the stage must not follow")
	assert.LessOrEqual(t, sizes["stage"], sizes["game"]+2, "the stage ends with the canvas: %v", sizes)
	assert.LessOrEqual(t, sizes["gotoScroll"], sizes["gotoClient"], "go to event shows 1234567890 whole: %v", sizes)
	assert.LessOrEqual(t, sizes["pageW"], sizes["winW"], "no sideways scroll: %v", sizes)
	screenshot(t, p.ctx, "page-1280x720")
}

// TestCompareAt800: compare mode in a window 800 px wide: the counters
// table's extra columns stay inside the page (the page was 879 px wide).
func TestCompareAt800(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 800, 900, "?preset=default&cmp=1&b.preset=xdp-drop&log=e100&speed=10")
	p.waitJS(`document.body.classList.contains("comparing") && document.querySelectorAll("#counters tbody tr").length > 50`, 30*time.Second)
	p.pause()
	w := eval[[]float64](p, `[document.documentElement.scrollWidth, window.innerWidth, document.documentElement.clientWidth]`)
	assert.LessOrEqual(t, w[0], w[2], "the page is %v px wide in a %v px window (client %v)", w[0], w[1], w[2])
	wide := eval[[]string](p, `[...document.querySelectorAll("body *")].filter((e) => {
		const r = e.getBoundingClientRect();
		return r.width > 0 && r.right > document.documentElement.clientWidth + 1 && !e.closest("#counters-panel, #compare-panel, #live-panel");
	}).slice(0, 5).map((e) => e.tagName + "#" + e.id)`)
	assert.Empty(t, wide, "elements out of the window, outside the panels that scroll")
	screenshot(t, p.ctx, "compare-800")
}

// TestInspectClearsOnNewWorld: a record inspected in one world goes when
// a preset builds another; the panel says how to pick again.
func TestInspectClearsOnNewWorld(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=default&log=e30&speed=10")
	p.settle()
	eval[chromedp.Void](p, `(() => { document.getElementById("inspect-kind").value = "desc";
		document.getElementById("inspect-index").value = "3";
		document.getElementById("inspect-form").requestSubmit(); })()`)
	p.waitJS(`document.getElementById("inspect").dataset.kind === "desc" && window.ringlab.state.selected && window.ringlab.state.selected.kind === "desc"`, 20*time.Second)
	require.Contains(t, eval[string](p, `document.getElementById("inspect").textContent`), "descriptor 3")

	// The same world, stepped on: the record stays (and follows).
	p.send(map[string]any{"type": "step", "unit": "event", "n": 1})
	p.settle()
	assert.Equal(t, "desc", eval[string](p, `document.getElementById("inspect").dataset.kind || ""`))

	eval[chromedp.Void](p, `(() => { const s = document.getElementById("preset"); s.value = "xdp-drop"; s.dispatchEvent(new Event("change")); })()`)
	p.waitJS(`window.ringlab.state.panes[0].preset === "xdp-drop"`, 30*time.Second)
	p.waitJS(`!document.getElementById("inspect").dataset.kind`, 10*time.Second)
	txt := eval[string](p, `document.getElementById("inspect").textContent`)
	assert.NotContains(t, txt, "descriptor 3")
	assert.Contains(t, txt, "Click a descriptor")
}

// TestPerfTopAtTimeZero: at time 0 no time has passed: perf top says so
// instead of calling the CPU 100 % busy.
func TestPerfTopAtTimeZero(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=default&log=e40&speed=10")
	p.settle()
	p.waitJS(`document.querySelector("#perf-cpus caption") !== null`, 20*time.Second)
	require.Contains(t, eval[string](p, `document.querySelector("#perf-cpus caption").textContent`), "busy", "after 40 events a CPU has a busy share")
	p.send(map[string]any{"type": "goto", "unit": "event", "n": 0})
	p.settle()
	p.waitJS(`window.ringlab.state.position.at_ns === 0 && document.querySelector("#perf-cpus caption") !== null &&
		document.querySelector("#perf-cpus caption").textContent.includes("no time elapsed")`, 20*time.Second)
	caps := eval[string](p, `[...document.querySelectorAll("#perf-cpus caption")].map((c) => c.textContent).join(" | ")`)
	assert.NotContains(t, caps, "100", "no share of no time")
	assert.Contains(t, eval[string](p, `document.getElementById("perf-window").textContent`), "No simulated time has passed yet")
}

// TestTutorialSurvivesReload: the address names the tutorial and the step
// on show (not the step's scenario), and a reload opens that step again.
func TestTutorialSurvivesReload(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=descriptor-journey&step=1")
	stepShown := func(n string) {
		p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
			return !!(el && !el.hidden && el.dataset.step === "`+n+`" && el.dataset.checks); })()`, 90*time.Second)
	}
	stepShown("1")
	p.do(chromedp.Click(chromedp.ID("tut-step-title")), chromedp.KeyEvent("}"))
	stepShown("2")
	p.settle()
	p.waitJS(`new URLSearchParams(location.search).get("step") === "2"`, 10*time.Second)
	q := eval[string](p, `location.search`)
	assert.Contains(t, q, "tutorial=descriptor-journey")
	assert.NotContains(t, q, "scenario=", "the step, not its 1 KB scenario")
	assert.Less(t, len(q), 200)

	p.do(chromedp.Reload())
	p.waitJS(`document.body.dataset.ready === "1"`, 60*time.Second)
	stepShown("2")
	assert.Equal(t, "Step 2: The host writes, the driver has not looked", eval[string](p, `document.getElementById("tut-step-title").textContent`))

	// Closed, the address is the run's again.
	p.do(chromedp.Click(chromedp.ID("tutorial-btn")))
	p.waitJS(`!new URLSearchParams(location.search).has("tutorial")`, 20*time.Second)
}

// TestNoWebGL2: a browser without WebGL2 is told so, in words that name
// it, instead of "the engine exited".
func TestNoWebGL2(t *testing.T) {
	t.Parallel()
	ts := server(t)
	ctx := browser(t)
	// Every frame's canvases refuse a webgl2 context, as a browser
	// without it does.
	_, err := chromedp.Call(timeout(t, ctx, 10*time.Second), cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: `(() => {
		const get = HTMLCanvasElement.prototype.getContext;
		HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
			return kind === "webgl2" ? null : get.call(this, kind, ...rest);
		};
	})()`})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(timeout(t, ctx, minPatience), chromedp.Navigate(ts.URL+"/index.html")))
	p := &page{t: t, ctx: ctx, url: ts.URL}
	p.waitJS(`document.getElementById("status").className === "error" && document.getElementById("status").textContent.includes("WebGL2")`, 60*time.Second)
	msg := eval[string](p, `document.getElementById("status").textContent`)
	assert.Contains(t, msg, "getContext for webgl2 failed")
	assert.False(t, strings.Contains(msg, "engine exited"), msg)
	screenshot(t, ctx, "no-webgl2")
}
