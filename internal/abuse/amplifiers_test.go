package abuse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialMetrics opens /ws/metrics and returns the connection and its hello.
func dialMetrics(t *testing.T, s *server) (*websocket.Conn, msg) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	c, _, err := d.Dial(wsURL(s, "/ws/metrics"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, readType(t, c, "hello", "error")
}

// readType reads c until a message of one of types (others skipped).
func readType(t *testing.T, c *websocket.Conn, types ...string) msg {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for {
		_, data, err := c.ReadMessage()
		require.NoError(t, err)
		var head struct {
			Type string `json:"type"`
		}
		json.Unmarshal(data, &head)
		if slices.Contains(types, head.Type) {
			return msg{head.Type, data}
		}
	}
}

// TestPingFlood: WebSocket ping frames as fast as a client sends them,
// on /ws/metrics and on a room's socket. Each costs the server a pong; they
// count against the connection's message rate, and a flood closes it.
func TestPingFlood(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	window := time.Duration(scale(1, 10)) * time.Second
	for _, path := range []string{"/ws/metrics", "/ws/room/ID"} {
		url := wsURL(s, strings.Replace(path, "ID", room.Room, 1))
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
		c, _, err := d.Dial(url, nil)
		require.NoError(t, err)
		var pongs atomic.Int64
		c.SetPongHandler(func(string) error { pongs.Add(1); return nil })
		closed := make(chan error, 1)
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					closed <- err
					return
				}
			}
		}()
		cpu0, start := s.cpu(), time.Now()
		sent := 0
		var end error
	flood:
		for time.Since(start) < window {
			select {
			case end = <-closed:
				break flood
			default:
			}
			if c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
				end = <-closed
				break
			}
			sent++
		}
		took := time.Since(start)
		cpu := s.cpu() - cpu0
		c.Close()
		ce, isClose := end.(*websocket.CloseError)
		what := "still open"
		if end != nil {
			what = end.Error()
		}
		figure(t, "ping frames sent to "+path, float64(sent), "pings", fmt.Sprintf("in %v, %d pongs back, server CPU %v (%.0f%% of a core); %s",
			took.Round(time.Millisecond), pongs.Load(), cpu, 100*cpu.Seconds()/took.Seconds(), what))
		if assert.True(t, isClose, "%s: the flood closes the connection (%s)", path, what) {
			assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
		}
		assert.Less(t, pongs.Load(), int64(200), "%s: pings past the rate limit are not answered", path)
	}
}

// TestSamplerPairs: one address opening a connection per (source, rate)
// pair, each a sampler of its own reading a source up to 50 times a
// second. Pairs at other rates than the default are capped per address.
func TestSamplerPairs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	first, hello := dialMetrics(t, s)
	first.Close()
	var specs []string
	require.NoError(t, json.Unmarshal(hello.field("sources"), &specs))
	n := scale(60, 450)
	// The server's CPU idle and with the pairs open, over these
	// windows: figures, which the short form hardly needs.
	idleWindow, pairsWindow := time.Duration(scale(250, 1000))*time.Millisecond, time.Duration(scale(500, 2000))*time.Millisecond
	idle0 := s.cpu()
	time.Sleep(idleWindow)
	idle := (s.cpu() - idle0) * time.Second / idleWindow

	var mu sync.Mutex
	accepted := map[string]bool{}
	refused := 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		spec := specs[i%len(specs)]
		rate := 1 + (i/len(specs))%50
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, _ := dialMetrics(t, s)
			b, _ := json.Marshal(map[string]any{"type": "subscribe", "source": spec, "rate_hz": rate})
			require.NoError(t, c.WriteMessage(websocket.TextMessage, b))
			m := readType(t, c, "hello", "error")
			mu.Lock()
			defer mu.Unlock()
			if m.Type == "hello" && rate != 10 {
				accepted[fmt.Sprintf("%s@%d", spec, rate)] = true
			} else if m.Type == "error" {
				refused++
			}
		})
	}
	wg.Wait()
	cpu0 := s.cpu()
	time.Sleep(pairsWindow)
	cpu := (s.cpu() - cpu0) * time.Second / pairsWindow
	figure(t, "pairs at other rates than the default one address got", float64(len(accepted)), fmt.Sprintf("of %d connections", n),
		fmt.Sprintf("%d refused, %d sources offered; server CPU %.0f%% of a core while they stay (idle %.0f%%)", refused, len(specs), 100*cpu.Seconds(), 100*idle.Seconds()))
	assert.LessOrEqual(t, len(accepted), 4, "a few pairs per address")
}

// TestQRFlood: one address asking for a room's QR code as fast as it
// can, each under another Host (so another join link): encoding one costs
// milliseconds of CPU. Each link's code is kept and new ones are
// rate-limited, so the flood costs the server little and another client
// is served as before.
func TestQRFlood(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom("")
	require.Equal(t, http.StatusCreated, code)
	before, _ := latencies(s, "/api/rooms/"+room.Room, 20, 3*time.Second)

	window := time.Duration(scale(1, 10)) * time.Second
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	cpu0, start := s.cpu(), time.Now()
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for i := 0; time.Since(start) < window; i++ {
				req, _ := http.NewRequest("GET", s.base+"/api/rooms/"+room.Room+"/qr.png", nil)
				req.Host = fmt.Sprintf("10.%d.%d.%d:8080", w, i>>8&255, i&255)
				resp, err := client.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	during, failed := latencies(s, "/api/rooms/"+room.Room, 40, 3*time.Second)
	wg.Wait()
	cpu := s.cpu() - cpu0
	took := time.Since(start)
	requests := ok.Load() + limited.Load() + other.Load()
	figure(t, "QR codes encoded for one address", float64(ok.Load()), fmt.Sprintf("of %d requests", requests),
		fmt.Sprintf("%d got 429, in %v", limited.Load(), took.Round(time.Millisecond)))
	figure(t, "server CPU per QR request", float64(cpu.Microseconds())/float64(max(requests, 1))/1000, "ms",
		fmt.Sprintf("%.0f%% of a core over the flood", 100*cpu.Seconds()/took.Seconds()))
	figure(t, "another client's GET /api/rooms/ID before", float64(pct(before, 50).Microseconds())/1000, "ms p50", fmt.Sprintf("p99 %v", pct(before, 99)))
	figure(t, "another client's GET /api/rooms/ID during", float64(pct(during, 50).Microseconds())/1000, "ms p50", fmt.Sprintf("p99 %v, %d failed", pct(during, 99), failed))
	assert.LessOrEqual(t, ok.Load(), int64(8+3*window/time.Second), "the burst and 2 a second")
	assert.Less(t, float64(cpu.Microseconds())/float64(max(requests, 1)), 1000.0, "well under the milliseconds an encoding costs")
	assert.Zero(t, failed)
}
