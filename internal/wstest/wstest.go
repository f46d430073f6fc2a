// Package wstest holds the WebSocket helpers the server's tests share:
// dial a test server, read one JSON message within a deadline, send text.
package wstest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// URL is the ws:// URL of path on an httptest server whose URL is base.
func URL(base, path string) string { return "ws" + strings.TrimPrefix(base, "http") + path }

// Dial opens a WebSocket to url and closes it when the test ends.
func Dial(t testing.TB, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Read reads one text message within wait and decodes its JSON into a T.
func Read[T any](t testing.TB, c *websocket.Conn, wait time.Duration) T {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	kind, data, err := c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, websocket.TextMessage, kind)
	var m T
	require.NoError(t, json.Unmarshal(data, &m), "%s", data)
	return m
}

// Send writes s as a text message.
func Send(t testing.TB, c *websocket.Conn, s string) {
	t.Helper()
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(s)))
}
