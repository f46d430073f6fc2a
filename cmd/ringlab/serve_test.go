package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/assets"
	"ringlab/server/hostsrc"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/web"
)

// served is a serve running in the background on a loopback port.
type served struct {
	base   string // http://127.0.0.1:port
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	opened []*metrics.Fake
}

func startServe(t *testing.T) *served {
	s := &served{done: make(chan error, 1)}
	reg := metrics.Registry{"fake": func(arg string) (metrics.Source, error) {
		src, err := metrics.OpenFake(arg)
		s.mu.Lock()
		s.opened = append(s.opened, src.(*metrics.Fake))
		s.mu.Unlock()
		return src, err
	}}
	cfg := serveConfig{
		addr:     "127.0.0.1:0",
		source:   "fake",
		registry: reg,
		files:    fstest.MapFS{"index.html": {Data: []byte("<title>ringlab</title>")}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	ready := make(chan net.Addr, 1)
	go func() { s.done <- serve(ctx, cfg, func(a net.Addr) { ready <- a }) }()
	select {
	case a := <-ready:
		s.base = "http://" + a.String()
	case err := <-s.done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(serveShutdownTimeout + time.Second):
			t.Error("serve did not return after cancel")
		}
	})
	return s
}

func (s *served) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(s.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func (s *served) dial(t *testing.T, path string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func readJSON(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, data, err := c.ReadMessage()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// readCloseCode reads until the connection ends and returns the close code.
func readCloseCode(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	for {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			return ce.Code
		}
	}
}

func TestServeEndToEnd(t *testing.T) {
	s := startServe(t)

	resp, body := s.get(t, "/healthz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", body)

	resp, body = s.get(t, "/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "make wasm", "no wasm in this file system: the page says how to build it")
	resp, _ = s.get(t, "/main.wasm")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, body = s.get(t, "/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	kicks := families["ringlab_rx_kicks_total"]
	require.NotNil(t, kicks, "the source's counters are exported")
	require.Len(t, kicks.GetMetric(), 2)
	for _, m := range kicks.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		assert.Equal(t, "fake", labels["source"])
		assert.Contains(t, []string{"0", "1"}, labels["queue"])
	}
	assert.NotNil(t, families["go_goroutines"], "the Go runtime's metrics too")

	metricsWS := s.dial(t, "/ws/metrics")
	hello := readJSON(t, metricsWS)
	assert.Equal(t, "hello", hello["type"])
	assert.Equal(t, "fake", hello["source"])
	assert.Equal(t, "snapshot", readJSON(t, metricsWS)["type"])

	resp, err = http.Post(s.base+"/api/rooms", "application/json", nil)
	require.NoError(t, err)
	var created struct {
		Room            string `json:"room"`
		JoinURL         string `json:"join_url"`
		InstructorToken string `json:"instructor_token"`
		Invite          string `json:"invite"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, s.base+"/?room="+created.Room+"&invite="+created.Invite, created.JoinURL)
	roomWS := s.dial(t, "/ws/room/"+created.Room+"?invite="+created.Invite)
	require.NoError(t, roomWS.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"student"}`)))
	assert.Equal(t, "welcome", readJSON(t, roomWS)["type"])

	// SIGTERM's equivalent: both WebSockets get 1001, serve returns, the
	// source is closed and the port is released.
	s.cancel()
	assert.Equal(t, websocket.CloseGoingAway, readCloseCode(t, metricsWS))
	assert.Equal(t, websocket.CloseGoingAway, readCloseCode(t, roomWS))
	select {
	case err := <-s.done:
		require.NoError(t, err)
	case <-time.After(serveShutdownTimeout + time.Second):
		t.Fatal("serve did not return")
	}
	s.done <- nil // for the cleanup
	s.mu.Lock()
	require.Len(t, s.opened, 1)
	assert.True(t, s.opened[0].Closed(), "the source is closed on shutdown")
	s.mu.Unlock()
	_, err = net.DialTimeout("tcp", strings.TrimPrefix(s.base, "http://"), time.Second)
	assert.Error(t, err, "nothing listens any more")
}

func TestServeTraversalOverTheWire(t *testing.T) {
	s := startServe(t)
	for _, target := range []string{"/../go.mod", "/%2e%2e/go.mod", "/%2e%2e%2fserver%2fmain.go", "/..%2f..%2fgo.mod"} {
		req, err := http.NewRequest("GET", s.base+"/", nil)
		require.NoError(t, err)
		req.URL.Opaque = target
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.NotContains(t, string(b), "module ringlab", target)
		assert.NotContains(t, string(b), "package main", target)
	}
}

func TestServeFailsClearly(t *testing.T) {
	reg := metrics.Registry{"fake": metrics.OpenFake}
	base := serveConfig{addr: "127.0.0.1:0", source: "fake", registry: reg, files: fstest.MapFS{}}

	cfg := base
	cfg.source = "sim"
	err := serve(context.Background(), cfg, nil)
	require.ErrorIs(t, err, metrics.ErrUnknownKind)
	assert.Contains(t, err.Error(), "registered: fake")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg = base
	cfg.addr = ln.Addr().String()
	err = serve(context.Background(), cfg, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listening")
}

func TestRunServeArguments(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"help", []string{"help", "serve"}, exitOK, ""},
		{"unknown source kind", []string{"serve", "--source", "nope"}, exitUsage, `unknown source kind in "nope"; registered kinds: demo`},
		{"unknown allowed source", []string{"serve", "--allow-source", "demo", "--allow-source", "nope"}, exitUsage, `"nope"`},
		{"a spec is taken whole, commas and all", []string{"serve", "--allow-source", "nope:a,rate=5"}, exitUsage, `"nope:a,rate=5"`},
		{"bad public host", []string{"serve", "--public-host", "a:80"}, exitUsage, "--public-host"},
		{"web not a directory", []string{"serve", "--web", "/nonexistent"}, exitUsage, "--web"},
		{"bad origin", []string{"serve", "--allow-origin", "example.com"}, exitUsage, "--allow-origin"},
		{"write deadline not positive", []string{"serve", "--write-wait", "0s"}, exitUsage, "--write-wait 0s: want a positive duration"},
		{"bad pattern", []string{"serve", "--allow-source", "sim:*"}, exitUsage, `"sim:*": a * stands for every interface`},
		{"stray argument", []string{"serve", "now"}, exitUsage, `unexpected argument "now"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.wantCode, dispatch(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), tc.wantStderr)
		})
	}
	var out bytes.Buffer
	dispatch([]string{"help"}, &out, io.Discard)
	assert.Contains(t, out.String(), "serve")
	out.Reset()
	require.Equal(t, exitOK, dispatch([]string{"help", "serve"}, &out, io.Discard))
	assert.Contains(t, out.String(), "--allow-origin ORIGIN", "help goes to stdout")
}

func TestDefaultSource(t *testing.T) {
	assert.True(t, sourceKinds().Has(simKind), "the default source is registered")

	var out bytes.Buffer
	require.Equal(t, exitOK, dispatch([]string{"serve", "-h"}, &out, io.Discard))
	assert.Contains(t, out.String(), `(default "`+simKind+`")`, "--source's default")
	assert.Contains(t, out.String(), `(default "`+serveDefaultAddr+`")`, "--addr's default")
}

func TestEmbeddedWebFiles(t *testing.T) {
	h, err := assets.New(web.Files)
	require.NoError(t, err, "the embedded main.wasm.gz, when built, is gzip")
	for path, want := range map[string]int{"/index.html": http.StatusOK, "/embed.go": http.StatusNotFound} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		assert.Equal(t, want, w.Code, path)
	}
	_, err = web.Files.Open("main.wasm")
	assert.ErrorIs(t, err, fs.ErrNotExist, "the raw wasm is never embedded")
}

// TestAllowedSources: --allow-source's patterns stand for every
// interface and every lab program, in order and once each; without the
// flag serve offers the host's interfaces and their twins.
func TestAllowedSources(t *testing.T) {
	got, err := expandSources([]string{"sim:xdp-drop", "lab:*", "twin:lab:*", "lab:xdp_drop", "sim:xdp-drop"})
	require.NoError(t, err)
	var want []string
	want = append(want, "sim:xdp-drop")
	for _, p := range labsrc.Programs {
		want = append(want, "lab:"+p)
	}
	for _, p := range labsrc.Programs {
		want = append(want, "twin:lab:"+p)
	}
	assert.Equal(t, want, got)

	ifaces, err := hostsrc.Interfaces()
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	got, err = expandSources(defaultAllowed)
	require.NoError(t, err)
	require.Len(t, got, 1+2*len(ifaces))
	assert.Equal(t, "sim:default", got[0])
	assert.Contains(t, got, "host:lo")
	assert.Contains(t, got, "twin:host:lo")
}

// TestServeHardening: every response carries the hardening headers, a
// rebound name gets 421 before anything runs, and a room made under one
// serve is there, its token working, under the next one on the same
// state directory.
func TestServeHardening(t *testing.T) {
	state := t.TempDir()
	run := func() (string, context.CancelFunc, chan error) {
		cfg := serveConfig{addr: "127.0.0.1:0", source: "fake", registry: metrics.Registry{"fake": metrics.OpenFake},
			files: fstest.MapFS{"index.html": {Data: []byte("<title>ringlab</title>")}}, stateDir: state}
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, func(a net.Addr) { ready <- a }) }()
		select {
		case a := <-ready:
			return "http://" + a.String(), cancel, done
		case err := <-done:
			t.Fatalf("serve: %v", err)
		}
		return "", cancel, done
	}
	base, cancel, done := run()
	for _, path := range []string{"/", "/healthz", "/metrics", "/nope"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'self'", path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
	}
	req, _ := http.NewRequest("POST", base+"/api/rooms", nil)
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)

	resp, err = http.Post(base+"/api/rooms", "application/json", nil)
	require.NoError(t, err)
	var created struct {
		Room  string `json:"room"`
		Token string `json:"instructor_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	cancel()
	require.NoError(t, <-done)

	base, cancel, done = run()
	defer func() { cancel(); <-done }()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws/room/"+created.Room, nil)
	require.NoError(t, err, "the room outlived its server")
	defer c.Close()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"instructor","token":"`+created.Token+`"}`)))
	assert.Equal(t, "welcome", readJSON(t, c)["type"])
}

// TestListenURLs: serve prints, and gives rooms as join links, addresses
// a browser can open: on every interface, the LAN addresses first, never
// [::] or a link-local one.
func TestListenURLs(t *testing.T) {
	ifaddrs := func() ([]net.Addr, error) {
		var out []net.Addr
		for _, c := range []string{"127.0.0.1/8", "::1/128", "192.168.1.10/24", "fe80::1/64", "2001:db8::5/64"} {
			ip, n, err := net.ParseCIDR(c)
			require.NoError(t, err)
			n.IP = ip
			out = append(out, n)
		}
		return out, nil
	}
	at := func(s string) net.Addr { a, err := net.ResolveTCPAddr("tcp", s); require.NoError(t, err); return a }
	assert.Equal(t, []string{"http://192.168.1.10:8080/", "http://[2001:db8::5]:8080/", "http://127.0.0.1:8080/", "http://[::1]:8080/"},
		listenURLs(at("[::]:8080"), ifaddrs))
	assert.Equal(t, []string{"http://192.168.1.10:8080/", "http://127.0.0.1:8080/"}, listenURLs(at("0.0.0.0:8080"), ifaddrs))
	assert.Equal(t, []string{"http://127.0.0.1:9/"}, listenURLs(at("127.0.0.1:9"), ifaddrs))
	assert.Equal(t, []string{"http://127.0.0.1:8080/"}, listenURLs(at(":8080"), func() ([]net.Addr, error) { return nil, nil }))
	assert.True(t, isUnspecified(at(":8080")))
	assert.False(t, isUnspecified(at("127.0.0.1:8080")))
}

// TestMetricsNegotiatesOpenMetrics: /metrics answers Prometheus's Accept
// header, which prefers OpenMetrics, in OpenMetrics (a counter's family
// without _total, its samples with it, # EOF at the end), and a client
// that asks for nothing in particular in the text format.
func TestMetricsNegotiatesOpenMetrics(t *testing.T) {
	s := startServe(t)
	get := func(accept string) (string, string) {
		req, err := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
		require.NoError(t, err)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.Header.Get("Content-Type"), string(b)
	}
	// Prometheus 2.x and 3.x send this.
	ctype, body := get("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	assert.True(t, strings.HasPrefix(ctype, "application/openmetrics-text; version=1.0.0"), ctype)
	assert.True(t, strings.HasSuffix(body, "# EOF\n"), "OpenMetrics ends with # EOF")
	assert.Contains(t, body, "# TYPE ringlab_rx_kicks counter\n")
	assert.Contains(t, body, "ringlab_rx_kicks_total{")

	ctype, body = get("")
	assert.True(t, strings.HasPrefix(ctype, "text/plain; version=0.0.4"), ctype)
	assert.NotContains(t, body, "# EOF")
	assert.Contains(t, body, "# TYPE ringlab_rx_kicks_total counter\n")
}

// TestServedHostMetricsPassPromtool: what `ringlab serve --source
// host:eth0` serves at /metrics, read-only counters of this machine's
// eth0 with per-queue packets (qstats-get) and softnet per CPU, passes
// `promtool check metrics` in the text format; in OpenMetrics each
// ringlab family is described once. Skips without promtool or eth0
// (fails with RINGLAB_CI=1).
func TestServedHostMetricsPassPromtool(t *testing.T) {
	tool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Missing(t, "promtool is not installed (Debian's prometheus package: apt-get install -y prometheus)")
	}
	eth0, err := hostsrc.Open("eth0")
	if err != nil {
		testenv.Missing(t, "no eth0: "+err.Error())
	}
	require.NoError(t, eth0.Close())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveConfig{addr: "127.0.0.1:0", source: "host:eth0", registry: sourceKinds(), files: fstest.MapFS{}}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, func(a net.Addr) { ready <- a }) }()
	var base string
	select {
	case a := <-ready:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	defer func() { cancel(); <-done }()
	get := func(accept string) string {
		req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}

	text := get("text/plain;version=0.0.4")
	cmd := exec.Command(tool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "promtool's findings")
	assert.Regexp(t, `ringlab_rx_packets_total\{device="eth0",queue="0",source="host"\} [1-9]`, text, "queue 0's packets (qstats-get, or ethtool)")
	assert.Regexp(t, `ringlab_softnet_processed_total\{cpu="0",queue="all",source="host"\} `, text, "softnet per CPU, no device")
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "# HELP ringlab_tx_") {
			assert.NotContains(t, l, "receive queue", "a send number's HELP")
		}
	}

	om := get("application/openmetrics-text;version=1.0.0")
	require.True(t, strings.HasSuffix(om, "# EOF\n"))
	described := map[string]int{}
	for _, l := range strings.Split(om, "\n") {
		if f, ok := strings.CutPrefix(l, "# TYPE ringlab_"); ok {
			described[strings.Fields(f)[0]]++
		}
	}
	require.NotEmpty(t, described)
	for f, n := range described {
		assert.Equal(t, 1, n, "OpenMetrics family ringlab_%s described once", f)
	}
}
