package browsertest

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The views at the sizes a student's window has: 1280x720 with the side
// panel beside the canvas, 800 px wide with the panel under it, compare
// mode in both, and a 1024-entry ring. The layout reply lists every text
// the canvas draws with its rectangle, so the tests check on the page
// itself what engine/view's tests check natively: no two texts overlap.

// layoutReply is the game's layout reply.
type layoutReply struct {
	W, H  float64
	Form  string
	WantH float64 `json:"want_h"`
	Panes []map[string]struct{ X, Y, W, H float64 }
	Texts []struct {
		Pane       int
		View, Text string
		X, Y, W, H float64
	}
}

// openAt opens the page (query q) in a window of w by h CSS pixels.
func openAt(t *testing.T, ts *httptest.Server, w, h int64, q string) *page {
	t.Helper()
	ctx := browser(t)
	require.NoError(t, chromedp.Do(timeout(t, ctx, 10*time.Second), chromedp.EmulateViewport(w, h)))
	return open(t, ctx, ts.URL, q)
}

// laidOut waits until the canvas has the height its views want (the page
// gives it state.view.want_h) for panes panes, and returns the layout.
func (p *page) laidOut(panes int) layoutReply {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := eval[layoutReply](p, `window.ringlab.request({type: "layout"})`)
		_, _, fw, fh := p.frameRect()
		if len(l.Panes) == panes && l.H >= l.WantH-1 && l.W == fw && l.H == fh {
			return l
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the canvas never got the height it wants: %.0fx%.0f (wants %.0f high), the frame %.0fx%.0f, %d panes", l.W, l.H, l.WantH, fw, fh, len(l.Panes))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkTexts checks that every text of the layout lies on the canvas and
// that no two overlap; it returns how many each pane's views draw.
func checkTexts(t *testing.T, l layoutReply, what string) map[string]int {
	t.Helper()
	require.NotEmpty(t, l.Texts, what)
	per := map[string]int{}
	for i, a := range l.Texts {
		per[fmt.Sprintf("%c.%s", 'A'+a.Pane, a.View)]++
		assert.True(t, a.X >= 0 && a.Y >= 0 && a.X+a.W <= l.W && a.Y+a.H <= l.H, "%s: %q at (%v, %v) leaves the %vx%v canvas", what, a.Text, a.X, a.Y, l.W, l.H)
		for _, b := range l.Texts[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%s: %s %q at (%v, %v) overlaps %s %q at (%v, %v)", what, a.View, a.Text, a.X, a.Y, b.View, b.Text, b.X, b.Y)
			}
		}
	}
	return per
}

// frameShot saves the game's frame, all of it, as test-artifacts/name.png.
func frameShot(t *testing.T, p *page, name string) {
	t.Helper()
	b, err := chromedp.Run(timeout(t, p.ctx, 30*time.Second), chromedp.Screenshot(chromedp.ID("game")))
	require.NoError(t, err)
	artifact(t, name+".png", b)
}

// TestNarrowLayout: in a window 800 px wide the side panel goes under the
// canvas, which keeps the page's width (it was 420 px beside the panel),
// and the views stack, each the canvas's width, the canvas as tall as
// they need; no two texts overlap. At 1280x720 the canvas keeps its grid
// in the frame it has. The counters table says each row's unit and
// meaning.
func TestNarrowLayout(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 800, 900, "?preset=default&speed=2000")
	p.playFor(4000) // two seconds at its speed: rates to draw
	p.pause()
	fx, fy, fw, fh := p.frameRect()
	t.Logf("800x900: the canvas is %.0fx%.0f", fw, fh)
	assert.GreaterOrEqual(t, fw, 740.0, "the canvas keeps the page's width")
	aside := eval[float64](p, `document.querySelector("main aside").getBoundingClientRect().top`)
	assert.GreaterOrEqual(t, aside, fy+fh-1, "the side panel is under the canvas")
	l := p.laidOut(1)
	assert.Equal(t, "stack", l.Form)
	v := l.Panes[0]
	order := []string{"ring", "flow", "cpus", "pages", "rates"}
	for i, name := range order {
		assert.InDelta(t, fw-16, v[name].W, 2, "%s takes the canvas's width", name)
		if i > 0 {
			assert.Greater(t, v[name].Y, v[order[i-1]].Y, "%s is under %s", name, order[i-1])
		}
	}
	per := checkTexts(t, l, "800x900")
	t.Logf("800x900: texts per view %v", per)
	assert.GreaterOrEqual(t, per["A.flow"], 29, "the flow's title and every box's label and rate")
	frameShot(t, p, "views-800")
	screenshot(t, p.ctx, "views-800-page")
	_ = fx

	// The counters table: a unit and a meaning beside every row.
	unit := eval[string](p, `document.querySelector('#counters tr[data-name="rx_packets"] td.unit').textContent`)
	meaning := eval[string](p, `document.querySelector('#counters tr[data-name="rx_packets"] td.meaning').textContent`)
	assert.Equal(t, "packets", unit)
	assert.Contains(t, meaning, "buffers the driver received")
	missing := eval[[]string](p, `[...document.querySelectorAll('#counters tbody tr')].filter(tr => !tr.querySelector('td.meaning') || !tr.querySelector('td.meaning').textContent).map(tr => tr.dataset.name)`)
	assert.Empty(t, missing, "rows without a meaning")

	q := openAt(t, ts, 1280, 720, "?preset=default&speed=2000")
	q.playFor(4000)
	q.pause()
	l = q.laidOut(1)
	t.Logf("1280x720: the canvas is %.0fx%.0f, %s (wants %.0f high)", l.W, l.H, l.Form, l.WantH)
	assert.Equal(t, "grid", l.Form)
	assert.GreaterOrEqual(t, l.W, 880.0)
	assert.Equal(t, 560.0, l.H, "the grid needs no more than the frame the page gives it")
	per = checkTexts(t, l, "1280x720")
	assert.GreaterOrEqual(t, per["A.flow"], 29)
	frameShot(t, q, "views-1280")
}

// TestCompareKeepsEveryView: in compare mode each pane keeps the ring,
// the flow, the CPUs, the pages and the rates with their legends, side by
// side at 1280x720 and one over the other 800 px wide; no two texts
// overlap.
func TestCompareKeepsEveryView(t *testing.T) {
	t.Parallel()
	ts := server(t)
	for _, c := range []struct {
		w, h int64
		form string
	}{{1280, 720, "columns"}, {800, 900, "rows"}} {
		p := openAt(t, ts, c.w, c.h, "?preset=default&speed=2000")
		p.send(map[string]any{"type": "compare", "on": true})
		p.waitJS(`window.ringlab.state.compare === true`, 20*time.Second)
		p.playFor(4000)
		p.pause()
		l := p.laidOut(2)
		what := fmt.Sprintf("compare at %dx%d", c.w, c.h)
		t.Logf("%s: the canvas is %.0fx%.0f, %s", what, l.W, l.H, l.Form)
		assert.Equal(t, c.form, l.Form, what)
		for i, v := range l.Panes {
			assert.GreaterOrEqual(t, v["flow"].W, 420.0, "%s: pane %d's flow is there", what, i)
			assert.GreaterOrEqual(t, v["flow"].H, 230.0, "%s: pane %d's flow is there", what, i)
		}
		per := checkTexts(t, l, what)
		t.Logf("%s: texts per view %v", what, per)
		for _, pane := range []string{"A", "B"} {
			assert.GreaterOrEqual(t, per[pane+".flow"], 29, "%s: %s's flow and its labels", what, pane)
			assert.GreaterOrEqual(t, per[pane+".pages"], 25, "%s: %s's page legend", what, pane)
			assert.GreaterOrEqual(t, per[pane+".rates"], 12, "%s: %s's rates legends", what, pane)
			assert.GreaterOrEqual(t, per[pane+".ring"], 20, "%s: %s's ring legend", what, pane)
		}
		frameShot(t, p, fmt.Sprintf("views-compare-%d", c.w))
	}
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// slotPixels measures the ring view's slots on screen from the indices
// written under the lines: pixels per slot, and how many are written. A
// window that wraps past the end of a ring of size entries (the driver
// followed there) counts on across the wrap.
func slotPixels(t *testing.T, l layoutReply, size float64) (float64, int) {
	t.Helper()
	type idx struct{ x, i float64 }
	rows := map[float64][]idx{}
	for _, tx := range l.Texts {
		if tx.Pane == 0 && tx.View == "ring" && digits.MatchString(tx.Text) {
			i, _ := strconv.Atoi(tx.Text)
			rows[tx.Y] = append(rows[tx.Y], idx{tx.X + tx.W/2, float64(i)})
		}
	}
	var axis []idx
	for _, r := range rows { // the axis: the row with the most indices
		if len(r) > len(axis) {
			axis = r
		}
	}
	require.GreaterOrEqual(t, len(axis), 2, "indices are written under the lines")
	sort.Slice(axis, func(a, b int) bool { return axis[a].x < axis[b].x })
	for k := 1; k < len(axis); k++ {
		for axis[k].i < axis[k-1].i {
			axis[k].i += size
		}
	}
	// The first and the last may be pushed inside the view's edges.
	a, b := axis[0], axis[len(axis)-1]
	if len(axis) >= 4 {
		a, b = axis[1], axis[len(axis)-2]
	}
	return (b.x - a.x) / (b.i - a.i), len(axis)
}

// viewState reads the state's view.
func (p *page) viewState() map[string]any {
	return eval[map[string]any](p, `window.ringlab.state.view`)
}

// TestRing1024Readable: the R2 presets' 1024-entry ring is drawn as lines
// whose slots are several pixels wide on screen with their indices
// written under them; z zooms in, > moves the window, f follows the
// driver again, v switches to the circle and back; hovering a number of
// the legend explains it with its unit; a click on a slot in the lines
// inspects it.
func TestRing1024Readable(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 1280, 720, "?preset=r2-mtu9000-after&speed=2000")
	p.playFor(4000)
	p.pause()
	l := p.laidOut(1)
	v := p.viewState()
	require.Equal(t, "linear", v["ring"], "%v", v)
	assert.Equal(t, 1024.0, v["size"])
	assert.Equal(t, true, v["following"])
	px, n := slotPixels(t, l, 1024)
	t.Logf("1024 entries: %v slots in the window, %.1f px a slot, %d indices written", v["slots"], px, n)
	assert.GreaterOrEqual(t, px, 4.0, "a slot is several pixels wide")
	assert.GreaterOrEqual(t, n, 4)
	checkTexts(t, l, "1024 entries")
	frameShot(t, p, "ring-1024-lines")

	slots := v["slots"].(float64)
	p.do(chromedp.KeyEvent("z"))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.view.slots === %v`, slots/2), 10*time.Second)
	zpx, _ := slotPixels(t, p.laidOut(1), 1024)
	assert.InDelta(t, 2*px, zpx, 1, "zoomed in, the slots are twice as wide")
	from := p.viewState()["from"].(float64)
	p.do(chromedp.KeyEvent(">"))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.view.from === %v && !window.ringlab.state.view.following`, int(from+slots/4)%1024), 10*time.Second)
	frameShot(t, p, "ring-1024-zoomed")
	p.do(chromedp.KeyEvent("f"))
	p.waitJS(`window.ringlab.state.view.following === true`, 10*time.Second)
	p.do(chromedp.KeyEvent("v"))
	p.waitJS(`window.ringlab.state.view.ring === "circle"`, 10*time.Second)
	p.do(chromedp.KeyEvent("v"))
	p.waitJS(`window.ringlab.state.view.ring === "linear"`, 10*time.Second)

	// Hovering the value of avail idx in the legend explains it.
	l = p.laidOut(1)
	fx, fy, _, _ := p.frameRect()
	var hx, hy float64
	for i, tx := range l.Texts {
		if tx.Text == "avail idx" && i+1 < len(l.Texts) {
			next := l.Texts[i+1]
			hx, hy = next.X+next.W/2, next.Y+next.H/2
		}
	}
	require.Positive(t, hx, "the legend writes avail idx")
	p.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, fx+hx, fy+hy))
	p.waitJS(`(window.ringlab.state.view.tip || [])[0] === "rq0.avail_idx (index, gauge)"`, 10*time.Second)
	tip := eval[[]string](p, `window.ringlab.state.view.tip`)
	t.Logf("the tip: %q", tip)
	assert.Contains(t, tip[len(tip)-1], "avail->idx", "the meaning, engine/vocab's")
	p.waitPicture()
	frameShot(t, p, "ring-1024-tip")

	// A click on a slot in the lines inspects it.
	from = p.viewState()["from"].(float64)
	slot := (int(from) + 3) % 1024
	where := p.request(map[string]any{"type": "where", "kind": "desc", "index": slot})
	require.Equal(t, true, where["ok"], "%v", where)
	p.do(chromedp.MouseClickXY(fx+where["x"].(float64), fy+where["y"].(float64)))
	p.waitJS(fmt.Sprintf(`document.getElementById('inspect').dataset.kind === "desc" && document.getElementById('inspect').dataset.index === "%d"`, slot), 20*time.Second)
}
