package rooms

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"ringlab/proto"
	"ringlab/server/ratelimit"
	"ringlab/server/wspeer"
)

// member is one connection to a room.
type member struct {
	peer *wspeer.Peer
	addr string // the remote address

	// Owned by the reader goroutine.
	guard *ratelimit.Guard // messages and ping frames, and the run over the limit
	role  string           // "" until joined; the role is the connection's authority

	joined atomic.Bool // role is set (read by the join timer)
	// invited: the connection's upgrade carried the room's invitation
	// (or the room admits its plain id); set before it reads.
	invited bool

	// Guarded by the room's mu once joined.
	client      string // the page's own id (join's client), or one the room gave
	name        string // what the roster shows
	status      statusMsg
	behindSince time.Time // a command it has not applied since (zero: in step)
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
	created   time.Time
	lim       Limits

	cmdMu sync.Mutex
	work  workBucket // guarded by cmdMu
	// worldEst is the MemoryEstimate of the room's world as its replica
	// last had it (of its scenario before), guarded by cmdMu.
	worldEst int64

	mu       sync.Mutex
	closed   bool // expired or shut down: no more joins
	log      []Entry
	logBytes int
	// logJSON is the log's entries in JSON, comma-separated, entry i from
	// logOffsets[i]: the welcome's log from any seq is a slice of it,
	// shared by every joiner. Bytes once written never change (appends
	// go past every slice handed out).
	logJSON     []byte
	logOffsets  []int
	logErr      error // an entry that is not JSON: joins are refused
	members     map[*member]struct{}
	students    int
	instructors int
	lastCommand time.Time // or creation, or the server's start
	lastLeft    time.Time // when the last instructor left (or lastCommand)
	// claimBy is when a room nobody has commanded expires while no
	// instructor is connected (Limits.ClaimExpiry); commanded: a command
	// was ever logged.
	claimBy   time.Time
	commanded bool
	commands  *ratelimit.Bucket
	// The class: at most classSize students; when open is false only
	// connections that carried invite join as students.
	classSize int
	invite    string
	open      bool

	clock       func() time.Time
	joinedCount int                               // students who ever joined (their default names)
	gone        map[string]RosterEntry            // students who left, by client, for the roster
	goneOrder   []string                          // oldest first
	goneFrom    map[string]string                 // the address each gone student was at
	live        map[string]int                    // student connections now, by address
	liveInst    map[string]int                    // instructor connections now, by address
	peak        map[string]int                    // the most there were at once, by address
	removed     map[string]bool                   // clients the instructor removed: they may not join again
	removedList []string                          // oldest first
	predictions map[questionKey]map[string]string // answers by client
	predOrder   []questionKey
	rosterDue   *time.Timer // a roster is scheduled for the instructors
	lastBeacon  []byte      // the instructor's last, for joiners
}

type questionKey struct {
	tutorial       string
	step, question int
}

func newRoom(s StoredRoom, lim Limits, now time.Time) *room {
	// After a restart the clocks start again: the instructor has
	// IdleExpiry to come back.
	active := s.Active
	if active.Before(now) {
		active = now
	}
	return &room{
		id: s.ID, tokenHash: s.TokenHash, scenario: s.Scenario, creator: s.Creator, created: s.Created, lim: lim,
		classSize: classSizeOr(s.ClassSize, lim), invite: s.Invite, open: s.Open || s.Invite == "",
		members:     map[*member]struct{}{},
		gone:        map[string]RosterEntry{},
		goneFrom:    map[string]string{},
		live:        map[string]int{},
		liveInst:    map[string]int{},
		peak:        map[string]int{},
		removed:     map[string]bool{},
		predictions: map[questionKey]map[string]string{},
		clock:       time.Now,
		lastCommand: active, lastLeft: active,
		claimBy:  s.Created.Add(lim.ClaimExpiry),
		commands: ratelimit.New(float64(lim.CommandsPerSecond), lim.CommandsPerSecond),
		worldEst: scenarioBytes(s.Scenario),
		work:     workBucket{rate: float64(lim.WorkPerSecond), burst: float64(lim.MaxCommandWork), tokens: float64(lim.MaxCommandWork)},
	}
}

// classSizeOr is n within the server's cap, or the default class size
// for 0.
func classSizeOr(n int, lim Limits) int {
	if n <= 0 {
		n = lim.ClassSize
	}
	return min(n, lim.MaxStudents)
}

// inviteOK reports whether a connection that carried invite may join as
// a student (any connection, when the room admits its plain id).
func (r *room) inviteOK(invite string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open || invite != "" && subtle.ConstantTimeCompare([]byte(invite), []byte(r.invite)) == 1
}

// classLocked is the room's class as a member of role sees it: the
// invitation to instructors only.
func (r *room) classLocked(role string) *proto.Class {
	c := &proto.Class{Size: r.classSize, InvitationOnly: !r.open}
	if role == RoleInstructor {
		c.Invite = r.invite
	}
	return c
}

// inUseLocked reports whether the room is in use at now: an instructor
// connected, or commanded and not idle (a command or an instructor
// there within IdleExpiry). A room in use keeps its seats reserved and
// is never evicted for a new one.
func (r *room) inUseLocked(now time.Time) bool {
	return r.instructors > 0 || r.commanded && (now.Sub(r.lastCommand) < r.lim.IdleExpiry || now.Sub(r.lastLeft) < r.lim.IdleExpiry)
}

// membersFrom is how many members addr has in the room while it is in
// use (none otherwise).
func (r *room) membersFrom(addr string, now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.inUseLocked(now) {
		return 0
	}
	return r.live[addr] + r.liveInst[addr]
}

// wantSeats is what the room reserves at now: its class and its
// instructors while it is in use, nothing otherwise.
func (r *room) wantSeats(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.inUseLocked(now) {
		return 0
	}
	return r.classSize + r.lim.MaxInstructors
}

// unused reports whether the room may give its place to a new one: not
// in use and not closed.
func (r *room) unused(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed && !r.inUseLocked(now)
}

// inviteIs reports whether invite is the room's invitation.
func (r *room) inviteIs(invite string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.invite != "" && subtle.ConstantTimeCompare([]byte(invite), []byte(r.invite)) == 1
}

// close ends the room (taken out of the registry): no more joins, and
// its members are told why and disconnected.
func (r *room) close(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked(reason)
}

func (r *room) closeLocked(reason string) {
	r.closed = true
	if r.rosterDue != nil {
		r.rosterDue.Stop()
	}
	for m := range r.members {
		m.peer.Abort(websocket.CloseNormalClosure, reason)
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
func (r *room) join(m *member, role string, since uint64, client, name string) *proto.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return proto.Errorf(proto.CodeNotFound, "", "room %s has expired", r.id)
	}
	switch role {
	case RoleStudent:
		if !r.open && !m.invited {
			return proto.Errorf(proto.CodeForbidden, "invite", "room %s admits the students it invited: open the join link or QR code its instructor shows", r.id)
		}
		if r.students >= r.classSize {
			return proto.Errorf(proto.CodeLimitExceeded, "", "room %s is full: its class is %d students (its instructor sets the class size)", r.id, r.classSize)
		}
		if client != "" && r.removed[client] {
			return proto.Errorf(proto.CodeForbidden, "", "the instructor removed this student from room %s", r.id)
		}
		r.students++
		r.joinedCount++
		if client == "" {
			client = fmt.Sprintf("#%d", r.joinedCount)
		}
		if name == "" {
			name = fmt.Sprintf("student %d", r.joinedCount)
		}
		m.client, m.name = client, name
		m.status = statusMsg{Status: proto.Status{State: "replaying"}}
		r.forgetGoneLocked(client)
		r.live[m.addr]++
		r.peak[m.addr] = max(r.peak[m.addr], r.live[m.addr])
		r.trimGoneLocked(m.addr)
	case RoleInstructor:
		if r.instructors >= r.lim.MaxInstructors {
			return proto.Errorf(proto.CodeLimitExceeded, "", "room %s has %d instructor connections already, the limit", r.id, r.lim.MaxInstructors)
		}
		r.instructors++
		r.liveInst[m.addr]++
	}
	m.role = role
	r.members[m] = struct{}{}
	if since > uint64(len(r.log)) {
		since = 0 // a log this room does not have: the whole of it
	}
	if r.logErr != nil { // a log the store let through that is not JSON: not for a panic
		r.removeLocked(m)
		return proto.Errorf(proto.CodeInternal, "", "room %s: its log cannot be sent: %v", r.id, r.logErr)
	}
	// The welcome is its own head, then the log's JSON from since, which
	// every joiner shares (a late joiner's welcome costs the server its
	// head, not a copy of the log), then the end.
	head := proto.MustEncode(typeWelcome, proto.Welcome{Version: proto.Version, Room: r.id, You: role, Scenario: r.scenario, Since: since,
		Students: r.students, Instructors: r.instructors, Limits: proto.Limits{
			MaxStudents: r.lim.MaxStudents, CommandsPerSecond: r.lim.CommandsPerSecond,
			MaxLogEntries: r.lim.MaxLogEntries, MaxCommandBytes: r.lim.MaxCommandBytes,
			MaxCommandWork: r.lim.MaxCommandWork, MaxReplayWork: r.lim.MaxReplayWork},
		Class: r.classLocked(role)})
	head = append(head[:len(head)-1], `,"log":[`...)
	var log []byte
	if since < uint64(len(r.log)) {
		log = r.logJSON[r.logOffsets[since]:len(r.logJSON):len(r.logJSON)]
	}
	if !m.peer.TrySendParts(head, log, []byte("]}")) {
		r.dropLocked(m)
		return nil
	}
	// The last beacon, so a late joiner checks the world it replays.
	if role == RoleStudent && r.lastBeacon != nil && !m.peer.TrySend(r.lastBeacon) {
		r.dropLocked(m)
		return nil
	}
	r.presenceLocked()
	r.rosterLocked()
	return nil
}

// leave removes m (if it is still a member) and reports whether it was
// an instructor (the room's use may have changed).
func (r *room) leave(m *member, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[m]; !ok {
		return false
	}
	r.removeLocked(m)
	if m.role == RoleInstructor && r.instructors == 0 {
		r.lastLeft = now
	}
	r.presenceLocked()
	r.rosterLocked()
	return m.role == RoleInstructor
}

// classRecord is the room's class as the store keeps it.
func (r *room) classRecord() ClassRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ClassRecord{ClassSize: r.classSize, Invite: r.invite, Open: r.open}
}

// setClass applies a class its store has.
func (r *room) setClass(c ClassRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.classSize, r.invite, r.open = c.ClassSize, c.Invite, c.Open
}

// offerClass tells every instructor the class, with reserved seats.
func (r *room) offerClass(reserved int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.classLocked(RoleInstructor)
	c.Reserved = reserved
	msg := mustMarshal(classInfo{Type: typeClass, Class: *c})
	for m := range r.members {
		if m.role == RoleInstructor {
			m.peer.Offer(msg)
		}
	}
}

func (r *room) removeLocked(m *member) {
	delete(r.members, m)
	switch m.role {
	case RoleStudent:
		r.students--
		if r.live[m.addr]--; r.live[m.addr] <= 0 {
			delete(r.live, m.addr)
		}
		for o := range r.members {
			if o.client == m.client {
				return // the same page joined again already
			}
		}
		if r.removed[m.client] {
			r.dropAnswersLocked(m.client)
			return
		}
		e := r.entryLocked(m, time.Time{})
		e.State = "gone"
		r.forgetGoneLocked(m.client)
		r.gone[m.client] = e
		r.goneFrom[m.client] = m.addr
		r.goneOrder = append(r.goneOrder, m.client)
		r.trimGoneLocked(m.addr)
		for len(r.goneOrder) > r.lim.MaxStudents {
			r.dropGoneLocked(r.goneOrder[0])
		}
		if len(r.peak) > 4*r.lim.MaxStudents { // addresses long gone
			for a := range r.peak {
				if r.live[a] == 0 {
					delete(r.peak, a)
				}
			}
		}
	case RoleInstructor:
		r.instructors--
		if r.liveInst[m.addr]--; r.liveInst[m.addr] <= 0 {
			delete(r.liveInst, m.addr)
		}
	}
}

// dropLocked disconnects a member whose queue overflowed.
func (r *room) dropLocked(m *member) {
	r.removeLocked(m)
	m.peer.Abort(websocket.ClosePolicyViolation, "send queue overflow: client too slow to follow the room")
}

// admit checks that a command (canonical) fits the log now and takes a
// token of the room's command rate.
func (r *room) admit(cmd json.RawMessage, now time.Time) *proto.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if limit := r.lim.MaxCommandBytes; len(cmd) > limit {
		if typ, _ := proto.Type(cmd); typ != typeLesson {
			return proto.Errorf(proto.CodeOutOfRange, "cmd", "a command has at most %d bytes", limit)
		}
		if len(cmd) > r.lim.MaxLessonBytes {
			return proto.Errorf(proto.CodeOutOfRange, "cmd", "a lesson command has at most %d bytes", r.lim.MaxLessonBytes)
		}
	}
	if len(r.log) >= r.lim.MaxLogEntries || r.logBytes+len(cmd) > r.lim.MaxLogBytes {
		return proto.Errorf(proto.CodeLimitExceeded, "", "the room's log is full (%d commands or %d bytes); create a new room", r.lim.MaxLogEntries, r.lim.MaxLogBytes)
	}
	if !r.commands.Allow(now) {
		return proto.Errorf(proto.CodeRateLimited, "", "more than %d commands per second in this room: command dropped", r.lim.CommandsPerSecond)
	}
	return nil
}

// wasCommanded reports whether a command was ever logged.
func (r *room) wasCommanded() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commanded
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
	r.appendLogLocked(e)
	r.lastCommand = now
	r.commanded = true
	r.broadcastLocked(proto.MustEncode(typeCommand, e))
	for m := range r.members {
		if m.role == RoleStudent && m.behindSince.IsZero() && m.status.Applied < e.Seq {
			m.behindSince = now
		}
	}
	r.rosterLocked()
}

// appendLogLocked adds e to the log and its JSON to the welcome's.
func (r *room) appendLogLocked(e Entry) {
	r.log = append(r.log, e)
	r.logBytes += len(e.Cmd)
	if r.logErr != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		r.logErr = fmt.Errorf("command %d: %w", e.Seq, err)
		return
	}
	if len(r.logJSON) > 0 {
		r.logJSON = append(r.logJSON, ',')
	}
	r.logOffsets = append(r.logOffsets, len(r.logJSON))
	r.logJSON = append(r.logJSON, b...)
}

// setLog replaces the log (a restored room's).
func (r *room) setLog(log []Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log, r.logBytes, r.logJSON, r.logOffsets, r.logErr = nil, 0, nil, nil, nil
	for _, e := range log {
		r.appendLogLocked(e)
	}
	r.commanded = len(log) > 0
}

// restored says the room was loaded from the store at now: one nobody
// has commanded keeps the age it had, its claim running from its
// creation, with at most RestartGrace more for its instructor's page to
// come back (the idle and quiet clocks start again, as newRoom has them).
func (r *room) restored(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.commanded {
		return
	}
	grace := r.claimBy.Add(RestartGrace)
	if soon := now.Add(RestartGrace); soon.Before(grace) {
		grace = soon
	}
	if grace.After(r.claimBy) {
		r.claimBy = grace
	}
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

// presenceLocked tells every member how many are in the room (students
// see the instructor away and back), through their mailboxes: only the
// newest count matters, so it never fills a queue.
func (r *room) presenceLocked() {
	msg := mustMarshal(presenceMsg{typePresence, proto.Presence{Students: r.students, Instructors: r.instructors}})
	for m := range r.members {
		m.peer.Offer(msg)
	}
}

// LagAfter is how long a following student may stay behind the log
// before the roster calls it lagging.
const LagAfter = 3 * time.Second

// rosterPeriod is how often at most the instructors get the roster and
// the predictions (a class's statuses arrive together).
const rosterPeriod = 250 * time.Millisecond

// relayLocked queues a beacon for every student, in order with the
// commands (a beacon speaks of a command before it).
func (r *room) relayBeacon(b proto.Beacon) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := proto.MustEncode(typeBeacon, b)
	r.lastBeacon = msg
	for m := range r.members {
		if m.role == RoleStudent && !m.peer.TrySend(msg) {
			r.dropLocked(m)
		}
	}
}

// setStatus records a student's status for the roster.
func (r *room) setStatus(m *member, st statusMsg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[m]; !ok {
		return
	}
	m.status = st
	if st.Applied >= uint64(len(r.log)) || st.State == "detached" {
		m.behindSince = time.Time{}
	} else if m.behindSince.IsZero() {
		m.behindSince = r.clock()
	}
	r.rosterLocked()
}

// predict records a student's answer at a question, anonymously (the
// instructors see how many gave each answer). A question holds at most
// twice MaxStudents answers (pages that joined again with new client ids
// add no more).
func (r *room) predict(m *member, k questionKey, answer string) *proto.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.predictions[k]; a != nil && answer != "" && len(a) >= 2*r.lim.MaxStudents {
		if _, ok := a[m.client]; !ok {
			return proto.Errorf(proto.CodeLimitExceeded, "", "this question has %d answers, the most it keeps", len(a))
		}
	}
	answers := r.predictions[k]
	if answers == nil {
		if len(r.predOrder) >= maxQuestions {
			old := r.predOrder[0]
			r.predOrder = r.predOrder[1:]
			delete(r.predictions, old)
		}
		answers = map[string]string{}
		r.predictions[k] = answers
		r.predOrder = append(r.predOrder, k)
	}
	if answer == "" {
		delete(answers, m.client)
	} else {
		answers[m.client] = answer
	}
	r.rosterLocked()
	return nil
}

// share shows one question's distribution to every member.
func (r *room) share(k questionKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := mustMarshal(predictionsMsg{typePredictions, proto.Predictions{Shared: true, Questions: []QuestionPredicted{r.questionLocked(k)}}})
	for m := range r.members {
		m.peer.Offer(msg)
	}
}

// Predictions bound a room's: questions kept, distinct answers listed.
const (
	maxQuestions = 64
	maxAnswers   = 40
	maxAnswerLen = proto.MaxAnswer
)

func (r *room) questionLocked(k questionKey) QuestionPredicted {
	q := QuestionPredicted{Tutorial: k.tutorial, Step: k.step, Question: k.question, Answers: []AnswerSeen{}}
	counts := map[string]int{}
	for _, a := range r.predictions[k] {
		counts[a]++
		q.Count++
	}
	for a, n := range counts {
		q.Answers = append(q.Answers, AnswerSeen{Answer: a, Count: n})
	}
	slices.SortFunc(q.Answers, func(a, b AnswerSeen) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Answer, b.Answer)
	})
	if len(q.Answers) > maxAnswers {
		other := 0
		for _, a := range q.Answers[maxAnswers-1:] {
			other += a.Count
		}
		q.Answers = append(q.Answers[:maxAnswers-1], AnswerSeen{Answer: "(other answers)", Count: other})
	}
	return q
}

// forgetGoneLocked takes client off the gone students (it is back); its
// answers stay.
func (r *room) forgetGoneLocked(client string) {
	if _, ok := r.gone[client]; !ok {
		return
	}
	delete(r.gone, client)
	delete(r.goneFrom, client)
	r.goneOrder = slices.DeleteFunc(r.goneOrder, func(c string) bool { return c == client })
}

// dropGoneLocked forgets a gone student, its answers too.
func (r *room) dropGoneLocked(client string) {
	r.forgetGoneLocked(client)
	r.dropAnswersLocked(client)
}

func (r *room) dropAnswersLocked(client string) {
	for _, answers := range r.predictions {
		delete(answers, client)
	}
}

// trimGoneLocked holds what an address has on the roster and in the
// predictions to one entry per student it had in the room at once: its
// gone students are at most its peak less those in the room now (the
// longest gone dropped first). A class behind one address that lost a
// few keeps them; a page joining again and again under new ids keeps
// one (issue 27: one address put 400 names on the roster that way, and
// 799 of a question's 800 answers).
func (r *room) trimGoneLocked(addr string) {
	allowed := r.peak[addr] - r.live[addr]
	n := 0
	for _, c := range r.goneOrder {
		if r.goneFrom[c] == addr {
			n++
		}
	}
	for i := 0; n > allowed && i < len(r.goneOrder); {
		if c := r.goneOrder[i]; r.goneFrom[c] == addr {
			r.dropGoneLocked(c)
			n--
			continue
		}
		i++
	}
}

// remove takes a student off the room at the instructor's word: its
// connections are closed, its roster entry and answers dropped, and its
// client id may not join again. It reports false when the room has no
// such student.
func (r *room) remove(client string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	if _, ok := r.gone[client]; ok {
		r.dropGoneLocked(client)
		found = true
	}
	for m := range r.members {
		if m.role == RoleStudent && m.client == client {
			found = true
		}
	}
	if !found {
		return false
	}
	if !r.removed[client] {
		r.removed[client] = true
		r.removedList = append(r.removedList, client)
		for len(r.removedList) > r.lim.MaxStudents {
			delete(r.removed, r.removedList[0])
			r.removedList = r.removedList[1:]
		}
	}
	for m := range r.members {
		if m.role == RoleStudent && m.client == client {
			r.removeLocked(m)
			m.peer.Abort(websocket.ClosePolicyViolation, "the instructor removed you from the room")
		}
	}
	r.dropAnswersLocked(client)
	r.presenceLocked()
	r.rosterLocked()
	return true
}

// entryLocked is m's roster entry at now (zero now: no lagging).
func (r *room) entryLocked(m *member, now time.Time) RosterEntry {
	st := m.status
	e := RosterEntry{Client: m.client, Name: m.name, State: st.State, Applied: st.Applied, Tutorial: st.Tutorial, Step: st.Step, Revealed: st.Revealed}
	if !now.IsZero() && !m.behindSince.IsZero() && now.Sub(m.behindSince) >= LagAfter && st.State != "detached" {
		e.State = "lagging"
	}
	return e
}

// rosterLocked schedules the roster and the predictions for the
// instructors (at most every rosterPeriod).
func (r *room) rosterLocked() {
	if r.rosterDue != nil || r.closed || r.instructors == 0 {
		return
	}
	r.rosterDue = time.AfterFunc(rosterPeriod, r.sendRoster)
}

// sendRoster offers the instructors the roster and the predictions; while
// a student is behind it comes again, so lagging shows.
func (r *room) sendRoster() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rosterDue = nil
	if r.closed || r.instructors == 0 {
		return
	}
	now := r.clock()
	ro := rosterMsg{typeRoster, proto.Roster{Seq: uint64(len(r.log)), Students: []RosterEntry{}}}
	behind := false
	for m := range r.members {
		if m.role == RoleStudent {
			ro.Students = append(ro.Students, r.entryLocked(m, now))
			behind = behind || !m.behindSince.IsZero() && m.status.State != "detached"
		}
	}
	for _, c := range r.goneOrder {
		ro.Students = append(ro.Students, r.gone[c])
	}
	slices.SortStableFunc(ro.Students, func(a, b RosterEntry) int { return strings.Compare(a.Name, b.Name) })
	pr := predictionsMsg{typePredictions, proto.Predictions{Questions: []QuestionPredicted{}}}
	for _, k := range r.predOrder {
		pr.Questions = append(pr.Questions, r.questionLocked(k))
	}
	rm, pm := mustMarshal(ro), mustMarshal(pr)
	for m := range r.members {
		if m.role == RoleInstructor {
			m.peer.Offer(rm)
			m.peer.Offer(pm)
		}
	}
	if behind {
		r.rosterDue = time.AfterFunc(time.Second, r.sendRoster)
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
	unclaimed := r.instructors == 0 && !r.commanded && !now.Before(r.claimBy)
	quiet := now.Sub(r.lastCommand) >= r.lim.QuietExpiry
	if !idle && !unclaimed && !quiet {
		return false
	}
	r.closeLocked("the room expired: nobody commanded it")
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

// worldBytes is the estimate of the room's world (under cmdMu).
func (r *room) worldBytes() int64 { return r.worldEst }

// setWorldBytes records the estimate of the room's world (under cmdMu).
func (r *room) setWorldBytes(n int64) { r.worldEst = n }
