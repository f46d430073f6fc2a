package rooms

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/play"
	"ringlab/proto"
	"ringlab/tutorials"
)

const roomLesson = "---\ntitle: A room's lesson\nlevel: beginner\nduration: 5 min\nlearn:\n- x\n---\n\n" +
	"## Step 1: Run\n\n```ringlab\npreset small-ring\nrun packets=10\ncheck rx_packets >= 10\n```\n"

// TestRoomLogCarriesALesson: the room checks a lesson command with the
// tutorials' parser, numbers and stores it like any command (past the
// usual command size), replays it on its replica so that a step of the
// lesson is checked against it, and a late joiner's welcome carries it.
func TestRoomLogCarriesALesson(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, `{"scenario":{"preset":"small-ring"}}`)
	inst := f.dial(t, cr.Room)
	join(t, inst, RoleInstructor, cr.InstructorToken)
	name := tutorials.LessonName([]byte(roomLesson))

	// A step of a lesson the room does not have: refused, not logged.
	step := fmt.Sprintf(`{"type":"tutorial_step","tutorial":%q,"step":1}`, name)
	send(t, inst, commandJSON(step))
	m := readUntil(t, inst, "error")
	assert.Equal(t, proto.CodeNotFound, m.Code)
	assert.Contains(t, m.Message, "no lesson")

	// A lesson that does not parse: refused with its line.
	bad := strings.Replace(roomLesson, "run packets=10", "frobnicate", 1)
	send(t, inst, commandJSON(`{"type":"lesson","packed":"`+tutorials.PackLesson([]byte(bad))+`"}`))
	m = readUntil(t, inst, "error")
	assert.Equal(t, "cmd.packed", m.Field)
	assert.Contains(t, m.Message, "lesson:13: unknown directive \"frobnicate\"")

	// A lesson larger than an ordinary command, then its step.
	var prose strings.Builder
	for x := uint32(1); prose.Len() < 8000; {
		x = x*1664525 + 1013904223
		prose.WriteByte("abcdefghijklmnopqrstuvwxyz ,.;"[(x>>24)%30])
	}
	long := strings.Replace(roomLesson, "## Step 1", prose.String()+"\n\n## Step 1", 1)
	long = strings.Replace(long, "A room's lesson", "A long lesson", 1)
	lessonCmd := `{"type":"lesson","packed":"` + tutorials.PackLesson([]byte(long)) + `"}`
	require.Greater(t, len(lessonCmd), MaxCommandBytes, "past an ordinary command's size")
	name = tutorials.LessonName([]byte(long))
	step = fmt.Sprintf(`{"type":"tutorial_step","tutorial":%q,"step":1}`, name)
	send(t, inst, commandJSON(lessonCmd))
	send(t, inst, commandJSON(step))
	m = readUntil(t, inst, typeCommand)
	assert.Equal(t, uint64(1), m.Seq)
	assert.Equal(t, lessonCmd, string(m.Cmd))
	m = readUntil(t, inst, typeCommand)
	assert.Equal(t, uint64(2), m.Seq)

	late := f.dial(t, cr.Room)
	w := join(t, late, RoleStudent, "")
	require.Len(t, w.Log, 2)
	assert.Equal(t, lessonCmd, string(w.Log[0].Cmd), "the late joiner gets the lesson")

	// What the late joiner's page does with the welcome.
	c := play.New("speed=0")
	c.Step(play.RoomWelcome{Room: w.Room, You: RoleStudent, Scenario: w.Scenario, Log: w.Log})
	got, err := c.FindTutorial(name)
	require.NoError(t, err)
	assert.Equal(t, "A long lesson", got.Title)

	// A lesson command past the lesson limit is refused by size.
	huge := `{"type":"lesson","packed":"` + strings.Repeat("A", play.MaxRoomLesson+1) + `"}`
	send(t, inst, commandJSON(huge))
	m = readUntil(t, inst, "error")
	assert.Contains(t, m.Message, "a room's lesson is at most")
}
