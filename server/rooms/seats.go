package rooms

import (
	"sync"

	"ringlab/server/fairshare"
)

// seats admits the room connections: MaxConns places, of which each room
// in use reserves its class (its class size and its instructors) for the
// connections that carry its invitation, and the others (connections
// without one, of a room not in use, or past a room's reservation) share
// what is left, each address its fair share (fairshare). A flood of
// connections to one room, or of connections that never join, takes its
// own room's seats and the shared ones, never another room's (issue 27:
// four addresses of 512 reading students kept every other class out).
//
// Reservations are granted in the order rooms come into use, each at most
// what is left of reservableShare of MaxConns (the rest stays shared: an
// instructor's first connection, a room not in use yet). Reserving evicts
// shared connections when they no longer fit (the newest of the address
// holding most), never a reserved one.
type seats struct {
	total, reservable int

	mu      sync.Mutex
	rooms   map[*room]*reservation
	claimed int // the sum over rooms of max(granted, held)
	shared  *fairshare.Shares
}

// reservableShare is the part of MaxConns rooms may reserve, in eighths.
const reservableShare = 7

type reservation struct{ granted, held int }

// seat is one admitted connection's place: in a room's reservation, or
// shared.
type seat struct {
	rm     *room
	res    *reservation
	shared *fairshare.Slot
	done   bool
}

func newSeats(total, perAddr int) *seats {
	total = max(total, 1)
	return &seats{total: total, reservable: total * reservableShare / 8, rooms: map[*room]*reservation{},
		shared: fairshare.New(total, perAddr)}
}

func claim(r *reservation) int { return max(r.granted, r.held) }

// reserve sets rm's reservation to want places (0: none), or what is left
// of the reservable ones, and returns what it got.
func (s *seats) reserve(rm *room, want int) int {
	s.mu.Lock()
	r := s.rooms[rm]
	if r == nil {
		if want == 0 {
			s.mu.Unlock()
			return 0
		}
		r = &reservation{}
		s.rooms[rm] = r
	}
	s.claimed -= claim(r)
	r.granted = max(0, min(want, s.reservable-s.claimed))
	s.claimed += claim(r)
	got := r.granted
	if claim(r) == 0 {
		delete(s.rooms, rm)
	}
	s.shared.SetTotal(s.total - s.claimed) // under mu: in the order of the changes
	s.mu.Unlock()
	return got
}

// admit takes a place for a connection of rm from addr: one of rm's
// reserved seats when it carried the room's invitation and one is free,
// else a shared one (a fairshare verdict when there is none).
func (s *seats) admit(rm *room, addr string, invited bool) (*seat, fairshare.Verdict) {
	if invited {
		s.mu.Lock()
		if r := s.rooms[rm]; r != nil && r.held < r.granted {
			r.held++
			s.mu.Unlock()
			return &seat{rm: rm, res: r}, fairshare.Admitted
		}
		s.mu.Unlock()
	}
	sl, v := s.shared.Admit(addr)
	if v != fairshare.Admitted {
		return nil, v
	}
	return &seat{rm: rm, shared: sl}, v
}

// onEvict sets what evicting a shared seat does; reserved seats are
// never evicted.
func (s *seats) onEvict(st *seat, f func()) {
	if st.shared != nil {
		s.shared.SetEvict(st.shared, f)
	}
}

// release gives st's place back (once).
func (s *seats) release(st *seat) {
	if st.shared != nil {
		s.shared.Release(st.shared)
		return
	}
	s.mu.Lock()
	if st.done {
		s.mu.Unlock()
		return
	}
	st.done = true
	r := st.res
	s.claimed -= claim(r)
	r.held--
	s.claimed += claim(r)
	if claim(r) == 0 && s.rooms[st.rm] == r {
		delete(s.rooms, st.rm)
	}
	s.shared.SetTotal(s.total - s.claimed)
	s.mu.Unlock()
}

// reserved returns rm's reservation: granted and held.
func (s *seats) reserved(rm *room) (granted, held int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rooms[rm]; r != nil {
		return r.granted, r.held
	}
	return 0, 0
}
