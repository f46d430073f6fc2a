// Package fairshare admits long-lived connections (WebSockets) by remote
// address: at most a total and a per-address number at once, and, when
// the total is reached, each address its fair share of it. A newcomer
// from an address holding less than the total divided among the
// addresses holding connections (its own counted) takes the place of the
// newest connection of the address holding most, when that address holds
// more than the share; otherwise it is refused. So a few hosts that fill
// the server with connections (four addresses of 512 reading students
// kept every other student out, issue 27) give way to each new address
// down to their share, and a class that holds less than its share is
// never touched: k addresses each keep Total/k whatever the others do.
// The total may change (SetTotal): rooms in use reserve places for their
// class, and the others share what is left.
package fairshare

import "sync"

// Shares counts the connections held by address. Its zero value is not
// usable; use New.
type Shares struct {
	total, perAddr int

	mu    sync.Mutex
	n     int
	held  map[string][]*Slot // by address, oldest first
	evict uint64
}

// Slot is one admitted connection's place.
type Slot struct {
	addr     string
	released bool
	evicted  bool
	onEvict  func()
}

// Verdict says why a connection was refused (Admitted when it was not).
type Verdict int

const (
	Admitted Verdict = iota
	// OverAddress: the address holds its per-address maximum.
	OverAddress
	// Full: the total is reached and the address holds its share, or
	// nobody holds more than theirs.
	Full
)

// New returns Shares of total places, at most perAddr per address.
func New(total, perAddr int) *Shares {
	return &Shares{total: max(total, 1), perAddr: max(perAddr, 1), held: map[string][]*Slot{}}
}

// Admit takes a place for a connection from addr. When it displaced
// another address's newest connection, that connection's eviction
// function (SetEvict) is called, after its place was given to this one.
func (s *Shares) Admit(addr string) (*Slot, Verdict) {
	s.mu.Lock()
	mine := len(s.held[addr])
	if mine >= s.perAddr {
		s.mu.Unlock()
		return nil, OverAddress
	}
	var victim *Slot
	if s.n >= s.total {
		k := len(s.held)
		if mine == 0 {
			k++
		}
		share := s.total / k
		top, most := "", 0
		for a, sl := range s.held {
			if len(sl) > most || len(sl) == most && a < top {
				top, most = a, len(sl)
			}
		}
		if mine >= share || most <= share || top == addr {
			s.mu.Unlock()
			return nil, Full
		}
		q := s.held[top]
		victim = q[len(q)-1]
		victim.evicted = true
		s.releaseLocked(victim)
		s.evict++
	}
	sl := &Slot{addr: addr}
	s.held[addr] = append(s.held[addr], sl)
	s.n++
	var f func()
	if victim != nil {
		f = victim.onEvict
	}
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return sl, Admitted
}

// SetTotal changes the total (the places left over when some are
// reserved elsewhere). When more are held than the new total, the
// newest connections of the address holding most are evicted until they
// fit: the places were promised to someone else.
func (s *Shares) SetTotal(total int) {
	s.mu.Lock()
	s.total = max(total, 0)
	var evicted []func()
	for s.n > s.total {
		top, most := "", 0
		for a, sl := range s.held {
			if len(sl) > most || len(sl) == most && a < top {
				top, most = a, len(sl)
			}
		}
		q := s.held[top]
		victim := q[len(q)-1]
		victim.evicted = true
		s.releaseLocked(victim)
		s.evict++
		if victim.onEvict != nil {
			evicted = append(evicted, victim.onEvict)
		}
	}
	s.mu.Unlock()
	for _, f := range evicted {
		f()
	}
}

// Total returns the places there are now.
func (s *Shares) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// SetEvict sets what evicting sl's connection does (close it); when sl
// was evicted already, f is called now.
func (s *Shares) SetEvict(sl *Slot, f func()) {
	s.mu.Lock()
	sl.onEvict = f
	evicted := sl.evicted
	s.mu.Unlock()
	if evicted {
		f()
	}
}

// Release gives sl's place back (once; an evicted slot's is given
// already).
func (s *Shares) Release(sl *Slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(sl)
}

func (s *Shares) releaseLocked(sl *Slot) {
	if sl.released {
		return
	}
	sl.released = true
	s.n--
	q := s.held[sl.addr]
	for i, x := range q {
		if x == sl {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.held, sl.addr)
	} else {
		s.held[sl.addr] = q
	}
}

// Evicted reports whether sl's place was given to another address.
func (s *Shares) Evicted(sl *Slot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sl.evicted
}

// Stats are the places held.
type Stats struct {
	Held, Addresses int
	Evicted         uint64 // connections displaced so far
}

// Stats returns the places held now.
func (s *Shares) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Held: s.n, Addresses: len(s.held), Evicted: s.evict}
}

// Held returns how many places addr holds.
func (s *Shares) Held(addr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held[addr])
}
