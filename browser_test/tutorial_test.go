package browsertest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTutorialPanel: a link to a tutorial's step opens the panel there and
// shows that step's world; } goes to the next step, whose world (two
// events after virtnet_open) replaces it and whose checks the game reports
// as holding; Reveal shows the question's answer.
func TestTutorialPanel(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=descriptor-journey&step=1")
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el && !el.hidden && el.dataset.step === "1" && el.dataset.checks === "ok"; })()`, 30*time.Second)
	assert.Equal(t, "Step 1: The ring at rest", eval[string](p, `document.getElementById("tut-step-title").textContent`))
	assert.Equal(t, "descriptor-journey", eval[string](p, `document.getElementById("tut-select").value`))
	p.settle()
	assert.Equal(t, 0.0, p.counter("events", 0), "step 1 shows the world right after virtnet_open")
	assert.Equal(t, "?tutorial=descriptor-journey&step=1",
		eval[string](p, `new URL(document.getElementById("tut-link").href).search`))

	p.do(chromedp.Click(chromedp.ID("tut-step-title")), chromedp.KeyEvent("}"))
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el.dataset.step === "2" && el.dataset.checks === "ok"; })()`, 30*time.Second)
	assert.Equal(t, "Step 2: The host writes, the driver has not looked", eval[string](p, `document.getElementById("tut-step-title").textContent`))
	// Step 2 is watched (run events=2 trace watch): pane A plays its two
	// events at a speed to follow, then pauses where the run stops.
	p.waitJS(`window.ringlab.state.position.events === 2 && !window.ringlab.state.playing`, 30*time.Second)
	p.settle()
	assert.Equal(t, 2.0, p.counter("events", 0), "step 2 runs two events")
	assert.Equal(t, 0.0, p.counter("rx_packets", 0))
	assert.False(t, eval[bool](p, `window.ringlab.state.playing`))

	statuses := eval[[]string](p, `[...document.querySelectorAll("#tut-body .tut-check")].map(e => e.dataset.status)`)
	require.Len(t, statuses, 5, "one answer and four checks")
	for _, s := range statuses {
		assert.Equal(t, "ok", s)
	}
	assert.Contains(t, eval[string](p, `document.getElementById("tut-summary").textContent`), "5 of 5 checks hold")

	// Predict, then observe: until Reveal, the views that hold the answer
	// are blurred and inert (out of reach of a screen reader too).
	require.True(t, eval[bool](p, `document.querySelector(".tut-question .tut-block").hidden`))
	hidden := `(() => { const b = document.body.dataset.predicting === "1";
		const inert = ["game-stage", "counters-panel", "inspect"].every((id) => document.getElementById(id).inert);
		const blur = getComputedStyle(document.getElementById("counters")).filter.includes("blur");
		return [b, inert, blur]; })()`
	assert.Equal(t, []bool{true, true, true}, eval[[]bool](p, hidden), "predicting: flag, inert, blurred")
	screenshot(t, p.ctx, "tutorial-predict")
	assert.True(t, eval[bool](p, `[...document.querySelectorAll("#tut-body .tut-after")].every((e) => e.hidden)`),
		"the prose after the question explains it: hidden too")
	assert.NotContains(t, eval[string](p, `document.getElementById("tut-body").innerText`), "last_used_idx is still 0")
	// "Has rx_packets moved?" is a yes/no question: two buttons, no field
	// to type a number in.
	assert.Equal(t, []string{"Yes", "No"}, eval[[]string](p, `[...document.querySelectorAll(".tut-question .tut-opt")].map(b => b.textContent)`))
	assert.Equal(t, 0, eval[int](p, `document.querySelectorAll(".tut-question input[type=text], .tut-question textarea").length`))
	p.do(chromedp.Click(`.tut-opt[data-value="no"]`), chromedp.Click(".tut-reveal"))
	p.waitJS(`!document.querySelector(".tut-question .tut-block").hidden`, 10*time.Second)
	p.waitJS(`document.getElementById("tut-q0-grade").dataset.verdict === "right"`, 10*time.Second)
	assert.Contains(t, eval[string](p, `document.getElementById("tut-q0-grade").textContent`), "Right: you said no")
	assert.Equal(t, []bool{false, false, false}, eval[[]bool](p, hidden), "revealed: the views are back")
	assert.Contains(t, eval[string](p, `document.getElementById("tut-body").innerText`), "last_used_idx is still 0")
	assert.Contains(t, eval[string](p, `document.querySelector(".tut-question .tut-block").textContent`), "✓")
	assert.Contains(t, eval[string](p, `localStorage.getItem("ringlab.tutorials")`), `"step":2`)
	screenshot(t, p.ctx, "tutorial")
}

// TestTutorialStepPlays: a step that runs 20,000 packets leaves its rates
// in the views (not 0/s), shows its configuration in the panel, and the
// description line and the preset picker say what runs.
func TestTutorialStepPlays(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=descriptor-journey&step=6")
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el && !el.hidden && el.dataset.step === "6" && !!el.dataset.checks; })()`, 60*time.Second)
	p.settle()
	rates := eval[map[string]float64](p, `window.ringlab.state.panes[0].rates || {}`)
	assert.Greater(t, rates["rx_packets"], 1000.0, "the step's rates show after it ran (%v)", rates)
	cfg := eval[[]string](p, `[...document.querySelectorAll("#tut-body .tut-config code")].map(e => e.textContent)`)
	require.NotEmpty(t, cfg, "the step's preset and set lines are shown")
	assert.Contains(t, cfg[0], "preset ")
	desc := eval[string](p, `document.getElementById("description").textContent`)
	assert.Contains(t, desc, "Tutorial 1 (", "the description says which tutorial step runs")
	assert.Contains(t, desc, "step 6")
	assert.Contains(t, eval[string](p, `document.getElementById("preset").selectedOptions[0].textContent`),
		"scenario: descriptor-journey step 6", "the preset picker names the step's scenario, not the last preset")

	// The last step ends the tutorial and offers the next one.
	eval[chromedp.Void](p, `window.ringlabTutorial.go(9)`)
	p.waitJS(`!!document.getElementById("tut-next-tutorial")`, 60*time.Second)
	for _, b := range eval[[]string](p, `[...document.querySelectorAll(".tut-reveal")].map(b => b.dataset.target)`) {
		p.do(chromedp.Click(fmt.Sprintf(`.tut-reveal[data-target=%q]`, b)))
	}
	assert.Contains(t, eval[string](p, `document.getElementById("tut-end").textContent`), "Done")
	p.do(chromedp.Click("#tut-next-tutorial"))
	p.waitJS(`document.getElementById("tut-select").value === "receive-modes" && document.getElementById("tutorial-panel").dataset.step === "1"`, 60*time.Second)
	screenshot(t, p.ctx, "tutorial-step-plays")
}

// TestGradedPrediction: a prediction is graded against the engine's
// answer at Reveal: close within 10 %, right when exact; the checks'
// tally stays hidden until every question of the step is revealed.
func TestGradedPrediction(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=big-mtu-fix&step=1")
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el && el.dataset.step === "1" && el.dataset.checks === "ok"; })()`, 60*time.Second)
	assert.True(t, eval[bool](p, `document.getElementById("tut-summary").hidden`), "the tally is an answer too")
	p.do(chromedp.SendKeys(".tut-predict", "50"), chromedp.Click(".tut-reveal"))
	p.waitJS(`!document.getElementById("tut-q0-grade").hidden && !!document.getElementById("tut-q0-grade").dataset.verdict`, 20*time.Second)
	assert.Equal(t, "close", eval[string](p, `document.getElementById("tut-q0-grade").dataset.verdict`))
	assert.Contains(t, eval[string](p, `document.getElementById("tut-q0-grade").textContent`), "53")
	assert.False(t, eval[bool](p, `document.getElementById("tut-summary").hidden`), "revealed: the tally shows")
	screenshot(t, p.ctx, "tutorial-graded")

	eval[chromedp.Void](p, `window.ringlabTutorial.go(2)`)
	p.waitJS(`document.getElementById("tutorial-panel").dataset.step === "2" && !!document.querySelector(".tut-predict")`, 60*time.Second)
	p.do(chromedp.SendKeys(".tut-predict", "204"), chromedp.Click(".tut-reveal"))
	p.waitJS(`document.getElementById("tut-q0-grade").dataset.verdict === "right"`, 20*time.Second)
	p.do(chromedp.Click("#tut-prev"))
	p.waitJS(`document.getElementById("tutorial-panel").dataset.step === "1" && !!document.querySelector(".tut-predict")`, 60*time.Second)
	p.do(chromedp.SendKeys(".tut-predict", "a lot"), chromedp.Click(".tut-reveal"))
	p.waitJS(`document.getElementById("tut-q0-grade").dataset.verdict === "unreadable"`, 20*time.Second)
}

// TestTutorialTables: a tutorial's pipe tables render as tables (header,
// alignment, cells with code, emphasis and links), and nothing in a
// tutorial's text becomes markup of its own: tags, handlers and
// javascript: links in cells come out as text (a link refused shows its
// source).
func TestTutorialTables(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=xdp-verdicts&step=0")
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el && !el.hidden && el.dataset.step === "0" && !!document.querySelector("#tut-body p"); })()`, 30*time.Second)
	head := eval[[]string](p, `[...document.querySelectorAll("#tut-body table thead th")].map(e => e.textContent)`)
	assert.Equal(t, []string{"verdict", "value", "what the driver does with the buffer"}, head)
	first := eval[[]string](p, `[...document.querySelectorAll("#tut-body table tbody tr")].map(tr => tr.cells[0].innerHTML)`)
	assert.Equal(t, []string{"<code>XDP_ABORTED</code>", "<code>XDP_DROP</code>", "<code>XDP_PASS</code>", "<code>XDP_TX</code>", "<code>XDP_REDIRECT</code>"}, first)
	assert.NotContains(t, eval[string](p, `document.getElementById("tut-body").innerText`), "| ---", "no raw pipes left")

	md := func(src string) string {
		t.Helper()
		b, err := json.Marshal(src)
		require.NoError(t, err)
		return eval[string](p, fmt.Sprintf(`window.ringlabTutorial.markdown(%s)`, b))
	}
	for _, c := range []struct{ name, src, want string }{
		{"aligned, outer pipes",
			"| a | b | c |\n| :-- | :-: | --: |\n| 1 | 2 | 3 |",
			`<div class="tut-table"><table><thead><tr><th class="al-left">a</th><th class="al-center">b</th><th class="al-right">c</th></tr></thead>` +
				`<tbody><tr><td class="al-left">1</td><td class="al-center">2</td><td class="al-right">3</td></tr></tbody></table></div>`},
		{"no outer pipes, short and long rows",
			"x | y\n--- | ---\nonly\n1 | 2 | 3",
			`<div class="tut-table"><table><thead><tr><th>x</th><th>y</th></tr></thead>` +
				`<tbody><tr><td>only</td><td></td></tr><tr><td>1</td><td>2</td></tr></tbody></table></div>`},
		{"inline markup in cells, an escaped pipe",
			"| what | how |\n| --- | --- |\n| `a\\|b` **bold** *em* | [docs](https://example.com/a?x=1&y=2) |",
			`<div class="tut-table"><table><thead><tr><th>what</th><th>how</th></tr></thead><tbody><tr>` +
				`<td><code>a|b</code> <strong>bold</strong> <em>em</em></td>` +
				`<td><a href="https://example.com/a?x=1&amp;y=2" target="_blank" rel="noopener noreferrer">docs</a></td></tr></tbody></table></div>`},
		{"ends at a blank line, after a paragraph",
			"before\n| a |\n| --- |\n| 1 |\n\nafter",
			"<p>before</p>\n" + `<div class="tut-table"><table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table></div>` + "\n<p>after</p>"},
		{"a pipe in prose is not a table",
			"`!big || mergeable`\nand more",
			"<p><code>!big || mergeable</code> and more</p>"},
		{"a delimiter row of another width is not a table",
			"a | b\n--- | --- | ---",
			"<p>a | b --- | --- | ---</p>"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, md(c.src)) })
	}

	// Escaping: what a cell (or any prose) says is shown, never run.
	hostile := "| <b>head</b> | x |\n| --- | --- |\n" +
		"| <script>window.pwned = 1</script> | <img src=x onerror=\"window.pwned = 2\"> |\n" +
		"| [click](javascript:window.pwned=3) | [x](https://e.com\"onmouseover=\"window.pwned=4) |\n" +
		"| `<svg onload=alert(1)>` | &lt;i&gt; |"
	html := md(hostile)
	probe := fmt.Sprintf(`(() => { const d = document.createElement("div"); d.innerHTML = %s; document.body.appendChild(d);
		const r = { elems: [...d.querySelectorAll("*")].map(e => e.tagName.toLowerCase()).filter((v, i, a) => a.indexOf(v) === i).sort(),
			handlers: [...d.querySelectorAll("*")].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith("on")),
			hrefs: [...d.querySelectorAll("a")].map(a => a.getAttribute("href")),
			cells: [...d.querySelectorAll("th, td")].map(e => e.textContent) };
		d.remove(); return r; })()`, mustJSON(t, html))
	got := eval[struct {
		Elems, Handlers, Hrefs, Cells []string
	}](p, probe)
	assert.Equal(t, []string{"code", "div", "table", "tbody", "td", "th", "thead", "tr"}, got.Elems, "only the table's own elements: %s", html)
	assert.Empty(t, got.Handlers, html)
	assert.Empty(t, got.Hrefs, "neither a javascript: link nor an address that breaks out of its attribute: %s", html)
	assert.Equal(t, []string{"<b>head</b>", "x", "<script>window.pwned = 1</script>", `<img src=x onerror="window.pwned = 2">`,
		"[click](javascript:window.pwned=3)", `[x](https://e.com"onmouseover="window.pwned=4)`, "<svg onload=alert(1)>", "&lt;i&gt;"}, got.Cells)
	assert.True(t, eval[bool](p, `window.pwned === undefined`))
}

// TestTutorialTableNarrow: 800 px wide, a tutorial's wide table scrolls
// sideways inside itself; neither the panel nor the page grows.
func TestTutorialTableNarrow(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := openAt(t, ts, 800, 900, "?tutorial=real-backend&step=0")
	p.waitJS(`!!document.querySelector("#tut-body .tut-table table")`, 30*time.Second)
	box := eval[map[string]float64](p, `(() => { const w = document.querySelector("#tut-body .tut-table"), b = document.getElementById("tut-body");
		return { wrapRight: w.getBoundingClientRect().right, bodyRight: b.getBoundingClientRect().right,
			wrapScroll: w.scrollWidth, wrapClient: w.clientWidth, bodyScroll: b.scrollWidth, bodyClient: b.clientWidth,
			page: document.documentElement.scrollWidth, view: window.innerWidth }; })()`)
	t.Logf("800 px: %v", box)
	assert.LessOrEqual(t, box["wrapRight"], box["bodyRight"]+0.5, "the table's box stays in the panel")
	assert.LessOrEqual(t, box["bodyScroll"], box["bodyClient"], "the panel's text does not scroll sideways")
	assert.LessOrEqual(t, box["page"], box["view"], "the page does not scroll sideways")
	screenshot(t, p.ctx, "tutorial-table-800")

	// A table no wrapping fits (one long code cell) scrolls within itself.
	wide := eval[map[string]float64](p, `(() => { const b = document.getElementById("tut-body");
		b.insertAdjacentHTML("beforeend", window.ringlabTutorial.markdown("| a | b |\n| --- | --- |\n| `+"`"+`" + "x".repeat(300) + "`+"`"+` | y |"));
		const w = b.lastElementChild; w.scrollLeft = 100;
		return { scrolled: w.scrollLeft, wrapRight: w.getBoundingClientRect().right, bodyRight: b.getBoundingClientRect().right,
			bodyScroll: b.scrollWidth, bodyClient: b.clientWidth, page: document.documentElement.scrollWidth, view: window.innerWidth }; })()`)
	t.Logf("a 300-character cell: %v", wide)
	assert.Equal(t, 100.0, wide["scrolled"], "the table scrolls sideways")
	assert.LessOrEqual(t, wide["wrapRight"], wide["bodyRight"]+0.5)
	assert.LessOrEqual(t, wide["bodyScroll"], wide["bodyClient"])
	assert.LessOrEqual(t, wide["page"], wide["view"])
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestPredictionInputs: each question shows the input its kind asks for
// and is graded by it: a choice among named options as buttons, a ratio
// as a number field that says its unit ("3x" as good as "3"), a sentence
// in a text box, shown beside the engine's answer and not graded.
func TestPredictionInputs(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=xdp-verdicts&step=1")
	stepReady := func(n int) {
		p.waitJS(fmt.Sprintf(`(() => { const el = document.getElementById("tutorial-panel");
			return el && el.dataset.step === "%d" && !!el.dataset.checks && !!document.getElementById("tut-q0-in"); })()`, n), 90*time.Second)
	}
	stepReady(1)
	assert.Equal(t, "choice", eval[string](p, `document.querySelector(".tut-question").dataset.kind`))
	assert.Equal(t, []string{"the alloc cache", "the ptr_ring", "the page allocator"},
		eval[[]string](p, `[...document.querySelectorAll(".tut-question .tut-opt")].map(b => b.textContent)`))
	p.do(chromedp.Click(`.tut-opt[data-value="the ptr_ring"]`), chromedp.Click(`.tut-opt[data-value="the alloc cache"]`))
	assert.Equal(t, []string{"true", "false", "false"},
		eval[[]string](p, `[...document.querySelectorAll(".tut-question .tut-opt")].map(b => b.getAttribute("aria-checked"))`), "the last pick counts")
	screenshot(t, p.ctx, "prediction-choice")
	p.do(chromedp.Click(".tut-reveal"))
	p.waitJS(`document.getElementById("tut-q0-grade").dataset.verdict === "right"`, 20*time.Second)
	assert.True(t, eval[bool](p, `[...document.querySelectorAll(".tut-opt")].every(b => b.disabled)`), "revealed: the pick is final")

	// "By how much": the ratio the question names, in its unit.
	eval[chromedp.Void](p, `window.ringlabTutorial.go(2)`)
	stepReady(2)
	assert.Equal(t, "number", eval[string](p, `document.querySelector(".tut-question").dataset.kind`))
	assert.Contains(t, eval[string](p, `document.querySelector(".tut-question .tut-unit").textContent`), "ratio")
	assert.Contains(t, eval[string](p, `document.querySelector(".tut-question").textContent`), "drop.mpps / mpps")
	p.do(chromedp.SendKeys("#tut-q0-in", "3x"), chromedp.Click(".tut-reveal"))
	p.waitJS(`!!document.getElementById("tut-q0-grade").dataset.verdict`, 20*time.Second)
	assert.Equal(t, "right", eval[string](p, `document.getElementById("tut-q0-grade").dataset.verdict`),
		eval[string](p, `document.getElementById("tut-q0-grade").textContent`))
	screenshot(t, p.ctx, "prediction-number")

	// A sentence: noted beside the engine's answer, never "want a number".
	eval[chromedp.Void](p, `window.ringlabTutorial.go(3)`)
	stepReady(3)
	assert.Equal(t, "TEXTAREA", eval[string](p, `document.getElementById("tut-q0-in").tagName`))
	eval[chromedp.Void](p, `(() => { const el = document.getElementById("tut-q0-in"); el.value = "When the host has sent it";
		el.dispatchEvent(new Event("input", {bubbles: true})); document.querySelector(".tut-reveal").click(); })()`)
	p.waitJS(`!!document.getElementById("tut-q0-grade").dataset.verdict`, 20*time.Second)
	assert.Equal(t, "noted", eval[string](p, `document.getElementById("tut-q0-grade").dataset.verdict`))
	grade := eval[string](p, `document.getElementById("tut-q0-grade").textContent`)
	assert.Contains(t, grade, `You wrote: "When the host has sent it"`)
	assert.NotContains(t, grade, "want a number")
	screenshot(t, p.ctx, "prediction-text")
}
