package play

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
)

// said returns what c says of its next Ready of type T.
func said[T Out](c *Controller) []T {
	var out []T
	for _, o := range c.Ready().Send {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestLostCommandsAreNamed: a command an instructor's page sent into a
// connection that then dropped, and that the room's log does not hold
// when the page is back, is named to the person; one the log holds (its
// broadcast lost with the connection), one broadcast back before the
// drop, and one sent on the new connection before the welcome are not.
func TestLostCommandsAreNamed(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	sent := func(in In) json.RawMessage {
		t.Helper()
		require.NoError(t, c.Step(in))
		out := said[RoomSendOut](c)
		require.Len(t, out, 1, "%T goes to the room", in)
		return out[0].Cmd
	}
	notes := func() (texts []string) {
		for _, n := range said[NoteOut](c) {
			texts = append(texts, n.Text)
		}
		return texts
	}
	join := RoomJoin{Room: "r", Role: RoleInstructor, Token: "tok"}
	again := join
	again.Resume = true
	back := func(since uint64, log ...RoomEntry) []string {
		t.Helper()
		require.NoError(t, c.Step(RoomDropped{Room: "r"}))
		require.NoError(t, c.Step(again))
		j := said[RoomJoinOut](c)
		require.Len(t, j, 1)
		require.Equal(t, since, j[0].Since)
		require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Since: since, Log: log}))
		return notes()
	}
	require.NoError(t, c.Step(join))
	said[RoomJoinOut](c)
	require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Log: roomLog[:1]}))
	settleC(t, c)

	step := sent(Step{UnitPacket, 5})
	sent(Set{Key: "ring_size", Value: "64"}) // into the dying connection
	require.NoError(t, c.Step(RoomCommand{Seq: 2, Cmd: step}))
	settleC(t, c)
	require.NoError(t, c.Step(RoomDropped{Room: "r"}))
	require.NoError(t, c.Step(again))
	said[RoomJoinOut](c)
	early := sent(Step{UnitPacket, 1}) // on the new connection, before its welcome
	require.NoError(t, c.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Since: 2}))
	assert.Equal(t, []string{"Not applied in the room: the connection dropped before the room acknowledged your command set. Give it again if you still want it."}, notes())

	require.NoError(t, c.Step(RoomCommand{Seq: 3, Cmd: early}))
	assert.Empty(t, back(3), "everything sent was acknowledged")

	pause := sent(Pause{})
	play := sent(Play{})
	assert.Empty(t, back(3, RoomEntry{Seq: 4, Cmd: pause}, RoomEntry{Seq: 5, Cmd: play}), "the log holds them: their broadcasts were lost, not they")

	sent(Step{UnitPacket, 2})
	sent(Set{Key: "ring_size", Value: "128"})
	assert.Equal(t, []string{"Not applied in the room: the connection dropped before the room acknowledged 2 of your commands (step, set). Give them again if you still want them."}, back(5))
}

// TestRetryPolicy: a dropped socket is opened again after half a second,
// doubling to 15 s; the refusals that stand are not_found,
// limit_exceeded and forbidden.
func TestRetryPolicy(t *testing.T) {
	var got []int64
	for i := range 8 {
		got = append(got, RetryDelayMs(i))
	}
	assert.Equal(t, []int64{500, 1000, 2000, 4000, 8000, 15000, 15000, 15000}, got)
	assert.Equal(t, int64(15000), RetryDelayMs(1000), "no overflow")
	for _, code := range []string{proto.CodeNotFound, proto.CodeLimitExceeded, proto.CodeForbidden} {
		assert.True(t, JoinFinal(code), code)
	}
	for _, code := range []string{"", proto.CodeRateLimited, proto.CodeBadState, proto.CodeInternal} {
		assert.False(t, JoinFinal(code), code)
	}
}

// TestJoinResumesWhereTheControllerStands: the join the controller writes
// for a socket that opened asks a reconnect's log after the last command
// it holds of that room, in that role; a first join, another room or
// another role asks for the whole log, and so does the join after a
// welcome from since that did not fit what the page holds.
func TestJoinResumesWhereTheControllerStands(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	c := New("speed=0")
	joins := func(in RoomJoin) RoomJoinOut {
		t.Helper()
		require.NoError(t, c.Step(in))
		js := said[RoomJoinOut](c)
		require.Len(t, js, 1)
		return js[0]
	}
	stu := RoomJoin{Room: "r", Role: RoleStudent, Client: "c1", Name: "  Ada  "}
	assert.Equal(t, RoomJoinOut{Role: RoleStudent, Client: "c1", Name: "Ada"}, joins(stu), "a first join")
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: roomLog[:6]})
	settleC(t, c)

	again := stu
	again.Resume = true
	assert.Equal(t, uint64(6), joins(again).Since, "a reconnect asks for what it missed")
	other := again
	other.Room = "other"
	assert.Zero(t, joins(other).Since, "another room: the whole log")
	inst := again
	inst.Role, inst.Token = RoleInstructor, "tok"
	j := joins(inst)
	assert.Equal(t, RoomJoinOut{Role: RoleInstructor, Token: "tok"}, j, "another role: the whole log, no student's name")

	// The room answers from a command this page does not hold (it
	// forgot its log): the next join asks for the whole log, the one
	// after it from where the page stands again.
	assert.Equal(t, uint64(6), joins(again).Since)
	require.Error(t, c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Since: 20}))
	said[ErrorOut](c)
	assert.Zero(t, joins(again).Since, "after a welcome that did not fit: the whole log")
	assert.Equal(t, uint64(6), joins(again).Since)

	// An instructor's join needs its token; a name is cut to MaxName.
	require.Error(t, c.Step(RoomJoin{Room: "r", Role: RoleInstructor}))
	long := stu
	long.Name = strings.Repeat("é", MaxName)
	assert.Len(t, joins(long).Name, MaxName)

	// The frame is the room's join, under its name.
	b, err := MarshalOut(RoomJoinOut{Role: RoleStudent, Since: 6, Client: "c1", Name: "Ada"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"join","role":"student","since":6,"client":"c1","name":"Ada"}`, string(b))
}

// TestDroppedSaysWhenToReconnect: each drop of a room's socket is
// answered with the next delay of the policy, a welcome starts it over,
// and a join the room refused for good stops it.
func TestDroppedSaysWhenToReconnect(t *testing.T) {
	c := New("speed=0")
	drop := func(refused string) RoomRetryOut {
		t.Helper()
		require.NoError(t, c.Step(RoomDropped{Room: "r", Refused: refused}))
		rs := said[RoomRetryOut](c)
		require.Len(t, rs, 1)
		return rs[0]
	}
	c.Step(RoomJoin{Room: "r", Role: RoleStudent})
	for i, want := range []int64{500, 1000, 2000, 4000, 8000, 15000, 15000} {
		r := drop("")
		assert.Equal(t, i+1, r.Retry)
		assert.False(t, r.Stop)
		assert.Equal(t, want*3/4, r.MinMs, "retry %d", i+1)
		assert.Equal(t, want*5/4, r.MaxMs, "retry %d", i+1)
	}
	assert.Equal(t, RoomRetryOut{Room: "r", Retry: 7, Stop: true, Code: proto.CodeForbidden}, drop(proto.CodeForbidden))
	assert.False(t, drop(proto.CodeRateLimited).Stop, "a refusal that may pass")

	// A welcome: the next drop waits the first delay again.
	c.Step(RoomJoin{Room: "r", Role: RoleStudent, Resume: true})
	c.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: json.RawMessage(`{"preset":"default"}`)})
	settleC(t, c)
	r := drop("")
	assert.Equal(t, 1, r.Retry)
	assert.Equal(t, int64(375), r.MinMs)
	// Another room starts over too.
	c.Step(RoomDropped{Room: "s"})
	assert.Equal(t, 1, said[RoomRetryOut](c)[0].Retry)
}

// TestRoomMessagesOfThePerson: a student's prediction, the instructor's
// showing of the class's predictions and removal of a student become the
// room's messages, in the role that may send them, an answer cut to
// proto.MaxAnswer bytes at a character's boundary.
func TestRoomMessagesOfThePerson(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	q := proto.Question{Tutorial: "xdp", Step: 2, Question: 1}
	predict := RoomPredict{Tutorial: "xdp", Step: 2, Question: 1, Answer: "yes"}

	local := New("speed=0")
	for _, in := range []In{predict, RoomShare(q), RoomRemove{Client: "c1"}} {
		err := local.Step(in)
		require.Error(t, err, "%T outside a room", in)
		assert.Equal(t, proto.CodeBadState, codeOf(err))
	}

	stu := New("speed=0")
	stu.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen})
	settleC(t, stu)
	require.NoError(t, stu.Step(predict))
	assert.Equal(t, []RoomPredictOut{RoomPredictOut(predict)}, said[RoomPredictOut](stu))
	long := predict
	long.Answer = strings.Repeat("a", proto.MaxAnswer-1) + "é"
	require.NoError(t, stu.Step(long))
	got := said[RoomPredictOut](stu)[0].Answer
	assert.Equal(t, strings.Repeat("a", proto.MaxAnswer-1), got, "cut before the character that does not fit")
	assert.Error(t, stu.Step(RoomShare(q)), "a student shares nothing")
	assert.Error(t, stu.Step(RoomRemove{Client: "c1"}), "a student removes nobody")

	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen})
	settleC(t, inst)
	require.NoError(t, inst.Step(RoomShare(q)))
	assert.Equal(t, []RoomShareOut{RoomShareOut(q)}, said[RoomShareOut](inst))
	require.NoError(t, inst.Step(RoomRemove{Client: "c1"}))
	assert.Equal(t, []RoomRemoveOut{{Client: "c1"}}, said[RoomRemoveOut](inst))
	assert.Error(t, inst.Step(predict), "an instructor predicts nothing for the room")

	// The frames are the room's messages, under their names.
	for out, want := range map[Out]string{
		RoomPredictOut(predict):    `{"type":"predict","tutorial":"xdp","step":2,"question":1,"answer":"yes"}`,
		RoomShareOut(q):            `{"type":"share_predictions","tutorial":"xdp","step":2,"question":1}`,
		RoomRemoveOut{Client: "c"}: `{"type":"remove","client":"c"}`,
	} {
		b, err := MarshalOut(out)
		require.NoError(t, err)
		assert.JSONEq(t, want, string(b))
	}
}
