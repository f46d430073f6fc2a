package browsertest

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// events reads pane A's position from the last state.
func (p *page) position() map[string]float64 {
	p.t.Helper()
	return eval[map[string]float64](p, `window.ringlab.state.position`)
}

// timed sends msg, waits until the game has done it (a sync answered), and
// returns how long that took in the page, in ms.
func (p *page) timed(msg string) float64 {
	p.t.Helper()
	return eval[float64](p, fmt.Sprintf(`(async () => { const t0 = performance.now();
		window.ringlab.send(%s); await window.ringlab.request({type: "sync"});
		return performance.now() - t0; })()`, msg))
}

// TestStepBack: a million events into the default preset, Left steps back
// one event and Shift+Left one packet, each landing where a replay of the
// run to that point stands (the link, opened in a fresh tab, gives the
// same counters); the scrubber and "go to event" move anywhere the run
// has been. It logs how long a step back takes in the page.
func TestStepBack(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=default")
	p.pause()
	const far = 1_000_000
	p.send(map[string]any{"type": "goto", "unit": "event", "n": far})
	p.settle()
	require.Equal(t, float64(far), p.counter("events", 0))
	before := p.counters()
	p.do(chromedp.Click(chromedp.ID("step-event")))
	p.settle()
	require.Equal(t, float64(far+1), p.counter("events", 0))

	// Left: one event back, to the counters the run had there.
	p.do(chromedp.Click(chromedp.ID("description")), chromedp.KeyEvent(kb.ArrowLeft))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.position.events === %d`, far), 30*time.Second)
	p.settle()
	assert.Equal(t, before, p.counters(), "one event back is the run as it was")
	assert.Contains(t, eval[string](p, `location.search`), fmt.Sprintf("log=e%d", far), "the link keeps the position")
	assert.Equal(t, float64(far+1), p.position()["horizon_events"], "the run's furthest point stays reachable")
	last := eval[string](p, `document.querySelector("#events li:last-child").dataset.seq`)
	assert.Equal(t, fmt.Sprint(far), last, "the events before the position are listed")

	// How long a step back takes, in the page: the first from a regular
	// mark, the rest from the near mark it leaves.
	// A pause (which does nothing here) is the page's round trip alone:
	// a tick of the game to take the message and one to answer.
	var ms, trip []float64
	for range 6 {
		ms = append(ms, p.timed(`{type: "back"}`))
		trip = append(trip, p.timed(`{type: "pause"}`))
	}
	assert.Equal(t, float64(far-6), p.position()["events"])
	t.Logf("step back a million events in: %.0f ms the first, median %.0f ms, max %.0f ms; the page's round trip alone: median %.0f ms",
		ms[0], middle(ms), slices.Max(ms), middle(trip))

	// Shift+Left: to the previous packet stop; Shift+Right comes back.
	p.do(chromedp.KeyEvent(kb.ArrowRight, chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.settle()
	at := p.position()
	p.do(chromedp.KeyEvent(kb.ArrowRight, chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.settle()
	rx := p.counter("rx_packets", 0)
	p.do(chromedp.KeyEvent(kb.ArrowLeft, chromedp.KeyModifiers(chromedp.ModifierShift)))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.position.events === %v`, at["events"]), 30*time.Second)
	p.settle()
	assert.Less(t, p.counter("rx_packets", 0), rx, "back one packet receives one packet fewer")
	assert.Equal(t, at, p.position())

	// The link opens where the page stands, with the same counters.
	want := p.counters()
	link := eval[string](p, `location.href`)
	q := openURL(t, browser(t), link)
	q.settle()
	assert.Equal(t, want, q.counters(), "the link after going back reproduces every counter")

	// The scrubber: a third of the way along, in simulated time.
	horizon := p.position()["horizon_ns"]
	third := int64(horizon / 3)
	eval[chromedp.Void](p, fmt.Sprintf(`(() => { const el = document.getElementById("scrub");
		el.value = "%d"; el.dispatchEvent(new Event("input")); el.dispatchEvent(new Event("change")); })()`, third))
	p.waitJS(fmt.Sprintf(`window.ringlab.state.position.at_ns === %d`, third), 30*time.Second)
	p.settle()
	u, err := url.Parse(eval[string](p, `location.href`))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("t%d", third), u.Query().Get("log"))
	screenshot(t, p.ctx, "step-back-scrubbed")

	// Go to event N, forward and back.
	for _, n := range []int{far / 2, 1234} {
		p.do(chromedp.SetValue(chromedp.ID("goto-event"), fmt.Sprint(n)), chromedp.Click(`#goto-form button`))
		p.waitJS(fmt.Sprintf(`window.ringlab.state.position.events === %d`, n), 30*time.Second)
		p.settle()
		assert.Equal(t, float64(n), p.counter("events", 0))
	}
	p.do(chromedp.SetValue(chromedp.ID("goto-event"), "-3"), chromedp.Click(`#goto-form button`))
	p.waitJS(`document.getElementById("status").textContent.includes("whole number")`, 10*time.Second)
}

func middle(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestKernelSourcePane: each listed event says what it did and names the
// kernel functions it stands for, each with its file and line at the
// scenario's kernel and linking that line (6.4, the kernel of the R1
// presets, whose source engine/kernel's funclines_gen.go has), or Elixir's identifier search at
// a release whose source was not read (6.7); the pane follows a step
// back; a click on ▸ beside a function runs to the next event that runs
// it.
func TestKernelSourcePane(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?preset=cpumap&set=kernel:6.4")
	p.pause()
	p.send(map[string]any{"type": "goto", "unit": "event", "n": 40})
	p.settle()
	last := `document.querySelector("#events li:last-child")`
	require.Equal(t, "40", eval[string](p, last+`.dataset.seq`), "the events up to a position are listed")
	say := eval[string](p, last+`.querySelector(".say").textContent`)
	assert.Regexp(t, `^[A-Z].+\.$`, say, "a sentence")
	links := eval[[]string](p, `[...document.querySelectorAll("#events li:last-child .funcs a")].map(a => a.href)`)
	wheres := eval[[]string](p, `[...document.querySelectorAll("#events li:last-child .funcs .where")].map(c => c.textContent)`)
	require.NotEmpty(t, links)
	require.Len(t, wheres, len(links), "a file:line beside each function")
	for i, l := range links {
		m := regexp.MustCompile(`^https://elixir\.bootlin\.com/linux/v6\.4(?:\.\d+)?/source/([a-z0-9_/.-]+\.[ch])#L(\d+)$`).FindStringSubmatch(l)
		require.NotNil(t, m, "%s: the line at the scenario's kernel, 6.4", l)
		assert.Equal(t, m[1]+":"+m[2], wheres[i], "the file and line shown are the link's")
	}
	titles := eval[[]string](p, `[...document.querySelectorAll("#events li:last-child .funcs a")].map(a => a.title)`)
	assert.Regexp(t, `^(drivers|net|kernel|mm|include)/.+\.[ch]:\d+: `, titles[0], "the file, line and what it does")

	// A release whose source was not read: the identifier search. Both
	// messages in one task, so that no state of the rebuilt world at its
	// start need be drawn in between: the list must still be redrawn,
	// though it ends at the same event as before.
	eval[chromedp.Void](p, `window.ringlab.send({type: "set", key: "kernel", value: "6.7"}); window.ringlab.send({type: "goto", unit: "event", n: 40})`)
	p.settle()
	// The list before the change also ends at event 40: wait for the
	// rebuilt world's, whose links are at 6.7.
	p.waitJS(`(() => { const li = document.querySelector("#events li:last-child"); const a = li && li.querySelector(".funcs a"); return li.dataset.seq === "40" && a && a.href.includes("/v6.7/"); })()`, 30*time.Second)
	links = eval[[]string](p, `[...document.querySelectorAll("#events li:last-child .funcs a")].map(a => a.href)`)
	require.NotEmpty(t, links)
	for _, l := range links {
		assert.Regexp(t, `^https://elixir\.bootlin\.com/linux/v6\.7/A/ident/[a-z_0-9]+$`, l, "the identifier search at the scenario's kernel")
	}
	// The perf top is redrawn too, though its window ends where it did.
	p.waitJS(`(() => { const a = document.querySelector('#perf-cpus table[data-cpu="cpu0"] a'); return !!a && a.href.includes("/v6.7/"); })()`, 30*time.Second)

	// Back one event: the pane follows.
	p.do(chromedp.Click(chromedp.ID("description")), chromedp.KeyEvent(kb.ArrowLeft))
	p.waitJS(`document.querySelector("#events li:last-child").dataset.seq === "39"`, 30*time.Second)

	// ▸ beside cpu_map_kthread_run: the next event that runs it.
	p.send(map[string]any{"type": "goto", "unit": "event", "n": 3})
	p.settle()
	p.send(map[string]any{"type": "until", "func": "cpu_map_kthread_run"})
	p.settle()
	t.Logf("status: %q, position %v", eval[string](p, `document.getElementById("status").textContent`), p.position())
	head := eval[string](p, last+`.querySelector("strong").textContent`)
	assert.Contains(t, head, "cpumap kthread", "the search stops at the kthread's event")
	seq := eval[string](p, last+`.dataset.seq`)
	btn := `#events li:last-child .funcs button[data-func="page_pool_recycle_in_ring"]`
	p.waitJS(fmt.Sprintf(`!!document.querySelector(%q)`, btn), 10*time.Second)
	p.do(chromedp.Click(btn))
	p.waitJS(fmt.Sprintf(`document.querySelector("#events li:last-child").dataset.seq !== %q`, seq), 30*time.Second)
	p.settle()
	funcs := eval[[]string](p, `[...document.querySelectorAll("#events li:last-child .funcs a")].map(a => a.textContent)`)
	assert.Contains(t, funcs, "page_pool_recycle_in_ring", "the click ran to an event that runs it")

	p.send(map[string]any{"type": "until", "func": "receive_big"})
	p.waitJS(`document.getElementById("status").textContent.includes("no event of this world runs receive_big")`, 10*time.Second)
	screenshot(t, p.ctx, "kernel-source-pane")
}
