package abuse

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"
)

// msg is a server message with its type read out.
type msg struct {
	Type string
	Raw  json.RawMessage
}

func (m msg) field(name string) json.RawMessage {
	var f map[string]json.RawMessage
	json.Unmarshal(m.Raw, &f)
	return f[name]
}

func (m msg) str(name string) string {
	var s string
	json.Unmarshal(m.field(name), &s)
	return s
}

// member is one reading connection to a room.
type member struct {
	t     *testing.T
	c     *websocket.Conn
	token string // the instructor's, sent in every command by legacy servers
	msgs  chan msg
	done  chan struct{}
	mu    sync.Mutex
	err   error
}

func wsURL(s *server, path string) string { return "ws://" + s.addr + path }

// dialRoom opens /ws/room/id with extra headers; it returns the HTTP
// status when the upgrade is refused.
func dialRoom(s *server, id string, header http.Header) (*websocket.Conn, int, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.Dial(wsURL(s, roomPath(id)), header)
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	return c, code, err
}

// join dials the room and joins as role; it returns after the welcome.
func join(t *testing.T, s *server, room createdRoom, role string) (*member, msg) {
	t.Helper()
	c, code, err := dialRoom(s, room.Room, nil)
	require.NoError(t, err, "status %d", code)
	return joinOn(t, c, room, role)
}

// joinOn joins room as role over the dialled c and returns after the
// welcome.
func joinOn(t *testing.T, c *websocket.Conn, room createdRoom, role string) (*member, msg) {
	t.Helper()
	m := &member{t: t, c: c, msgs: make(chan msg, 1<<14), done: make(chan struct{})}
	t.Cleanup(func() { c.Close() })
	go m.read()
	j := map[string]any{"type": "join", "role": role}
	if role == "instructor" {
		j["token"] = room.Token
		m.token = room.Token
	}
	m.send(j)
	w, ok := m.wait("welcome", 30*time.Second)
	require.True(t, ok, "no welcome: %v", m.lastErr())
	return m, w
}

func (m *member) read() {
	defer close(m.done)
	for {
		_, data, err := m.c.ReadMessage()
		if err != nil {
			m.mu.Lock()
			m.err = err
			m.mu.Unlock()
			return
		}
		var head struct {
			Type string `json:"type"`
		}
		json.Unmarshal(data, &head)
		select {
		case m.msgs <- msg{head.Type, data}:
		default: // the test reads what it needs; a full buffer drops
		}
	}
}

func (m *member) lastErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *member) send(v any) {
	m.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(m.t, err)
	m.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	require.NoError(m.t, m.c.WriteMessage(websocket.TextMessage, b))
}

// command sends an instructor command (cmd is its JSON).
func (m *member) command(cmd string) {
	m.t.Helper()
	out := map[string]any{"type": "command", "cmd": json.RawMessage(cmd)}
	if legacy() {
		out["token"] = m.token
	}
	m.send(out)
}

// wait returns the next message of type typ within d, skipping others.
func (m *member) wait(typ string, d time.Duration) (msg, bool) {
	deadline := time.After(d)
	for {
		select {
		case x := <-m.msgs:
			if x.Type == typ {
				return x, true
			}
		case <-m.done:
			// drain what was read before the end
			for {
				select {
				case x := <-m.msgs:
					if x.Type == typ {
						return x, true
					}
				default:
					return msg{}, false
				}
			}
		case <-deadline:
			return msg{}, false
		}
	}
}

// reply returns the answer to the last command: its broadcast (command)
// or an error, within d.
func (m *member) reply(d time.Duration) (msg, bool) {
	deadline := time.After(d)
	for {
		select {
		case x := <-m.msgs:
			if x.Type == "command" || x.Type == "error" {
				return x, true
			}
		case <-m.done:
			return msg{}, false
		case <-deadline:
			return msg{}, false
		}
	}
}

// silentJoiner is a room member that never reads: it joins, then only
// writes a pong now and then, as a client that keeps its connection
// alive without taking what it is sent.
type silentJoiner struct {
	c     *websocket.Conn
	local int // its local port
	stop  chan struct{}
	wg    sync.WaitGroup
}

func joinSilently(t *testing.T, s *server, room string) *silentJoiner {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 1024}
	c, _, err := d.Dial(wsURL(s, roomPath(room)), nil)
	require.NoError(t, err)
	require.NoError(t, c.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"student"}`)))
	j := &silentJoiner{c: c, local: c.LocalAddr().(*net.TCPAddr).Port, stop: make(chan struct{})}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-j.stop:
				return
			case <-tick.C:
				c.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second))
			}
		}
	}()
	t.Cleanup(func() { close(j.stop); j.wg.Wait(); c.Close() })
	return j
}

// established returns the local ports of the client sockets connected to
// the server that are still ESTABLISHED, and the bytes they have received
// and not read (rx_queue).
func established(s *server) (ports map[int]bool, unread int64) {
	ports = map[int]bool{}
	for _, e := range tcpTable(s.t) {
		if e.remPort == s.port() && e.state == "01" {
			ports[e.localPort] = true
			unread += e.rx
		}
	}
	return ports, unread
}

type tcpEntry struct {
	localPort, remPort int
	state              string
	tx, rx             int64
}

func tcpTable(t *testing.T) []tcpEntry {
	return append(readTCP("/proc/net/tcp"), readTCP("/proc/net/tcp6")...)
}

// readTCP parses a socket table of /proc/net. The kernel writes the table
// a buffer at a time, going on from where the last read stopped, so while
// sockets come and go (another test's connection flood) one read of the
// file can list a socket twice; each is kept once, by its two addresses.
func readTCP(file string) []tcpEntry {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []tcpEntry
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		addrs := f[1] + " " + f[2]
		if seen[addrs] {
			continue
		}
		seen[addrs] = true
		var e tcpEntry
		var lp, rp int
		fmt.Sscanf(f[1][strings.IndexByte(f[1], ':')+1:], "%X", &lp)
		fmt.Sscanf(f[2][strings.IndexByte(f[2], ':')+1:], "%X", &rp)
		e.localPort, e.remPort, e.state = lp, rp, f[3]
		tx, rx, _ := strings.Cut(f[4], ":")
		fmt.Sscanf(tx, "%X", &e.tx)
		fmt.Sscanf(rx, "%X", &e.rx)
		out = append(out, e)
	}
	return out
}
