package rooms

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/wstest"
)

// TestNonReadingMembersAreReset: a student that joins and never reads,
// with a small receive buffer and a welcome (a 32 KiB log) that does not
// fit in it, so the server's kernel holds the rest. However the server
// lets it go, it resets the connection, so the kernel keeps nothing for
// it: when the room expires, and when the server shuts down, within its
// deadline or past it.
func TestNonReadingMembersAreReset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		giveUp func(t *testing.T, f *fixture)
	}{
		{"room expired", func(t *testing.T, f *fixture) {
			f.clock.Advance(IdleExpiry)
			require.Equal(t, 1, f.reg.Sweep())
		}},
		{"shutdown", func(t *testing.T, f *fixture) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, f.reg.Close(ctx))
		}},
		{"shutdown past its deadline", func(t *testing.T, f *fixture) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.Error(t, f.reg.Close(ctx), "the connections were dropped")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{
				// The student never reads, so it never answers the close
				// frame: it is reset after the grace.
				Limits:    Limits{CommandsPerSecond: 1000, CloseGrace: 200 * time.Millisecond},
				Validator: func(cmd json.RawMessage) (json.RawMessage, error) { return cmd, nil },
			})
			cr := f.create(t, "")
			in := f.dial(t, cr.Room)
			join(t, in, RoleInstructor, cr.InstructorToken)
			pad := strings.Repeat("p", 4000)
			for i := range 8 {
				send(t, in, commandJSON(fmt.Sprintf(`{"type":"set","key":"pad","value":%q}`, pad)))
				require.Equal(t, uint64(i+1), readUntil(t, in, typeCommand).Seq)
			}
			in.Close()
			rm := f.reg.lookup(cr.Room)
			require.Eventually(t, underLock(rm, func() bool { return rm.instructors == 0 }), readWait, time.Millisecond, "the instructor left")

			stu := wstest.DialSmallBuffer(t, wstest.URL(f.srv.URL, "/ws/room/"+cr.Room+"?invite="+cr.Invite))
			require.NoError(t, stu.WriteMessage(websocket.TextMessage, []byte(`{"type":"join","role":"student"}`)))
			require.Eventually(t, underLock(rm, func() bool {
				for m := range rm.members {
					if m.peer.Sent() > 0 {
						return true
					}
				}
				return false
			}), readWait, time.Millisecond, "the welcome was written into the kernel")

			tc.giveUp(t, f)
			wstest.RequireReset(t, stu.NetConn(), 10*time.Second)
			assert.Eventually(t, underLock(rm, func() bool { return len(rm.members) == 0 }), readWait, time.Millisecond, "the student left the room")
		})
	}
}

// underLock returns f run with rm's lock held.
func underLock(rm *room, f func() bool) func() bool {
	return func() bool {
		rm.mu.Lock()
		defer rm.mu.Unlock()
		return f()
	}
}
