package rooms

import (
	"encoding/json"

	"github.com/gorilla/websocket"

	"ringlab/server/wsmsg"
)

// handle processes one message on m's reader goroutine and reports whether
// m is joined afterwards.
func (r *Registry) handle(rm *room, m *member, kind int, data []byte) bool {
	if !m.bucket.Allow(r.opts.Now()) {
		m.violations++
		if m.violations == 1 {
			m.reply(wsmsg.Errorf(wsmsg.CodeRateLimited, "", "more than %d messages per second (burst %d): message dropped", msgRatePerSecond, msgBurst))
		}
		if m.violations >= maxViolations {
			m.peer.Abort(websocket.ClosePolicyViolation, "rate limit exceeded repeatedly")
		}
		return m.role != ""
	}
	m.violations = 0
	if kind != websocket.TextMessage {
		m.reply(wsmsg.Errorf(wsmsg.CodeBinaryFrame, "", "binary frames are not accepted; send JSON text messages"))
		return m.role != ""
	}
	typ, err := wsmsg.Type(data)
	if err != nil {
		m.reply(wsmsg.AsError(err))
		return m.role != ""
	}
	switch typ {
	case typeJoin:
		r.join(rm, m, data)
	case typeCommand:
		r.command(rm, m, data)
	case typePing:
		var p pingMsg
		if err := wsmsg.Strict(data, &p); err != nil {
			m.reply(wsmsg.AsError(err))
			break
		}
		m.peer.Send(mustMarshal(pongMsg{Type: typePong}))
	default:
		m.reply(wsmsg.Errorf(wsmsg.CodeUnknownType, "type", "unknown message type %q; /ws/room takes join, command and ping", typ))
	}
	return m.role != ""
}

func (m *member) reply(e *wsmsg.Error) { m.peer.Send(e.Encode()) }

// join checks a join message and adds m to the room. The token is
// presented here, once: a wrong token leaves m unjoined (it may try
// again); a full or expired room closes the connection after the error.
func (r *Registry) join(rm *room, m *member, data []byte) {
	if m.role != "" {
		m.reply(wsmsg.Errorf(wsmsg.CodeBadState, "", "already joined as %s", m.role))
		return
	}
	var j joinMsg
	if err := wsmsg.Strict(data, &j); err != nil {
		m.reply(wsmsg.AsError(err))
		return
	}
	switch j.Role {
	case RoleStudent:
	case RoleInstructor:
		if j.Token == nil || !rm.tokenOK(*j.Token) {
			m.reply(wsmsg.Errorf(wsmsg.CodeForbidden, "token", "joining as instructor needs the room's instructor token"))
			return
		}
	default:
		m.reply(wsmsg.Errorf(wsmsg.CodeOutOfRange, "role", `role must be "student" or "instructor", got %q`, j.Role))
		return
	}
	var since uint64
	if j.Since != nil {
		since = *j.Since
	}
	if e := rm.join(m, j.Role, since); e != nil {
		m.reply(e)
		m.peer.Close(websocket.ClosePolicyViolation, e.Message)
		return
	}
	m.joined.Store(true)
}

// command checks that m joined as instructor, then the command, and logs
// and broadcasts it. The authority is the connection's: a command carries
// no token, so one seen on the wire cannot be replayed from another
// connection.
func (r *Registry) command(rm *room, m *member, data []byte) {
	if m.role == "" {
		m.reply(wsmsg.Errorf(wsmsg.CodeBadState, "", "send join first"))
		return
	}
	var c commandMsg
	if err := wsmsg.Strict(data, &c); err != nil {
		m.reply(wsmsg.AsError(err))
		return
	}
	if m.role != RoleInstructor {
		m.reply(wsmsg.Errorf(wsmsg.CodeForbidden, "", "only a connection that joined as instructor (with the room's token) may send commands"))
		return
	}
	if len(c.Cmd) == 0 {
		m.reply(wsmsg.Errorf(wsmsg.CodeBadField, "cmd", "command needs cmd"))
		return
	}
	cmd, err := r.opts.Validator(c.Cmd)
	if err != nil {
		m.reply(wsmsg.AsError(err).WithFieldPrefix("cmd"))
		return
	}
	if e := r.commit(rm, cmd); e != nil {
		m.reply(e)
	}
}

// commit numbers a canonical command, checks it on the room's replica
// (what it costs every browser and the world it leaves), writes it to the
// store and broadcasts it, in that order: a broadcast command (the
// acknowledgement) is on disk.
func (r *Registry) commit(rm *room, cmd json.RawMessage) *wsmsg.Error {
	rm.cmdMu.Lock()
	defer rm.cmdMu.Unlock()
	now := r.opts.Now()
	if e := rm.admit(cmd, now); e != nil {
		return e
	}
	e := Entry{Seq: rm.nextSeq(), Cmd: cmd}
	if r.replay {
		if !rm.work.available(now) {
			return wsmsg.Errorf(wsmsg.CodeRateLimited, "", "the room's commands have cost the server more replay than it gives one room (%d units a second): wait a moment", r.lim.WorkPerSecond)
		}
		if err := r.replicas.apply(rm, e, r.lim); err != nil {
			return err
		}
	}
	if r.opts.Store != nil {
		if err := r.opts.Store.Append(rm.id, e, now); err != nil {
			r.replicas.drop(rm) // it is ahead of the log now
			r.log.Error("storing a command", "room", rm.id, "seq", e.Seq, "err", err)
			return wsmsg.Errorf(wsmsg.CodeInternal, "", "the command could not be stored, so it was not sent: %v", err)
		}
	}
	rm.append(e, now)
	return nil
}
