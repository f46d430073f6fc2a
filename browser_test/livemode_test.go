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

// TestLiveModeStepsAside: at 1280x720, the Live backend puts the canvas
// on the source and the simulation steps aside: paused (its events stand
// still), its playback, timeline, Events, perf top, Inspect, Parameters
// and counters hidden, the canvas the page's whole width and as tall as
// the live views want. Back to the simulation, it plays again.
func TestLiveModeStepsAside(t *testing.T) {
	t.Parallel()
	site := newLiveSite(t, "sim:default")
	ctx := browser(t)
	require.NoError(t, chromedp.Do(timeout(t, ctx, 10*time.Second), chromedp.EmulateViewport(1280, 720)))
	p := open(t, ctx, site.url(), "?preset=default&speed=20")
	p.waitJS(`!document.getElementById("live-btn").disabled && window.ringlab.state.playing`, 20*time.Second)
	visible := `["play", "scrub", "goto-event", "events-h", "perf-h", "inspect-h", "params-h", "counters-panel", "export-png"]
		.filter((id) => document.getElementById(id).getClientRects().length > 0)`
	require.Len(t, eval[[]string](p, visible), 9, "the simulation's controls, before")

	eval[bool](p, `(document.getElementById("live-btn").click(), true)`)
	p.waitJS(`window.ringlab.state.live && window.ringlab.state.live.points >= 2 && document.body.classList.contains("live")`, 30*time.Second)
	assert.False(t, p.playing(), "the simulation is paused while the canvas shows the source")
	before := eval[float64](p, `window.ringlab.state.position.events`)
	p.waitJS(fmt.Sprintf(`window.ringlab.state.live.snapshots >= %d`, int(eval[float64](p, `window.ringlab.state.live.snapshots`))+5), 20*time.Second)
	assert.Equal(t, before, eval[float64](p, `window.ringlab.state.position.events`), "no event ran under the live view")
	assert.Equal(t, []string{"export-png"}, eval[[]string](p, visible), "only the export stays of the simulation's controls")
	sz := eval[map[string]float64](p, `(() => { const g = document.getElementById("game").getBoundingClientRect();
		return { w: g.width, h: g.height, want: window.ringlab.state.live.want_h, win: document.documentElement.clientWidth,
			pageW: document.documentElement.scrollWidth }; })()`)
	assert.Greater(t, sz["w"], sz["win"]-40, "the canvas takes the page's width: %v", sz)
	assert.GreaterOrEqual(t, sz["h"], sz["want"]-1, "the canvas is as tall as the live views want: %v", sz)
	assert.LessOrEqual(t, sz["pageW"], sz["win"], "no sideways scroll: %v", sz)
	// The simulation's keys do nothing to the source.
	eval[bool](p, `(window.ringlab.handleKey(" ", false), true)`)
	p.settle()
	assert.False(t, p.playing())
	eval[bool](p, `(window.scrollTo(0, 0), true)`)
	screenshot(t, p.ctx, "live-1280x720")

	eval[bool](p, `(document.getElementById("live-off").click(), true)`)
	p.waitJS(`!window.ringlab.state.live && window.ringlab.state.playing && !document.body.classList.contains("live")`, 20*time.Second)
	assert.Len(t, eval[[]string](p, visible), 9, "the simulation's controls are back")
}

// TestLiveTableSteadyRates: the live table's per-second column is each
// counter's growth over about the last second, as the canvas's charts
// say theirs: a slow counter that moves every third snapshot reads its
// rate, not 50/s then 0 then 0; and rows whose rates wobble around the
// same value keep their order instead of swapping at each snapshot.
func TestLiveTableSteadyRates(t *testing.T) {
	t.Parallel()
	ts := server(t)
	p := open(t, browser(t), ts.URL, "")
	type snap struct {
		Time     string             `json:"time"`
		Counters map[string]float64 `json:"counters"`
		Rates    map[string]float64 `json:"rates"` // the server's, over the last tenth of a second
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tot := map[string]float64{}
	var slow []string
	var order [][]string
	for i := 0; i < 40; i++ {
		inc := map[string]float64{
			"slow_packets": 0, // 5 every third snapshot: 16.7/s
			"fast_packets": 100,
			"wobble_a":     float64(1 + 2*(i%2)), // 1, 3, 1, 3: 20/s
			"wobble_b":     float64(3 - 2*(i%2)), // 3, 1, 3, 1: 20/s
		}
		if i%3 == 2 {
			inc["slow_packets"] = 5
		}
		s := snap{Time: t0.Add(time.Duration(i) * 100 * time.Millisecond).Format(time.RFC3339Nano), Counters: map[string]float64{}, Rates: map[string]float64{}}
		for k, d := range inc {
			tot[k] += d
			s.Counters[k] = tot[k]
			s.Rates[k] = d * 10
		}
		b, err := json.Marshal(s)
		require.NoError(t, err)
		got := eval[[]string](p, fmt.Sprintf(`(() => { window.ringlab.live.table(%s);
			const cell = document.querySelector('#live-table tr[data-name="slow_packets"] td:nth-child(3)').textContent;
			const names = [...document.querySelectorAll('#live-table tbody tr')].map((r) => r.dataset.name);
			return [cell, ...names]; })()`, b))
		if i >= 11 { // a whole second of snapshots held
			slow = append(slow, got[0])
			order = append(order, got[1:])
		}
	}
	for i, c := range slow {
		var v float64
		_, err := fmt.Sscan(c, &v)
		require.NoError(t, err, "snapshot %d: the slow counter's rate %q", i, c)
		assert.InDelta(t, 16.7, v, 3.5, "snapshot %d: the slow counter reads its rate over the last second, not the last tenth", i)
	}
	fastCell := eval[string](p, `document.querySelector('#live-table tr[data-name="fast_packets"] td:nth-child(3)').textContent`)
	assert.Equal(t, "1,000", fastCell)
	for i := 1; i < len(order); i++ {
		assert.Equal(t, order[0], order[i], "snapshot %d: the rows keep their order (by rate)", i)
	}
	assert.Equal(t, "fast_packets", order[0][0], "the fastest first")
}
