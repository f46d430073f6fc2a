package rooms

import (
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

// join checks a join message and adds m to the room. A wrong token leaves m
// unjoined (it may try again); a full or expired room closes the
// connection after the error.
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
	if e := rm.join(m, j.Role); e != nil {
		m.reply(e)
		m.peer.Close(websocket.ClosePolicyViolation, e.Message)
		return
	}
	m.joined.Store(true)
}

// command checks the token, then the command, and logs and broadcasts it.
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
	if !rm.tokenOK(c.Token) {
		m.reply(wsmsg.Errorf(wsmsg.CodeForbidden, "token", "only the instructor (with the room's token) may send commands"))
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
	if e := rm.command(cmd, r.opts.Now()); e != nil {
		m.reply(e)
	}
}
