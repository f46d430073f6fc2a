package rooms

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoomsSurviveARestart: rooms, tokens and logs are in the store
// before the answer and the broadcast, so a registry started again on the
// same store has every room and every acknowledged command, the same token
// still commands, and numbering goes on.
func TestRoomsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", StoreDir)
	st, err := OpenStore(path)
	require.NoError(t, err)
	f := newFixture(t, Options{Store: st})
	cr := f.create(t, `{"scenario":{"preset":"default"}}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	cmds := []string{`{"type":"step","n":5}`, `{"type":"set","key":"ring_size","value":"64"}`, `{"type":"pause"}`}
	for _, c := range cmds {
		send(t, in, commandJSON(c))
		readUntil(t, in, typeCommand) // acknowledged
	}
	want := f.reg.lookup(cr.Room).Log()

	// The files have them while the server still runs (another process
	// could not open the directory: it is locked; OpenStore would wait
	// storeOpenWait for it).
	_, err = openStore(path, 0)
	require.ErrorIs(t, err, ErrStoreInUse, "the directory is locked while the registry has it")

	// Killed: the process ends, nothing is flushed (every command was
	// fsync'd before its broadcast), the directory is reopened.
	in.Close()
	require.NoError(t, st.Close())
	st2, err := OpenStore(path)
	require.NoError(t, err)
	defer st2.Close()
	reg, err := New(Options{Store: st2})
	require.NoError(t, err)
	mux := http.NewServeMux()
	reg.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// Closed after the connections below (cleanups run last first): a
	// client that does not answer the close frame would hold it
	// wspeer.CloseGrace.
	t.Cleanup(func() { reg.Close(context.Background()) })
	g := &fixture{reg: reg, srv: srv, clock: f.clock, invites: f.invites}

	require.Equal(t, 1, reg.Len())
	assert.Equal(t, want, reg.lookup(cr.Room).Log(), "every acknowledged command")
	in2 := g.dial(t, cr.Room)
	w := join(t, in2, RoleInstructor, cr.InstructorToken)
	assert.Equal(t, want, w.Log, "the welcome has the log")
	assert.Equal(t, `{"preset":"default"}`, string(w.Scenario))
	send(t, in2, commandJSON(`{"type":"step"}`))
	assert.Equal(t, uint64(len(cmds)+1), readUntil(t, in2, typeCommand).Seq, "numbering goes on")

	// A reconnecting page asks for what it lacks.
	s := g.dial(t, cr.Room)
	send(t, s, `{"type":"join","role":"student","since":2}`)
	w = readUntil(t, s, typeWelcome)
	require.Len(t, w.Log, 2)
	assert.Equal(t, uint64(3), w.Log[0].Seq)

	// The token is not in the file, its hash is.
	raw := readFile(t, filepath.Join(path, cr.Room+roomSuffix))
	assert.False(t, bytes.Contains(raw, []byte(cr.InstructorToken)), "the token is never written down")
}

// TestStoreDeletesExpiredRooms: an expired room leaves the store too.
func TestStoreDeletesExpiredRooms(t *testing.T) {
	st, err := OpenStore(filepath.Join(t.TempDir(), StoreDir))
	require.NoError(t, err)
	defer st.Close()
	f := newFixture(t, Options{Store: st})
	f.create(t, "")
	ents, err := os.ReadDir(st.Path())
	require.NoError(t, err)
	require.Len(t, roomFiles(ents), 1)
	f.clock.Advance(IdleExpiry)
	require.Equal(t, 1, f.reg.Sweep())
	ents, err = os.ReadDir(st.Path())
	require.NoError(t, err)
	assert.Empty(t, roomFiles(ents))
}

// TestStoreRefusesGaps: a log is appended in order only.
func TestStoreRefusesGaps(t *testing.T) {
	st, err := OpenStore(filepath.Join(t.TempDir(), StoreDir))
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Create(StoredRoom{ID: "r", Created: time.Now()}))
	require.NoError(t, st.Append("r", Entry{Seq: 1, Cmd: []byte(`{"type":"step"}`)}, time.Now()))
	assert.Error(t, st.Append("r", Entry{Seq: 3, Cmd: []byte(`{"type":"step"}`)}, time.Now()))
	assert.Error(t, st.Append("nope", Entry{Seq: 1, Cmd: []byte(`{"type":"step"}`)}, time.Now()))
	require.NoError(t, st.AppendLog("r", []byte(`{"type":"pause"}`)))
	require.NoError(t, st.Close())
	st, err = OpenStore(st.Path())
	require.NoError(t, err)
	l, err := st.Load()
	require.NoError(t, err)
	require.Len(t, l.Logs[0], 2)
	assert.Equal(t, uint64(2), l.Logs[0][1].Seq)
}

func roomFiles(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		if filepath.Ext(e.Name()) == roomSuffix {
			out = append(out, e.Name())
		}
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestUnclaimedRoomsExpireAndStayOld is issue 27's room squatting: a room
// nobody commands gives its place back ClaimExpiry after it was made when
// no instructor holds it, and a restart does not make it younger: it
// keeps its age, with at most RestartGrace for an instructor's page to
// come back. A room that was commanded keeps IdleExpiry and QuietExpiry.
func TestUnclaimedRoomsExpireAndStayOld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", StoreDir)
	st, err := OpenStore(path)
	require.NoError(t, err)
	f := newFixture(t, Options{Store: st})
	old := f.create(t, "")   // squatted: never entered
	young := f.create(t, "") // made later, before the restart
	used := f.create(t, "")
	in := f.dial(t, used.Room)
	join(t, in, RoleInstructor, used.InstructorToken)
	send(t, in, commandJSON(`{"type":"pause"}`))
	readUntil(t, in, typeCommand)
	in.Close()

	f.clock.Advance(ClaimExpiry + 10*time.Minute) // the server was down meanwhile: no sweep ran
	require.NoError(t, st.Close())

	restart := func(at *fakeClock) *Registry {
		st2, err := OpenStore(path)
		require.NoError(t, err)
		t.Cleanup(func() { st2.Close() })
		reg, err := New(Options{Store: st2, Now: at.Now})
		require.NoError(t, err)
		t.Cleanup(func() { reg.Close(context.Background()) })
		return reg
	}
	reg := restart(f.clock)
	require.Equal(t, 3, reg.Len(), "every room is restored")
	assert.Equal(t, 2, reg.Sweep(), "the two never commanded are older than ClaimExpiry: gone at once, not younger")
	assert.Nil(t, reg.lookup(old.Room))
	assert.Nil(t, reg.lookup(young.Room))
	assert.NotNil(t, reg.lookup(used.Room), "the commanded room has IdleExpiry again")
	f.clock.Advance(IdleExpiry)
	assert.Equal(t, 1, reg.Sweep())
}

// A room made just before a restart keeps what is left of its claim, or
// RestartGrace if that is less.
func TestUnclaimedRoomGraceAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", StoreDir)
	st, err := OpenStore(path)
	require.NoError(t, err)
	f := newFixture(t, Options{Store: st})
	cr := f.create(t, "")
	f.clock.Advance(ClaimExpiry - 10*time.Second)
	require.NoError(t, st.Close())
	st2, err := OpenStore(path)
	require.NoError(t, err)
	defer st2.Close()
	reg, err := New(Options{Store: st2, Now: f.clock.Now})
	require.NoError(t, err)
	defer reg.Close(context.Background())
	f.clock.Advance(RestartGrace - time.Second)
	assert.Equal(t, 0, reg.Sweep(), "RestartGrace for the instructor to come back")
	f.clock.Advance(time.Second)
	assert.Equal(t, 1, reg.Sweep(), "and no more")
	assert.Nil(t, reg.lookup(cr.Room))
}
