package rooms

import (
	"crypto/rand"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"ringlab/play"
	"ringlab/proto"
)

// handle processes one message on m's reader goroutine and reports whether
// m is joined afterwards.
func (r *Registry) handle(rm *room, m *member, kind int, data []byte) bool {
	if !r.allow(m) {
		return m.role != ""
	}
	if kind != websocket.TextMessage {
		m.reply(proto.Errorf(proto.CodeBinaryFrame, "", "binary frames are not accepted; send JSON text messages"))
		return m.role != ""
	}
	typ, err := proto.Type(data)
	if err != nil {
		m.reply(proto.AsError(err))
		return m.role != ""
	}
	switch typ {
	case typeJoin:
		r.join(rm, m, data)
	case typeCommand:
		r.command(rm, m, data)
	case typeBeacon, typeStatus, typePredict, typeShare, typeRemove, typeClass:
		r.side(rm, m, typ, data)
	case typePing:
		var p pingMsg
		if err := proto.Strict(data, &p); err != nil {
			m.reply(proto.AsError(err))
			break
		}
		m.peer.Send(mustMarshal(pongMsg{Type: typePong}))
	default:
		m.reply(proto.Errorf(proto.CodeUnknownType, "type", "unknown message type %q; /ws/room takes join, command, beacon, status, predict, share_predictions, remove, class and ping", typ))
	}
	return m.role != ""
}

// allow takes a token of m's message rate for a message or a ping frame
// (on m's reader goroutine); over the limit it says so once a streak and
// closes the connection after maxViolations in a row.
func (r *Registry) allow(m *member) bool {
	ok, first, closeNow := m.guard.Take(r.opts.Now(), maxViolations)
	if first {
		m.reply(proto.Errorf(proto.CodeRateLimited, "", "more than %d messages per second (burst %d, ping frames included): message dropped", msgRatePerSecond, msgBurst))
	}
	if closeNow {
		m.peer.Abort(websocket.ClosePolicyViolation, "rate limit exceeded repeatedly")
	}
	return ok
}

func (m *member) reply(e *proto.Error) { m.peer.Send(e.Encode()) }

// join checks a join message and adds m to the room. The token is
// presented here, once: a wrong token leaves m unjoined (it may try
// again); a full or expired room closes the connection after the error.
func (r *Registry) join(rm *room, m *member, data []byte) {
	if m.role != "" {
		m.reply(proto.Errorf(proto.CodeBadState, "", "already joined as %s", m.role))
		return
	}
	var j joinMsg
	if err := proto.Strict(data, &j); err != nil {
		m.reply(proto.AsError(err))
		return
	}
	switch j.Role {
	case RoleStudent:
	case RoleInstructor:
		if j.Token == "" || !rm.tokenOK(j.Token) {
			m.reply(proto.Errorf(proto.CodeForbidden, "token", "joining as instructor needs the room's instructor token"))
			return
		}
	default:
		m.reply(proto.Errorf(proto.CodeOutOfRange, "role", `role must be "student" or "instructor", got %q`, j.Role))
		return
	}
	if j.Client != "" && !clientPattern.MatchString(j.Client) {
		m.reply(proto.Errorf(proto.CodeBadField, "client", "client must match %s", clientPattern))
		return
	}
	name := strings.Join(strings.Fields(j.Name), " ")
	if !utf8.ValidString(name) || len(name) > maxNameLen || strings.ContainsFunc(name, unicode.IsControl) {
		m.reply(proto.Errorf(proto.CodeBadField, "name", "a name has at most %d bytes of printable UTF-8", maxNameLen))
		return
	}
	if e := rm.join(m, j.Role, j.Since, j.Client, name); e != nil {
		m.reply(e)
		m.peer.Close(websocket.ClosePolicyViolation, e.Message)
		return
	}
	m.joined.Store(true)
	if j.Role == RoleInstructor { // the room is in use: its seats reserved
		r.updateSeats(rm)
	}
}

// command checks that m joined as instructor, then the command, and logs
// and broadcasts it. The authority is the connection's: a command carries
// no token, so one seen on the wire cannot be replayed from another
// connection.
func (r *Registry) command(rm *room, m *member, data []byte) {
	if m.role == "" {
		m.reply(proto.Errorf(proto.CodeBadState, "", "send join first"))
		return
	}
	var c struct {
		Type string `json:"type"`
		proto.Command
	}
	if err := proto.Strict(data, &c); err != nil {
		m.reply(proto.AsError(err))
		return
	}
	if m.role != RoleInstructor {
		m.reply(proto.Errorf(proto.CodeForbidden, "", "only a connection that joined as instructor (with the room's token) may send commands"))
		return
	}
	if len(c.Cmd) == 0 {
		m.reply(proto.Errorf(proto.CodeBadField, "cmd", "command needs cmd"))
		return
	}
	cmd, err := r.opts.Validator(c.Cmd)
	if err != nil {
		m.reply(proto.AsError(err).WithFieldPrefix("cmd"))
		return
	}
	if e := r.commit(rm, m.addr, cmd); e != nil {
		m.reply(e)
	}
}

// commit numbers a canonical command, checks it on the room's replica
// (what it costs every browser and the world it leaves), writes it to the
// store and broadcasts it, in that order: a broadcast command (the
// acknowledgement) is on disk. addr is the sender's address.
func (r *Registry) commit(rm *room, addr string, cmd json.RawMessage) *proto.Error {
	rm.cmdMu.Lock()
	defer rm.cmdMu.Unlock()
	now := r.opts.Now()
	if e := rm.admit(cmd, now); e != nil {
		return e
	}
	e := Entry{Seq: rm.nextSeq(), Cmd: cmd}
	if r.replay {
		if !rm.work.available(now) {
			return proto.Errorf(proto.CodeRateLimited, "", "the room's commands have cost the server more replay than it gives one room (%d units a second): wait a moment", r.lim.WorkPerSecond)
		}
		if err := r.replicas.apply(rm, addr, e, r.lim); err != nil {
			return err
		}
	}
	if r.opts.Store != nil {
		if err := r.opts.Store.Append(rm.id, e, now); err != nil {
			r.replicas.drop(rm) // it is ahead of the log now
			r.log.Error("storing a command", "room", rm.id, "seq", e.Seq, "err", err)
			return proto.Errorf(proto.CodeInternal, "", "the command could not be stored, so it was not sent: %v", err)
		}
	}
	first := !rm.wasCommanded()
	rm.append(e, now)
	if first {
		r.updateSeats(rm)
	}
	return nil
}

// class applies the instructor's class message: checked, stored, then
// told to every instructor with the seats it holds.
func (r *Registry) class(rm *room, m *member, c classSetMsg) {
	if c.Size != nil && (*c.Size < 1 || *c.Size > r.lim.MaxStudents) {
		m.reply(proto.Errorf(proto.CodeOutOfRange, "size", "a class has from 1 to %d students (the server's --room-students), not %d", r.lim.MaxStudents, *c.Size))
		return
	}
	rm.cmdMu.Lock() // one change of the class at a time, stored in order
	rec := rm.classRecord()
	if c.Size != nil {
		rec.ClassSize = *c.Size
	}
	if c.InvitationOnly != nil {
		rec.Open = !*c.InvitationOnly
	}
	if c.NewInvite || rec.Invite == "" && !rec.Open {
		rec.Invite = rand.Text()
	}
	if r.opts.Store != nil {
		if err := r.opts.Store.SetClass(rm.id, rec); err != nil {
			rm.cmdMu.Unlock()
			r.log.Error("storing a room's class", "room", rm.id, "err", err)
			m.reply(proto.Errorf(proto.CodeInternal, "", "the class could not be stored, so it is as it was: %v", err))
			return
		}
	}
	rm.setClass(rec)
	rm.cmdMu.Unlock()
	rm.offerClass(r.updateSeats(rm))
}

// What join's client and name may be.
var (
	clientPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	rosterClient  = regexp.MustCompile(`^#?[A-Za-z0-9_-]{1,32}$`)  // a page's, or one the room gave (#N)
	namePattern   = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`) // a tutorial's
	digestPattern = regexp.MustCompile(`^[0-9a-f]{0,64}$`)
)

const maxNameLen = 40

// Student states a status may report.
var studentStates = []string{"following", "detached", "resyncing", "replaying"}

// side handles the messages beside the log: the instructor's beacon and
// shared predictions, a student's status and prediction. None is logged.
func (r *Registry) side(rm *room, m *member, typ string, data []byte) {
	if m.role == "" {
		m.reply(proto.Errorf(proto.CodeBadState, "", "send join first"))
		return
	}
	want := RoleStudent
	if typ == typeBeacon || typ == typeShare || typ == typeRemove || typ == typeClass {
		want = RoleInstructor
	}
	if m.role != want {
		m.reply(proto.Errorf(proto.CodeForbidden, "", "%s is sent by a connection that joined as %s", typ, want))
		return
	}
	switch typ {
	case typeClass:
		var c classSetMsg
		if err := proto.Strict(data, &c); err != nil {
			m.reply(proto.AsError(err))
			return
		}
		r.class(rm, m, c)
	case typeRemove:
		var rmv removeMsg
		if err := proto.Strict(data, &rmv); err != nil {
			m.reply(proto.AsError(err))
			return
		}
		if !rosterClient.MatchString(rmv.Client) || !rm.remove(rmv.Client) {
			m.reply(proto.Errorf(proto.CodeNotFound, "client", "no student %q in this room (client is a roster entry's)", rmv.Client))
		}
	case typeBeacon:
		var b struct {
			Type string `json:"type"`
			proto.Beacon
		}
		if err := proto.Strict(data, &b); err != nil {
			m.reply(proto.AsError(err))
			return
		}
		switch {
		case !digestPattern.MatchString(b.Digest):
			m.reply(proto.Errorf(proto.CodeBadField, "digest", "digest is up to 64 lower-case hex digits"))
			return
		case b.TNs < 0:
			m.reply(proto.Errorf(proto.CodeOutOfRange, "t_ns", "t_ns is not negative"))
			return
		case b.Speed != 0 && !(b.Speed >= MinRoomSpeed && b.Speed <= play.MaxSpeed):
			m.reply(proto.Errorf(proto.CodeOutOfRange, "speed", "speed is 0 or from %d to %g events a second", MinRoomSpeed, float64(play.MaxSpeed)))
			return
		}
		rm.relayBeacon(b.Beacon)
	case typeStatus:
		var st statusMsg
		if err := proto.Strict(data, &st); err != nil {
			m.reply(proto.AsError(err))
			return
		}
		if !slices.Contains(studentStates, st.State) {
			m.reply(proto.Errorf(proto.CodeOutOfRange, "state", "state is one of %s, got %q", strings.Join(studentStates, ", "), st.State))
			return
		}
		if st.Tutorial != "" && !namePattern.MatchString(st.Tutorial) || st.Step < 0 || st.Step > 999 {
			m.reply(proto.Errorf(proto.CodeOutOfRange, "tutorial", "a tutorial's name and a step from 0 to 999"))
			return
		}
		rm.setStatus(m, st)
	case typePredict, typeShare:
		var p predictMsg
		if typ == typeShare {
			var sh shareMsg
			if err := proto.Strict(data, &sh); err != nil {
				m.reply(proto.AsError(err))
				return
			}
			q := sh.Question
			p.Predict = proto.Predict{Tutorial: q.Tutorial, Step: q.Step, Question: q.Question}
		} else if err := proto.Strict(data, &p); err != nil {
			m.reply(proto.AsError(err))
			return
		}
		if !namePattern.MatchString(p.Tutorial) || p.Step < 1 || p.Step > 999 || p.Question < 0 || p.Question > 99 {
			m.reply(proto.Errorf(proto.CodeOutOfRange, "", "a tutorial's name, a step from 1 to 999 and a question from 0 to 99"))
			return
		}
		k := questionKey{p.Tutorial, p.Step, p.Question}
		if typ == typeShare {
			rm.share(k)
			return
		}
		a := normalizeAnswer(p.Answer)
		if len(a) > maxAnswerLen || !utf8.ValidString(a) || strings.ContainsFunc(a, unicode.IsControl) {
			m.reply(proto.Errorf(proto.CodeOutOfRange, "answer", "an answer has at most %d bytes of printable UTF-8", maxAnswerLen))
			return
		}
		if e := rm.predict(m, k, a); e != nil {
			m.reply(e)
		}
	}
}

// normalizeAnswer makes answers that say the same thing count together:
// trimmed, spaces collapsed, lower case.
func normalizeAnswer(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}
