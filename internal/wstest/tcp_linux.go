package wstest

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tcpClose is TCP_CLOSE of linux/tcp_states.h: a socket's state once it
// has been reset (TCP_ESTABLISHED is 1).
const tcpClose = 7

// DialSmallBuffer opens a WebSocket to url whose kernel receive buffer is
// 4 KiB, for a client that stops reading (what it is sent backs up into
// the server's kernel within a few KiB), and closes it when the test ends.
func DialSmallBuffer(t testing.TB, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{NetDialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) }); err != nil {
			return err
		}
		return serr
	}}).DialContext}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := d.DialContext(ctx, url, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// RequireReset waits up to within for the server to reset c's connection:
// c's socket closed (state TCP_CLOSE) with ECONNRESET pending. A graceful
// close to a client that does not read leaves it established instead (the
// server's FIN waits behind the data the client has not taken), or in
// CLOSE_WAIT once the FIN is in.
func RequireReset(t testing.TB, c net.Conn, within time.Duration) {
	t.Helper()
	RequireClosed(t, c, within)
	var soErr int
	control(t, c, func(fd int) {
		var err error
		soErr, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		require.NoError(t, err)
	})
	require.Equal(t, int(unix.ECONNRESET), soErr, "closed by a reset")
}

// RequireClosed waits up to within for c's socket to be closed (state
// TCP_CLOSE), as a reset leaves it; the client may have seen the reset
// already, in a write that failed.
func RequireClosed(t testing.TB, c net.Conn, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return tcpInfo(t, c).State == tcpClose }, within, 10*time.Millisecond,
		"the connection is reset, not left open behind the data the client has not read")
}

// Unsent returns the bytes c's kernel holds that the peer has not
// acknowledged (SIOCOUTQ).
func Unsent(t testing.TB, c net.Conn) int {
	t.Helper()
	var n int
	control(t, c, func(fd int) {
		var err error
		n, err = unix.IoctlGetInt(fd, unix.SIOCOUTQ)
		require.NoError(t, err)
	})
	return n
}

func tcpInfo(t testing.TB, c net.Conn) *unix.TCPInfo {
	var info *unix.TCPInfo
	control(t, c, func(fd int) {
		var err error
		info, err = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		require.NoError(t, err)
	})
	return info
}

// control runs f on c's file descriptor.
func control(t testing.TB, c net.Conn, f func(fd int)) {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	require.True(t, ok, "%T has no file descriptor", c)
	raw, err := sc.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, raw.Control(func(fd uintptr) { f(int(fd)) }))
}
