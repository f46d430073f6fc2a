package browsertest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerfTopShowsTheLabProgramsCost: while the live view follows a lab,
// its program's BPF run-time stats (run count and time, over about the
// last second of snapshots) show beside the simulated perf top's
// bpf_prog_run_xdp row, next to the model's own time a run.
func TestPerfTopShowsTheLabProgramsCost(t *testing.T) {
	t.Parallel()
	ts := serverWith(t, func(mux *http.ServeMux) {
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		mux.HandleFunc("/ws/metrics", func(w http.ResponseWriter, r *http.Request) {
			c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","schema":1,"source":"lab:xdp_drop","description":"test lab","counters":["xdp_drop","xdp_prog_run_count","xdp_prog_run_time_ns","xdp_prog_time_per_run_ns"],"labels":{"kind":"lab","device":"lab-b","program":"xdp_drop"}}`))
			// Ten snapshots a second: 1000 runs of 86 ns each a tenth.
			t0 := time.Now()
			for i := 0; i < 600; i++ {
				runs := 1000 * (i + 1)
				err := c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"type":"snapshot","seq":%d,"time":%q,"counters":{"xdp_drop":%d,"xdp_prog_run_count":%d,"xdp_prog_run_time_ns":%d,"xdp_prog_time_per_run_ns":86},"rates":{"xdp_drop":10000,"xdp_prog_run_count":10000,"xdp_prog_run_time_ns":860000}}`,
					i+1, t0.Add(time.Duration(i)*100*time.Millisecond).Format(time.RFC3339Nano), runs, runs, 86*runs)))
				if err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	})
	p := open(t, browser(t), ts.URL, "?preset=xdp-drop&speed=0")
	p.pause()
	p.send(map[string]any{"type": "step", "unit": "packet", "n": 3000})
	p.settle()
	model := eval[float64](p, `window.ringlab.state.panes[0].perf.xdp_ns_per_run`)
	require.Positive(t, model, "the model's time a run of its program")
	p.waitJS(`document.getElementById('server-text').textContent.includes("connected")`, 20*time.Second)
	eval[bool](p, `(document.getElementById("live-btn").click(), true)`)
	p.waitJS(`(document.querySelector('#perf-cpus tr.perf-real') || {}).textContent?.includes("real 86 ns a run") === true`, 30*time.Second)
	row := eval[string](p, `document.querySelector('#perf-cpus tr.perf-real').textContent`)
	prev := eval[string](p, `document.querySelector('#perf-cpus tr.perf-real').previousElementSibling.dataset.sym`)
	assert.Equal(t, "bpf_prog_run_xdp", prev, "the real program's row follows the model's XDP row")
	assert.Contains(t, row, "model "+strings.TrimSuffix(fmt.Sprintf("%.1f", model), ".0")+" ns a run")
	assert.Contains(t, row, "(lab xdp_drop)")
	line := eval[string](p, `document.getElementById("perf-real").textContent`)
	assert.Contains(t, line, "the kernel's BPF run-time stats): 86 ns a run over the last")
	assert.True(t, strings.Contains(line, "10,000 runs/s"), "runs a second over the window: %s", line)
	// Scrolled to until it stays in view (revealing the live panel
	// scrolls too).
	p.waitJS(`(document.getElementById("perf-real").scrollIntoView({block: "start"}),
		(r => r.top >= 0 && r.top < innerHeight / 2)(document.getElementById("perf-real").getBoundingClientRect()))`, 20*time.Second)
	screenshot(t, p.ctx, "perf-real-program")

	assert.True(t, eval[bool](p, `document.getElementById("perf-real").offsetParent !== null`), "the perf top stays in view beside the live views")

	// Back to the simulation: the real program's lines go.
	eval[bool](p, `(document.getElementById("live-off").click(), true)`)
	p.waitJS(`document.getElementById("perf-real").hidden && !document.querySelector('#perf-cpus tr.perf-real')`, 20*time.Second)
}
