package rooms

import (
	"crypto/sha256"
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
	role       string // "" until joined; the role is the connection's authority

	joined atomic.Bool // role is set (read by the join timer)
}

// room is one workshop: a scenario, a numbered command log and the members
// that follow it. Its members and log are guarded by mu, and broadcasting
// never waits; cmdMu makes its commands one at a time, from the check on
// the replica to the broadcast.
type room struct {
	id        string
	tokenHash []byte // SHA-256 of the instructor token
	scenario  json.RawMessage
	creator   string
	lim       Limits

	cmdMu sync.Mutex
	work  workBucket // guarded by cmdMu

	mu          sync.Mutex
	closed      bool // expired or shut down: no more joins
	log         []Entry
	logBytes    int
	members     map[*member]struct{}
	students    int
	instructors int
	lastCommand time.Time // or creation, or the server's start
	lastLeft    time.Time // when the last instructor left (or lastCommand)
	commands    *ratelimit.Bucket
}

func newRoom(s StoredRoom, lim Limits, now time.Time) *room {
	// After a restart the clocks start again: the instructor has
	// IdleExpiry to come back.
	active := s.Active
	if active.Before(now) {
		active = now
	}
	return &room{
		id: s.ID, tokenHash: s.TokenHash, scenario: s.Scenario, creator: s.Creator, lim: lim,
		members:     map[*member]struct{}{},
		lastCommand: active, lastLeft: active,
		commands: ratelimit.New(float64(lim.CommandsPerSecond), lim.CommandsPerSecond),
		work:     workBucket{rate: float64(lim.WorkPerSecond), burst: float64(lim.MaxCommandWork), tokens: float64(lim.MaxCommandWork)},
	}
}

// tokenOK compares the token's hash with the room's in constant time.
func (r *room) tokenOK(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], r.tokenHash) == 1
}

// join adds m with role and queues its welcome with the log after seq
// since, atomically with respect to commands, so m's log has no gap and
// no duplicate.
func (r *room) join(m *member, role string, since uint64) *wsmsg.Error {
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
	if since > uint64(len(r.log)) {
		since = 0 // a log this room does not have: the whole of it
	}
	log := r.log[since:]
	if log == nil {
		log = []Entry{}
	}
	welcome := mustMarshal(welcomeMsg{Type: typeWelcome, Room: r.id, You: role, Scenario: r.scenario, Since: since, Log: log,
		Students: r.students, Instructors: r.instructors, Limits: roomLimits{
			MaxStudents: r.lim.MaxStudents, CommandsPerSecond: r.lim.CommandsPerSecond,
			MaxLogEntries: r.lim.MaxLogEntries, MaxCommandBytes: r.lim.MaxCommandBytes,
			MaxCommandWork: r.lim.MaxCommandWork, MaxReplayWork: r.lim.MaxReplayWork}})
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
	if m.role == RoleInstructor && r.instructors == 0 {
		r.lastLeft = now
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

// admit checks that a command (canonical) fits the log now and takes a
// token of the room's command rate.
func (r *room) admit(cmd json.RawMessage, now time.Time) *wsmsg.Error {
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
	return nil
}

// nextSeq is the seq the next command gets.
func (r *room) nextSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return uint64(len(r.log)) + 1
}

// append logs and broadcasts e (checked, and stored when there is a
// store).
func (r *room) append(e Entry, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, e)
	r.logBytes += len(e.Cmd)
	r.lastCommand = now
	r.broadcastLocked(mustMarshal(commandOut{Type: typeCommand, Seq: e.Seq, Cmd: e.Cmd}))
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

// expire closes the room when nobody holds it any more: no instructor
// connected and nothing commanded for IdleExpiry (students alone do not
// hold it), or nothing commanded for QuietExpiry whoever is connected.
// Its members are told and disconnected. It reports whether it did.
func (r *room) expire(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	idle := r.instructors == 0 && now.Sub(r.lastLeft) >= r.lim.IdleExpiry && now.Sub(r.lastCommand) >= r.lim.IdleExpiry
	quiet := now.Sub(r.lastCommand) >= r.lim.QuietExpiry
	if !idle && !quiet {
		return false
	}
	r.closed = true
	for m := range r.members {
		m.peer.Abort(websocket.CloseNormalClosure, "the room expired: nobody commanded it")
	}
	return true
}

// Log returns a copy of the command log.
func (r *room) Log() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.log...)
}

// workBucket is a room's budget of the server's replay, in units of
// play's ReplayCost; it may go into debt by one command's work.
type workBucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// available reports whether a command may be checked at now.
func (b *workBucket) available(now time.Time) bool {
	if !b.last.IsZero() {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(b.burst, b.tokens+dt*b.rate)
		}
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	return b.tokens > 0
}

// spend takes work units.
func (b *workBucket) spend(units uint64) { b.tokens -= float64(units) }
