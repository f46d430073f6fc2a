package browsertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/internal/wasmbuild"
)

// The start of the page, phase by phase. Every time is in ms after the
// page's navigation start: the game's own marks (window.ringlabLoad in
// game.html, set by game.html and by the wasm's mark) are moved to the
// page's clock, and the fetch of main.wasm comes from the frame's
// Resource Timing entry.
var loadPhases = []struct{ key, what string }{
	{"page", "index.html parsed (DOMContentLoaded)"},
	{"game", "game.html navigation start"},
	{"fetch", "main.wasm fetch start"},
	{"firstbyte", "main.wasm first byte"},
	{"fetched", "main.wasm last byte"},
	{"compiled", "WebAssembly compiled"},
	{"instantiated", "instantiated; go.run"},
	{"main", "Go main (runtime and package init done)"},
	{"session", "engine world built"},
	{"rungame", "ebiten.RunGame called"},
	{"update", "first Update"},
	{"frame", "first frame presented (ringlab.frameAt)"},
	{"ready", "the page has the engine's first message (ringlab.readyAt)"},
}

// loadTimesJS reads the phases in the page (see loadPhases).
const loadTimesJS = `(() => {
	const o = performance.timeOrigin, out = {};
	const nav = performance.getEntriesByType("navigation")[0];
	if (nav) out.page = nav.domContentLoadedEventEnd;
	const w = document.getElementById("game").contentWindow;
	const go = w.performance.timeOrigin - o;
	out.game = go;
	// main.wasm is fetched by the game's frame (or, in a build being
	// compared, by the page).
	const wasm = (p) => p.getEntriesByType("resource").filter((e) => e.name.endsWith("/main.wasm"))[0];
	let r = wasm(w.performance), base = go;
	if (!r) [r, base] = [wasm(performance), 0];
	if (r) {
		out.fetch = base + r.fetchStart;
		out.firstbyte = base + r.responseStart;
		out.fetched = base + r.responseEnd;
		out.transfer = r.transferSize;
		out.decoded = r.decodedBodySize;
	}
	for (const [k, v] of Object.entries(w.ringlabLoad || {})) if (k !== "start") out[k] = v - o;
	out.frame = window.ringlab.frameAt;
	out.ready = window.ringlab.readyAt;
	return out;
})()`

// measureLoad navigates the tab to url, waits for the game's first frame
// and returns the phases (ms after navigation start; 0: not reached or
// not marked).
func measureLoad(t testing.TB, ctx context.Context, url string) map[string]float64 {
	t.Helper()
	require.NoError(t, chromedp.Do(timeout(t, ctx, 60*time.Second), chromedp.Navigate(url)))
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, err := chromedp.Run(timeout(t, ctx, 10*time.Second), chromedp.Evaluate[bool](`!!(window.ringlab && window.ringlab.frameAt > 0)`))
		if err == nil && ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "no first frame in 90 s (last error %v)", err)
		time.Sleep(20 * time.Millisecond)
	}
	v, err := chromedp.Run(timeout(t, ctx, 10*time.Second), chromedp.Evaluate[map[string]float64](loadTimesJS))
	require.NoError(t, err)
	return v
}

// formatLoad is one line of phases (those present), in start order.
func formatLoad(v map[string]float64) string {
	var parts []string
	for _, p := range loadPhases {
		if ms, ok := v[p.key]; ok && ms > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", p.key, ms))
		}
	}
	return strings.Join(parts, ", ") + " ms"
}

// TestLoadPhases measures the page's start in fresh browsers (an empty
// profile each, so no cached wasm code) and, in the same browser, a
// repeat load; it prints the median of each phase. It measures rather than
// checks and takes a while, so it runs only with RINGLAB_LOADS=N (N loads
// of each kind).
//
// Next to the page with the engine it loads the page with an empty
// Ebitengine program in place of the engine (testdata/emptygame): the part
// of the start that Ebitengine and the browser take whatever the game.
//
// RINGLAB_LOAD_DIRS=name=DIR,name=DIR compares builds instead: each DIR is a web directory with main.wasm, main.wasm.gz and
// wasm_exec.js (as `make wasm` leaves it), and the loads of the builds are
// interleaved so that the machine's load falls on all alike.
func TestLoadPhases(t *testing.T) {
	n := loadsWanted(t)
	path := testenv.RequireChromium(t)
	builds := loadBuilds(t, func() []loadBuild {
		dir := t.TempDir()
		require.NoError(t, wasmbuild.BuildPackage(repoRoot(t), "./browser_test/testdata/emptygame", dir))
		return []loadBuild{{"ringlab", server(t).URL}, {"empty", serveWasm(t, dir, nil).URL}}
	})
	type key struct{ build, kind string }
	runs := map[key][]map[string]float64{}
	for i := range n {
		for _, b := range builds {
			actx, cancel := chromedp.NewExecAllocator(context.Background(), userOptions(path, t.TempDir())...)
			ctx, cancel2 := chromedp.NewContext(actx)
			require.NoError(t, chromedp.Do(ctx), "start Chromium")
			for _, kind := range []string{"fresh", "repeat"} {
				v := measureLoad(t, ctx, b.url+"/index.html")
				t.Logf("%d %s %s: %s", i+1, b.name, kind, formatLoad(v))
				runs[key{b.name, kind}] = append(runs[key{b.name, kind}], v)
			}
			cancel2()
			cancel()
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "median of %d loads, ms after navigation start\n%-58s", n, "phase")
	for _, b := range builds {
		for _, kind := range []string{"fresh", "repeat"} {
			fmt.Fprintf(&sb, " %16s", trim(b.name, 9)+" "+kind)
		}
	}
	sb.WriteString("\n")
	for _, p := range loadPhases {
		fmt.Fprintf(&sb, "%-58s", p.key+": "+p.what)
		for _, b := range builds {
			for _, kind := range []string{"fresh", "repeat"} {
				fmt.Fprintf(&sb, " %16s", median(runs[key{b.name, kind}], p.key))
			}
		}
		sb.WriteString("\n")
	}
	t.Log("\n" + sb.String())
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// median is the median of the phase over the runs that reached it, "-"
// when none did.
func median(runs []map[string]float64, phase string) string {
	var xs []float64
	for _, r := range runs {
		if v, ok := r[phase]; ok && v > 0 {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return "-"
	}
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return fmt.Sprintf("%.0f", m)
}

// serveBuild serves a built web directory as `ringlab serve` does:
// main.wasm from main.wasm.gz, gzipped, as application/wasm.
func serveBuild(t testing.TB, dir string) *httptest.Server {
	t.Helper()
	gz := filepath.Join(dir, "main.wasm.gz")
	_, err := os.Stat(gz)
	require.NoError(t, err, "%s is not a built web directory", dir)
	files := http.FileServer(http.Dir(dir))
	mux := http.NewServeMux()
	mux.HandleFunc("/main.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		w.Header().Set("Content-Encoding", "gzip")
		http.ServeFile(w, r, gz)
	})
	mux.Handle("/", files)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// loadsWanted is RINGLAB_LOADS, how many loads a measurement of the
// page's start makes; without it the measurement skips.
func loadsWanted(t *testing.T) int {
	t.Helper()
	n, _ := strconv.Atoi(os.Getenv("RINGLAB_LOADS"))
	if n <= 0 {
		t.Skip("set RINGLAB_LOADS=N to measure N loads of the page")
	}
	return n
}

// loadBuild is a build of the page a load measurement opens: its name
// and the address serving it.
type loadBuild struct{ name, url string }

// loadBuilds are the builds RINGLAB_LOAD_DIRS names (name=DIR,...: each
// a directory as wasmbuild leaves it), or what defaults serves.
func loadBuilds(t *testing.T, defaults func() []loadBuild) []loadBuild {
	t.Helper()
	dirs := os.Getenv("RINGLAB_LOAD_DIRS")
	if dirs == "" {
		return defaults()
	}
	var builds []loadBuild
	for _, spec := range strings.Split(dirs, ",") {
		name, dir, ok := strings.Cut(spec, "=")
		require.True(t, ok, "RINGLAB_LOAD_DIRS: %q is not name=DIR", spec)
		builds = append(builds, loadBuild{name, serveBuild(t, dir).URL})
	}
	return builds
}
