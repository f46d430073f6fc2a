package play

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
)

// TestClassInTheRoomState: what the room says of its class (presence,
// roster, the class's predictions, what it admits) is the room's state
// the panel draws; the controller adds each question's kind from the
// step it ran and, where the page may show it (the instructor's always,
// a student's once the question is revealed), the engine's answer and
// each answer's verdict.
func TestClassInTheRoomState(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	asked := proto.QuestionPredicted{Tutorial: "descriptor-journey", Step: 2, Question: 0, Count: 4,
		Answers: []proto.AnswerSeen{{Answer: "no", Count: 2}, {Answer: "yes", Count: 1}, {Answer: OtherAnswers, Count: 1}}}

	require.ErrorIs(t, New("speed=0").Step(RoomPresence{Students: 1}), errNotInRoom)

	inst := New("speed=0")
	admits := &proto.Class{Size: 30, InvitationOnly: true, Invite: "inv"}
	require.NoError(t, inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Instructors: 1, Class: admits}))
	settleC(t, inst)
	st := inst.roomState()
	assert.Equal(t, admits, st.Class, "the welcome's class: the invitation at once")
	assert.Equal(t, 1, st.Instructors)
	require.NoError(t, inst.Step(RoomPresence{Students: 2, Instructors: 1}))
	roster := []proto.RosterEntry{{Client: "c1", Name: "Ada", State: "following", Applied: 3}}
	require.NoError(t, inst.Step(RoomRoster{Seq: 3, Students: roster}))
	require.NoError(t, inst.Step(RoomClass{Size: 30, InvitationOnly: true, Invite: "new"}))
	// Predictions at a step this page has not run: no kind, no key.
	require.NoError(t, inst.Step(RoomPredictions{Questions: []proto.QuestionPredicted{asked}}))
	st = inst.roomState()
	assert.Equal(t, 2, st.Students)
	assert.Equal(t, roster, st.Roster)
	assert.Equal(t, "new", st.Class.Invite)
	require.Len(t, st.Predictions, 1)
	assert.Empty(t, st.Predictions[0].Kind)
	assert.Nil(t, st.Predictions[0].Key)

	require.NoError(t, inst.Step(TutorialStep{Tutorial: "descriptor-journey", Step: 2}))
	settleC(t, inst)
	p := inst.roomState().Predictions[0]
	assert.Equal(t, "yesno", p.Kind)
	require.NotNil(t, p.Key, "the instructor sees the engine's answer before revealing it")
	assert.Equal(t, "no", p.Key.Said)
	assert.False(t, p.Revealed)
	assert.Equal(t, []Answered{{"no", 2, "right"}, {"yes", 1, "wrong"}, {OtherAnswers, 1, ""}}, p.Answers)
	require.NoError(t, inst.Step(TutorialReveal{Tutorial: "descriptor-journey", Step: 2, Question: 0}))
	assert.True(t, inst.roomState().Predictions[0].Revealed)

	// A student: the shared distribution, its answer once revealed; no
	// roster, no class's predictions.
	stu := New("speed=0")
	require.NoError(t, stu.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen,
		Log: entries(`{"type":"tutorial_step","tutorial":"descriptor-journey","step":2}`)}))
	settleC(t, stu)
	require.NoError(t, stu.Step(RoomRoster{Seq: 3, Students: roster}))
	require.NoError(t, stu.Step(RoomPredictions{Questions: []proto.QuestionPredicted{asked}}))
	require.NoError(t, stu.Step(RoomPredictions{Shared: true, Questions: []proto.QuestionPredicted{asked}}))
	st = stu.roomState()
	assert.Empty(t, st.Roster)
	assert.Empty(t, st.Predictions)
	require.NotNil(t, st.Shared)
	assert.Equal(t, "yesno", st.Shared.Kind, "how to draw it")
	assert.Nil(t, st.Shared.Key, "not revealed: the engine's answer stays hidden")
	assert.Empty(t, st.Shared.Answers[0].Verdict)
	require.NoError(t, stu.Step(RoomCommand{Seq: 2, Cmd: json.RawMessage(`{"type":"tutorial_reveal","tutorial":"descriptor-journey","step":2,"question":0}`)}))
	settleC(t, stu)
	st = stu.roomState()
	require.NotNil(t, st.Shared.Key, "revealed")
	assert.Equal(t, "right", st.Shared.Answers[0].Verdict)
}
