package rooms

import (
	"crypto/subtle"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"ringlab/server/ratelimit"
	"ringlab/server/wsmsg"
	"ringlab/server/wspeer"
)

// member is one connection to a room.
type member struct {
	peer *wspeer.Peer

	// Owned by the reader goroutine.
	bucket     *ratelimit.Bucket
	violations int
	role       string // "" until joined

	joined atomic.Bool // role is set (read by the join timer)
}

// room is one workshop: a scenario, a numbered command log and the members
// that follow it. Everything is guarded by mu; broadcasting never waits.
type room struct {
	id       string
	token    []byte // the instructor token
	scenario json.RawMessage
	lim      Limits

	mu          sync.Mutex
	closed      bool // expired or shut down: no more joins
	log         []Entry
	logBytes    int
	members     map[*member]struct{}
	students    int
	instructors int
	emptySince  time.Time // when the last member left (or creation); zero while occupied
	commands    *ratelimit.Bucket
}

func newRoom(id, token string, scenario json.RawMessage, lim Limits, now time.Time) *room {
	return &room{
		id: id, token: []byte(token), scenario: scenario, lim: lim,
		members:    map[*member]struct{}{},
		emptySince: now,
		commands:   ratelimit.New(float64(lim.CommandsPerSecond), lim.CommandsPerSecond),
	}
}

// tokenOK compares in constant time (for a token of the right length).
func (r *room) tokenOK(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), r.token) == 1
}

// join adds m with role and queues its welcome, atomically with respect to
// commands, so m's log has no gap and no duplicate.
func (r *room) join(m *member, role string) *wsmsg.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return wsmsg.Errorf(wsmsg.CodeNotFound, "", "room %s has expired", r.id)
	}
	switch role {
	case RoleStudent:
		if r.students >= r.lim.MaxStudents {
			return wsmsg.Errorf(wsmsg.CodeLimitExceeded, "", "room %s is full: %d students is the limit", r.id, r.lim.MaxStudents)
		}
		r.students++
	case RoleInstructor:
		if r.instructors >= r.lim.MaxInstructors {
			return wsmsg.Errorf(wsmsg.CodeLimitExceeded, "", "room %s has %d instructor connections already, the limit", r.id, r.lim.MaxInstructors)
		}
		r.instructors++
	}
	m.role = role
	r.members[m] = struct{}{}
	r.emptySince = time.Time{}
	log := r.log
	if log == nil {
		log = []Entry{}
	}
	welcome := mustMarshal(welcomeMsg{Type: typeWelcome, Room: r.id, You: role, Scenario: r.scenario, Log: log,
		Students: r.students, Instructors: r.instructors, Limits: roomLimits{
			MaxStudents: r.lim.MaxStudents, CommandsPerSecond: r.lim.CommandsPerSecond,
			MaxLogEntries: r.lim.MaxLogEntries, MaxCommandBytes: r.lim.MaxCommandBytes}})
	if !m.peer.TrySend(welcome) {
		r.dropLocked(m)
		return nil
	}
	r.presenceLocked()
	return nil
}

// leave removes m (if it is still a member).
func (r *room) leave(m *member, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[m]; !ok {
		return
	}
	r.removeLocked(m)
	if len(r.members) == 0 {
		r.emptySince = now
	}
	r.presenceLocked()
}

func (r *room) removeLocked(m *member) {
	delete(r.members, m)
	switch m.role {
	case RoleStudent:
		r.students--
	case RoleInstructor:
		r.instructors--
	}
}

// dropLocked disconnects a member whose queue overflowed.
func (r *room) dropLocked(m *member) {
	r.removeLocked(m)
	m.peer.Abort(websocket.ClosePolicyViolation, "send queue overflow: client too slow to follow the room")
}

// command numbers cmd (already validated), appends it to the log and
// broadcasts it.
func (r *room) command(cmd json.RawMessage, now time.Time) *wsmsg.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(cmd) > r.lim.MaxCommandBytes {
		return wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd", "a command has at most %d bytes", r.lim.MaxCommandBytes)
	}
	if len(r.log) >= r.lim.MaxLogEntries || r.logBytes+len(cmd) > r.lim.MaxLogBytes {
		return wsmsg.Errorf(wsmsg.CodeLimitExceeded, "", "the room's log is full (%d commands or %d bytes); create a new room", r.lim.MaxLogEntries, r.lim.MaxLogBytes)
	}
	if !r.commands.Allow(now) {
		return wsmsg.Errorf(wsmsg.CodeRateLimited, "", "more than %d commands per second in this room: command dropped", r.lim.CommandsPerSecond)
	}
	e := Entry{Seq: uint64(len(r.log)) + 1, Cmd: cmd}
	r.log = append(r.log, e)
	r.logBytes += len(cmd)
	r.broadcastLocked(mustMarshal(commandOut{Type: typeCommand, Seq: e.Seq, Cmd: cmd}))
	return nil
}

// broadcastLocked queues msg for every member; a member whose queue is full
// is disconnected rather than waited for or silently skipped, since a
// command must never be lost.
func (r *room) broadcastLocked(msg []byte) {
	for m := range r.members {
		if !m.peer.TrySend(msg) {
			r.dropLocked(m)
		}
	}
}

// presenceLocked tells the instructors how many are in the room, through
// their mailboxes: only the newest count matters, so it never fills a queue.
func (r *room) presenceLocked() {
	msg := mustMarshal(presenceMsg{Type: typePresence, Students: r.students, Instructors: r.instructors})
	for m := range r.members {
		if m.role == RoleInstructor {
			m.peer.Offer(msg)
		}
	}
}

// expireIfIdle closes the room when it has been empty for idle, and reports
// whether it did.
func (r *room) expireIfIdle(now time.Time, idle time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.members) > 0 || now.Sub(r.emptySince) < idle {
		return false
	}
	r.closed = true
	return true
}

// Log returns a copy of the command log.
func (r *room) Log() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.log...)
}
