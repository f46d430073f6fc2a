package wspeer

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/wstest"
)

// TestGivingUpOnANonReaderResets: over real TCP, a client with a small
// receive buffer that never reads, and more written to it than its window,
// so the server's kernel holds unsent data for it. Each way the server
// gives that client up closes the connection with a reset, which discards
// that data at once. A graceful close would queue its FIN behind the
// unsent data: the server's socket would stay in FIN_WAIT1, holding it,
// and the client's established, for as long as the client does not read.
// A client that sends pongs all along moves the reader's deadline on with
// each: the connection must end all the same.
func TestGivingUpOnANonReaderResets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		fill   int         // bytes the server sends, in 4 KiB messages
		giveUp func(*Peer) // nil: the peer's own deadline gives up
		pongs  bool        // the client sends pongs all along, as fast as it can
	}{
		{"write deadline", Options{WriteWait: 200 * time.Millisecond}, 1 << 20, nil, false},
		{"write deadline, pongs", Options{WriteWait: 200 * time.Millisecond}, 1 << 20, nil, true},
		{"read deadline", Options{PongWait: 500 * time.Millisecond}, 32 << 10, nil, false},
		{"Abort", Options{}, 32 << 10, func(p *Peer) { p.Abort(websocket.ClosePolicyViolation, "too slow") }, false},
		{"Abort, pongs", Options{}, 32 << 10, func(p *Peer) { p.Abort(websocket.ClosePolicyViolation, "too slow") }, true},
		{"Close", Options{}, 32 << 10, func(p *Peer) { p.Close(websocket.ClosePolicyViolation, "bye") }, false},
		{"Close, pongs", Options{}, 32 << 10, func(p *Peer) { p.Close(websocket.ClosePolicyViolation, "bye") }, true},
		{"Kill", Options{}, 32 << 10, func(p *Peer) { p.Kill() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.QueueLen = 16
			// The client never reads, so it never answers a close
			// frame: Abort and Close give it up after the grace.
			opts.CloseGrace = 200 * time.Millisecond
			p, srvConn, cli := nonReader(t, opts)
			pongs := make(chan error, 1)
			if tc.pongs {
				// Each pong moves the reader's deadline on: giving up must
				// end the reader all the same.
				go func() {
					for {
						if err := cli.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second)); err != nil {
							pongs <- err
							return
						}
					}
				}()
			}
			msg := []byte(`"` + strings.Repeat("x", 4<<10-2) + `"`)
			n := uint64(tc.fill / len(msg))
			go func() {
				for range n {
					if !p.Send(msg) {
						return
					}
				}
			}()
			if tc.giveUp != nil {
				require.Eventually(t, func() bool { return p.Sent() == n }, 10*time.Second, time.Millisecond, "the messages are written into the kernel")
				assert.Positive(t, wstest.Unsent(t, srvConn), "the server's kernel holds data the client has not taken")
				tc.giveUp(p)
			}
			select {
			case <-p.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return: the connection is still held")
			}
			if !tc.pongs {
				wstest.RequireReset(t, cli.NetConn(), 10*time.Second)
				return
			}
			wstest.RequireClosed(t, cli.NetConn(), 10*time.Second)
			assert.ErrorIs(t, <-pongs, syscall.ECONNRESET, "the client's pongs met the reset")
		})
	}
}

// nonReader serves one WebSocket over loopback TCP with a Peer of opts and
// returns the Peer, the server's end and the client's, whose receive
// buffer is small and which is never read.
func nonReader(t *testing.T, opts Options) (*Peer, net.Conn, *websocket.Conn) {
	type served struct {
		p    *Peer
		conn net.Conn
	}
	ch := make(chan served, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := Upgrader(OriginPolicy{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		p := NewWithOptions(ws, opts)
		ch <- served{p, ws.NetConn()}
		p.Run(func(int, []byte) {})
	}))
	t.Cleanup(ts.Close)
	cli := wstest.DialSmallBuffer(t, wstest.URL(ts.URL, "/"))
	s := <-ch
	return s.p, s.conn, cli
}
