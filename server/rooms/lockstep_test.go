package rooms

import (
	"encoding/json"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/play"
)

// follower is what every browser in a room does with the numbered log:
// its controller (package play) runs its own engine and applies the
// commands in order, each once the run is idle. Play and pause only start
// and stop a clock (students have none); what the room shares is what
// they lead to, which the instructor pins with step and seek.
type follower struct {
	t   *testing.T
	c   *play.Controller
	seq uint64
}

func newFollower(t *testing.T, preset string) *follower {
	c := play.New("preset=" + preset + "&speed=0")
	r := &follower{t: t, c: c}
	welcome, err := json.Marshal(map[string]string{"preset": preset})
	require.NoError(t, err)
	r.c.Step(play.RoomWelcome{Room: "lockstep", You: play.RoleStudent, Scenario: welcome})
	r.settle()
	return r
}

// settle works until the controller has applied everything it was given.
func (r *follower) settle() {
	for i := 0; ; i++ {
		require.Less(r.t, i, 1_000_000, "the follower never settles")
		r.c.Tick(0)
		more := r.c.Work(1 << 16)
		for _, o := range r.c.Ready().Send {
			if e, ok := o.(play.ErrorOut); ok {
				r.t.Fatalf("the follower refused a command: %s", e.Message)
			}
		}
		if !more {
			return
		}
	}
}

func (r *follower) apply(raw json.RawMessage) {
	r.seq++
	r.c.Step(play.RoomCommand{Seq: r.seq, Cmd: raw})
	r.settle()
	require.NoError(r.t, r.c.Session().Stopped())
}

// hash is the engine's state as a digest (play.Controller.Digest: time,
// events, every counter and where every page is).
func (r *follower) hash() string { return r.c.Digest() }

// TestWorkshopLockstep: an instructor and three students, each running the
// engine on the room's numbered log, end in the same state; a late joiner
// replaying the log from welcome reaches it too; a student without the
// token cannot change anyone's state.
func TestWorkshopLockstep(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, `{"scenario":{"preset":"default"}}`)
	instructor := f.dial(t, cr.Room)
	join(t, instructor, RoleInstructor, cr.InstructorToken)
	var conns []*websocket.Conn
	for range 3 {
		s := f.dial(t, cr.Room)
		join(t, s, RoleStudent, "")
		conns = append(conns, s)
	}
	cmds := []string{
		`{"type":"preset","name":"cpumap"}`,
		`{"type":"set","key":"ring_size","value":"256"}`,
		`{"type":"play","speed":2}`,
		`{"type":"step","n":400}`,
		`{"type":"pause"}`,
		`{"type":"set","key":"xdp","value":"xdp_drop"}`,
		`{"type":"seek","t_ns":300000}`,
		`{"type":"step","n":123}`,
	}
	// A student's command is refused and changes nothing.
	send(t, conns[0], commandJSON(`{"type":"step","n":99}`))
	assert.Equal(t, "error", readUntil(t, conns[0], "error").Type)
	for _, c := range cmds {
		send(t, instructor, commandJSON(c))
	}
	replay := func(c *websocket.Conn) (*follower, []uint64) {
		r := newFollower(t, "default")
		var seqs []uint64
		for range cmds {
			m := readUntil(t, c, typeCommand)
			seqs = append(seqs, m.Seq)
			r.apply(m.Cmd)
		}
		return r, seqs
	}
	ri, seqs := replay(instructor)
	want := ri.hash()
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8}, seqs)
	assert.Equal(t, "xdp_drop", ri.c.Session().Panes[0].Scenario.XDP.Program)
	assert.GreaterOrEqual(t, int64(ri.c.Session().Panes[0].World.Now()), int64(300000))
	for i, c := range conns {
		r, _ := replay(c)
		assert.Equal(t, want, r.hash(), "student %d", i)
	}
	// The late joiner replays the log it gets in welcome.
	late := f.dial(t, cr.Room)
	w := join(t, late, RoleStudent, "")
	require.Len(t, w.Log, len(cmds))
	r := newFollower(t, "default")
	for _, e := range w.Log {
		r.apply(e.Cmd)
	}
	assert.Equal(t, want, r.hash(), "late joiner")
	// The digest is not trivially equal: one more step changes it.
	r.apply(json.RawMessage(`{"type":"step","n":1}`))
	assert.NotEqual(t, want, r.hash())
}
