package rooms

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/sim"
	"ringlab/engine/view"
)

// replica is what every browser in a room does with the numbered log: it
// runs its own engine and applies the commands in order. Play and pause
// only start and stop the local clock; what the room shares is what they
// lead to, which the instructor pins with step and seek.
type replica struct {
	t   *testing.T
	cfg view.Config
	s   *view.Session
}

func newReplica(t *testing.T, preset string) *replica {
	r := &replica{t: t, cfg: view.Config{Preset: preset}}
	r.restart()
	return r
}

func (r *replica) restart() {
	s, err := view.NewSession(view.State{A: r.cfg, Speed: 0})
	require.NoError(r.t, err)
	r.s = s
}

func (r *replica) run(c view.Command) {
	r.s.Do(c)
	for r.s.Busy() {
		r.s.Work(1 << 20)
	}
	require.NoError(r.t, r.s.Stopped())
}

func (r *replica) apply(raw json.RawMessage) {
	var c struct {
		Type  string          `json:"type"`
		Name  string          `json:"name"`
		Param string          `json:"param"`
		Value json.RawMessage `json:"value"`
		N     *int            `json:"n"`
		TNs   *int64          `json:"t_ns"`
	}
	require.NoError(r.t, json.Unmarshal(raw, &c))
	switch c.Type {
	case "preset":
		r.cfg = view.Config{Preset: c.Name}
		r.restart()
	case "set":
		var v string
		if json.Unmarshal(c.Value, &v) != nil {
			v = string(c.Value)
		}
		kept := r.cfg.Set[:0]
		for _, kv := range r.cfg.Set {
			if kv.Key != c.Param {
				kept = append(kept, kv)
			}
		}
		r.cfg.Set = append(kept, view.KV{Key: c.Param, Value: v})
		r.restart()
	case "step":
		n := 1
		if c.N != nil {
			n = *c.N
		}
		r.run(view.Command{Op: view.OpEvents, N: uint64(n)})
	case "seek":
		now := r.s.Panes[0].World.Now()
		if t := sim.Time(*c.TNs); t > now {
			r.run(view.Command{Op: view.OpTime, N: uint64(t - now)})
		}
	}
}

// hash is the engine's state as a digest: time, events, every counter and
// where every page is.
func (r *replica) hash() string {
	w := r.s.Panes[0].World
	h := sha256.New()
	fmt.Fprintf(h, "t=%d events=%d\n", w.Now(), w.Sim.Queue.Fired())
	for _, c := range w.Totals() {
		fmt.Fprintf(h, "%s=%d\n", c.Name, c.Value)
	}
	pages := w.Pages()
	locs := make([]string, 0, len(pages))
	for l := range pages {
		locs = append(locs, l)
	}
	sort.Strings(locs)
	for _, l := range locs {
		fmt.Fprintf(h, "%s=%d\n", l, pages[l])
	}
	return hex.EncodeToString(h.Sum(nil))
}

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
		`{"type":"set","param":"ring_size","value":"256"}`,
		`{"type":"play","speed":2}`,
		`{"type":"step","n":400}`,
		`{"type":"pause"}`,
		`{"type":"set","param":"xdp","value":"xdp_drop"}`,
		`{"type":"seek","t_ns":300000}`,
		`{"type":"step","n":123}`,
	}
	// A student's command is refused and changes nothing.
	send(t, conns[0], commandJSON("not-the-token", `{"type":"step","n":99}`))
	assert.Equal(t, "error", readUntil(t, conns[0], "error").Type)
	for _, c := range cmds {
		send(t, instructor, commandJSON(cr.InstructorToken, c))
	}
	replay := func(c *websocket.Conn) (*replica, []uint64) {
		r := newReplica(t, "default")
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
	assert.Equal(t, "xdp_drop", ri.s.Panes[0].Scenario.XDP.Program)
	assert.GreaterOrEqual(t, int64(ri.s.Panes[0].World.Now()), int64(300000))
	for i, c := range conns {
		r, _ := replay(c)
		assert.Equal(t, want, r.hash(), "student %d", i)
	}
	// The late joiner replays the log it gets in welcome.
	late := f.dial(t, cr.Room)
	w := join(t, late, RoleStudent, "")
	require.Len(t, w.Log, len(cmds))
	r := newReplica(t, "default")
	for _, e := range w.Log {
		r.apply(e.Cmd)
	}
	assert.Equal(t, want, r.hash(), "late joiner")
	// The digest is not trivially equal: one more step changes it.
	r.apply(json.RawMessage(`{"type":"step","n":1}`))
	assert.NotEqual(t, want, r.hash())
}
