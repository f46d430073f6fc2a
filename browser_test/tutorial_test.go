package browsertest

import (
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
	p.do(chromedp.SendKeys(".tut-predict", "no"), chromedp.Click(".tut-reveal"))
	p.waitJS(`!document.querySelector(".tut-question .tut-block").hidden`, 10*time.Second)
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
	ts := server(t)
	p := open(t, browser(t), ts.URL, "?tutorial=descriptor-journey&step=6")
	p.waitJS(`(() => { const el = document.getElementById("tutorial-panel");
		return el && !el.hidden && el.dataset.step === "6" && !!el.dataset.checks; })()`, 60*time.Second)
	p.settle()
	rates := eval[map[string]float64](p, `window.ringlab.state.panes[0].rates || {}`)
	assert.Greater(t, rates["rx pps"], 1000.0, "the step's rates show after it ran (%v)", rates)
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
