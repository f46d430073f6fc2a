package assets

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeWasm stands in for the 12 MB engine: the wasm magic and some bytes.
var fakeWasm = append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte("engine "), 1000)...)

// tempWeb writes a web directory into a temp dir whose parent holds a
// go.mod that must never be served, and returns the web dir.
func tempWeb(t *testing.T, withWasm bool) string {
	root := t.TempDir()
	web := filepath.Join(root, "web")
	files := map[string]string{
		"go.mod":               "module secret\n", // outside web/
		"web/index.html":       "<!doctype html><title>ringlab</title>",
		"web/app.js":           "console.log('hi')",
		"web/style.css":        "body{}",
		"web/embed.go":         "package web",
		"web/.hidden":          "secret",
		"web/sub/index.html":   "<p>sub</p>",
		"web/emptydir/a.txt":   "a",
		"web/emptydir/b/c.txt": "c",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	if withWasm {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(fakeWasm)
		require.NoError(t, zw.Close())
		require.NoError(t, os.WriteFile(filepath.Join(web, WasmGzFile), buf.Bytes(), 0o644))
	}
	return web
}

func newHandler(t *testing.T, withWasm bool) *Handler {
	h, err := New(os.DirFS(tempWeb(t, withWasm)))
	require.NoError(t, err)
	return h
}

func get(h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:8080/", nil)
	r.URL.Path = target // as the server decoded it, "%2e%2e" already ".."
	r.URL.RawPath = ""
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestStaticFiles(t *testing.T) {
	h := newHandler(t, true)
	tests := []struct {
		name    string
		path    string
		status  int
		ctype   string
		bodyHas string
		bodyNot string
	}{
		{"root is index.html", "/", 200, "text/html; charset=utf-8", "<title>ringlab</title>", ""},
		{"index.html without a redirect", "/index.html", 200, "text/html; charset=utf-8", "<title>ringlab</title>", ""},
		{"javascript", "/app.js", 200, "text/javascript; charset=utf-8", "console.log", ""},
		{"css", "/style.css", 200, "text/css; charset=utf-8", "body{}", ""},
		{"directory with an index", "/sub/", 200, "text/html; charset=utf-8", "<p>sub</p>", ""},
		{"directory without a slash", "/sub", 200, "text/html; charset=utf-8", "<p>sub</p>", ""},
		{"no directory listing", "/emptydir/", 404, "", "", "a.txt"},
		{"Go source hidden", "/embed.go", 404, "", "", "package web"},
		{"dot file hidden", "/.hidden", 404, "", "", "secret"},
		{"missing file", "/nope.js", 404, "", "", ""},
		{"parent of the root", "/../go.mod", 404, "", "", "module secret"},
		{"parent twice", "/sub/../../go.mod", 404, "", "", "module secret"},
		{"decoded %2e%2e", "/../", 200, "text/html; charset=utf-8", "<title>ringlab</title>", "module secret"},
		{"encoded slash decoded", "/..\\go.mod", 404, "", "", "module secret"},
		{"absolute path", "//etc/passwd", 404, "", "", "root:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := get(h, "GET", tc.path, nil)
			assert.Equal(t, tc.status, w.Code)
			if tc.ctype != "" {
				assert.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
			}
			if tc.bodyHas != "" {
				assert.Contains(t, w.Body.String(), tc.bodyHas)
			}
			if tc.bodyNot != "" {
				assert.NotContains(t, w.Body.String(), tc.bodyNot)
			}
			assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
		})
	}
	assert.Equal(t, http.StatusMethodNotAllowed, get(h, "POST", "/index.html", nil).Code)
}

// TestTraversalOverTheWire sends the raw request lines a browser never
// would, through a real server.
func TestTraversalOverTheWire(t *testing.T) {
	srv := httptest.NewServer(newHandler(t, true))
	defer srv.Close()
	for _, target := range []string{"/../go.mod", "/%2e%2e/go.mod", "/%2e%2e%2fgo.mod", "/sub/%2e%2e/%2e%2e/go.mod", "/..%5cgo.mod"} {
		t.Run(target, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+"/", nil)
			require.NoError(t, err)
			req.URL.Opaque = target // sent verbatim
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.NotContains(t, string(body), "module secret")
			assert.Contains(t, []int{http.StatusNotFound, http.StatusOK, http.StatusBadRequest}, resp.StatusCode)
			if resp.StatusCode == http.StatusOK {
				assert.Contains(t, string(body), "<title>ringlab</title>", "cleaned to the root: the index")
			}
		})
	}
}

func TestWasmServedGzipped(t *testing.T) {
	h := newHandler(t, true)
	require.True(t, h.WasmBuilt())

	w := get(h, "GET", WasmPath, http.Header{"Accept-Encoding": {"gzip, deflate, br"}})
	require.Equal(t, 200, w.Code)
	assert.Equal(t, "application/wasm", w.Header().Get("Content-Type"))
	assert.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
	assert.Equal(t, "Accept-Encoding", w.Header().Get("Vary"))
	assert.Equal(t, h.wasmETag, w.Header().Get("ETag"))
	assert.Equal(t, len(h.wasmGz), w.Body.Len())
	zr, err := gzip.NewReader(w.Body)
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, fakeWasm, raw)

	w = get(h, "GET", WasmPath, http.Header{"Accept-Encoding": {"gzip"}, "If-None-Match": {h.wasmETag}})
	assert.Equal(t, http.StatusNotModified, w.Code)

	for _, ae := range []string{"", "identity", "gzip;q=0", "br", "*;q=0"} {
		w = get(h, "GET", WasmPath, http.Header{"Accept-Encoding": {ae}})
		require.Equal(t, 200, w.Code, ae)
		assert.Empty(t, w.Header().Get("Content-Encoding"), ae)
		assert.Equal(t, "application/wasm", w.Header().Get("Content-Type"), ae)
		assert.Equal(t, fakeWasm, w.Body.Bytes(), "decompressed for %q", ae)
	}

	w = get(h, "HEAD", WasmPath, http.Header{"Accept-Encoding": {"gzip"}})
	assert.Equal(t, 200, w.Code)
	assert.Zero(t, w.Body.Len())
}

func TestWasmNotBuilt(t *testing.T) {
	h := newHandler(t, false)
	require.False(t, h.WasmBuilt())
	w := get(h, "GET", "/", nil)
	assert.Equal(t, 200, w.Code)
	assert.Contains(t, w.Body.String(), "make wasm")
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))

	w = get(h, "GET", WasmPath, http.Header{"Accept-Encoding": {"gzip"}})
	assert.Equal(t, 404, w.Code)
	assert.Contains(t, w.Body.String(), "make wasm")

	w = get(h, "GET", "/index.html", nil)
	assert.Equal(t, 200, w.Code, "the page itself is still there")
	assert.Contains(t, w.Body.String(), "<title>ringlab</title>")
}

func TestBrokenWasmIsAnError(t *testing.T) {
	web := tempWeb(t, false)
	require.NoError(t, os.WriteFile(filepath.Join(web, WasmGzFile), []byte("not gzip"), 0o644))
	_, err := New(os.DirFS(web))
	require.Error(t, err)
	assert.Contains(t, err.Error(), WasmGzFile)
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                    false,
		"gzip":                true,
		"GZIP":                true,
		"deflate, gzip;q=1.0": true,
		"gzip;q=0":            false,
		"gzip; q=0.000":       false,
		"gzip;q=0.5":          true,
		"*":                   true,
		"*;q=0":               false,
		"gzip;q=0, *":         false,
		"br, identity":        false,
		"x-gzip":              true,
	} {
		assert.Equal(t, want, acceptsGzip(header), "%q", header)
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// TestWasmDecompressedOnce: a client that refuses gzip gets main.wasm from
// a copy decompressed once, so a request costs sending the bytes, not
// decompressing them again (73 ms of CPU per request for the real engine).
func TestWasmDecompressedOnce(t *testing.T) {
	web := tempWeb(t, false)
	// 2 MB that compress about as well as wasm does (to a quarter).
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 2<<20)
	for i := range raw {
		raw[i] = "\x00asm engine"[rng.IntN(11)]
	}
	copy(raw, "\x00asm")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(web, WasmGzFile), buf.Bytes(), 0o644))
	h, err := New(os.DirFS(web))
	require.NoError(t, err)

	start := time.Now()
	zr, err := gzip.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, zr)
	require.NoError(t, err)
	require.Equal(t, int64(len(raw)), n)
	once := time.Since(start)

	serve := func() {
		r := httptest.NewRequest("GET", WasmPath, nil)
		r.Header.Set("Accept-Encoding", "identity")
		h.ServeHTTP(&discard{h: http.Header{}}, r)
	}
	serve() // the first decompresses
	const reqs = 10
	start = time.Now()
	for range reqs {
		serve()
	}
	per := time.Since(start) / reqs
	t.Logf("decompressing: %v; a request after the first: %v", once, per)
	assert.Less(t, per, once/4, "a request does not decompress the engine again")

	w := get(h, "GET", WasmPath, http.Header{"Accept-Encoding": {"identity"}, "Range": {"bytes=0-3"}})
	assert.Equal(t, http.StatusPartialContent, w.Code, "ranges work on the decompressed copy")
	assert.Equal(t, "\x00asm", w.Body.String())
	assert.NotEqual(t, h.wasmETag, w.Header().Get("ETag"), "another encoding, another ETag")
}
