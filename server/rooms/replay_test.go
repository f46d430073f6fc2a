package rooms

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorilla/websocket"

	"ringlab/engine/scenario"
	"ringlab/internal/testenv"
	"ringlab/internal/wstest"
	"ringlab/proto"
)

// TestCommandsBoundedByReplay: every command is replayed on the room's
// replica first; one that costs a browser more than MaxCommandWork (a
// seek far ahead, a million-event step of xdp-drop: 64 million packets)
// is refused, as is one that takes the world past MaxReplayWork since
// its last reset, and a reset makes room again.
func TestCommandsBoundedByReplay(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{MaxCommandWork: 400_000, MaxReplayWork: 1_000_000, WorkPerSecond: 1 << 40}})
	cr := f.create(t, `{"scenario":{"preset":"xdp-drop"}}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	command := func(cmd string) rmsg {
		t.Helper()
		f.clock.Advance(time.Second) // within the command rate
		send(t, in, commandJSON(cmd))
		for {
			m := wstest.Read[rmsg](t, in, replayWait)
			if m.Type == typeCommand || m.Type == "error" {
				return m
			}
		}
	}
	for _, cmd := range []string{
		fmt.Sprintf(`{"type":"seek","t_ns":%d}`, int64(1)<<62),
		`{"type":"step","n":1000000}`,
		`{"type":"step","unit":"ns","n":1000000000000}`,
	} {
		m := command(cmd)
		require.Equal(t, "error", m.Type, cmd)
		assert.Equal(t, proto.CodeLimitExceeded, m.Code, cmd)
		assert.Contains(t, m.Message, "units of replay", cmd)
	}
	// Steps within the budget pass until the world since its build is
	// at MaxReplayWork.
	ok := 0
	for {
		m := command(`{"type":"step","unit":"packet","n":100000}`)
		if m.Type == "error" {
			assert.Contains(t, m.Message, "since it was last built")
			break
		}
		ok++
		require.Less(t, ok, 10)
	}
	assert.Equal(t, 3, ok, "three steps of 100 000 packets (about 3.01 units each) fit in a million")
	assert.Equal(t, typeCommand, command(`{"type":"preset","name":"default"}`).Type, "a reset builds a new world")
	assert.Equal(t, typeCommand, command(`{"type":"step","unit":"packet","n":1000}`).Type)
	// What was logged replays within the budget: its last reset is the
	// preset.
	log := f.reg.lookup(cr.Room).Log()
	r := newFollower(t, "xdp-drop")
	for _, e := range log {
		r.apply(e.Cmd)
	}
	assert.LessOrEqual(t, r.c.ReplayCost(), uint64(1_000_000))
}

// replayWait bounds waiting for the answer to a command the server
// replays first: seconds of engine work under the race detector on a
// loaded machine.
const replayWait = 60 * time.Second

// readReplayed is readUntil with replayWait.
func readReplayed(t *testing.T, c *websocket.Conn, typ string) rmsg {
	t.Helper()
	for {
		m := wstest.Read[rmsg](t, c, replayWait)
		if m.Type == typ {
			return m
		}
		if m.Type == typeRoster || m.Type == typePredictions {
			continue
		}
		require.Equal(t, typePresence, m.Type, "unexpected %+v while waiting for %s", m, typ)
	}
}

// TestRoomWorkIsRateLimited: a room that spends its replay budget waits
// for it to refill.
func TestRoomWorkIsRateLimited(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{MaxCommandWork: 500_000, WorkPerSecond: 100_000}})
	cr := f.create(t, `{"scenario":{"preset":"xdp-drop"}}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	for range 2 { // the budget, and a command's worth of debt
		send(t, in, commandJSON(`{"type":"step","unit":"packet","n":150000}`))
		require.Equal(t, typeCommand, readReplayed(t, in, typeCommand).Type)
	}
	f.clock.Advance(time.Second) // 100 000 back: still short of what was spent
	send(t, in, commandJSON(`{"type":"step"}`))
	e := readReplayed(t, in, "error")
	assert.Equal(t, proto.CodeRateLimited, e.Code)
	f.clock.Advance(4 * time.Second)
	send(t, in, commandJSON(`{"type":"step"}`))
	assert.Equal(t, uint64(3), readReplayed(t, in, typeCommand).Seq)
}

// TestRoomScenariosAreChecked: a room's scenario is a preset or one the
// engine's validator takes, within a browser tab's memory; a set that
// would grow the world past it, or that every page would refuse, is
// refused too.
func TestRoomScenariosAreChecked(t *testing.T) {
	f := newFixture(t, Options{})
	big := scenario.Default()
	big.CPUs, big.Queues, big.RingSize, big.TxRingSize, big.MemoryPages = 64, 64, 32768, 32768, scenario.MaxMemoryPages
	big.Traffic.Flows = 64
	require.NoError(t, big.Validate())
	bigJSON, err := json.Marshal(big)
	require.NoError(t, err)
	ok := scenario.Default()
	okJSON, err := json.Marshal(ok)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
		field      string
	}{
		{"an unknown field", `{"scenario":{"bogus":1}}`, http.StatusBadRequest, proto.CodeUnknownField, "scenario.bogus"},
		{"a field in another case", `{"scenario":{"Seed":1}}`, http.StatusBadRequest, proto.CodeUnknownField, "scenario.Seed"},
		{"an invalid value", `{"scenario":{"ring_size":1000}}`, http.StatusBadRequest, proto.CodeBadField, "scenario.ring_size"},
		{"an unknown preset", `{"scenario":{"preset":"nope"}}`, http.StatusBadRequest, proto.CodeNotFound, "scenario.preset"},
		{"the largest valid world", `{"scenario":` + string(bigJSON) + `}`, http.StatusRequestEntityTooLarge, proto.CodeLimitExceeded, "scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.post(t, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", b)
			var e rmsg
			require.NoError(t, json.Unmarshal(b, &e))
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, tc.field, e.Field, e.Message)
		})
	}
	f.create(t, `{"scenario":`+string(okJSON)+`}`)

	cr := f.create(t, `{"scenario":{"preset":"default"}}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	for _, tc := range []struct{ cmd, code, field string }{
		{`{"type":"set","key":"ring_size","value":"1000"}`, proto.CodeOutOfRange, "cmd.value"},
		{`{"type":"preset","name":"nope"}`, proto.CodeNotFound, "cmd.name"},
		{`{"type":"tutorial_step","tutorial":"nope","step":1}`, proto.CodeNotFound, "cmd.tutorial"},
		{`{"type":"tutorial_step","tutorial":"descriptor-journey","step":99}`, proto.CodeOutOfRange, "cmd.step"},
		{`{"type":"set","key":"queues","value":"16"}`, "", ""},
		{`{"type":"set","key":"ring_size","value":"32768"}`, proto.CodeLimitExceeded, "cmd"}, // 420 MiB
	} {
		f.clock.Advance(time.Second)
		send(t, in, commandJSON(tc.cmd))
		if tc.code == "" {
			readUntil(t, in, typeCommand)
			continue
		}
		e := readUntil(t, in, "error")
		assert.Equal(t, tc.code, e.Code, "%s: %s", tc.cmd, e.Message)
		assert.Equal(t, tc.field, e.Field, tc.cmd)
	}
	f.clock.Advance(time.Second)
	send(t, in, commandJSON(`{"type":"set","key":"ring_size","value":"1024"}`))
	assert.Equal(t, uint64(2), readUntil(t, in, typeCommand).Seq, "refused commands take no number")
}

// TestReplicasWithinTheirBudget: the server's replicas of the rooms'
// worlds fit MaxReplicaBytes, counted as each holds them (its worlds,
// marks included, and the ceiling of one working); the least recently
// used is dropped and rebuilt from its log when its room is commanded
// again.
func TestReplicasWithinTheirBudget(t *testing.T) {
	def, err := scenario.LookupPreset("default")
	require.NoError(t, err)
	one := def.MemoryEstimate()
	budget := 3*one + one/2 // a working replica's ceiling (three worlds) and no more
	f := newFixture(t, Options{Limits: Limits{MaxReplicaBytes: budget}})
	var rooms []createResponse
	for range 3 {
		cr := f.create(t, `{"scenario":{"preset":"default"}}`)
		in := f.dial(t, cr.Room)
		join(t, in, RoleInstructor, cr.InstructorToken)
		send(t, in, commandJSON(`{"type":"step","unit":"packet","n":100}`))
		readReplayed(t, in, typeCommand)
		rooms = append(rooms, cr)
	}
	f.reg.replicas.mu.Lock()
	assert.LessOrEqual(t, f.reg.replicas.bytes, budget)
	var sum int64
	for _, rep := range f.reg.replicas.byRoom {
		assert.False(t, rep.working)
		held, _ := heldBy(rep.c)
		assert.Equal(t, held, rep.held, "counted as it holds")
		sum += held
	}
	assert.Equal(t, sum, f.reg.replicas.bytes)
	first := f.reg.lookup(rooms[0].Room)
	_, kept := f.reg.replicas.byRoom[first]
	f.reg.replicas.mu.Unlock()
	assert.False(t, kept, "the least recently used went")

	in := f.dial(t, rooms[0].Room)
	join(t, in, RoleInstructor, rooms[0].InstructorToken)
	send(t, in, commandJSON(`{"type":"step","unit":"packet","n":100}`))
	assert.Equal(t, uint64(2), readReplayed(t, in, typeCommand).Seq, "rebuilt from the log")
	r := newFollower(t, "default")
	for _, e := range first.Log() {
		r.apply(e.Cmd)
	}
	assert.Equal(t, r.hash(), hashOf(f.reg.replicas.get(first)), "the rebuilt replica is the log's world")
}

func hashOf(rep *replica) string {
	if rep == nil {
		return ""
	}
	return (&follower{c: rep.c}).hash()
}

// TestRefusalsAreLoggedThrottled: a flood of refused room connections
// writes a few lines, the last saying how many it left out.
func TestRefusalsAreLoggedThrottled(t *testing.T) {
	logged := &testenv.Buffer{}
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(logged, nil)), Limits: Limits{MaxConnsPerAddr: 1}})
	cr := f.create(t, "")
	f.dial(t, cr.Room)
	for range 50 {
		resp, err := http.Get(f.srv.URL + "/ws/room/" + cr.Room)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	}
	lines := strings.Count(logged.String(), "refused")
	assert.LessOrEqual(t, lines, refusalLogBurst)
	assert.Positive(t, lines)
}

// TestRoomNeverBroadcastsWhatItsReplicaRefused guards the replica reading
// only what its controller's Ready says: a command every page would refuse
// once it applies it (an until of a function no event runs) is refused to
// the instructor, takes no number and reaches no student.
func TestRoomNeverBroadcastsWhatItsReplicaRefused(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, `{"scenario":{"preset":"default"}}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	student := f.dial(t, cr.Room)
	join(t, student, RoleStudent, "")

	send(t, in, commandJSON(`{"type":"until","func":"no_such_function"}`))
	e := readReplayed(t, in, "error")
	assert.Equal(t, proto.CodeOutOfRange, e.Code, e.Message)
	assert.Equal(t, "cmd", e.Field, e.Message)
	assert.Contains(t, e.Message, "no_such_function")
	assert.Empty(t, f.reg.lookup(cr.Room).Log(), "a refused command is not logged")

	// The next command is the room's first, for the student as for the
	// instructor: nothing was broadcast before it.
	f.clock.Advance(time.Second)
	send(t, in, commandJSON(`{"type":"until","func":"virtnet_poll"}`))
	for _, c := range []*websocket.Conn{in, student} {
		m := readReplayed(t, c, typeCommand)
		assert.Equal(t, uint64(1), m.Seq)
		assert.JSONEq(t, `{"type":"until","func":"virtnet_poll"}`, string(m.Cmd))
	}
}

// TestRoomRecipes: a room starts from a recipe, given in its text form
// (as a link carries it) or its JSON form, and every welcome carries it
// in canonical JSON ({"preset": NAME} alone for a bare preset, as before
// recipes); a change refused is named by its place.
func TestRoomRecipes(t *testing.T) {
	f := newFixture(t, Options{})
	for _, tc := range []struct{ body, want string }{
		{`{"recipe":"default cpus=2 page_pool=off"}`, `{"preset":"default","set":["cpus=2","page_pool=off"]}`},
		{`{"scenario":{"preset":"default","set":["cpus=\"2\"", ".mtu=1400"]}}`, `{"preset":"default","set":["cpus=2",".mtu=1400"]}`},
		{`{"recipe":"xdp-drop"}`, `{"preset":"xdp-drop"}`},
	} {
		cr := f.create(t, tc.body)
		in := f.dial(t, cr.Room)
		w := join(t, in, RoleInstructor, cr.InstructorToken)
		assert.Equal(t, tc.want, string(w.Scenario), tc.body)
	}
	for _, tc := range []struct {
		name, body string
		code       string
		field      string
	}{
		{"a change refused in the text", `{"recipe":"default mtu=1500 ring_size=100"}`, proto.CodeBadField, "recipe.set.1"},
		{"a change refused in JSON", `{"scenario":{"preset":"default","set":["ring_size=100"]}}`, proto.CodeBadField, "scenario.set.0"},
		{"a change that does not read", `{"scenario":{"preset":"default","set":["cpus"]}}`, proto.CodeBadField, "scenario.set.0"},
		{"an unknown preset in the text", `{"recipe":"nope cpus=2"}`, proto.CodeBadField, "recipe"},
		{"an unknown preset in JSON", `{"scenario":{"preset":"nope"}}`, proto.CodeNotFound, "scenario.preset"},
		{"a field in another case", `{"scenario":{"preset":"default","Set":["cpus=2"]}}`, proto.CodeUnknownField, "scenario.Set"},
		{"both forms", `{"recipe":"default","scenario":{"preset":"default"}}`, proto.CodeBadField, "recipe"},
		{"an object file", `{"recipe":"default xdp=object:a.o"}`, proto.CodeBadField, "recipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.post(t, tc.body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", b)
			var e rmsg
			require.NoError(t, json.Unmarshal(b, &e))
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, tc.field, e.Field, e.Message)
		})
	}
}
