package abuse

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/server/rooms"
)

// TestKillsMidCommands: an instructor commanding as fast as the room
// takes it while the server is killed (SIGKILL) again and again, one
// command sent and not yet answered at each kill. After every restart
// the room's log has every command that was acknowledged, as it was
// sent, numbered without a gap; the one in flight is there or not.
func TestKillsMidCommands(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	room, code := s.createRoom(`{"preset":"default"}`)
	require.Equal(t, http.StatusCreated, code)
	kills := scale(3, 12)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 27))
	sent := map[uint64]string{} // acknowledged: seq -> command
	var acked uint64
	cmd := func(i int) string { return fmt.Sprintf(`{"type":"step","unit":"event","n":%d}`, 1+i%997) }
	i := 0
	for k := 0; k < kills; k++ {
		inst, _ := join(t, s, room, "instructor")
		until := time.Now().Add(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		for time.Now().Before(until) {
			c := cmd(i)
			i++
			inst.command(c)
			r, ok := inst.reply(10 * time.Second)
			require.True(t, ok)
			if r.Type != "command" {
				time.Sleep(50 * time.Millisecond) // rate limited
				continue
			}
			var seq uint64
			require.NoError(t, json.Unmarshal(r.field("seq"), &seq))
			require.Equal(t, acked+1, seq, "numbered without a gap")
			acked = seq
			sent[seq] = string(r.field("cmd"))
		}
		inst.command(cmd(i))                                             // in flight at the kill
		inflight, err := rooms.DefaultValidator(json.RawMessage(cmd(i))) // as the log would have it
		require.NoError(t, err)
		i++
		s.restart()

		stu, w := join(t, s, room, "student")
		stu.c.Close()
		log := welcomeLog(t, w)
		require.GreaterOrEqual(t, uint64(len(log)), acked, "kill %d: every acknowledged command is in the log", k+1)
		for j, e := range log {
			require.Equal(t, uint64(j+1), e.Seq)
			if want, ok := sent[e.Seq]; ok {
				assert.JSONEq(t, want, string(e.Cmd), "command %d as it was acknowledged", e.Seq)
			} else {
				assert.Equal(t, acked+1, e.Seq, "only the command in flight may be there unacknowledged")
				assert.JSONEq(t, string(inflight), string(e.Cmd))
				acked = e.Seq // the log has it: numbering goes on after it
				sent[e.Seq] = string(e.Cmd)
			}
		}
	}
	figure(t, "commands acknowledged across SIGKILLs", float64(len(sent)), "commands", fmt.Sprintf("%d kills, each with a command in flight; every one in the log after each restart", kills))
}
