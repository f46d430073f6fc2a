// Package assets serves the page's static files from an fs.FS: main.wasm
// from its gzipped copy (decompressed once, for the clients that refuse
// gzip), no directory listings, nothing outside the files, and a page
// that says how to build the wasm when it is missing.
package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// WasmPath is the URL path of the engine; it is served from WasmGzFile.
	WasmPath = "/main.wasm"
	// WasmGzFile is the gzipped engine `make wasm` writes next to index.html.
	WasmGzFile = "main.wasm.gz"
	// wasmType is the media type browsers need for streaming compilation.
	wasmType = "application/wasm"
)

// Handler serves the files. It holds the gzipped wasm in memory (about
// 4 MB) so that serving it costs no decompression, and the decompressed
// wasm (about 16 MB) once a client that refuses gzip has asked for it:
// decompressed once, not per request.
type Handler struct {
	files    fs.FS
	wasmGz   []byte // nil when the wasm is not built
	wasmETag string

	rawOnce sync.Once
	wasmRaw []byte // main.wasm, made by the first request that needs it
	rawErr  error
}

// New returns a Handler for files. A main.wasm.gz that is present must be
// a gzip stream.
func New(files fs.FS) (*Handler, error) {
	h := &Handler{files: files}
	gz, err := fs.ReadFile(files, WasmGzFile)
	switch {
	case err == nil:
		if _, err := gzip.NewReader(bytes.NewReader(gz)); err != nil {
			return nil, fmt.Errorf("assets: %s: %w", WasmGzFile, err)
		}
		sum := sha256.Sum256(gz)
		h.wasmGz, h.wasmETag = gz, `"`+hex.EncodeToString(sum[:12])+`"`
	case !isNotExist(err):
		return nil, fmt.Errorf("assets: reading %s: %w", WasmGzFile, err)
	}
	return h, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// WasmBuilt reports whether main.wasm can be served.
func (h *Handler) WasmBuilt() bool { return h.wasmGz != nil }

// ServeHTTP serves GET and HEAD.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	p := path.Clean("/" + r.URL.Path) // "..": cleaned away against the root
	switch {
	case p == WasmPath:
		h.serveWasm(w, r)
	case p == "/" && !h.WasmBuilt():
		serveNotBuilt(w, r, http.StatusOK)
	default:
		h.serveFile(w, r, strings.TrimPrefix(p, "/"))
	}
}

// hidden reports whether a file must not be served: dot files and the Go
// source of the embedding package.
func hidden(name string) bool {
	for _, elem := range strings.Split(name, "/") {
		if strings.HasPrefix(elem, ".") {
			return true
		}
	}
	return strings.HasSuffix(name, ".go")
}

// serveFile serves one file; a directory is served by its index.html or
// not at all.
func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" {
		name = "index.html"
	}
	if hidden(name) || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	st, err := fs.Stat(h.files, name)
	if err == nil && st.IsDir() {
		name = path.Join(name, "index.html")
		st, err = fs.Stat(h.files, name)
	}
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	f, err := h.files.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok { // embed.FS and os.DirFS files seek; others are read whole
		b, err := io.ReadAll(f)
		if err != nil {
			http.Error(w, "reading "+name, http.StatusInternalServerError)
			return
		}
		rs = bytes.NewReader(b)
	}
	http.ServeContent(w, r, name, st.ModTime(), rs)
}

// serveWasm serves main.wasm from its gzipped copy: as is to a client that
// accepts gzip (with Content-Encoding: gzip), decompressed to one that does
// not.
func (h *Handler) serveWasm(w http.ResponseWriter, r *http.Request) {
	if !h.WasmBuilt() {
		serveNotBuilt(w, r, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", wasmType)
	w.Header().Set("Vary", "Accept-Encoding")
	w.Header().Set("Cache-Control", "no-cache") // revalidate: a rebuilt binary serves a new engine
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("ETag", h.wasmETag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(h.wasmGz))
		return
	}
	raw, err := h.raw()
	if err != nil {
		http.Error(w, "main.wasm.gz: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("ETag", strings.TrimSuffix(h.wasmETag, `"`)+`-identity"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(raw))
}

// raw returns main.wasm decompressed, decompressing it on the first call.
func (h *Handler) raw() ([]byte, error) {
	h.rawOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(h.wasmGz))
		if err != nil { // checked by New
			h.rawErr = err
			return
		}
		h.wasmRaw, h.rawErr = io.ReadAll(zr)
	})
	return h.wasmRaw, h.rawErr
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip with a
// non-zero quality: by name, or else by "*".
func acceptsGzip(header string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(part, ";")
		q := 1.0
		if k, v, ok := strings.Cut(params, "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "gzip", "x-gzip":
			gzipQ = q
		case "*":
			starQ = q
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}

// notBuiltPage is what the server shows instead of the playground when the
// binary was built before `make wasm`.
const notBuiltPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>ringlab: engine not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>ringlab: the browser engine is not built</h1>
<p>This server was built without <code>web/main.wasm.gz</code>, the engine the page runs.
The page is embedded into the binary, so build the engine and then the binary:</p>
<pre>make wasm
make build
bin/ringlab serve</pre>
<p>or simply <code>make run</code>, which does all three.</p>
<p>Live metrics (<code>/ws/metrics</code>), workshop rooms (<code>/api/rooms</code>) and
<a href="/metrics">/metrics</a> work without it; <a href="/index.html">index.html</a> is the page without its engine.</p>
</body>
</html>
`

func serveNotBuilt(w http.ResponseWriter, r *http.Request, status int) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		io.WriteString(w, notBuiltPage)
	}
}
