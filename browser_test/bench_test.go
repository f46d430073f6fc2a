package browsertest

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBenchDrawingCost runs web/bench.html: the game with ?bench=empty and
// ?bench=view alternately in a frame of the page's size, and the engine
// benchmark. It reports the frame-rate ratio (target: the view at 85% of
// the empty scene or more) and the view's ticks per second (target 58).
//
// It takes about a minute and measures rather than checks, so it runs only
// with RINGLAB_BENCH=1.
func TestBenchDrawingCost(t *testing.T) {
	if os.Getenv("RINGLAB_BENCH") != "1" {
		t.Skip("set RINGLAB_BENCH=1 to run the drawing benchmark")
	}
	ts := server(t)
	ctx := userBrowser(t) // a user's browser: the test browsers' wasm runs unoptimised
	require.NoError(t, chromedp.Do(timeout(t, ctx, 30*time.Second), chromedp.Navigate(ts.URL+"/bench.html?seconds=5&rounds=3&warmup=2&engine=1")))
	p := &page{t: t, ctx: ctx}
	p.waitJS(`window.benchResult !== undefined`, 3*time.Minute)
	res := eval[map[string]any](p, `window.benchResult`)
	b, _ := json.MarshalIndent(res, "", "  ")
	artifact(t, "bench.json", b)
	t.Logf("empty %.1f fps, view %.1f fps (%.1f%%), view %.1f ticks/s, engine %.0f simulated packets/s",
		res["empty_fps"], res["view_fps"], 100*res["ratio"].(float64), res["view_tps"], res["engine_sim_pps"])
	screenshot(t, ctx, "bench")
}
