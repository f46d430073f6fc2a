package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve runs an HTTP server on a Listener with lim: /idle answers at
// once, /busy holds its request until release is closed.
func serve(t *testing.T, lim Limits) (*Listener, string, chan struct{}) {
	t.Helper()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l, err := Wrap(tl, lim, nil)
	require.NoError(t, err)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/idle", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-release
	})
	srv := &http.Server{Handler: mux, ConnState: l.ConnState}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l, tl.Addr().String(), release
}

// open makes a request for path on a new connection from local and
// returns the connection once the status line is read; nil when the
// server refused it.
func open(t *testing.T, addr string, local net.IP, path string) (net.Conn, int) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	if path == "/idle" {
		io.Copy(io.Discard, resp.Body)
	}
	c.SetDeadline(time.Time{})
	return c, resp.StatusCode
}

// alive reports whether the server still holds c open.
func alive(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// waitIdle waits until the listener counts n idle connections.
func waitIdle(t *testing.T, l *Listener, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return l.Stats().Idle == n }, 5*time.Second, time.Millisecond)
}

var (
	hostA = net.IPv4(127, 0, 2, 1)
	hostB = net.IPv4(127, 0, 2, 2)
)

func TestNewcomerDisplacesLongestIdle(t *testing.T) {
	l, addr, _ := serve(t, Limits{Total: 3, PerAddr: 3})
	var idle []net.Conn
	for i := 0; i < 3; i++ {
		c, code := open(t, addr, hostA, "/idle")
		require.Equal(t, http.StatusOK, code)
		idle = append(idle, c)
		waitIdle(t, l, i+1)
	}
	c, code := open(t, addr, hostB, "/idle")
	require.Equal(t, http.StatusOK, code, "a newcomer over the total is admitted")
	defer c.Close()
	assert.False(t, alive(idle[0]), "the longest idle was closed for it")
	assert.True(t, alive(idle[1]))
	assert.True(t, alive(idle[2]))
	st := l.Stats()
	assert.Equal(t, 3, st.Open)
	assert.Equal(t, uint64(1), st.Evicted)
}

func TestPerAddressDisplacesItsOwn(t *testing.T) {
	l, addr, _ := serve(t, Limits{Total: 10, PerAddr: 2})
	b, _ := open(t, addr, hostB, "/idle") // the longest idle, of another address
	waitIdle(t, l, 1)
	a1, _ := open(t, addr, hostA, "/idle")
	waitIdle(t, l, 2)
	a2, _ := open(t, addr, hostA, "/idle")
	waitIdle(t, l, 3)
	a3, code := open(t, addr, hostA, "/idle")
	require.Equal(t, http.StatusOK, code)
	defer a3.Close()
	assert.True(t, alive(b), "another address's connection stays")
	assert.False(t, alive(a1), "the address's own longest idle goes")
	assert.True(t, alive(a2))
}

func TestBusyConnectionsStayAndNewcomerIsRefused(t *testing.T) {
	l, addr, release := serve(t, Limits{Total: 2, PerAddr: 2})
	defer close(release)
	busy1, code := open(t, addr, hostA, "/busy")
	require.Equal(t, http.StatusOK, code)
	busy2, _ := open(t, addr, hostB, "/busy")
	c, code := open(t, addr, hostB, "/idle")
	c.Close()
	assert.Equal(t, http.StatusServiceUnavailable, code, "nothing idle to displace")
	assert.True(t, alive(busy1))
	assert.True(t, alive(busy2))
	assert.Equal(t, uint64(1), l.Stats().Refused)
}

func TestClosedConnectionsGiveTheirPlaceBack(t *testing.T) {
	l, addr, _ := serve(t, Limits{Total: 2, PerAddr: 2})
	for i := 0; i < 10; i++ {
		c, code := open(t, addr, hostA, "/idle")
		require.Equal(t, http.StatusOK, code)
		c.Close()
	}
	require.Eventually(t, func() bool { return l.Stats().Open == 0 }, 5*time.Second, time.Millisecond)
	assert.Zero(t, l.Stats().Addresses)
	assert.Zero(t, l.Stats().Refused)
}

func TestFDBudget(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{{0, DefaultTotal}, {10, 1}, {512, 448}, {1024, 896}, {20000, 17500}} {
		assert.Equal(t, c.want, FDBudget(c.limit), "limit %d", c.limit)
	}
}
