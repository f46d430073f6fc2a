package abuse

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDNSRebinding: a page of evil.example whose name now resolves to the
// server's address sends requests with Host: evil.example and its own
// origin; they must not create rooms or open sockets. An origin of the
// right host with another scheme is refused too.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	evil := map[string]string{"Host": "evil.example", "Origin": "http://evil.example"}
	code, body := s.post("/api/rooms", "", evil)
	figure(t, "POST /api/rooms with Host: evil.example", float64(code), "HTTP status", strings.TrimSpace(string(body)))
	assert.NotEqual(t, http.StatusCreated, code, "no room for a rebound name")
	if code == http.StatusCreated {
		assert.NotContains(t, string(body), "evil.example", "and at least no join link to the attacker")
	}

	for _, path := range []string{"/ws/metrics"} {
		h := http.Header{"Origin": {"http://evil.example"}}
		req := "ws://" + s.addr + path
		code := upgradeStatus(t, req, "evil.example", h)
		figure(t, "upgrade of "+path+" with Host: evil.example", float64(code), "HTTP status", "")
		assert.NotEqual(t, http.StatusSwitchingProtocols, code)
	}
	resp := get(t, s, "/", map[string]string{"Host": "evil.example"})
	figure(t, "GET / with Host: evil.example", float64(resp.StatusCode), "HTTP status", "")
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "the page is not served under a rebound name")

	// Same host, other scheme.
	code = upgradeStatus(t, "ws://"+s.addr+"/ws/metrics", s.addr, http.Header{"Origin": {"https://" + s.addr}})
	figure(t, "upgrade with Origin https:// on an http server", float64(code), "HTTP status", "")
	assert.Equal(t, http.StatusForbidden, code)
	// The server's own origin still works, by name and by address.
	for _, host := range []string{s.addr, strings.Replace(s.addr, "127.0.0.1", "localhost", 1)} {
		code = upgradeStatus(t, "ws://"+s.addr+"/ws/metrics", host, http.Header{"Origin": {"http://" + host}})
		assert.Equal(t, http.StatusSwitchingProtocols, code, host)
	}
}

// upgradeStatus sends a WebSocket upgrade with Host host and returns the
// status of the answer.
func upgradeStatus(t *testing.T, url, host string, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest("GET", strings.Replace(url, "ws://", "http://", 1), nil)
	require.NoError(t, err)
	req.Host = host
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func get(t *testing.T, s *server, path string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", s.base+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestSecurityHeaders: every response carries the page's hardening
// headers, errors and API answers included.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	want := []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy"}
	responses := map[string]*http.Response{}
	for _, p := range []string{"/", "/index.html", "/game.html", "/app.js", "/main.wasm", "/healthz", "/metrics", "/nope", "/ws/room/0000000000000000"} {
		responses["GET "+p] = get(t, s, p, map[string]string{"Accept-Encoding": "gzip"})
	}
	req, _ := http.NewRequest("POST", s.base+"/api/rooms", strings.NewReader("{"))
	resp, err := http.DefaultTransport.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	responses["POST /api/rooms (bad JSON)"] = resp
	missing := 0
	for what, resp := range responses {
		for _, h := range want {
			if resp.Header.Get(h) == "" {
				missing++
				t.Errorf("%s: no %s", what, h)
			}
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != "" {
			assert.Contains(t, csp, "frame-ancestors", what)
		}
	}
	figure(t, "hardening headers missing", float64(missing), fmt.Sprintf("of %d", len(want)*len(responses)), "")
}

// TestWasmWithoutGzip: clients that refuse gzip, four loops of them;
// each request must not cost the server a decompression.
func TestWasmWithoutGzip(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	fetch := func() int64 {
		req, _ := http.NewRequest("GET", s.base+"/main.wasm", nil)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		n, _ := io.Copy(io.Discard, resp.Body)
		return n
	}
	size := fetch() // the first may do what is done once
	require.Greater(t, size, int64(1<<20), "the engine is served")
	n := scale(40, 200)
	before := s.cpu()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := 0; i < n/4; i++ {
				fetch()
			}
		})
	}
	wg.Wait()
	per := (s.cpu() - before) / time.Duration(n)
	figure(t, "server CPU per /main.wasm without gzip", float64(per.Microseconds())/1000, "ms", fmt.Sprintf("%d requests of %.1f MB in %v", n, float64(size)/1e6, time.Since(start).Round(time.Millisecond)))
	assert.Less(t, per, 30*time.Millisecond, "sending the bytes, not decompressing them")
}

// TestRefusalLogging: a flood of refused upgrades (a foreign origin) must
// not write one log line each.
func TestRefusalLogging(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	n := scale(300, 3000)
	for i := 0; i < n; i++ {
		upgradeStatus(t, "ws://"+s.addr+"/ws/metrics", s.addr, http.Header{"Origin": {"http://other.example"}})
	}
	time.Sleep(200 * time.Millisecond)
	lines := strings.Count(s.stderr.String(), "refused")
	figure(t, "log lines for refused connections", float64(lines), fmt.Sprintf("for %d refusals", n), "")
	assert.Less(t, lines, 20, "throttled, with a count of what was left out")
}
