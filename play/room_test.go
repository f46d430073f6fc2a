package play

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
)

// settle works until c has applied everything it was given.
func settleC(t *testing.T, c *Controller) {
	t.Helper()
	for i := 0; ; i++ {
		require.Less(t, i, 100_000, "never settles")
		c.Tick(0)
		if !c.Work(1 << 16) {
			for _, o := range c.Ready().Send {
				if e, ok := o.(ErrorOut); ok {
					t.Fatalf("refused: %s", e.Message)
				}
			}
			return
		}
	}
}

func entries(cmds ...string) []RoomEntry {
	out := make([]RoomEntry, len(cmds))
	for i, c := range cmds {
		out[i] = RoomEntry{Seq: uint64(i + 1), Cmd: json.RawMessage(c)}
	}
	return out
}

var roomLog = entries(
	`{"type":"step","unit":"packet","n":20000}`,
	`{"type":"play","speed":2}`,
	`{"type":"tutorial_step","tutorial":"descriptor-journey","step":4}`,
	`{"type":"step","unit":"packet","n":5000}`,
	`{"type":"preset","name":"cpumap"}`,
	`{"type":"step","unit":"packet","n":30000}`,
	`{"type":"set","key":"ring_size","value":"512"}`,
	`{"type":"pause"}`,
	`{"type":"step","n":300}`,
	`{"type":"seek","t_ns":900000}`,
	`{"type":"step","unit":"packet","n":7}`,
)

// TestReplayFromTheLastReset: a late joiner that replays a log reaches
// the state of a page that applied it command by command, and runs only
// what follows the last command that rebuilt the world.
func TestReplayFromTheLastReset(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	live := NewFollower()
	live.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen})
	settleC(t, live)
	total := uint64(0)
	for _, e := range roomLog {
		w := live.sess.Panes[0].World
		before := live.ReplayCost()
		live.Step(RoomCommand(e))
		settleC(t, live)
		if live.sess.Panes[0].World == w {
			total += live.ReplayCost() - before
		} else {
			total += live.ReplayCost()
		}
	}
	late := New("speed=0")
	late.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog})
	settleC(t, late)
	assert.Equal(t, live.Digest(), late.Digest(), "the same world")
	assert.Equal(t, uint64(len(roomLog)), late.RoomApplied())
	assert.False(t, late.room.playing, "paused, as the log left it")
	assert.Equal(t, live.ReplayCost(), late.ReplayCost(), "the late joiner ran only the commands after the last set")
	assert.Less(t, late.ReplayCost()*10, total, "far less than the whole log")

	// The instructor's page replaying the log (a reload) runs the
	// tutorial steps it ran itself when it sent them.
	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Log: roomLog[:4]})
	settleC(t, inst)
	stu4 := New("speed=0")
	stu4.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:4]})
	settleC(t, stu4)
	assert.Equal(t, stu4.Digest(), inst.Digest(), "the instructor's replay of a tutorial step")

	// Snapping back replays the same way.
	stu := New("speed=0")
	stu.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:3]})
	settleC(t, stu)
	stu.Step(RoomDetach{})
	stu.Step(Step{UnitPacket, 100})
	settleC(t, stu)
	for _, e := range roomLog[3:] {
		stu.Step(RoomCommand(e))
	}
	stu.Step(RoomSnap{})
	settleC(t, stu)
	assert.Equal(t, live.Digest(), stu.Digest(), "snapped back")
}

// TestInstructorStepWaitsForTheReplay: an instructor's tutorial step
// taken while its page replays the room's log (the panel's click just
// after a reload) is refused with the code that says so, and neither
// runs on the page alone nor reaches the room: the page ends where the
// room is. A reveal, which changes no world, goes to the room. Once
// caught up, the next step goes to the room.
func TestInstructorStepWaitsForTheReplay(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	stu := New("speed=0")
	stu.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:4]})
	settleC(t, stu)

	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Log: roomLog[:4]})
	inst.Tick(0)
	inst.Work(1000)
	require.True(t, inst.room.replaying, "the test steps in mid-replay")
	inst.Ready()
	inst.Step(TutorialStep{Tutorial: "descriptor-journey", Step: 2})
	var refused []string
	for _, o := range inst.Ready().Send {
		switch o := o.(type) {
		case ErrorOut:
			refused = append(refused, o.Code)
		case RoomSendOut:
			t.Errorf("sent to the room mid-replay: %s", o.Cmd)
		}
	}
	assert.Equal(t, []string{proto.CodeReplaying}, refused)
	// A reveal changes no world: it goes to the room even now.
	inst.Step(TutorialReveal{Tutorial: "descriptor-journey", Step: 4, Question: 0})
	var reveals []string
	for _, o := range inst.Ready().Send {
		if o, ok := o.(RoomSendOut); ok {
			reveals = append(reveals, string(o.Cmd))
		}
	}
	assert.Equal(t, []string{`{"type":"tutorial_reveal","tutorial":"descriptor-journey","step":4,"question":0}`}, reveals, "a reveal mid-replay")
	settleC(t, inst)
	assert.Equal(t, stu.Digest(), inst.Digest(), "the instructor's page is where the room is")

	inst.Step(TutorialStep{Tutorial: "descriptor-journey", Step: 2})
	var sent []string
	for _, o := range inst.Ready().Send {
		if o, ok := o.(RoomSendOut); ok {
			sent = append(sent, string(o.Cmd))
		}
	}
	assert.Equal(t, []string{`{"type":"tutorial_step","tutorial":"descriptor-journey","step":2}`}, sent, "caught up: the step goes to the room")
}

// TestReconnectCatchesUp: a welcome that continues the log a page has
// (it reconnected) appends the new commands without replaying.
func TestReconnectCatchesUp(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:6]})
	settleC(t, c)
	w := c.sess.Panes[0].World
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:6]})
	assert.Same(t, w, c.sess.Panes[0].World, "nothing new: nothing replayed")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog})
	settleC(t, c)
	late := New("speed=0")
	late.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog})
	settleC(t, late)
	assert.Equal(t, late.Digest(), c.Digest())
	// Another room, or a log that differs, is replayed from its start.
	other := entries(`{"type":"step","n":3}`)
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: other})
	settleC(t, c)
	fresh := New("speed=0")
	fresh.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: other})
	settleC(t, fresh)
	assert.Equal(t, fresh.Digest(), c.Digest())
}

func TestRoomReset(t *testing.T) {
	cur := Config{Preset: "default"}
	for _, tc := range []struct {
		in    In
		reset bool
	}{
		{Preset{Name: "cpumap"}, true},
		{Set{Key: "ring_size", Value: "64"}, true},
		{TutorialStep{Tutorial: "descriptor-journey", Step: 1}, true},
		{TutorialStep{Tutorial: "descriptor-journey", Step: 0}, false},
		{Step{UnitPacket, 3}, false},
		{Seek{5}, false},
		{Play{}, false},
	} {
		_, reset, err := RoomReset(cur, tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.reset, reset, "%#v", tc.in)
	}
	_, _, err := RoomReset(cur, Set{Key: "ring_size", Value: "63"})
	assert.Error(t, err, "a set every page would refuse")
	_, _, err = RoomReset(cur, Preset{Name: "nope"})
	assert.Error(t, err)
}

// roomLogOf is the room's log as the controller answers a room_log
// request, by seq.
func roomLogOf(t *testing.T, c *Controller) []uint64 {
	t.Helper()
	require.NoError(t, c.Step(Request{ID: 9, In: RoomLog{}}))
	for _, o := range c.Ready().Send {
		if l, ok := o.(RoomLogOut); ok && l.ID == 9 {
			seqs := []uint64{}
			for _, e := range l.Log {
				seqs = append(seqs, e.Seq)
			}
			return seqs
		}
	}
	t.Fatal("no room_log answer")
	return nil
}

// TestRoomDedupeBySeq: the controller keeps the room's log once per seq,
// whatever the page passes on twice (a broadcast that crossed a
// reconnect, a welcome overlapping what it has), and refuses a gap
// rather than apply a log with a command missing.
func TestRoomDedupeBySeq(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:2]}))
	settleC(t, c)
	for _, e := range roomLog[:4] { // 1 and 2 again, then 3 and 4
		require.NoError(t, c.Step(RoomCommand(e)))
	}
	require.NoError(t, c.Step(RoomCommand(roomLog[3])))
	settleC(t, c)
	assert.Equal(t, []uint64{1, 2, 3, 4}, roomLogOf(t, c), "each command once")
	assert.Equal(t, uint64(4), c.RoomApplied())
	// The page that applied 1..4 twice over is where one that got them
	// once is.
	once := New("speed=0")
	once.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:4]})
	settleC(t, once)
	assert.Equal(t, once.Digest(), c.Digest())

	// A gap: command 6 after 4 is refused with a code, and not logged.
	err := c.Step(RoomCommand(roomLog[5]))
	require.Error(t, err)
	assert.Equal(t, "bad_state", codeOf(err))
	assert.Equal(t, []uint64{1, 2, 3, 4}, roomLogOf(t, c))
}

// TestReconnectResumesFromLastSeq: the controller says where a reconnect
// resumes (its state's seq, the last command it holds); a welcome with
// the log after it, as the server answers a join with since, is
// appended and applied without a replay, and leaves the page where one
// that never dropped is. A welcome after a command the page does not
// hold is refused with a code (the page joins again for the whole log).
func TestReconnectResumesFromLastSeq(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:6]})
	settleC(t, c)
	since := c.roomState().Seq
	require.Equal(t, uint64(6), since, "where a join resumes")
	// The welcome overlaps by one (a state a tick old said 5): still once.
	require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Since: since - 1, Log: roomLog[since-1:]}))
	assert.False(t, c.room.replaying, "appended, not replayed from the scenario")
	settleC(t, c)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, roomLogOf(t, c))
	assert.Equal(t, uint64(len(roomLog)), c.RoomApplied())
	never := New("speed=0")
	never.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:6]})
	settleC(t, never)
	for _, e := range roomLog[6:] {
		never.Step(RoomCommand(e))
	}
	settleC(t, never)
	assert.Equal(t, never.Digest(), c.Digest(), "caught up, as if it never dropped")

	// Nothing new: nothing replayed, the world is the one that ran on.
	w := c.sess.Panes[0].World
	require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Since: 11}))
	settleC(t, c)
	assert.Same(t, w, c.sess.Panes[0].World, "nothing new: nothing replayed")

	// The log after a command this page does not hold, or of another
	// room: refused, the page's room untouched.
	for _, wl := range []RoomWelcome{
		{Room: "r", You: RoleStudent, Scenario: scen, Since: 20, Log: entries(`{"type":"step"}`)},
		{Room: "other", You: RoleStudent, Scenario: scen, Since: 3},
	} {
		err := c.Step(wl)
		require.Error(t, err)
		assert.Equal(t, "bad_state", codeOf(err))
		assert.Equal(t, uint64(11), c.roomState().Seq)
	}
}

// statuses returns the student status messages of a tick of ms, after
// working until the controller has applied everything it was given
// (those ticks of no wall time: their statuses are returned too).
func statuses(c *Controller, ms int64) []RoomStatusOut {
	var out []RoomStatusOut
	keep := func(f Frame) {
		for _, o := range f.Send {
			if s, ok := o.(RoomStatusOut); ok {
				out = append(out, s)
			}
		}
	}
	for i := 0; i < 100_000; i++ {
		c.Tick(0)
		if !c.Work(1 << 16) {
			break
		}
		keep(c.Ready())
	}
	c.Tick(ms * 1e6)
	keep(c.Ready())
	return out
}

// TestStudentStatusForTheRoster: a student's status for the instructor's
// roster is the controller's: what it is to the room (replaying,
// following, detached), the last command applied, the tutorial step its
// panel shows and whether that step's questions are all revealed; sent
// when it changes, at most every StatusPeriod, again after a welcome,
// never by an instructor's page or a follower without one.
func TestStudentStatusForTheRoster(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries(`{"type":"step","n":5}`)})
	c.Tick(0)
	var first []RoomStatusOut
	for _, o := range c.Ready().Send {
		if s, ok := o.(RoomStatusOut); ok {
			first = append(first, s)
		}
	}
	require.Len(t, first, 1, "the first status at once")
	assert.Equal(t, "replaying", first[0].State)
	st := statuses(c, 400)
	require.Len(t, st, 1)
	assert.Equal(t, RoomStatusOut{State: "following", Applied: 1}, st[0])
	assert.Empty(t, statuses(c, 400), "nothing changed: nothing sent")

	// The room's tutorial step, then the instructor's reveal of its one
	// question (descriptor-journey's step 2 asks one).
	c.Step(RoomCommand{Seq: 2, Cmd: json.RawMessage(`{"type":"tutorial_step","tutorial":"descriptor-journey","step":2}`)})
	st = statuses(c, 400)
	require.Len(t, st, 1)
	assert.Equal(t, RoomStatusOut{State: "following", Applied: 2, Tutorial: "descriptor-journey", Step: 2}, st[0])
	c.Step(RoomCommand{Seq: 3, Cmd: json.RawMessage(`{"type":"tutorial_reveal","tutorial":"descriptor-journey","step":2,"question":0}`)})
	st = statuses(c, 400)
	require.Len(t, st, 1)
	assert.True(t, st[0].Revealed, "the room's reveal: %+v", st[0])
	// A change within a period of the last waits for its end.
	c.Step(RoomDetach{})
	assert.Empty(t, statuses(c, 100), "within StatusPeriod of the last")
	st = statuses(c, 250)
	require.Len(t, st, 1)
	assert.Equal(t, RoomStatusOut{State: "detached", Applied: 3, Tutorial: "descriptor-journey", Step: 2, Revealed: true}, st[0])

	// A detached student's panel is its own: its step, unrevealed.
	c.Step(TutorialStep{Tutorial: "descriptor-journey", Step: 4})
	st = statuses(c, 400)
	require.Len(t, st, 1)
	assert.Equal(t, RoomStatusOut{State: "detached", Applied: 3, Tutorial: "descriptor-journey", Step: 4}, st[0])
	// The person reveals the question there.
	c.Step(TutorialReveal{Tutorial: "descriptor-journey", Step: 4, Question: 0})
	st = statuses(c, 400)
	require.Len(t, st, 1)
	assert.True(t, st[0].Revealed, "%+v", st[0])

	// A reconnect's welcome: the room forgot the status, so it goes again.
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Since: 3})
	st = statuses(c, 16)
	require.Len(t, st, 1, "again after a welcome")
	assert.Equal(t, "detached", st[0].State)

	// An instructor's page and the server's follower send none.
	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen})
	settleC(t, inst)
	assert.Empty(t, statuses(inst, 400))
	f := NewFollower()
	f.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen})
	assert.Empty(t, statuses(f, 400))
}

// TestResyncSaysWhenDone: a following student that drifted resyncs and,
// once back in step, the controller says so (the page shows the note).
func TestResyncSaysWhenDone(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries(`{"type":"step","n":5}`)})
	settleC(t, c)
	c.Step(RoomBeacon{Seq: 1, Digest: "00"})
	var notes []string
	for i := 0; i < 1000; i++ {
		c.Tick(16e6)
		more := c.Work(1 << 16)
		for _, o := range c.Ready().Send {
			if n, ok := o.(NoteOut); ok {
				notes = append(notes, n.Text)
			}
		}
		if !more && !c.room.replaying {
			break
		}
	}
	require.Len(t, notes, 2, "%q", notes)
	assert.Contains(t, notes[0], "drifted")
	assert.Equal(t, "Resynced: back in step with the room (command 1).", notes[1])
	assert.Equal(t, 1, c.roomState().Resyncs)
}
