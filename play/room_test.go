package play

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
