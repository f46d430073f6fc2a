package abuse

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// TestOptionsAllow: OPTIONS and other methods of the rooms API say the
// methods each path takes, not the page's files' GET and HEAD.
func TestOptionsAllow(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, c := range []struct{ method, path, want string }{
		{"OPTIONS", "/api/rooms", "POST"},
		{"DELETE", "/api/rooms", "POST"},
		{"PUT", "/api/rooms/0000000000000000", "GET"},
	} {
		req, err := http.NewRequest(c.method, s.base+c.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultTransport.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		allow := resp.Header.Get("Allow")
		figure(t, c.method+" "+c.path, float64(resp.StatusCode), "HTTP status", "Allow: "+allow)
		assert.Contains(t, allow, c.want, "%s %s", c.method, c.path)
		if c.method == "OPTIONS" {
			assert.Less(t, resp.StatusCode, 300)
		} else {
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		}
	}
}

// TestStoreFailureAtCreation: a room the store cannot write (a full disk;
// here a file size limit of 64 bytes, which fails writes the same way) is
// an error that says so, logged at ERROR, not "try again when a room has
// expired" at INFO.
func TestStoreFailureAtCreation(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		testenv.Missing(t, "prlimit (util-linux) to give the server a file size limit")
	}
	s := startServerUnder(t, []string{"prlimit", "--fsize=64", "--"})
	code, body := s.post("/api/rooms", "", nil)
	figure(t, "POST /api/rooms with the store failing", float64(code), "HTTP status", strings.TrimSpace(string(body)))
	assert.Equal(t, http.StatusInsufficientStorage, code)
	assert.NotContains(t, string(body), "try again when a room has expired")
	assert.Contains(t, string(body), "could not store")
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), "level=ERROR") }, 5*time.Second, 10*time.Millisecond,
		"logged at ERROR: %s", s.stderr)
}

// TestTinySpeed: a play command at 1e-300 events a second freezes the
// room in every browser; it is refused, and the page's speeds are not.
func TestTinySpeed(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	for _, c := range []struct {
		speed string
		ok    bool
	}{{"1e-300", false}, {"0.5", false}, {"1", true}, {"1000", true}} {
		inst.command(`{"type":"play","speed":` + c.speed + `}`)
		r, ok := inst.reply(10 * time.Second)
		require.True(t, ok)
		figure(t, "play at speed "+c.speed, b2f(r.Type == "command"), "accepted", r.str("message"))
		assert.Equal(t, c.ok, r.Type == "command", "speed %s: %s", c.speed, r.Raw)
		if !c.ok {
			assert.True(t, strings.HasSuffix(r.str("field"), "speed"), "the field at fault: %s", r.Raw)
		}
	}
}

// TestWildcardPublicHost: --public-host '*.example' is not a name; serve
// refuses it at once, saying so, rather than answer to the literal
// "*.example" only.
func TestWildcardPublicHost(t *testing.T) {
	t.Parallel()
	stderr, done, _, took := runCLI(t, 10*time.Second, "serve", "--addr", "127.0.0.1:0", "--state-dir=", "--public-host", "*.example")
	figure(t, "serve --public-host '*.example'", took.Seconds(), "s", firstLine(stderr))
	require.True(t, done, "refused at start")
	assert.Contains(t, stderr, "not a pattern")
}

// TestInvalidUTF8: a text frame that is not UTF-8 closes the connection
// with 1007 (RFC 6455 8.1).
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	for _, path := range []string{"/ws/metrics", roomPath(room.Room)} {
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
		c, _, err := d.Dial(wsURL(s, path), nil)
		require.NoError(t, err)
		require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte("{\"type\":\"ping\",\"x\":\"\xc3\x28\"}")))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for err == nil {
			_, _, err = c.ReadMessage()
		}
		c.Close()
		figure(t, "invalid UTF-8 on "+strings.SplitN(path[4:], "/", 2)[0], 0, "", err.Error())
		ce, ok := err.(*websocket.CloseError)
		if assert.True(t, ok, "%s: closed with a close frame, got %v", path, err) {
			assert.Equal(t, websocket.CloseInvalidFramePayloadData, ce.Code, path)
		}
	}
}
