package rooms

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/proto"
)

// TestClassSurvivesARestart: the class an instructor set (its size, a
// new invitation) is in the room's file: after a restart the new
// invitation admits, the old one does not, and the size holds.
func TestClassSurvivesARestart(t *testing.T) {
	path := t.TempDir()
	st, err := OpenStore(path)
	require.NoError(t, err)
	f := newFixture(t, Options{Store: st})
	cr := f.create(t, `{"class_size":3}`)
	in := f.dial(t, cr.Room)
	join(t, in, RoleInstructor, cr.InstructorToken)
	send(t, in, `{"type":"class","size":1,"new_invite":true}`)
	readUntil(t, in, typeClass)
	rm := f.reg.lookup(cr.Room)
	fresh := rm.classRecord().Invite
	require.NotEqual(t, cr.Invite, fresh)
	assert.Equal(t, 1, rm.classRecord().ClassSize)
	in.Close() // gone before the shutdown, which would wait wspeer.CloseGrace for its answer
	require.NoError(t, f.reg.Close(context.Background()))
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
	t.Cleanup(func() { reg.Close(context.Background()) }) // after the connections below
	g := &fixture{reg: reg, srv: srv, clock: f.clock, invites: map[string]string{cr.Room: cr.Invite}}
	old := g.dial(t, cr.Room)
	send(t, old, `{"type":"join","role":"student"}`)
	e := readUntil(t, old, "error")
	assert.Equal(t, proto.CodeForbidden, e.Code, "the old invitation admits nobody after the restart")
	g.invites[cr.Room] = fresh
	join(t, g.dial(t, cr.Room), RoleStudent, "")
	second := g.dial(t, cr.Room)
	send(t, second, `{"type":"join","role":"student"}`)
	assert.Contains(t, readUntil(t, second, "error").Message, "its class is 1 students", "the size held")
}

// TestSeatsReservedForRoomsInUse: a room in use holds its class's seats
// against a flood of shared connections, which a new reservation evicts;
// a room not in use holds none.
func TestSeatsReservedForRoomsInUse(t *testing.T) {
	s := newSeats(16, 16) // 14 reservable
	a, b := &room{}, &room{}
	var shared []*seat
	evicted := 0
	for range 16 {
		st, v := s.admit(b, "10.0.0.9", false)
		require.Equal(t, 0, int(v))
		s.onEvict(st, func() { evicted++ })
		shared = append(shared, st)
	}
	assert.Equal(t, 10, s.reserve(a, 10), "granted in full")
	assert.Equal(t, 10, evicted, "shared connections give the reservation its places")
	for range 10 {
		_, v := s.admit(a, "10.0.0.1", true)
		require.Equal(t, 0, int(v), "an invited connection takes a reserved seat")
	}
	st, v := s.admit(a, "10.0.0.1", true)
	require.Equal(t, 0, int(v))
	assert.NotNil(t, st.shared, "past its reservation it shares the rest: its address's fair share")
	assert.Equal(t, 11, evicted)
	assert.Equal(t, 4, s.reserve(b, 10), "what is left of the reservable seats")
	assert.Equal(t, 0, s.reserve(b, 0), "not in use: none")
	g, h := s.reserved(a)
	assert.Equal(t, []int{10, 10}, []int{g, h})
	for _, st := range shared {
		s.release(st)
	}
}
