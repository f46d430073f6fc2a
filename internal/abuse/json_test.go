package abuse

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStrictJSON: names match exactly, once, and numbers fit; anything
// else is an error, never a command.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	inst, _ := join(t, s, room, "instructor")
	cases := map[string]string{
		"a second type in another case": `{"type":"pause","Type":"play"}`,
		"a duplicate name":              `{"type":"pause","type":"play"}`,
		"a name in another case":        `{"Type":"play"}`,
		"1e999":                         `{"type":"set","key":"rate_pps","value":1e999}`,
		"a 30-digit integer":            `{"type":"set","key":"rate_pps","value":123456789012345678901234567890}`,
		"a 30-digit step":               `{"type":"step","n":123456789012345678901234567890}`,
	}
	accepted := 0
	for name, cmd := range cases {
		inst.command(cmd)
		r, ok := inst.reply(10 * time.Second)
		require.True(t, ok, name)
		if r.Type == "command" {
			accepted++
			t.Errorf("%s: %s was broadcast as %s", name, cmd, r.field("cmd"))
		}
	}
	// The envelope and the join too.
	for name, raw := range map[string]string{
		"command with two cmd": `{"type":"command","cmd":{"type":"pause"},"cmd":{"type":"play"}}`,
		"command with Cmd":     `{"type":"command","Cmd":{"type":"play"}}`,
	} {
		inst.send(json.RawMessage(raw))
		r, ok := inst.reply(10 * time.Second)
		require.True(t, ok, name)
		if r.Type == "command" {
			accepted++
			t.Errorf("%s: broadcast %s", name, r.field("cmd"))
		}
	}
	figure(t, "loose messages broadcast", float64(accepted), "of 8", "")
}

// TestCommandTokens: a token seen once (on an unencrypted connection,
// say) must not let any connection command the room: commands come from
// the connection that joined as instructor.
func TestCommandTokens(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	stu, _ := join(t, s, room, "student")
	// A student's connection sending a captured command, token included.
	stu.send(json.RawMessage(`{"type":"command","token":"` + room.Token + `","cmd":{"type":"step","n":5}}`))
	r, ok := stu.reply(10 * time.Second)
	require.True(t, ok)
	replayed := r.Type == "command"
	figure(t, "captured command replayed from a student's connection", b2f(replayed), "accepted", r.str("message"))
	assert.False(t, replayed)
	if !legacy() {
		// The instructor's connection commands without a token.
		inst, _ := join(t, s, room, "instructor")
		inst.command(`{"type":"step","n":5}`)
		r, ok = inst.reply(10 * time.Second)
		require.True(t, ok)
		assert.Equal(t, "command", r.Type, "%s", r.Raw)
		_, ok = stu.wait("command", 10*time.Second) // the student gets it too
		require.True(t, ok)
		// A student's command without a token is forbidden.
		stu.send(json.RawMessage(`{"type":"command","cmd":{"type":"step","n":5}}`))
		r, ok = stu.reply(10 * time.Second)
		require.True(t, ok)
		assert.Equal(t, "error", r.Type)
		assert.True(t, strings.Contains(string(r.Raw), "forbidden"), "%s", r.Raw)
	}
}
