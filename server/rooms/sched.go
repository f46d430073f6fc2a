package rooms

import "sync"

// The server's replay is handed out in turns. A replica works only while
// it holds the one turn (so the rooms' replay never takes more than one
// core), and gives it back after quantumWork units of work, whatever its
// command still has to run. Who waits is queued by the address that sent
// the command, and the turn goes round the addresses: a room's command
// waits at most one turn of each other address with work waiting, never
// for another room's whole command (issue 27: four rooms replaying seeks
// refused after half a second each held another instructor's commands
// for 1.5 s at the median). Within an address, its rooms' work goes in
// the order it came.

// quantumWork is the work a replica runs in one turn, in play's units
// (ReplayCost: events, and three per packet): about 15 ms of the engine
// natively (about 18 million units a second), and at most a chunk more.
const quantumWork = 1 << 18

// turns is the replay's one turn and those waiting for it.
type turns struct {
	mu      sync.Mutex
	busy    bool                       // someone holds the turn
	waiting map[string][]chan struct{} // by address, oldest first
	order   []string                   // addresses waiting, the next first
	granted uint64                     // turns given so far
}

// acquire waits for the turn, queued behind addr's earlier waiters and
// after the addresses before it in the round.
func (s *turns) acquire(addr string) {
	s.mu.Lock()
	if !s.busy {
		s.busy = true
		s.granted++
		s.mu.Unlock()
		return
	}
	if s.waiting == nil {
		s.waiting = map[string][]chan struct{}{}
	}
	ch := make(chan struct{})
	if len(s.waiting[addr]) == 0 {
		s.order = append(s.order, addr)
	}
	s.waiting[addr] = append(s.waiting[addr], ch)
	s.mu.Unlock()
	<-ch // handed over by release, busy still set
}

// release gives the turn to the next address's oldest waiter; that
// address goes to the end of the round.
func (s *turns) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		s.busy = false
		return
	}
	addr := s.order[0]
	s.order = s.order[1:]
	q := s.waiting[addr]
	ch := q[0]
	if len(q) == 1 {
		delete(s.waiting, addr)
	} else {
		s.waiting[addr] = q[1:]
		s.order = append(s.order, addr)
	}
	s.granted++
	close(ch)
}

// yield gives the turn to whoever waits and takes it again in addr's
// place in the round: at once when nobody waits.
func (s *turns) yield(addr string) {
	s.mu.Lock()
	idle := len(s.order) == 0
	s.mu.Unlock()
	if idle {
		return
	}
	s.release()
	s.acquire(addr)
}

// grants returns how many turns were given so far.
func (s *turns) grants() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.granted
}
