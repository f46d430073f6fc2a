package abuse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/play"
)

// page is what a browser in a room does, without the browser: the
// socket of web/workshop.js (join, reconnect with backoff, catch up from
// the log) and the game's controller (package play) applying the log.
type page struct {
	t     *testing.T
	s     *server
	room  createdRoom
	role  string
	c     *play.Controller
	log   []play.RoomEntry
	conn  *websocket.Conn
	quit  chan struct{}
	done  chan struct{}
	dead  chan struct{} // closed when the page has given up its room
	ask   chan chan pageState
	send  chan string // commands to send (the instructor's)
	acked chan uint64 // the seq of every command this page saw broadcast
	errs  chan string // the room's errors, as sent
	mu    sync.Mutex
	joins int
	gone  bool // the room answered 404
	// The room as the controller's last state told it (its loop's own).
	roomState play.RoomState
}

type pageState struct {
	digest    string
	applied   uint64
	seq       uint64
	replaying bool // the page is applying the room's log again
}

// ready takes the controller's output; the page keeps the room's state.
func (p *page) ready() play.Frame {
	f := p.c.Ready()
	for _, o := range f.Send {
		if s, ok := o.(play.StateOut); ok && s.Room != nil {
			p.roomState = *s.Room
		}
	}
	return f
}

func openPage(t *testing.T, s *server, room createdRoom, role string) *page {
	c := play.New("speed=0")
	p := &page{t: t, s: s, room: room, role: role, c: c, quit: make(chan struct{}), done: make(chan struct{}), dead: make(chan struct{}),
		ask: make(chan chan pageState), send: make(chan string, 64), acked: make(chan uint64, 1024), errs: make(chan string, 16)}
	go p.loop()
	t.Cleanup(func() { close(p.quit); <-p.done })
	return p
}

// patience bounds every wait of these pages: when to give up on a
// condition that never holds, never how fast the server must be (the
// restarted server replays the room's log under the race detector, in
// make test beside other builds).
const patience = 2 * time.Minute

// dial connects and joins, retrying with backoff (100 ms doubling to 2 s)
// for up to patience, as the page does.
func (p *page) dial() (*websocket.Conn, []play.RoomEntry, bool) {
	back := 100 * time.Millisecond
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		select {
		case <-p.quit:
			return nil, nil, false
		default:
		}
		c, code, err := dialRoom(p.s, p.room.Room, nil)
		if code == http.StatusNotFound {
			p.mu.Lock()
			p.gone = true
			p.mu.Unlock()
			return nil, nil, false
		}
		if err == nil {
			j := map[string]any{"type": "join", "role": p.role}
			if p.role == "instructor" {
				j["token"] = p.room.Token
			}
			if n := len(p.log); n > 0 && !legacy() {
				j["since"] = p.log[n-1].Seq
			}
			b, _ := json.Marshal(j)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if c.WriteMessage(websocket.TextMessage, b) == nil {
				for {
					_, data, err := c.ReadMessage()
					if err != nil {
						break
					}
					var w struct {
						Type string           `json:"type"`
						Log  []play.RoomEntry `json:"log"`
					}
					json.Unmarshal(data, &w)
					if w.Type == "welcome" {
						c.SetReadDeadline(time.Time{})
						p.mu.Lock()
						p.joins++
						p.mu.Unlock()
						return c, w.Log, true
					}
				}
			}
			c.Close()
		}
		time.Sleep(back)
		back = min(2*back, 2*time.Second)
	}
	return nil, nil, false
}

func (p *page) loop() {
	defer close(p.done)
	in := make(chan []byte, 1024)
	lost := make(chan struct{}, 1)
	connect := func() bool {
		conn, log, ok := p.dial()
		if !ok {
			return false
		}
		// The welcome's log continues ours (or starts it): the game gets
		// the whole log, and catches up rather than replaying.
		for _, e := range log {
			if n := len(p.log); n == 0 || e.Seq > p.log[n-1].Seq {
				p.log = append(p.log, e)
			}
		}
		p.c.Step(play.RoomWelcome{Room: p.room.Room, You: p.role, Scenario: json.RawMessage(`{"preset":"default"}`), Log: append([]play.RoomEntry(nil), p.log...)})
		p.conn = conn
		go func() {
			for {
				_, data, err := conn.ReadMessage()
				if err != nil {
					lost <- struct{}{}
					return
				}
				in <- data
			}
		}()
		return true
	}
	if !connect() {
		close(p.dead)
		return
	}
	for {
		p.c.Tick(0)
		busy := p.c.Work(1 << 14)
		p.ready()
		var idle <-chan time.Time
		if !busy {
			idle = time.After(20 * time.Millisecond)
		} else {
			idle = time.After(0)
		}
		select {
		case <-p.quit:
			p.conn.Close()
			return
		case data := <-in:
			var m struct {
				Type string          `json:"type"`
				Seq  uint64          `json:"seq"`
				Cmd  json.RawMessage `json:"cmd"`
			}
			json.Unmarshal(data, &m)
			if m.Type == "error" {
				select {
				case p.errs <- string(data):
				default:
				}
			}
			if m.Type == "command" {
				if n := len(p.log); n == 0 || m.Seq > p.log[n-1].Seq {
					p.log = append(p.log, play.RoomEntry{Seq: m.Seq, Cmd: m.Cmd})
					p.c.Step(play.RoomCommand{Seq: m.Seq, Cmd: m.Cmd})
				}
				select {
				case p.acked <- m.Seq:
				default:
				}
			}
		case cmd := <-p.send:
			// As the instructor's page: the person's input goes to its
			// controller, which runs what it runs at once (a tutorial
			// step) and says what to send the room.
			in, err := play.Decode([]byte(cmd))
			if err != nil {
				p.t.Errorf("%s: %v", cmd, err)
				continue
			}
			p.c.Step(in)
			for _, o := range p.ready().Send {
				r, ok := o.(play.RoomSendOut)
				if !ok {
					continue
				}
				out := map[string]any{"type": "command", "cmd": r.Cmd}
				if legacy() {
					out["token"] = p.room.Token
				}
				b, _ := json.Marshal(out)
				p.conn.WriteMessage(websocket.TextMessage, b)
			}
		case <-lost:
			p.conn.Close()
			if !connect() {
				close(p.dead)
				<-p.quit
				return
			}
		case reply := <-p.ask:
			var seq uint64
			if n := len(p.log); n > 0 {
				seq = p.log[n-1].Seq
			}
			p.ready()
			st := pageState{digest: p.c.Digest(), seq: seq, applied: p.roomState.Applied, replaying: p.roomState.Replaying}
			if st.applied == 0 {
				st.applied = p.c.RoomApplied()
			}
			reply <- st
		case <-idle:
		}
	}
}

// joined is how many times the page has joined the room.
func (p *page) joined() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.joins
}

func (p *page) isGone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}

func (p *page) state() pageState {
	r := make(chan pageState)
	select {
	case p.ask <- r:
		return <-r
	case <-p.done:
		return pageState{}
	case <-p.dead:
		return pageState{}
	}
}

// command sends cmd and waits for its broadcast (the acknowledgement).
func (p *page) command(cmd string) uint64 {
	p.t.Helper()
	p.send <- cmd
	select {
	case seq := <-p.acked:
		return seq
	case e := <-p.errs:
		p.t.Fatalf("%s: the room answered %s", cmd, e)
		return 0
	case <-time.After(patience):
		p.t.Fatalf("no acknowledgement of %s", cmd)
		return 0
	}
}

// TestRestartMidTutorial: an instructor and students mid-tutorial; the
// server is killed (SIGKILL) and started again; every page reconnects,
// catches up and reaches the instructor's state, no acknowledged command
// lost, and the tutorial goes on.
func TestRestartMidTutorial(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst := openPage(t, s, room, "instructor")
	students := make([]*page, scale(3, 12))
	for i := range students {
		students[i] = openPage(t, s, room, "student")
	}
	before := []string{
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":1}`,
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":2}`,
		`{"type":"tutorial_reveal","tutorial":"descriptor-journey","step":2,"question":0}`,
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":3}`,
		`{"type":"step","unit":"packet","n":40}`,
	}
	var acked uint64
	for _, c := range before {
		acked = inst.command(c)
	}
	s.restart()
	figure(t, "restart", 1, "SIGKILL", fmt.Sprintf("%d commands acknowledged before", acked))
	after := []string{
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":4}`,
		`{"type":"step","unit":"event","n":300}`,
		`{"type":"tutorial_step","tutorial":"descriptor-journey","step":5}`,
		`{"type":"step","unit":"packet","n":25}`,
	}
	var last uint64
	deadline := time.Now().Add(patience)
	for _, c := range after {
		// The instructor acts once its page is back in step: joined
		// again (until its page sees the connection end, a command would
		// go into the killed server's socket), its log caught up, and
		// applied again if the page replays it (a tutorial step taken
		// while the page replays is refused with `replaying`).
		for st := inst.state(); (inst.joined() < 2 || st.seq < acked || st.applied < acked || st.replaying) && time.Now().Before(deadline) && !inst.isGone(); st = inst.state() {
			time.Sleep(50 * time.Millisecond)
		}
		if inst.isGone() {
			break
		}
		last = inst.command(c)
	}
	gone := inst.isGone()
	figure(t, "rooms after the restart", b2f(!gone), "of 1", "")
	require.False(t, gone, "the room survives the restart")
	require.Equal(t, acked+uint64(len(after)), last, "numbering continues after the acknowledged commands: none lost")

	want := waitSettled(t, inst, last)
	reached := 0
	for i, p := range students {
		got := waitSettled(t, p, last)
		if assert.Equal(t, want.digest, got.digest, "student %d", i) {
			reached++
		}
		p.mu.Lock()
		assert.GreaterOrEqual(t, p.joins, 2, "student %d reconnected", i)
		p.mu.Unlock()
	}
	figure(t, "students at the instructor's digest after the restart", float64(reached), fmt.Sprintf("of %d", len(students)), "")
}

// waitSettled waits until p has applied seq and its work is done.
func waitSettled(t *testing.T, p *page, seq uint64) pageState {
	t.Helper()
	deadline := time.Now().Add(patience)
	var st pageState
	for time.Now().Before(deadline) {
		st = p.state()
		if st.applied >= seq {
			time.Sleep(100 * time.Millisecond)
			if again := p.state(); again.digest == st.digest {
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s page: applied %d of %d", p.role, st.applied, seq)
	return st
}
