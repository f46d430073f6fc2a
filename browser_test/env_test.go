// Package browsertest drives the playground (web/) in a real Chromium with
// chromedp: the page, the game in its iframe, and the postMessage protocol
// between them. The tests build main.wasm themselves into a temporary
// directory, so they work from a fresh clone; they skip without Chromium
// (fail with RINGLAB_CI=1). Screenshots go to test-artifacts/.
// The test browsers run the wasm unoptimised (allocatorOptions), the
// measurements a user's browser. TestLoadPhases (RINGLAB_LOADS=N)
// measures the page's start phase by phase, next to an empty Ebitengine
// program (testdata/emptygame); TestLoadCPU, where its CPU goes.
// The classroom tests (workshop_test.go, classroom_test.go) open as pages
// the instructor and the students whose page they look at; the rest of a
// class are go students (gostudent_test.go): the same game, a
// play.Controller, with a socket doing what web/workshop.js does, and no
// canvas.
package browsertest

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"ringlab/internal/chromium"
	"ringlab/internal/testenv"
	"ringlab/internal/wasmbuild"
	"ringlab/server/httpsec"
)

// Window size of the browser: a laptop screen.
const (
	windowW = 1440
	windowH = 1000
)

// repoRoot is the module root (this file's directory's parent).
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Dir(filepath.Dir(file))
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// wasmBuild builds main.wasm, its gzipped copy and wasm_exec.js into a
// directory shared by the tests of this run.
func wasmBuild(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ringlab-wasm-")
		if err != nil {
			buildErr = err
			return
		}
		buildErr = wasmbuild.Build(repoRoot(t), dir)
		buildDir = dir
	})
	require.NoError(t, buildErr)
	return buildDir
}

// server serves web/ as static files, with main.wasm and wasm_exec.js from
// the fresh build; main.wasm goes gzipped, as `ringlab serve` sends it.
func server(t testing.TB) *httptest.Server {
	t.Helper()
	return serverWith(t, nil)
}

// serverWith is server with more handlers (added before the files).
func serverWith(t testing.TB, more func(*http.ServeMux)) *httptest.Server {
	t.Helper()
	return serveWasm(t, wasmBuild(t), more)
}

// serveWasm is serverWith with main.wasm and wasm_exec.js from the build
// directory build (wasmbuild's layout).
func serveWasm(t testing.TB, build string, more func(*http.ServeMux)) *httptest.Server {
	t.Helper()
	web := http.FileServer(http.Dir(filepath.Join(repoRoot(t), "web")))
	mux := http.NewServeMux()
	mux.HandleFunc("/main.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			http.ServeFile(w, r, filepath.Join(build, "main.wasm.gz"))
			return
		}
		http.ServeFile(w, r, filepath.Join(build, "main.wasm"))
	})
	mux.HandleFunc("/wasm_exec.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(build, "wasm_exec.js"))
	})
	if more != nil {
		more(mux)
	}
	mux.Handle("/", web)
	// The hardening headers of `ringlab serve`, its Content-Security-Policy
	// first: every browser test runs the page, the game's frame and the
	// wasm under it (a violation is a console error).
	hosts, err := httpsec.NewHostPolicy(nil)
	require.NoError(t, err)
	ts := httptest.NewServer(httpsec.Handler(mux, hosts))
	t.Cleanup(ts.Close)
	return ts
}

// allocatorOptions are the Chromium flags of the test browsers, with a
// fresh profile in dir: a user's browser's (chromium.Options), except that
// V8 runs the wasm with its baseline compiler (Liftoff) alone. A user's
// browser recompiles the functions that run often with its optimising
// compiler (TurboFan), in the background: that pays over a session, but
// it cost a test's page load 2.5 s of CPU of some 6.5 (TestLoadCPU), and
// a test's page lives seconds. The code runs the same, slower: the tests
// wait on conditions, never on how fast the engine goes. The measurements
// (TestLoadPhases, TestLoadCPU, TestBenchDrawingCost) run a user's
// browser: userOptions.
func allocatorOptions(path, dir string) []chromedp.ExecAllocatorOption {
	return append(userOptions(path, dir), chromedp.Flag("js-flags", "--liftoff-only"))
}

// userOptions are the flags of a user's headless Chromium (software
// WebGL), with a fresh profile in dir: the measurements' browser.
func userOptions(path, dir string) []chromedp.ExecAllocatorOption {
	return chromium.Options(path, dir, windowW, windowH)
}

// freshBrowser starts a Chromium of its own with an empty profile (no
// cached wasm) and returns a tab; the test's end closes it.
func freshBrowser(t testing.TB) context.Context {
	t.Helper()
	return startBrowser(t, allocatorOptions)
}

// userBrowser is freshBrowser with a user's flags (userOptions): for the
// measurements of the page's speed.
func userBrowser(t testing.TB) context.Context {
	t.Helper()
	return startBrowser(t, userOptions)
}

// startBrowser starts a Chromium of its own with the flags opts gives for
// an empty profile, and returns a tab; the test's end closes it.
func startBrowser(t testing.TB, opts func(path, dir string) []chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := testenv.RequireChromium(t)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts(path, t.TempDir())...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	require.NoError(t, chromedp.Do(ctx), "start Chromium")
	return ctx
}

var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	dir    string
	err    error
}

// browser returns a new tab of the Chromium the package's tests share
// (started on first use, closed by TestMain).
func browser(t testing.TB) context.Context {
	t.Helper()
	path := testenv.RequireChromium(t)
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "ringlab-chromium-")
		if shared.err != nil {
			return
		}
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), allocatorOptions(path, shared.dir)...)
		ctx, cancelB := chromedp.NewContext(actx)
		shared.ctx = ctx
		shared.cancel = func() { cancelB(); cancelA(); os.RemoveAll(shared.dir) }
		shared.err = chromedp.Do(ctx)
	})
	require.NoError(t, shared.err, "start Chromium")
	tab, cancel := chromedp.NewContext(shared.ctx)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(tab), "open a tab")
	return tab
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// go test -short is the quick pass (README.md, Testing):
		// minutes of Chromium are make test's.
		fmt.Println("browser_test: skipped under -short (make test runs it)")
		os.Exit(0)
	}
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// timeout bounds one step of a test.
func timeout(t testing.TB, ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return c
}

// artifact writes b to test-artifacts/name.
func artifact(t testing.TB, name string, b []byte) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "test-artifacts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	t.Logf("wrote %s", p)
	return p
}

// screenshot saves the whole viewport as test-artifacts/name.png.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(timeout(t, ctx, minPatience), chromedp.CaptureScreenshot())
	require.NoError(t, err)
	artifact(t, name+".png", b)
}
