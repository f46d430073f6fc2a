package browsertest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/play"
	"ringlab/tutorials"
)

// goStudent is a student of a workshop room without a page: the game a
// student's page runs, minus its canvas and its DOM. A classroom test
// keeps as pages the instructor and the students whose page it looks at
// (the panel, the banner, a screenshot, a detach offered by the tutorial
// panel); the others are goStudents, which cost no Chromium.
//
// What it stands for: the page holds no playground logic (web/README.md,
// "Workshop rooms"). Its game is a play.Controller, the same Go code the
// wasm runs, driven as the wasm shell drives it (wasm/main.go: the inputs
// first, then Tick with the wall time since the last tick, Work in
// chunks for the tick's WorkBudget, Ready) at Ebitengine's 60
// ticks a second; and its socket does what web/workshop.js does with the
// room's frames: it joins with the join the game writes when told the
// socket opened (room_join), passes the server's welcome, command,
// beacon, presence, class, roster and predictions frames to the game
// verbatim, and sends the room what the game writes for it (join,
// command, beacon, status, predict, share_predictions, remove) as it is.
// A person's acts are the page->game messages the page sends for them
// (room_detach, predict: send, predict), and what the tests read is
// what the page reads from the same game: its state's room part
// (window.ringlab.workshop), its digest (the digest request).
//
// What it does not cover: drawing (the canvas, Ebitengine, WebGL), the
// panel's DOM (the roster table, the banner, toasts, the tutorial
// panel), a name typed into the page, and the page's own reconnecting
// (a goStudent whose socket drops stays out; the page's reconnect is
// TestWorkshopSurvivesARestart's and TestWorkshopNoSilentDrift's).
type goStudent struct {
	t    *testing.T
	name string
	conn *websocket.Conn

	inMu  sync.Mutex
	inbox [][]byte // the room's frames, not yet passed to the game
	gone  bool     // the socket closed

	mu       sync.Mutex // the game and what the loop keeps of its outputs
	c        *play.Controller
	state    *play.StateOut             // the game's last state (window.ringlab.state)
	step     *play.TutorialStepOut      // the room's last tutorial step (what the panel shows)
	replies  map[int]play.Out           // answers to requests, by id
	nextID   int                        // the last request's id
	aways    int                        // times the instructor went away (the page's workshop.aways)
	errs     []string                   // the game's errors and the room's
	lastSent map[string]json.RawMessage // the last frame of each type sent to the room

	quit chan struct{}
	done chan struct{}
}

// joinGoStudent joins the room of a join link (?room=ID&invite=INVITE)
// as a student named name ("" none), and waits until it is in step with
// the room's log, as joinStudent does for a page.
func joinGoStudent(t *testing.T, link, name string) *goStudent {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	room := q.Get("room")
	require.NotEmpty(t, room, "a join link names its room: %s", link)
	ws := "ws://" + u.Host + "/ws/room/" + url.PathEscape(room)
	if inv := q.Get("invite"); inv != "" {
		ws += "?invite=" + url.QueryEscape(inv)
	}
	conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
	require.NoError(t, err, "dial %s", ws)
	s := &goStudent{
		t: t, name: name, conn: conn,
		// The page's game starts on the page's query, the join link's.
		c:        play.New("?" + u.RawQuery),
		replies:  map[int]play.Out{},
		lastSent: map[string]json.RawMessage{},
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	t.Cleanup(s.close)
	// The socket opened: the page tells the game (room_join), which
	// writes the join.
	client := make([]byte, 8)
	rand.Read(client)
	join, err := json.Marshal(map[string]any{"type": "room_join", "room": room, "role": play.RoleStudent,
		"client": hex.EncodeToString(client), "name": name, "resume": false})
	require.NoError(t, err)
	require.NoError(t, s.c.StepJSON(join))
	go s.read()
	go s.run()
	start := time.Now()
	s.waitRoom("in the room as a student, the welcome's log applied", func(r play.RoomState) bool {
		return r.Role == play.RoleStudent && !r.Replaying
	})
	s.settle()
	t.Logf("go student %q: in step %v after its socket opened", name, time.Since(start).Round(time.Millisecond))
	return s
}

// read takes the room's frames off the socket for the game loop.
func (s *goStudent) read() {
	for {
		_, data, err := s.conn.ReadMessage()
		s.inMu.Lock()
		if err != nil {
			s.gone = true
			s.inMu.Unlock()
			return
		}
		s.inbox = append(s.inbox, data)
		s.inMu.Unlock()
	}
}

// goTick is the game loop's period: Ebitengine's 60 ticks a second.
const goTick = time.Second / 60

// run is the game loop: the room's frames and the tests' inputs to the
// game, a tick, the work, and what Ready says.
func (s *goStudent) run() {
	defer close(s.done)
	tick := time.NewTicker(goTick)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-s.quit:
			return
		case <-tick.C:
		}
		s.inMu.Lock()
		frames := s.inbox
		s.inbox = nil
		s.inMu.Unlock()
		s.mu.Lock()
		for _, raw := range frames {
			s.fromRoom(raw)
		}
		now := time.Now()
		gap := min(now.Sub(last), play.MaxTickGapNS)
		last = now
		s.c.Tick(gap.Nanoseconds())
		deadline := now.Add(time.Duration(s.c.WorkBudget(gap.Nanoseconds())))
		for time.Now().Before(deadline) && s.c.Work(play.WorkChunk) {
		}
		for _, o := range s.c.Ready().Send {
			s.fromGame(o)
		}
		s.mu.Unlock()
	}
}

// fromRoom is workshop.js's onRoomMessage: the room's frames go to the
// game as they came; an error is the panel's.
func (s *goStudent) fromRoom(raw []byte) {
	switch typ := play.MessageType(raw); typ {
	case "welcome", "command", "beacon", "presence", "class", "roster", "predictions":
		s.c.StepJSON(raw)
	case "error":
		s.errs = append(s.errs, "room: "+string(raw))
	}
}

// fromGame is workshop.js's listener of the game: the room's frames go to
// the room as they are; the rest is what the page reads.
func (s *goStudent) fromGame(o play.Out) {
	switch typ := play.Type(o); typ {
	case "join", "command", "beacon", "status", "predict", "share_predictions", "remove":
		b, err := play.MarshalOut(o)
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("marshal %s: %v", typ, err))
			return
		}
		s.lastSent[typ] = b
		if err := s.conn.WriteMessage(websocket.TextMessage, b); err != nil {
			s.errs = append(s.errs, fmt.Sprintf("send %s: %v", typ, err))
		}
	}
	switch m := o.(type) {
	case play.StateOut:
		if m.Room != nil && s.state != nil && s.state.Room != nil && m.Room.Room == s.state.Room.Room &&
			m.Room.Role == play.RoleStudent && m.Room.Instructors == 0 && s.state.Room.Instructors > 0 {
			s.aways++
		}
		s.state = &m
	case play.TutorialStepOut:
		if m.Room {
			s.step = &m
		}
	case play.SyncedOut:
		s.replies[m.ID] = m
	case play.DigestOut:
		s.replies[m.ID] = m
	case play.TutorialGradeOut:
		s.replies[m.ID] = m
	case play.ErrorOut:
		s.errs = append(s.errs, fmt.Sprintf("game: %s (%s): %s", m.Source, m.Code, m.Message))
		if m.ID != 0 {
			s.replies[m.ID] = m
		}
	}
}

// close leaves as a closed tab does: the game stops and the socket
// closes, without a word to the room.
func (s *goStudent) close() {
	select {
	case <-s.quit:
		return
	default:
	}
	close(s.quit)
	<-s.done
	s.conn.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) > 0 {
		s.t.Logf("go student %q: %s", s.name, strings.Join(s.errs, "; "))
	}
}

// send gives the game a message as the page posts it (ringlab.send).
func (s *goStudent) send(msg map[string]any) {
	s.t.Helper()
	b, err := json.Marshal(msg)
	require.NoError(s.t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.StepJSON(b)
}

// request sends a request (with an id) and waits for the game's answer,
// as ringlab.request does.
func (s *goStudent) request(in play.In) play.Out {
	s.t.Helper()
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.c.Step(play.Request{ID: id, In: in})
	s.mu.Unlock()
	var out play.Out
	s.wait(fmt.Sprintf("the answer to request %d (%T)", id, in), func() bool {
		out = s.replies[id]
		delete(s.replies, id)
		return out != nil
	})
	return out
}

// settle waits until the game has handled every input before and done
// the work they queued (the page's settle).
func (s *goStudent) settle() {
	s.t.Helper()
	out := s.request(play.Sync{})
	_, ok := out.(play.SyncedOut)
	require.True(s.t, ok, "go student %q: sync answered %#v", s.name, out)
}

// digest is the game's world as a digest (the page's digest request).
func (s *goStudent) digest() string {
	s.t.Helper()
	out := s.request(play.DigestReq{})
	d, ok := out.(play.DigestOut)
	require.True(s.t, ok, "go student %q: digest answered %#v", s.name, out)
	return d.Digest
}

// wait polls cond (under the game's lock) until it holds, for
// minPatience.
func (s *goStudent) wait(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(minPatience)
	for {
		s.mu.Lock()
		ok := cond()
		s.mu.Unlock()
		if ok {
			return
		}
		s.inMu.Lock()
		gone := s.gone
		s.inMu.Unlock()
		if gone || time.Now().After(deadline) {
			s.mu.Lock()
			errs := strings.Join(s.errs, "; ")
			s.mu.Unlock()
			why := "timed out after " + minPatience.String()
			if gone {
				why = "the room closed its socket"
			}
			s.t.Fatalf("go student %q: %s waiting for %s (errors: %s)", s.name, why, what, errs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRoom waits until the game's state's room part (what the page's
// panel draws) satisfies cond.
func (s *goStudent) waitRoom(what string, cond func(r play.RoomState) bool) {
	s.t.Helper()
	s.wait(what, func() bool { return s.state != nil && s.state.Room != nil && cond(*s.state.Room) })
}

// room is the game's last state's room part.
func (s *goStudent) room() play.RoomState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil || s.state.Room == nil {
		return play.RoomState{}
	}
	return *s.state.Room
}

// waitApplied waits until the game has applied the room's log up to seq
// and done the work (the page's waitApplied).
func (s *goStudent) waitApplied(seq int) {
	s.t.Helper()
	s.waitRoom(fmt.Sprintf("command %d applied", seq), func(r play.RoomState) bool {
		return r.Applied >= uint64(seq) && !r.Replaying
	})
	s.settle()
}

// tutorialAt is the room's tutorial step the game last ran ("", 0 none):
// what the page's tutorial panel opens at.
func (s *goStudent) tutorialAt() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.step == nil {
		return "", 0
	}
	return s.step.Tutorial, s.step.Step
}

// predict is a student's prediction at question q of the room's step,
// as the tutorial panel makes it: typed (or picked), put in the one form
// the game's grade gives it (tutorial_grade against the question's
// answer key), and sent to the game as a predict.
func (s *goStudent) predict(q int, typed string) {
	s.t.Helper()
	s.mu.Lock()
	st := s.step
	s.mu.Unlock()
	require.NotNil(s.t, st, "go student %q: no tutorial step to predict at", s.name)
	var keys []*tutorials.Key
	for _, it := range st.Result.Items {
		if it.Op == "answer" && it.Key != nil {
			keys = append(keys, it.Key)
		}
	}
	require.Greater(s.t, len(keys), q, "go student %q: step %d of %s has no answer for question %d", s.name, st.Step, st.Tutorial, q)
	out := s.request(play.TutorialGrade{Key: *keys[q], Prediction: typed})
	g, ok := out.(play.TutorialGradeOut)
	require.True(s.t, ok, "go student %q: tutorial_grade answered %#v", s.name, out)
	s.send(map[string]any{"type": "predict", "tutorial": st.Tutorial, "step": st.Step, "question": q, "answer": g.Grade.Answer})
}

// goInStep waits until each go student has applied seq and reports that
// its world is the instructor's page's (the same digest: time, events,
// every counter and where every page is).
func goInStep(t *testing.T, seq int, inst *page, gos ...*goStudent) {
	t.Helper()
	inst.waitApplied(seq)
	want := inst.digest()
	for _, s := range gos {
		s.waitApplied(seq)
		assert.Equal(t, want, s.digest(), "go student %q's world after command %d", s.name, seq)
	}
}

// goCheckedAt waits until the instructor's beacon has confirmed each go
// student's world at command seq or later, and reports that none had to
// resync (checkedAt for pages).
func goCheckedAt(t *testing.T, seq int, gos ...*goStudent) {
	t.Helper()
	for _, s := range gos {
		s.waitRoom(fmt.Sprintf("the beacon's check at command %d", seq), func(r play.RoomState) bool { return r.Checked >= uint64(seq) })
		assert.Equal(t, 0, s.room().Resyncs, "go student %q resynced", s.name)
	}
}
