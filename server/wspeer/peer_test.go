package wspeer

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hijackWriter is the http.ResponseWriter an upgrade over a net.Pipe needs.
type hijackWriter struct {
	conn net.Conn
	br   *bufio.Reader
	h    http.Header
}

func (w *hijackWriter) Header() http.Header         { return w.h }
func (w *hijackWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *hijackWriter) WriteHeader(int)             {}
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(w.br, bufio.NewWriter(w.conn)), nil
}

// pipePair returns both ends of a WebSocket over net.Pipe, so that it can
// live in a synctest bubble with a fake clock.
func pipePair(t *testing.T) (srv, cli *websocket.Conn) {
	a, b := net.Pipe()
	upgraded := make(chan error, 1)
	go func() {
		br := bufio.NewReader(a)
		req, err := http.ReadRequest(br)
		if err != nil {
			upgraded <- err
			return
		}
		srv, err = (&websocket.Upgrader{}).Upgrade(&hijackWriter{conn: a, br: br, h: http.Header{}}, req, nil)
		upgraded <- err
	}()
	d := websocket.Dialer{ReadBufferSize: 1024, WriteBufferSize: 1024,
		NetDialContext: func(context.Context, string, string) (net.Conn, error) { return b, nil }}
	cli, _, err := d.Dial("ws://pipe/", nil)
	require.NoError(t, err)
	require.NoError(t, <-upgraded)
	return srv, cli
}

// runPeer runs p with a handler that ignores messages and returns Run's
// result on a channel.
func runPeer(p *Peer) <-chan error {
	res := make(chan error, 1)
	go func() { res <- p.Run(func(int, []byte) {}) }()
	return res
}

func TestPingKeepsALivePeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		p := New(srv, 4)
		res := runPeer(p)
		var pings atomic.Int32
		cli.SetPingHandler(func(data string) error {
			pings.Add(1)
			return cli.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		})
		go func() {
			for {
				if _, _, err := cli.ReadMessage(); err != nil {
					return
				}
			}
		}()

		time.Sleep(5 * PongWait)
		select {
		case err := <-res:
			t.Fatalf("a peer that answers pings was dropped: %v", err)
		default:
		}
		assert.Equal(t, int32(5*PongWait/PingPeriod), pings.Load(), "one ping per PingPeriod")

		cli.Close()
		<-res
	})
}

func TestMissingPongDropsThePeerAfterPongWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		var pings atomic.Int32
		cli.SetPingHandler(func(string) error { pings.Add(1); return nil }) // swallow: no pong
		go func() {
			for {
				if _, _, err := cli.ReadMessage(); err != nil {
					return
				}
			}
		}()
		start := time.Now()
		err := <-runPeer(New(srv, 4))
		assert.Equal(t, PongWait, time.Since(start), "dropped exactly at the read deadline")
		assert.True(t, errors.Is(err, net.ErrClosed) || isTimeout(err), "ended by the read deadline: %v", err)
		assert.Equal(t, int32(1), pings.Load(), "one ping was sent at PingPeriod")
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestStalledReaderIsDroppedAfterWriteWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t) // cli never reads
		defer cli.Close()
		p := New(srv, 4)
		start := time.Now()
		res := runPeer(p)
		require.True(t, p.Send([]byte(`{"type":"x"}`)))
		<-res
		assert.Equal(t, p.deadline(len(`{"type":"x"}`)), time.Since(start), "the blocked write gives up at its deadline")
		assert.Equal(t, WriteWait+time.Second, p.deadline(MinWriteRate), "a long message gets more time")
		assert.False(t, p.Send([]byte("late")), "Send reports a finished peer")
		assert.False(t, p.TrySend([]byte("late")))
		p.Close(websocket.CloseNormalClosure, "") // must not block
		p.Abort(websocket.CloseGoingAway, "")     // must not block
	})
}

func TestQueueGoesBeforeTheMailboxAndTheNewestWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		p := New(srv, 4)
		require.True(t, p.Send([]byte("a")))
		require.True(t, p.Send([]byte("b")))
		p.Offer([]byte("x"))
		p.Offer([]byte("y"))
		assert.Equal(t, uint64(1), p.Skipped())
		// Cleared before the writer runs (once it runs, it may take z
		// from the mailbox before ClearMailbox does: a race, not a rule).
		p.Offer([]byte("z"))
		p.ClearMailbox()
		p.Offer([]byte("w"))
		assert.Equal(t, uint64(2), p.Skipped(), "y replaced x, w replaced nothing: a cleared message is not a skip")
		p.Offer([]byte("v"))
		assert.Equal(t, uint64(3), p.Skipped(), "v replaced w")
		res := runPeer(p)
		assert.Equal(t, []string{"a", "b", "v"}, readN(t, cli, 3), "the queue first, then the newest offer")
		synctest.Wait() // the writer counts after its write returns
		assert.Equal(t, uint64(3), p.Sent())

		cli.Close()
		<-res
	})
}

// readN reads n text messages.
func readN(t *testing.T, c *websocket.Conn, n int) []string {
	t.Helper()
	var got []string
	for range n {
		_, m, err := c.ReadMessage()
		require.NoError(t, err)
		got = append(got, string(m))
	}
	return got
}

func TestMailboxKeepsTheNewestInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		p := NewWithMailbox(srv, 4, 3)
		for _, m := range []string{"a", "b", "c", "d", "e"} {
			p.Offer([]byte(m))
		}
		assert.Equal(t, uint64(2), p.Skipped(), "the two oldest were dropped")
		res := runPeer(p)
		assert.Equal(t, []string{"c", "d", "e"}, readN(t, cli, 3), "the newest three, oldest first")
		cli.Close()
		<-res

		// ClearMailbox, before a writer runs (once one runs it may take
		// a message before the clear does: a race, not a rule).
		srv, cli = pipePair(t)
		p = NewWithMailbox(srv, 4, 3)
		p.Offer([]byte("f"))
		p.Offer([]byte("g"))
		p.ClearMailbox()
		p.Offer([]byte("h"))
		assert.Equal(t, uint64(0), p.Skipped(), "cleared messages are not skips")
		res = runPeer(p)
		assert.Equal(t, []string{"h"}, readN(t, cli, 1), "all of the mailbox was cleared")
		cli.Close()
		<-res
	})
}

func TestTrySendOnAFullQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		defer cli.Close()
		defer srv.Close()
		p := New(srv, 2)
		assert.True(t, p.TrySend([]byte("1")))
		assert.True(t, p.TrySend([]byte("2")))
		assert.False(t, p.TrySend([]byte("3")), "the queue holds 2")
	})
}

func TestAbortSendsACloseFrameAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		p := New(srv, 4)
		require.True(t, p.Send([]byte("dropped or not")))
		p.Abort(websocket.CloseGoingAway, "server shutting down")
		res := runPeer(p)
		var ce *websocket.CloseError
		for {
			_, _, err := cli.ReadMessage()
			if err != nil {
				require.ErrorAs(t, err, &ce)
				break
			}
		}
		assert.Equal(t, websocket.CloseGoingAway, ce.Code)
		assert.Equal(t, "server shutting down", ce.Text)
		err := <-res
		assert.True(t, websocket.IsCloseError(err, websocket.CloseGoingAway), "Run ends with the peer's answering close: %v", err)
	})
}

func TestCloseComesAfterQueuedMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli := pipePair(t)
		p := New(srv, 4)
		res := runPeer(p)
		require.True(t, p.Send([]byte("last words")))
		p.Close(websocket.ClosePolicyViolation, strings.Repeat("r", 200))
		_, m, err := cli.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, "last words", string(m))
		_, _, err = cli.ReadMessage()
		var ce *websocket.CloseError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
		assert.Len(t, ce.Text, maxCloseReason, "the reason is cut to fit a control frame")
		<-res
	})
}

func TestCloseGraceBoundsASilentPeer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration // Options.CloseGrace
		want  time.Duration
	}{
		{"default", 0, CloseGrace},
		{"Options.CloseGrace", 300 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, cli := pipePair(t)
				// The client reads frames but never answers the close frame.
				cli.SetCloseHandler(func(int, string) error { return nil })
				go func() {
					for {
						if _, _, err := cli.ReadMessage(); err != nil {
							return
						}
					}
				}()
				p := NewWithOptions(srv, Options{QueueLen: 4, CloseGrace: tc.grace})
				res := runPeer(p)
				start := time.Now()
				p.Abort(websocket.CloseGoingAway, "")
				<-res
				assert.Equal(t, tc.want, time.Since(start))
				select {
				case <-p.Done():
				default:
					t.Fatal("Done is not closed after Run")
				}
			})
		})
	}
}

// TestOversizeMessageCloses1009 uses real loopback TCP: the 1009 close frame
// must survive the unread rest of the oversize message.
func TestOversizeMessageCloses1009(t *testing.T) {
	handled := make(chan int, 4)
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := Upgrader(OriginPolicy{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		result <- New(ws, 4).Run(func(_ int, data []byte) { handled <- len(data) })
	}))
	defer srv.Close()
	cli, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer cli.Close()

	require.NoError(t, cli.WriteMessage(websocket.TextMessage, make([]byte, MaxMessageSize)))
	assert.Equal(t, MaxMessageSize, <-handled, "a message of exactly the limit is read")
	require.NoError(t, cli.WriteMessage(websocket.TextMessage, make([]byte, MaxMessageSize+1)))
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = cli.ReadMessage()
	var ce *websocket.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, websocket.CloseMessageTooBig, ce.Code)
	// The server reads and discards the rest of the message until the
	// client's side closes (or for CloseGrace): the client closes now.
	cli.Close()
	assert.ErrorIs(t, <-result, websocket.ErrReadLimit)
}

func TestOriginPolicy(t *testing.T) {
	policy, err := NewOriginPolicy([]string{"https://Workshop.example:8443"})
	require.NoError(t, err)
	tests := []struct {
		name   string
		policy OriginPolicy
		host   string
		origin string
		want   bool
	}{
		{"no Origin header (not a browser)", OriginPolicy{}, "127.0.0.1:8080", "", true},
		{"same host", OriginPolicy{}, "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"same host, other case", OriginPolicy{}, "LOCALHOST:8080", "http://localhost:8080", true},
		{"other port", OriginPolicy{}, "127.0.0.1:8080", "http://127.0.0.1:9999", false},
		{"foreign site", OriginPolicy{}, "127.0.0.1:8080", "https://evil.example", false},
		{"garbage", OriginPolicy{}, "127.0.0.1:8080", "::nope", false},
		{"allowed origin", policy, "127.0.0.1:8080", "https://workshop.example:8443", true},
		{"allowed host, other scheme", policy, "127.0.0.1:8080", "http://workshop.example:8443", false},
		{"same host, https on an http server", OriginPolicy{}, "127.0.0.1:8080", "https://127.0.0.1:8080", false},
		{"same host, other scheme entirely", OriginPolicy{}, "127.0.0.1:8080", "file://127.0.0.1:8080", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+tc.host+"/ws/metrics", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			assert.Equal(t, tc.want, tc.policy.Allow(r))
		})
	}
	for _, bad := range []string{"workshop.example", "ftp://x", "http://x/path", "http://"} {
		_, err := NewOriginPolicy([]string{bad})
		assert.Error(t, err, bad)
	}
}

// TestNonReadingPeerIsDroppedWhateverItSends: over real TCP, a client
// that never reads and sends a pong every 50 ms. The kernel's send buffer
// is bounded, so the server's writes block instead of piling megabytes
// into kernel memory, the write deadline fires, and the connection is
// reset (nothing left for the kernel to hold).
func TestNonReadingPeerIsDroppedWhateverItSends(t *testing.T) {
	var sndbuf atomic.Int64
	ran := make(chan time.Duration, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		p := NewWithOptions(ws, Options{QueueLen: 256, WriteWait: 300 * time.Millisecond})
		raw, err := ws.NetConn().(*net.TCPConn).SyscallConn()
		require.NoError(t, err)
		raw.Control(func(fd uintptr) {
			n, _ := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
			sndbuf.Store(int64(n))
		})
		go func() {
			msg := []byte(`"` + strings.Repeat("x", 16<<10) + `"`)
			for range 200 { // 3.2 MB: what the kernel would take without the bound
				if !p.Send(msg) {
					return
				}
			}
		}()
		start := time.Now()
		p.Run(func(int, []byte) {})
		ran <- time.Since(start)
	}))
	defer ts.Close()
	cli, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
	require.NoError(t, err)
	defer cli.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				cli.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second))
			}
		}
	}()
	select {
	case took := <-ran:
		assert.Less(t, took, 5*time.Second)
	case <-time.After(20 * time.Second):
		t.Fatal("a peer that never reads is still connected after 20 s")
	}
	assert.LessOrEqual(t, sndbuf.Load(), int64(2*SendBuffer), "SO_SNDBUF is bounded (Linux doubles the value set)")
	// The connection was reset: reading what is left ends in an error
	// soon, not after megabytes.
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 1000 {
		if _, _, err = cli.ReadMessage(); err != nil {
			break
		}
	}
	require.Error(t, err)
	assert.False(t, isTimeout(err), "reset, not held open: %v", err)
}

// TestEndedComesBeforeTheClose: when the peer goes away (its stream
// ends), Run calls Ended while the connection is still open, so the peer
// sees it end only once what the owner counts of it is given back.
func TestEndedComesBeforeTheClose(t *testing.T) {
	type result struct {
		calls    int32
		openThen error
		closed   error
	}
	got := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		var res result
		var calls atomic.Int32
		p := NewWithOptions(ws, Options{QueueLen: 4, Ended: func() {
			calls.Add(1)
			res.openThen = ws.NetConn().SetDeadline(time.Time{}) // fails once closed
		}})
		p.Run(func(int, []byte) {})
		res.calls = calls.Load()
		res.closed = ws.NetConn().SetDeadline(time.Time{})
		got <- res
	}))
	defer srv.Close()
	cli, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	defer cli.Close()
	// The end of the peer's stream, as a page that goes away.
	require.NoError(t, cli.NetConn().(*net.TCPConn).CloseWrite())
	res := <-got
	assert.Equal(t, int32(1), res.calls, "Ended is called once")
	assert.NoError(t, res.openThen, "the connection was open when Ended ran")
	assert.Error(t, res.closed, "and closed when Run returned")
}
