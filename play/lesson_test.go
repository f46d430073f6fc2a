package play

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/tutorials"
)

// testLesson is a lesson as a reader writes one: two steps, a question.
const testLesson = "---\n" +
	"title: Twenty packets\n" +
	"level: beginner\n" +
	"duration: 5 min\n" +
	"learn:\n" +
	"- that the driver counts what it receives\n" +
	"---\n\n" +
	"Twenty packets through the default preset.\n\n" +
	"## Step 1: Run\n\n" +
	"```ringlab\n" +
	"preset default\n" +
	"question yesno \"Does rx_packets count them?\"\n" +
	"run packets=20\n" +
	"answer yes because rx_packets >= 20\n" +
	"```\n\n" +
	"## Step 2: Again\n\n" +
	"```ringlab\n" +
	"run packets=20\n" +
	"check rx_packets >= 40\n" +
	"```\n"

// sent returns what a Ready sends, split: the room's commands, the
// errors and the rest.
func sent(c *Controller) (cmds []json.RawMessage, errs []ErrorOut, rest []Out) {
	for _, o := range c.Ready().Send {
		switch o := o.(type) {
		case RoomSendOut:
			cmds = append(cmds, o.Cmd)
		case ErrorOut:
			errs = append(errs, o)
		default:
			rest = append(rest, o)
		}
	}
	return
}

func loadJSON(t *testing.T, text, source string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": "lesson_load", "id": 9, "text": text, "source": source})
	require.NoError(t, err)
	return b
}

// TestLessonLoad: a lesson given as text or packed is checked by the
// tutorials' parser and kept; the panel then reads and runs it as it does
// an embedded tutorial. A bad one is refused with the line at fault and
// changes nothing.
func TestLessonLoad(t *testing.T) {
	c := New("preset=small-ring&speed=0")
	c.Ready()
	name := tutorials.LessonName([]byte(testLesson))

	// Bad input first: the page is as it was after each.
	digest, cfg := c.Digest(), c.sess.Panes[0].Config
	bad := []struct{ text, want string }{
		{strings.Replace(testLesson, "run packets=20\ncheck", "frobnicate 3\ncheck", 1), "mine.md:23: unknown directive \"frobnicate\""},
		{strings.Replace(testLesson, "rx_packets >= 40", "rx_packets >", 1), "mine.md:24: check: want a number"},
		{"\x89PNG\r\n\x1a\n\x00\x00", "mine.md:2: not Markdown text: control byte 0x1a"},
		{"# A README\n\nSome prose.\n", "mine.md:1: a tutorial starts with front matter"},
		{strings.Repeat("x", tutorials.MaxLessonBytes+1), "mine.md:1: 262145 bytes: a lesson has at most 262144 bytes"},
		{"", "mine.md:1: empty"},
	}
	for _, tc := range bad {
		require.Error(t, c.StepJSON(loadJSON(t, tc.text, "mine.md")))
		_, errs, rest := sent(c)
		require.Len(t, errs, 1, tc.want)
		assert.Equal(t, 9, errs[0].ID, "the request's answer")
		assert.Contains(t, errs[0].Message, tc.want)
		for _, o := range rest {
			assert.IsType(t, StateOut{}, o, "nothing but the state")
		}
	}
	require.Error(t, c.StepJSON([]byte(`{"type":"lesson_load","packed":"!!not base64","id":3}`)))
	_, errs, _ := sent(c)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Message, "base64")
	assert.Empty(t, c.lessons, "no lesson kept")
	_, err := c.FindTutorial(name)
	assert.ErrorContains(t, err, "no lesson")
	assert.Equal(t, digest, c.Digest(), "pane A's world untouched")
	assert.Equal(t, cfg, c.sess.Panes[0].Config)

	// A good one, as text.
	require.NoError(t, c.StepJSON(loadJSON(t, testLesson, "mine.md")))
	_, errs, rest := sent(c)
	require.Empty(t, errs)
	var out LessonOut
	for _, o := range rest {
		if l, ok := o.(LessonOut); ok {
			out = l
		}
	}
	require.NotNil(t, out.Tutorial)
	assert.Equal(t, name, out.Tutorial.Name)
	assert.Equal(t, "Twenty packets", out.Tutorial.Title)
	assert.Equal(t, len(testLesson), out.Bytes)
	assert.True(t, out.Room)
	text, err := tutorials.UnpackLesson(out.Link)
	require.NoError(t, err)
	assert.Equal(t, testLesson, string(text), "the link carries the text")

	// The same lesson from its link: the same name.
	d := New("speed=0")
	d.Ready()
	require.NoError(t, d.StepJSON([]byte(`{"type":"lesson_load","packed":"`+out.Link+`","id":4}`)))
	_, errs, _ = sent(d)
	require.Empty(t, errs)
	tt, err := d.FindTutorial(name)
	require.NoError(t, err)
	assert.Equal(t, 2, len(tt.Steps))

	// The panel reads it and runs its steps as it does the nine.
	require.NoError(t, c.StepJSON([]byte(`{"type":"tutorial","name":"`+name+`","id":5}`)))
	_, errs, rest = sent(c)
	require.Empty(t, errs)
	var got *tutorials.Tutorial
	for _, o := range rest {
		if o, ok := o.(TutorialOut); ok {
			got = o.Tutorial
		}
	}
	require.NotNil(t, got)
	assert.Equal(t, name, got.Name)
	for step := 1; step <= 2; step++ {
		require.NoError(t, c.Step(Request{In: TutorialStep{Tutorial: name, Step: step}, ID: 6}))
		settleC(t, c)
		assert.Equal(t, fmt.Sprintf("%s step %d", name, step), c.sess.Panes[0].World.Scenario.Name)
		assert.Equal(t, step, c.tut.sess.Next(), "the lesson's own session ran to step %d", step)
	}
	assert.Contains(t, c.sess.Panes[0].World.Scenario.Description, "Lesson (Twenty packets), step 2")
	assert.GreaterOrEqual(t, c.sess.Panes[0].World.Received(), uint64(40))
}

// canon is what the server logs of a command the page sent: checked and
// canonical (rooms.DefaultValidator).
func canon(t *testing.T, cmds []json.RawMessage) []RoomEntry {
	t.Helper()
	var out []RoomEntry
	for i, raw := range cmds {
		in, err := ParseCommand(raw)
		require.NoError(t, err, "%s", raw)
		b, err := EncodeCommand(in)
		require.NoError(t, err)
		out = append(out, RoomEntry{Seq: uint64(i + 1), Cmd: b})
	}
	return out
}

// TestRoomCarriesLesson: an instructor's step of a lesson sends the
// lesson into the room's log first, once; a student who joins late, one
// who reconnects and the server's replica (a follower) all get it from
// the log and reach the instructor's world.
func TestRoomCarriesLesson(t *testing.T) {
	scen := json.RawMessage(`{"preset":"default"}`)
	name := tutorials.LessonName([]byte(testLesson))
	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen})
	settleC(t, inst)
	on := New("speed=0") // a student there from the start
	on.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen})
	settleC(t, on)
	require.NoError(t, inst.StepJSON(loadJSON(t, testLesson, "mine.md")))
	settleC(t, inst)

	var log []json.RawMessage
	for step := 1; step <= 2; step++ {
		require.NoError(t, inst.Step(TutorialStep{Tutorial: name, Step: step}))
		cmds, errs, _ := sent(inst)
		require.Empty(t, errs)
		log = append(log, cmds...)
	}
	require.Len(t, log, 3, "the lesson once, then the two steps")
	assert.Equal(t, "lesson", MessageType(log[0]))
	entries := canon(t, log)
	for _, e := range entries {
		inst.Step(RoomCommand(e))
		on.Step(RoomCommand(e))
	}
	settleC(t, inst)
	settleC(t, on)
	assert.Equal(t, inst.Digest(), on.Digest(), "a student there all along")
	got, err := on.FindTutorial(name)
	require.NoError(t, err, "the student has the lesson")
	assert.Equal(t, "Twenty packets", got.Title)

	late := New("speed=0")
	late.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries})
	var step *TutorialStepOut
	for i := 0; i < 100_000 && late.Work(1<<16); i++ {
		late.Tick(0)
	}
	for _, o := range late.Ready().Send {
		if o, ok := o.(TutorialStepOut); ok {
			step = &o
		}
		if o, ok := o.(ErrorOut); ok {
			t.Fatalf("late joiner: %s", o.Message)
		}
	}
	require.NotNil(t, step, "the late joiner's panel opens at the room's step")
	assert.Equal(t, name, step.Tutorial)
	assert.Equal(t, 2, step.Step)
	assert.True(t, step.Room)
	assert.Equal(t, inst.Digest(), late.Digest(), "a late joiner")
	_, err = late.FindTutorial(name)
	require.NoError(t, err)

	// A reconnect: the log so far, then the rest.
	re := New("speed=0")
	re.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries[:1]})
	settleC(t, re)
	re.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries})
	settleC(t, re)
	assert.Equal(t, inst.Digest(), re.Digest(), "a reconnect")

	// The server's replica, and the instructor's own reload.
	rep := NewFollower()
	rep.Step(RoomWelcome{Room: "r", You: RoleStudent, Scenario: scen, Log: entries})
	settleC(t, rep)
	assert.Equal(t, inst.Digest(), rep.Digest(), "the server's replica")
	reload := New("speed=0")
	reload.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: scen, Log: entries})
	settleC(t, reload)
	assert.Equal(t, inst.Digest(), reload.Digest(), "the instructor's reload")
	require.NoError(t, reload.Step(TutorialStep{Tutorial: name, Step: 1}))
	cmds, _, _ := sent(reload)
	require.Len(t, cmds, 1, "the room has the lesson: only the step goes")

	// A page without the lesson cannot step it.
	fresh := New("speed=0")
	fresh.Step(RoomWelcome{Room: "r2", You: RoleInstructor, Scenario: scen})
	settleC(t, fresh)
	assert.ErrorContains(t, fresh.Step(TutorialStep{Tutorial: name, Step: 1}), "no lesson")
}

// TestRoomLessonTooBig: a lesson too long for a room's command is said
// so to the instructor, and nothing goes to the room.
func TestRoomLessonTooBig(t *testing.T) {
	// Prose that does not compress: a packed form past MaxRoomLesson.
	var b strings.Builder
	x := uint32(1)
	for b.Len() < 100_000 {
		x = x*1664525 + 1013904223
		b.WriteByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 +"[x>>26])
	}
	text := strings.Replace(testLesson, "Twenty packets through", b.String()+"\n\nTwenty packets through", 1)
	require.Greater(t, len(tutorials.PackLesson([]byte(text))), MaxRoomLesson)
	inst := New("speed=0")
	inst.Step(RoomWelcome{Room: "r", You: RoleInstructor, Scenario: json.RawMessage(`{"preset":"default"}`)})
	settleC(t, inst)
	require.NoError(t, inst.StepJSON(loadJSON(t, text, "big.md")))
	_, _, rest := sent(inst)
	for _, o := range rest {
		if o, ok := o.(LessonOut); ok {
			assert.False(t, o.Room, "too big for a room")
			assert.Empty(t, o.Link, "too big for a link")
		}
	}
	err := inst.Step(TutorialStep{Tutorial: tutorials.LessonName([]byte(text)), Step: 1})
	assert.ErrorContains(t, err, "a room carries at most")
	cmds, _, _ := sent(inst)
	assert.Empty(t, cmds)
	// And the room's codec refuses such a command outright.
	_, err = ParseCommand([]byte(`{"type":"lesson","packed":"` + tutorials.PackLesson([]byte(text)) + `"}`))
	assert.ErrorContains(t, err, "a room's lesson is at most")
}

// TestLessonNamesChecked: a check that reads a name no world has is
// refused when the lesson loads, at its line, before any step runs.
func TestLessonNamesChecked(t *testing.T) {
	c := New("speed=0")
	c.Ready()
	bad := strings.Replace(testLesson, "check rx_packets >= 40", "check rx_packetz >= 40", 1)
	require.Error(t, c.StepJSON(loadJSON(t, bad, "typo.md")))
	_, errs, _ := sent(c)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Message, "typo.md:24: check: no world of this tutorial has a figure named rx_packetz (did you mean rx_packets?)")
	assert.Empty(t, c.lessons)
}
