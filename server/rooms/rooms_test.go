package rooms

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/wstest"
	"ringlab/play"
	"ringlab/proto"
)

// readWait bounds every read and wait in these tests: when to give up on
// a message that never comes, not how fast one must come (a loaded
// machine under the race detector took more than 5 s).
const readWait = 30 * time.Second

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// rmsg is any server message of /ws/room, decoded loosely.
type rmsg struct {
	Type        string          `json:"type"`
	Room        string          `json:"room"`
	Version     int             `json:"version"`
	You         string          `json:"you"`
	Scenario    json.RawMessage `json:"scenario"`
	Log         []Entry         `json:"log"`
	Students    int             `json:"students"`
	Instructors int             `json:"instructors"`
	Limits      proto.Limits    `json:"limits"`
	Seq         uint64          `json:"seq"`
	Cmd         json.RawMessage `json:"cmd"`
	Code        string          `json:"code"`
	Message     string          `json:"message"`
	Field       string          `json:"field"`
}

type fixture struct {
	reg   *Registry
	srv   *httptest.Server
	clock *fakeClock

	mu      sync.Mutex
	invites map[string]string // the rooms it created, their invitations
}

func newFixture(t *testing.T, opts Options) *fixture {
	f := &fixture{clock: &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}, invites: map[string]string{}}
	opts.Now = f.clock.Now
	if opts.Limits.CreatesPerMinute == 0 { // tests create rooms by the dozen; TestRoomCreationRate sets its own
		opts.Limits.CreatesPerMinute, opts.Limits.CreatesPerMinutePerAddr = 1e6, 1e6
	}
	reg, err := New(opts)
	require.NoError(t, err)
	f.reg = reg
	mux := http.NewServeMux()
	f.reg.Register(mux)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, f.reg.Close(ctx))
		f.srv.Close()
	})
	return f
}

func (f *fixture) post(t *testing.T, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(f.srv.URL+"/api/rooms", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func (f *fixture) create(t *testing.T, body string) createResponse {
	t.Helper()
	resp, b := f.post(t, body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", b)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	var cr createResponse
	require.NoError(t, json.Unmarshal(b, &cr))
	f.mu.Lock()
	f.invites[cr.Room] = cr.Invite
	f.mu.Unlock()
	return cr
}

// dial opens a connection to room, with its invitation when f created
// it (as a join link has it).
func (f *fixture) dial(t *testing.T, room string) *websocket.Conn {
	t.Helper()
	f.mu.Lock()
	inv := f.invites[room]
	f.mu.Unlock()
	path := "/ws/room/" + room
	if inv != "" {
		path += "?invite=" + inv
	}
	return wstest.Dial(t, wstest.URL(f.srv.URL, path))
}

func read(t *testing.T, c *websocket.Conn) rmsg { t.Helper(); return wstest.Read[rmsg](t, c, readWait) }

// readUntil reads, skipping presence messages (and an instructor's roster
// and predictions), until a message of type typ.
func readUntil(t *testing.T, c *websocket.Conn, typ string) rmsg {
	t.Helper()
	for {
		m := read(t, c)
		if m.Type == typ {
			return m
		}
		if m.Type == typeRoster || m.Type == typePredictions || m.Type == typeClass {
			continue
		}
		require.Equal(t, typePresence, m.Type, "unexpected %+v while waiting for %s", m, typ)
	}
}

func send(t *testing.T, c *websocket.Conn, v string) { t.Helper(); wstest.Send(t, c, v) }

func join(t *testing.T, c *websocket.Conn, role, token string) rmsg {
	t.Helper()
	if token == "" {
		send(t, c, fmt.Sprintf(`{"type":"join","role":%q}`, role))
	} else {
		send(t, c, fmt.Sprintf(`{"type":"join","role":%q,"token":%q}`, role, token))
	}
	w := readUntil(t, c, typeWelcome)
	require.Equal(t, proto.Version, w.Version, "a welcome says the protocol's version")
	return w
}

func readClose(t *testing.T, c *websocket.Conn) *websocket.CloseError {
	t.Helper()
	for {
		c.SetReadDeadline(time.Now().Add(readWait))
		_, _, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			require.ErrorAs(t, err, &ce)
			return ce
		}
	}
}

func commandJSON(cmd string) string {
	return fmt.Sprintf(`{"type":"command","cmd":%s}`, cmd)
}

func TestWorkshopEveryoneSeesTheSameNumberedLog(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, `{"scenario":{ "preset" : "small-ring" }}`)
	assert.Len(t, cr.Room, 16)
	assert.Equal(t, f.srv.URL+"/?room="+cr.Room+"&invite="+cr.Invite, cr.JoinURL)
	assert.Equal(t, "/ws/room/"+cr.Room, cr.WebSocketPath)
	assert.GreaterOrEqual(t, len(cr.InstructorToken)*5, 128, "base32 token of at least 128 bits")

	instructor := f.dial(t, cr.Room)
	w := join(t, instructor, RoleInstructor, cr.InstructorToken)
	assert.Equal(t, RoleInstructor, w.You)
	assert.Equal(t, `{"preset":"small-ring"}`, string(w.Scenario), "compacted")
	assert.Empty(t, w.Log)
	assert.Equal(t, MaxStudentsPerRoom, w.Limits.MaxStudents)

	var students []*websocket.Conn
	for range 3 {
		s := f.dial(t, cr.Room)
		w := join(t, s, RoleStudent, "")
		assert.Equal(t, RoleStudent, w.You)
		assert.Equal(t, cr.Room, w.Room)
		students = append(students, s)
	}

	cmds := []struct{ in, canonical string }{
		{`{"type":"preset","name":"cpumap"}`, `{"type":"preset","name":"cpumap"}`},
		{`{"type":"set","key":"ring_size","value": 1024 }`, `{"type":"set","key":"ring_size","value":"1024"}`},
		{`{"type":"set","key":"xdp","value":"xdp_drop"}`, `{"type":"set","key":"xdp","value":"xdp_drop"}`},
		{`{"type":"play","speed":2.5}`, `{"type":"play","speed":2.5}`},
		{`{"type":"pause"}`, `{"type":"pause"}`},
		{`{"type":"step","n":5}`, `{"type":"step","n":5}`},
		{`{"type":"seek","t_ns":1500000}`, `{"type":"seek","t_ns":1500000}`},
		{`{"type":"tutorial_step","tutorial":"page-pool-inside","step":3}`, `{"type":"tutorial_step","tutorial":"page-pool-inside","step":3}`},
	}
	for _, c := range cmds {
		send(t, instructor, commandJSON(c.in))
	}
	logOf := func(c *websocket.Conn) []Entry {
		var log []Entry
		for range cmds {
			m := readUntil(t, c, typeCommand)
			log = append(log, Entry{Seq: m.Seq, Cmd: m.Cmd})
		}
		return log
	}
	want := logOf(instructor)
	for i, e := range want {
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.JSONEq(t, cmds[i].canonical, string(e.Cmd))
		assert.Equal(t, cmds[i].canonical, string(e.Cmd), "canonical form, byte for byte")
	}
	for i, s := range students {
		assert.Equal(t, want, logOf(s), "student %d", i)
	}

	late := f.dial(t, cr.Room)
	w = join(t, late, RoleStudent, "")
	assert.Equal(t, want, w.Log, "a late joiner gets the whole log")
	assert.Equal(t, `{"preset":"small-ring"}`, string(w.Scenario))
	assert.Equal(t, 4, w.Students)

	// The next command reaches the late joiner too, numbered after the log.
	send(t, instructor, commandJSON(`{"type":"pause"}`))
	m := readUntil(t, late, typeCommand)
	assert.Equal(t, uint64(len(cmds)+1), m.Seq)

	// The instructor is told who is there.
	late.Close()
	assert.Eventually(t, func() bool {
		m := read(t, instructor)
		return m.Type == typePresence && m.Students == 3 && m.Instructors == 1
	}, readWait, time.Millisecond)
}

// TestOnlyTheInstructorsConnectionMayCommand: the token is presented once,
// in join; a command's authority is the connection's. A student's
// connection is refused whatever it sends, a token inside a command is an
// unknown field, and a wrong token leaves a connection unjoined.
func TestOnlyTheInstructorsConnectionMayCommand(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, "")
	student := f.dial(t, cr.Room)
	w := join(t, student, RoleStudent, "")
	assert.Equal(t, "null", string(w.Scenario), "no scenario: the page's default")

	tests := []struct {
		name, msg, code, field string
	}{
		{"a student's command", `{"type":"command","cmd":{"type":"pause"}}`, proto.CodeForbidden, ""},
		{"a student's invalid command", `{"type":"command","cmd":{"type":"nope"}}`, proto.CodeForbidden, ""},
		{"a captured token replayed", fmt.Sprintf(`{"type":"command","token":%q,"cmd":{"type":"pause"}}`, cr.InstructorToken), proto.CodeUnknownField, "token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			send(t, student, tc.msg)
			e := readUntil(t, student, "error")
			assert.Equal(t, tc.code, e.Code, e.Message)
			assert.Equal(t, tc.field, e.Field)
		})
	}

	impostor := f.dial(t, cr.Room)
	send(t, impostor, `{"type":"join","role":"instructor","token":"guess"}`)
	e := readUntil(t, impostor, "error")
	assert.Equal(t, proto.CodeForbidden, e.Code)
	assert.Equal(t, "token", e.Field)
	send(t, impostor, `{"type":"join","role":"instructor"}`)
	assert.Equal(t, proto.CodeForbidden, readUntil(t, impostor, "error").Code)
	send(t, impostor, `{"type":"command","cmd":{"type":"pause"}}`)
	assert.Equal(t, proto.CodeBadState, readUntil(t, impostor, "error").Code, "an unjoined connection cannot command")
	// The connection stays and may still join properly.
	w = join(t, impostor, RoleInstructor, cr.InstructorToken)
	assert.Equal(t, RoleInstructor, w.You)
	send(t, impostor, `{"type":"join","role":"student"}`)
	assert.Equal(t, proto.CodeBadState, readUntil(t, impostor, "error").Code)

	// Nothing was numbered: the first real command is seq 1, and the
	// student, still connected, receives it.
	send(t, impostor, commandJSON(`{"type":"play"}`))
	m := readUntil(t, student, typeCommand)
	assert.Equal(t, uint64(1), m.Seq)
}

func TestBadMessagesGetErrorsAndTheConnectionStays(t *testing.T) {
	f := newFixture(t, Options{})
	cr := f.create(t, "")
	c := f.dial(t, cr.Room)
	tests := []struct {
		name      string
		kind      int
		msg       string
		wantCode  string
		wantField string
	}{
		{"malformed", websocket.TextMessage, `{`, proto.CodeBadJSON, ""},
		{"binary", websocket.BinaryMessage, `{"type":"ping"}`, proto.CodeBinaryFrame, ""},
		{"unknown type", websocket.TextMessage, `{"type":"subscribe"}`, proto.CodeUnknownType, "type"},
		{"bad role", websocket.TextMessage, `{"type":"join","role":"teacher"}`, proto.CodeOutOfRange, "role"},
		{"role not a string", websocket.TextMessage, `{"type":"join","role":1}`, proto.CodeBadField, "role"},
		{"unknown field", websocket.TextMessage, `{"type":"join","role":"student","nick":"ann"}`, proto.CodeUnknownField, "nick"},
		{"bad client", websocket.TextMessage, `{"type":"join","role":"student","client":"a b"}`, proto.CodeBadField, "client"},
		{"name too long", websocket.TextMessage, `{"type":"join","role":"student","name":"` + strings.Repeat("n", 41) + `"}`, proto.CodeBadField, "name"},
		{"status before join", websocket.TextMessage, `{"type":"status","state":"following"}`, proto.CodeBadState, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, c.WriteMessage(tc.kind, []byte(tc.msg)))
			e := readUntil(t, c, "error")
			assert.Equal(t, tc.wantCode, e.Code, e.Message)
			assert.Equal(t, tc.wantField, e.Field)
		})
	}
	send(t, c, `{"type":"ping"}`)
	assert.Equal(t, typePong, read(t, c).Type)

	in := join(t, c, RoleInstructor, cr.InstructorToken)
	require.Equal(t, RoleInstructor, in.You)
	cmdTests := []struct {
		name      string
		cmd       string
		wantCode  string
		wantField string
	}{
		{"missing cmd", ``, proto.CodeBadField, "cmd"},
		{"unknown command", `{"type":"reboot"}`, proto.CodeUnknownType, "cmd.type"},
		{"speed out of range", `{"type":"play","speed":0}`, proto.CodeOutOfRange, "cmd.speed"},
		{"unknown command field", `{"type":"pause","now":true}`, proto.CodeUnknownField, "cmd.now"},
		{"cmd not an object", `[1]`, proto.CodeBadJSON, "cmd"},
	}
	for _, tc := range cmdTests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cmd == "" {
				send(t, c, `{"type":"command"}`)
			} else {
				send(t, c, commandJSON(tc.cmd))
			}
			e := readUntil(t, c, "error")
			assert.Equal(t, tc.wantCode, e.Code, e.Message)
			assert.Equal(t, tc.wantField, e.Field)
		})
	}
}

func TestDefaultValidator(t *testing.T) {
	tests := []struct {
		in        string
		want      string // canonical form, or "" for an error
		wantCode  string
		wantField string
	}{
		{`{"type":"preset","name":"virtio-small"}`, `{"type":"preset","name":"virtio-small"}`, "", ""},
		{`{"type":"preset","name":"Virtio Small"}`, "", proto.CodeOutOfRange, "name"},
		{`{"type":"preset"}`, "", proto.CodeOutOfRange, "name"},
		{`{"type":"set","key":"mtu","value":-1.5e3}`, `{"type":"set","key":"mtu","value":"-1.5e3"}`, "", ""},
		{`{"type":"set","key":"napi","value":true}`, `{"type":"set","key":"napi","value":"true"}`, "", ""},
		{`{"type":"set","key":"mtu"}`, "", proto.CodeBadField, "value"},
		{`{"type":"set","key":"mtu","value":null}`, "", proto.CodeBadField, "value"},
		{`{"type":"set","key":"mtu","value":{"a":1}}`, "", proto.CodeBadField, "value"},
		{`{"type":"set","key":"mtu","value":"` + strings.Repeat("x", play.MaxValue+1) + `"}`, "", proto.CodeOutOfRange, "value"},
		{`{"type":"set","key":"9lives","value":1}`, "", proto.CodeOutOfRange, "key"},
		{`{"type":"set","param":"mtu","value":1}`, "", proto.CodeUnknownField, "param"},
		{`{"type":"set","key":"mtu","value":"1500","pane":1}`, "", proto.CodeOutOfRange, "pane"},
		{`{"type":"play"}`, `{"type":"play"}`, "", ""},
		{`{"type":"play","speed":1001}`, "", proto.CodeOutOfRange, "speed"},
		{`{"type":"play","speed":"fast"}`, "", proto.CodeBadField, "speed"},
		{`{"type":"pause"}`, `{"type":"pause"}`, "", ""},
		{`{"type":"step"}`, `{"type":"step"}`, "", ""},
		{`{"type":"step","unit":"event","n":3}`, `{"type":"step","n":3}`, "", ""},
		{`{"type":"step","unit":"packet","n":3}`, `{"type":"step","unit":"packet","n":3}`, "", ""},
		{`{"type":"step","unit":"byte"}`, "", proto.CodeOutOfRange, "unit"},
		{`{"type":"step","n":0}`, "", proto.CodeOutOfRange, "n"},
		{`{"type":"step","n":1000001}`, "", proto.CodeOutOfRange, "n"},
		{`{"type":"seek","t_ns":0}`, `{"type":"seek","t_ns":0}`, "", ""},
		{`{"type":"seek"}`, "", proto.CodeBadField, "t_ns"},
		{`{"type":"seek","t_ns":-1}`, "", proto.CodeOutOfRange, "t_ns"},
		{`{"type":"tutorial_step","tutorial":"xdp","step":0}`, `{"type":"tutorial_step","tutorial":"xdp","step":0}`, "", ""},
		{`{"type":"tutorial_step","tutorial":"xdp"}`, "", proto.CodeBadField, "step"},
		{`{"type":"tutorial_step","tutorial":"xdp","step":1000}`, "", proto.CodeOutOfRange, "step"},
		{`{"question":0,"type":"tutorial_reveal","step":2,"tutorial":"xdp"}`, `{"type":"tutorial_reveal","tutorial":"xdp","step":2,"question":0}`, "", ""},
		{`{"type":"tutorial_reveal","tutorial":"xdp","step":2}`, "", proto.CodeBadField, "question"},
		{`{"type":"tutorial_reveal","tutorial":"xdp","question":0}`, "", proto.CodeBadField, "step"},
		{`{"type":"tutorial_reveal","tutorial":"xdp","step":0,"question":0}`, "", proto.CodeOutOfRange, "step"},
		{`{"type":"tutorial_reveal","tutorial":"xdp","step":2,"question":100}`, "", proto.CodeOutOfRange, "question"},
		{`{"type":"tutorial_reveal","tutorial":"../x","step":2,"question":1}`, "", proto.CodeOutOfRange, "tutorial"},
		{`{"type":"inject"}`, "", proto.CodeUnknownType, "type"},
		{`{"cmd":"pause"}`, "", proto.CodeMissingType, "type"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 60)], func(t *testing.T) {
			got, err := DefaultValidator(json.RawMessage(tc.in))
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(got))
				return
			}
			require.Error(t, err)
			e := proto.AsError(err)
			assert.Equal(t, tc.wantCode, e.Code, e.Message)
			assert.Equal(t, tc.wantField, e.Field)
		})
	}
}

func FuzzDefaultValidator(f *testing.F) {
	for _, s := range []string{`{"type":"set","key":"mtu","value":1}`, `{"type":"seek","t_ns":5}`, `{"type":"play","speed":1e308}`, `{"type":"set","param":"a","value":[]}`,
		`{"type":"tutorial_step","tutorial":"xdp","step":2}`, `{"type":"tutorial_reveal","tutorial":"xdp","step":2,"question":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := DefaultValidator(data)
		if err != nil {
			require.NotEqual(t, proto.CodeInternal, proto.AsError(err).Code, err)
			return
		}
		// A canonical command validates to itself.
		again, err := DefaultValidator(out)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again))
	})
}

func TestCreateRequests(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"scenario not an object", `{"scenario":[1]}`, http.StatusBadRequest, proto.CodeBadField, "scenario"},
		{"unknown field", `{"scenaro":{}}`, http.StatusBadRequest, proto.CodeUnknownField, "scenaro"},
		{"malformed", `{`, http.StatusBadRequest, proto.CodeBadJSON, ""},
		{"too large", `{"scenario":{"x":"` + strings.Repeat("x", maxCreateBody) + `"}}`, http.StatusRequestEntityTooLarge, proto.CodeOutOfRange, "scenario"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := f.post(t, tc.body)
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			var e rmsg
			require.NoError(t, json.Unmarshal(b, &e), "%s", b)
			assert.Equal(t, "error", e.Type)
			assert.Equal(t, tc.wantCode, e.Code, e.Message)
			assert.Equal(t, tc.wantField, e.Field)
		})
	}
	assert.Equal(t, 0, f.reg.Len())

	req, err := http.NewRequest("POST", f.srv.URL+"/api/rooms", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a foreign page cannot create rooms")

	resp, err = http.Get(f.srv.URL + "/ws/room/0123456789abcdef")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestLimits(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{MaxRooms: 2, MaxStudents: 2, MaxInstructors: 1, MaxLogEntries: 3}})
	cr := f.create(t, "")
	cr2 := f.create(t, "")
	in := f.dial(t, cr.Room) // both in use: never evicted
	join(t, in, RoleInstructor, cr.InstructorToken)
	join(t, f.dial(t, cr2.Room), RoleInstructor, cr2.InstructorToken)
	resp, b := f.post(t, "")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(b), `"code":"limit_exceeded"`)
	assert.Contains(t, string(b), "2 rooms exist, all in use")
	_, _, err := f.reg.Create("192.0.2.7", nil)
	assert.ErrorIs(t, err, ErrLimit, "the total binds every address")

	for range 2 {
		join(t, f.dial(t, cr.Room), RoleStudent, "")
	}
	third := f.dial(t, cr.Room)
	send(t, third, `{"type":"join","role":"student"}`)
	e := readUntil(t, third, "error")
	assert.Equal(t, proto.CodeLimitExceeded, e.Code)
	assert.Contains(t, e.Message, "its class is 2 students")
	ce := readClose(t, third)
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	assert.Contains(t, ce.Text, "room "+cr.Room+" is full")

	second := f.dial(t, cr.Room)
	send(t, second, fmt.Sprintf(`{"type":"join","role":"instructor","token":%q}`, cr.InstructorToken))
	assert.Equal(t, proto.CodeLimitExceeded, readUntil(t, second, "error").Code)

	for range 3 {
		send(t, in, commandJSON(`{"type":"pause"}`))
		readUntil(t, in, typeCommand)
	}
	send(t, in, commandJSON(`{"type":"pause"}`))
	e = readUntil(t, in, "error")
	assert.Equal(t, proto.CodeLimitExceeded, e.Code)
	assert.Contains(t, e.Message, "log is full")
}

func TestCommandRateLimitPerRoom(t *testing.T) {
	f := newFixture(t, Options{}) // the clock stands still: no tokens refill
	cr := f.create(t, "")
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	const sent = CommandsPerSecond + 5
	for range sent {
		send(t, in, commandJSON(`{"type":"step"}`))
	}
	commands, limited := 0, 0
	for commands+limited < sent {
		switch m := read(t, in); m.Type {
		case typeCommand:
			commands++
		case "error":
			assert.Equal(t, proto.CodeRateLimited, m.Code)
			limited++
		}
	}
	assert.Equal(t, CommandsPerSecond, commands)
	assert.Equal(t, 5, limited)

	f.clock.Advance(time.Second / CommandsPerSecond)
	send(t, in, commandJSON(`{"type":"step"}`))
	assert.Equal(t, uint64(CommandsPerSecond+1), readUntil(t, in, typeCommand).Seq, "a refilled token numbers the next command")
}

// TestIdleRoomsExpire: a room expires IdleExpiry after its instructor left
// (or after its creation when none came) and its last command, however
// many students sit in it, who are then disconnected; an instructor
// connected keeps it, but not past QuietExpiry without a command.
func TestIdleRoomsExpire(t *testing.T) {
	f := newFixture(t, Options{})
	idle := f.create(t, "")
	held := f.create(t, "")
	taught := f.create(t, "")

	s := f.dial(t, held.Room)
	join(t, s, RoleStudent, "") // one idle student does not hold the room
	in := f.dial(t, taught.Room)
	join(t, in, RoleInstructor, taught.InstructorToken)

	f.clock.Advance(ClaimExpiry - time.Second)
	assert.Equal(t, 0, f.reg.Sweep(), "nothing is unclaimed for ClaimExpiry yet")
	f.clock.Advance(time.Second)
	assert.Equal(t, 2, f.reg.Sweep(), "the room nobody entered and the room with only a student expire, never commanded")
	assert.Nil(t, f.reg.lookup(idle.Room))
	assert.Nil(t, f.reg.lookup(held.Room))
	ce := readClose(t, s)
	assert.Equal(t, websocket.CloseNormalClosure, ce.Code, "the student is told")
	assert.Contains(t, ce.Text, "expired")
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws/room/"+held.Room, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// The instructor's room lives on while it is commanded...
	send(t, in, commandJSON(`{"type":"pause"}`))
	readUntil(t, in, typeCommand)
	f.clock.Advance(QuietExpiry - time.Second)
	assert.Equal(t, 0, f.reg.Sweep(), "an instructor is connected")
	f.clock.Advance(time.Second)
	assert.Equal(t, 1, f.reg.Sweep(), "but a connection alone does not hold it for ever")
	assert.Equal(t, 0, f.reg.Len())
}

// TestRoomsPerAddress: one address creates MaxRoomsPerAddr rooms; more get
// 429 while other addresses still may, and an expired room gives its
// share back.
func TestRoomsPerAddress(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{MaxRoomsPerAddr: 2}})
	f.create(t, "")
	f.create(t, "")
	resp, b := f.post(t, "")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", b)
	assert.Contains(t, string(b), "limit_exceeded")
	_, _, err := f.reg.Create("192.0.2.7", nil)
	assert.NoError(t, err, "another address is not held back")
	f.clock.Advance(IdleExpiry)
	assert.Equal(t, 3, f.reg.Sweep())
	f.create(t, "")
}

// TestConnectionCaps: room connections, joined or not, are bounded per
// address and in all before the upgrade.
func TestConnectionCaps(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{MaxConnsPerAddr: 3}})
	cr := f.create(t, "")
	var conns []*websocket.Conn
	for range 3 {
		conns = append(conns, f.dial(t, cr.Room))
	}
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws/room/"+cr.Room, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	conns[0].Close()
	require.Eventually(t, func() bool {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(f.srv.URL, "http")+"/ws/room/"+cr.Room, nil)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, readWait, 10*time.Millisecond, "a closed connection gives its share back")

	g := newFixture(t, Options{Limits: Limits{MaxConns: 2}})
	cr = g.create(t, "")
	g.dial(t, cr.Room)
	g.dial(t, cr.Room)
	_, resp, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(g.srv.URL, "http")+"/ws/room/"+cr.Room, nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// TestSlowStudentIsDisconnectedNotWaitedFor stalls one student (a tiny
// receive buffer, never read) while the instructor sends large commands:
// the student's queue overflows and it is dropped with 1008, its log a gap-
// free prefix; the others get every command.
func TestSlowStudentIsDisconnectedNotWaitedFor(t *testing.T) {
	pad := strings.Repeat("p", 3000)
	f := newFixture(t, Options{
		Limits:    Limits{QueueLen: 16, CommandsPerSecond: 1_000_000, MaxLogEntries: 1_000_000, MaxLogBytes: 1 << 30},
		Validator: func(cmd json.RawMessage) (json.RawMessage, error) { return cmd, nil },
	})
	cr := f.create(t, "")
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	good := f.dial(t, cr.Room)
	join(t, good, RoleStudent, "")

	slow := wstest.DialSmallBuffer(t, wstest.URL(f.srv.URL, "/ws/room/"+cr.Room+"?invite="+cr.Invite))
	join(t, slow, RoleStudent, "")

	// Readers for the instructor and the good student, so only slow stalls.
	inLog, goodLog := collect(in), collect(good)

	slowIn := func() bool {
		rm := f.reg.lookup(cr.Room)
		rm.mu.Lock()
		defer rm.mu.Unlock()
		for m := range rm.members {
			if m.peer.RemoteAddr().String() == slow.LocalAddr().String() {
				return true
			}
		}
		return false
	}
	sent := 0
	for slowIn() {
		require.Less(t, sent, 5000, "the slow student was never dropped")
		send(t, in, commandJSON(fmt.Sprintf(`{"type":"set","key":"pad","value":%q}`, pad)))
		sent++
		f.clock.Advance(time.Second / msgRatePerSecond) // within the message rate limit
		time.Sleep(time.Millisecond)                    // a fast instructor, not a flood
	}
	// A few more after the drop.
	for range 5 {
		send(t, in, commandJSON(`{"type":"pause"}`))
		sent++
	}
	t.Logf("slow student dropped after %d commands of %d bytes", sent-5, len(pad)+40)

	// The slow student now reads: a gap-free prefix of the log, then 1008.
	var got []uint64
	var ce *websocket.CloseError
	for {
		slow.SetReadDeadline(time.Now().Add(readWait + 10*time.Second))
		_, data, err := slow.ReadMessage()
		if err != nil {
			require.ErrorAs(t, err, &ce)
			break
		}
		var m rmsg
		require.NoError(t, json.Unmarshal(data, &m))
		if m.Type == typeCommand {
			got = append(got, m.Seq)
		}
	}
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	assert.Contains(t, ce.Text, "send queue overflow")
	require.NotEmpty(t, got)
	for i, s := range got {
		require.Equal(t, uint64(i+1), s, "the slow student's log has no gap")
	}
	assert.Less(t, len(got), sent)

	for name, k := range map[string]*collector{"instructor": inLog, "good student": goodLog} {
		require.Eventually(t, func() bool { return len(k.got()) == sent }, readWait, time.Millisecond, "%s got every command", name)
		for i, s := range k.got() {
			require.Equal(t, uint64(i+1), s, name)
		}
	}
	rm := f.reg.lookup(cr.Room)
	rm.mu.Lock()
	assert.Equal(t, 1, rm.students, "the good student is still in")
	assert.Equal(t, 1, rm.instructors)
	rm.mu.Unlock()
	in.Close()
	good.Close()
	<-inLog.done
	<-goodLog.done
}

// collector reads a connection until it fails, keeping the seqs of the
// command messages. Its goroutine ends when the connection is closed.
type collector struct {
	mu   sync.Mutex
	seqs []uint64
	done chan struct{}
}

func collect(c *websocket.Conn) *collector {
	k := &collector{done: make(chan struct{})}
	go func() {
		defer close(k.done)
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m rmsg
			if json.Unmarshal(data, &m) == nil && m.Type == typeCommand {
				k.mu.Lock()
				k.seqs = append(k.seqs, m.Seq)
				k.mu.Unlock()
			}
		}
	}()
	return k
}

func (k *collector) got() []uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]uint64(nil), k.seqs...)
}

func TestConnectionThatNeverJoinsIsClosed(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{JoinWait: 100 * time.Millisecond}})
	cr := f.create(t, "")
	idle := f.dial(t, cr.Room)
	joined := f.dial(t, cr.Room)
	join(t, joined, RoleStudent, "")

	start := time.Now()
	ce := readClose(t, idle)
	assert.Equal(t, websocket.ClosePolicyViolation, ce.Code)
	assert.Equal(t, "no join message in time", ce.Text)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	send(t, joined, `{"type":"ping"}`)
	assert.Equal(t, typePong, readUntil(t, joined, typePong).Type, "a joined connection stays past JoinWait")
}
