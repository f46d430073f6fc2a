package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"ringlab/internal/chromium"
	"ringlab/server/assets"
)

// The browser cases: the page served from the web directory by the same
// handler as `ringlab serve`, in a headless Chromium with a fresh profile
// (nothing cached) and software WebGL.
const (
	browserW, browserH = 1440, 1000 // a laptop screen, as in browser_test

	// pageLoads fresh loads of index.html give the page-load median.
	pageLoads       = 3
	pageLoadsQuick  = 1
	pageLoadTimeout = 90 * time.Second

	// bench.html's options: seconds per run, runs per mode, warm-up
	// seconds after the engine started. The game updates its counters once
	// a second (slower when a loaded machine slows its ticks), so a run
	// must span a few updates.
	drawSeconds, drawRounds, drawWarmup                = 5, 3, 2
	drawSecondsQuick, drawRoundsQuick, drawWarmupQuick = 3, 1, 1

	// The wasm engine (game.html?bench=engine) is read after the warm-up
	// and again after the measured time.
	wasmEngineWarmup       = 3 * time.Second
	wasmEngineTime         = 10 * time.Second
	wasmEngineWarmupQuick  = 1 * time.Second
	wasmEngineTimeQuick    = 2 * time.Second
	wasmEngineStartTimeout = 90 * time.Second

	// browserStep bounds one DevTools call.
	browserStep = 30 * time.Second
)

// wasmEnginePreset is the preset ?bench=engine runs (wasm/main.go).
const wasmEnginePreset = "xdp-drop"

// pageReadHeaderTimeout bounds a request's headers on the page's file
// server, as `ringlab serve` does.
const pageReadHeaderTimeout = 10 * time.Second

// browserEnv serves the page for the browser cases. When they cannot run,
// skip says why.
type browserEnv struct {
	skip     string
	chromium string
	url      string // http://127.0.0.1:PORT
	srv      *http.Server
	// shared is a browser for the cases that need no fresh profile, started
	// on first use; stopShared closes it.
	shared     context.Context
	stopShared func()
}

// browser starts serving the web directory, once per run.
func (b *benchRun) browser() (*browserEnv, error) {
	return b.browserOnce.get(func() (*browserEnv, error) {
		path := chromium.Path()
		if path == "" {
			return &browserEnv{skip: "not measured: " + chromium.Missing}, nil
		}
		files := os.DirFS(b.web)
		for _, f := range []string{"index.html", assets.WasmGzFile, "wasm_exec.js"} {
			if _, err := fs.Stat(files, f); err != nil {
				return &browserEnv{skip: fmt.Sprintf("not measured: run `make wasm` first (no %s)", filepath.Join(b.web, f))}, nil
			}
		}
		h, err := assets.New(files)
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		e := &browserEnv{chromium: path, url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: pageReadHeaderTimeout}}
		go e.srv.Serve(ln)
		return e, nil
	})
}

func (e *browserEnv) close() {
	e.closeBrowser()
	if e.srv != nil {
		e.srv.Close()
	}
}

// closeBrowser closes the shared browser; the next tab starts another.
func (e *browserEnv) closeBrowser() {
	if e.stopShared != nil {
		e.stopShared()
		e.shared, e.stopShared = nil, nil
	}
}

// tab opens a tab in the shared browser; closeTab closes it.
func (e *browserEnv) tab() (tab context.Context, closeTab func(), err error) {
	if e.shared == nil {
		if e.shared, e.stopShared, err = e.launch(); err != nil {
			return nil, nil, err
		}
	}
	tab, cancel := chromedp.NewContext(e.shared)
	if err := chromedp.Do(tab); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("opening a tab: %w", err)
	}
	return tab, cancel, nil
}

// launch starts a Chromium with a fresh profile and returns a tab; stop
// closes the browser and removes the profile.
func (e *browserEnv) launch() (tab context.Context, stop func(), err error) {
	dir, err := os.MkdirTemp("", "ringlab-bench-chromium-")
	if err != nil {
		return nil, nil, err
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), chromium.Options(e.chromium, dir, browserW, browserH)...)
	tab, cancelT := chromedp.NewContext(actx)
	stop = func() {
		cancelT()
		cancelA()
		os.RemoveAll(dir)
	}
	if err := chromedp.Do(tab); err != nil {
		stop()
		return nil, nil, fmt.Errorf("starting Chromium %s: %w", e.chromium, err)
	}
	return tab, stop, nil
}

// navigate opens path (below the served root) in tab.
func (e *browserEnv) navigate(tab context.Context, path string) error {
	ctx, cancel := context.WithTimeout(tab, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/"+path)); err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	return nil
}

// jsEval evaluates a JavaScript expression in tab into T.
func jsEval[T any](tab context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, browserStep)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// jsWait polls a JavaScript condition until it holds or d has passed.
func jsWait(tab context.Context, cond string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		ok, err := jsEval[bool](tab, cond)
		if err == nil && ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s (last error: %v)", d, cond, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// benchPageLoad loads index.html in fresh browsers and returns the median
// time from navigation to the game's first frame (the page's
// window.ringlab.frameAt), in seconds.
func benchPageLoad(b *benchRun) (float64, string, error) {
	e, err := b.browser()
	if err != nil || e.skip != "" {
		return -1, e.skipNote(), err
	}
	n := pageLoads
	if b.quick {
		n = pageLoadsQuick
	}
	var frames, readies []float64
	for i := range n {
		frame, ready, err := e.loadOnce()
		if err != nil {
			return 0, "", fmt.Errorf("load %d of %d: %w", i+1, n, err)
		}
		b.progress("load %d of %d: engine's first message at %.0f ms, first frame at %.0f ms", i+1, n, ready, frame)
		frames, readies = append(frames, frame), append(readies, ready)
	}
	return median(frames) / 1000, fmt.Sprintf("median of %d loads with a fresh profile: first frame %s ms, engine's first message %s ms after navigation (software WebGL)",
		n, joinMs(frames), joinMs(readies)), nil
}

func (e *browserEnv) skipNote() string {
	if e == nil {
		return ""
	}
	return e.skip
}

// loadOnce opens index.html in a new browser and returns the first frame's
// and the engine's first message's times in ms after navigation.
func (e *browserEnv) loadOnce() (frame, ready float64, err error) {
	tab, stop, err := e.launch()
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	if err := e.navigate(tab, "index.html"); err != nil {
		return 0, 0, err
	}
	if err := jsWait(tab, `window.ringlab !== undefined && window.ringlab.frameAt > 0`, pageLoadTimeout); err != nil {
		return 0, 0, err
	}
	if frame, err = jsEval[float64](tab, `window.ringlab.frameAt`); err != nil {
		return 0, 0, err
	}
	ready, err = jsEval[float64](tab, `window.ringlab.readyAt`)
	return frame, ready, err
}

// drawResult is what bench.html leaves in window.benchResult.
type drawResult struct {
	EmptyFPS float64 `json:"empty_fps"`
	ViewFPS  float64 `json:"view_fps"`
	ViewTPS  float64 `json:"view_tps"`
	Ratio    float64 `json:"ratio"`
}

// benchDrawing runs bench.html (?bench=empty and ?bench=view alternately in
// a frame of the page's size) and returns the view's frame rate as a
// fraction of the empty scene's.
func benchDrawing(b *benchRun) (float64, string, error) {
	e, err := b.browser()
	if err != nil || e.skip != "" {
		return -1, e.skipNote(), err
	}
	secs, rounds, warmup := drawSeconds, drawRounds, drawWarmup
	if b.quick {
		secs, rounds, warmup = drawSecondsQuick, drawRoundsQuick, drawWarmupQuick
	}
	tab, closeTab, err := e.tab()
	if err != nil {
		return 0, "", err
	}
	defer closeTab()
	if err := e.navigate(tab, fmt.Sprintf("bench.html?seconds=%d&rounds=%d&warmup=%d", secs, rounds, warmup)); err != nil {
		return 0, "", err
	}
	b.progress("bench.html: %d rounds of empty and view, %d s each after %d s of warm-up", rounds, secs, warmup)
	// Each run loads the game again (compiling the wasm) before its warm-up.
	wait := time.Duration(2*rounds)*(time.Duration(secs+warmup)*time.Second+pageLoadTimeout) + time.Minute
	if err := jsWait(tab, `window.benchResult !== undefined`, wait); err != nil {
		return 0, "", err
	}
	r, err := jsEval[drawResult](tab, `window.benchResult`)
	if err != nil {
		return 0, "", err
	}
	if !(r.EmptyFPS > 0) || !(r.ViewFPS >= 0) || math.IsInf(r.Ratio, 0) || math.IsNaN(r.Ratio) {
		return 0, "", fmt.Errorf("bench.html measured no frames: %+v", r)
	}
	return r.Ratio, fmt.Sprintf("bench.html, %d x %d s per mode: empty scene %.1f fps, default view %.1f fps and %.1f ticks/s (target 58; software WebGL)",
		rounds, secs, r.EmptyFPS, r.ViewFPS, r.ViewTPS), nil
}

// wasmBench is the part of the game's window.ringlabBench read here
// (wasm/bench.go): cumulative since the benchmark's clock started.
type wasmBench struct {
	Mode      string  `json:"mode"`
	Seconds   float64 `json:"seconds"`
	SimPPS    float64 `json:"sim_pps"`    // packets per wall second
	EnginePPS float64 `json:"engine_pps"` // packets per second spent in the engine
}

// packets and engineSeconds undo the rates.
func (w wasmBench) packets() float64 { return w.SimPPS * w.Seconds }

func (w wasmBench) engineSeconds() float64 {
	if w.EnginePPS <= 0 {
		return 0
	}
	return w.packets() / w.EnginePPS
}

// benchWasmEngine runs game.html?bench=engine (the xdp-drop preset flat
// out in WebAssembly) and returns its rate, packets per second of engine
// time between two readings after a warm-up, as a fraction of the native
// engine's rate on the same preset measured in this run.
func benchWasmEngine(b *benchRun) (float64, string, error) {
	e, err := b.browser()
	if err != nil || e.skip != "" {
		return -1, e.skipNote(), err
	}
	warm, d := wasmEngineWarmup, wasmEngineTime
	if b.quick {
		warm, d = wasmEngineWarmupQuick, wasmEngineTimeQuick
	}
	// The native rate first: measured while the browser runs, it would
	// share the CPUs with it.
	native, nativeNote, err := b.nativeRate(wasmEnginePreset)
	if err != nil {
		return 0, "", err
	}
	tab, closeTab, err := e.tab()
	if err != nil {
		return 0, "", err
	}
	defer closeTab()
	if err := e.navigate(tab, "game.html?bench=engine"); err != nil {
		return 0, "", err
	}
	b.progress("game.html?bench=engine: %s of warm-up, then %s", warm, d)
	started := fmt.Sprintf(`window.ringlabBench !== undefined && window.ringlabBench.mode === "engine" && window.ringlabBench.seconds >= %g`, warm.Seconds())
	if err := jsWait(tab, started, wasmEngineStartTimeout); err != nil {
		return 0, "", err
	}
	w0, err := jsEval[wasmBench](tab, `window.ringlabBench`)
	if err != nil {
		return 0, "", err
	}
	if err := jsWait(tab, fmt.Sprintf(`window.ringlabBench.seconds >= %g`, w0.Seconds+d.Seconds()), d+browserStep); err != nil {
		return 0, "", err
	}
	w1, err := jsEval[wasmBench](tab, `window.ringlabBench`)
	if err != nil {
		return 0, "", err
	}
	pk, eng, wall := w1.packets()-w0.packets(), w1.engineSeconds()-w0.engineSeconds(), w1.Seconds-w0.Seconds
	if !(pk > 0) || !(eng > 0) {
		return 0, "", fmt.Errorf("the wasm engine ran no packets: %+v then %+v", w0, w1)
	}
	wasmRate := pk / eng / 1e6
	return wasmRate / native, fmt.Sprintf("%s: WebAssembly %.2f Mpps of engine time (%.2f per wall second, over %.1f s), native %.2f Mpps (%s)",
		wasmEnginePreset, wasmRate, pk/wall/1e6, wall, native, nativeNote), nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinMs(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}
