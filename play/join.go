package play

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"ringlab/proto"
)

// The room's socket is the page's; what goes on it is the controller's.
// The page says what happened to the socket (RoomJoin when it opens,
// RoomDropped when it closes) and what the person did (RoomPredict,
// RoomShare, RoomRemove); the controller writes the frames for the room
// (RoomJoinOut, RoomPredictOut, RoomShareOut, RoomRemoveOut), which the
// page sends on as they are, and says when to connect again
// (RoomRetryOut): the reconnect policy, stated here once.

// The reconnect policy: a socket that drops is opened again after
// RetryFirst, doubling to RetryMax, each delay drawn within a quarter of
// it either way (RetryJitter) so that a class does not come back all at
// once; a join the room refused with one of JoinFinal's codes stands
// (no such room, a full one, a student the instructor removed, a token
// or invitation it does not take) and ends the reconnecting.
// (The controller reads no clock: delays are in wall milliseconds.)
const (
	RetryFirstMs = 500
	RetryMaxMs   = 15_000
	RetryJitter  = 0.25
)

// joinFinal are the codes of a join's refusals that stand.
var joinFinal = []string{proto.CodeNotFound, proto.CodeLimitExceeded, proto.CodeForbidden}

// JoinFinal reports whether a join the room refused with code stands: no
// reconnecting.
func JoinFinal(code string) bool { return slices.Contains(joinFinal, code) }

// RetryDelayMs is the delay before reconnect number retry (from 0), in
// milliseconds, before its jitter.
func RetryDelayMs(retry int) int64 {
	d := int64(RetryFirstMs)
	for i := 0; i < retry && d < RetryMaxMs; i++ {
		d *= 2
	}
	return min(d, RetryMaxMs)
}

// MaxName is the most bytes of a student's name the roster shows.
const MaxName = 40

// rejoin is where the page's joins of a room stand: the room, the
// reconnects tried since the last welcome, whether the next join asks
// for the whole log (a welcome that continued from since did not fit
// the log this page holds), and the commands sent and not yet seen
// broadcast back.
type rejoin struct {
	room    string
	retries int
	whole   bool
	joins   int       // joins written
	sent    []sentCmd // oldest first, at most maxUnacked
}

// sentCmd is a command the page sent its room, in canonical form, and
// the join it went out after (rejoin.joins then).
type sentCmd struct {
	cmd  []byte
	name string
	join int
}

// maxUnacked bounds the commands remembered unacknowledged: the room
// disconnects a member long before so many are on their way.
const maxUnacked = 256

// sending remembers a command on its way to the room.
func (r *rejoin) sending(cmd []byte, name string) {
	if len(r.sent) == maxUnacked {
		r.sent = r.sent[1:]
	}
	r.sent = append(r.sent, sentCmd{cmd, name, r.joins})
}

// acked takes a command the room broadcast. The room handles a
// connection's commands in the order sent, so the broadcast of one of
// this page's acknowledges it and settles every one sent before it (the
// room refused those, and said so). A co-instructor's command that is
// byte for byte one of ours is taken for ours.
func (r *rejoin) acked(cmd []byte) {
	for i, s := range r.sent {
		if string(s.cmd) == string(cmd) {
			r.sent = r.sent[i+1:]
			return
		}
	}
}

// lost is said once a welcome has caught the page up after a reconnect:
// the commands sent on an earlier connection that its log does not hold
// were never taken by the room (sent into a socket that was already
// dead, or refused). The person hears which; a periodic seek, lost,
// is not worth their while.
func (r *rejoin) lost() []Out {
	var names []string
	kept := r.sent[:0]
	for _, s := range r.sent {
		switch {
		case s.join == r.joins:
			kept = append(kept, s) // sent on this connection: on its way
		case s.name != nameOf(Seek{}):
			names = append(names, s.name)
		}
	}
	r.sent = kept
	if len(names) == 0 {
		return nil
	}
	what, again := fmt.Sprintf("%d of your commands (%s)", len(names), strings.Join(names, ", ")), "them"
	if len(names) == 1 {
		what, again = fmt.Sprintf("your command %s", names[0]), "it"
	}
	return note(fmt.Sprintf("Not applied in the room: the connection dropped before the room acknowledged %s. Give %s again if you still want %s.", what, again, again))
}

type (
	// RoomJoin says the page's socket to room Room opened: the
	// controller writes the join (RoomJoinOut). Resume marks a
	// reconnect: the join asks for the log after the last command the
	// controller holds of that room. Token is the instructor's; Client
	// and Name are a student's id across reconnects and name.
	RoomJoin struct {
		Room   string
		Role   string
		Token  string
		Client string
		Name   string
		Resume bool
	}
	// RoomDropped says the page's socket to room Room closed; Refused is
	// the code of the room's refusal of its join, if it refused it.
	RoomDropped struct {
		Room    string
		Refused string
	}
	// RoomPredict is a student's prediction at a tutorial's question, for
	// the room (RoomPredictOut).
	RoomPredict proto.Predict
	// RoomShare is the instructor's: show the class's predictions at a
	// question to the room (RoomShareOut).
	RoomShare proto.Question
	// RoomRemove is the instructor's: take a student out of the room
	// (RoomRemoveOut).
	RoomRemove proto.Remove
)

func (RoomJoin) isIn()    {}
func (RoomDropped) isIn() {}
func (RoomPredict) isIn() {}
func (RoomShare) isIn()   {}
func (RoomRemove) isIn()  {}

type (
	// RoomJoinOut is the join for the room's socket (proto.Join), which
	// the page sends as it is.
	RoomJoinOut proto.Join
	// RoomRetryOut says when to open the room's socket again: after a
	// delay from MinMs to MaxMs (the page draws it), reconnect number
	// Retry; or, when Stop, not at all (the room refused the join for
	// good, with Code).
	RoomRetryOut struct {
		Room  string `json:"room"`
		Retry int    `json:"retry"`
		MinMs int64  `json:"min_ms"`
		MaxMs int64  `json:"max_ms"`
		Stop  bool   `json:"stop,omitempty"`
		Code  string `json:"code,omitempty"`
	}
	// RoomPredictOut, RoomShareOut and RoomRemoveOut are the room's
	// predict, share_predictions and remove messages, which the page
	// sends as they are.
	RoomPredictOut proto.Predict
	RoomShareOut   proto.Question
	RoomRemoveOut  proto.Remove
)

func (RoomJoinOut) isOut()    {}
func (RoomRetryOut) isOut()   {}
func (RoomPredictOut) isOut() {}
func (RoomShareOut) isOut()   {}
func (RoomRemoveOut) isOut()  {}

// join writes the join for a socket that opened.
func (c *Controller) join(m RoomJoin) ([]Out, error) {
	if !m.Resume || m.Room != c.rejoin.room {
		c.rejoin = rejoin{room: m.Room}
	}
	c.rejoin.joins++ // what is sent from now on goes after this join
	out := RoomJoinOut{Role: m.Role}
	switch m.Role {
	case RoleInstructor:
		if m.Token == "" {
			return nil, proto.Errorf(proto.CodeBadField, "token", "an instructor joins with the room's token")
		}
		out.Token = m.Token
	case RoleStudent:
		out.Client, out.Name = m.Client, truncate(strings.TrimSpace(m.Name), MaxName)
	}
	// A reconnect asks for what it missed only: the log after the last
	// command this controller holds of the room, in the same role.
	if m.Resume && !c.rejoin.whole && c.inRoom() && c.room.id == m.Room && c.mode.role() == m.Role {
		out.Since = c.room.last()
	}
	c.rejoin.whole = false
	return []Out{out}, nil
}

// dropped says when to reconnect a socket that closed.
func (c *Controller) dropped(m RoomDropped) []Out {
	if m.Room != c.rejoin.room {
		c.rejoin = rejoin{room: m.Room}
	}
	if JoinFinal(m.Refused) {
		return []Out{RoomRetryOut{Room: m.Room, Retry: c.rejoin.retries, Stop: true, Code: m.Refused}}
	}
	d := float64(RetryDelayMs(c.rejoin.retries))
	c.rejoin.retries++
	return []Out{RoomRetryOut{Room: m.Room, Retry: c.rejoin.retries, MinMs: int64(d * (1 - RetryJitter)), MaxMs: int64(d * (1 + RetryJitter))}}
}

// predict, share and remove write the room's messages a person's act
// makes: a student's prediction, the instructor's showing of the class's
// predictions and its removal of a student.
func (c *Controller) predict(m RoomPredict) ([]Out, error) {
	if c.mode.role() != RoleStudent {
		return nil, proto.Errorf(proto.CodeBadState, "", "predict: only a student of a room predicts for it")
	}
	m.Answer = truncate(m.Answer, proto.MaxAnswer)
	return []Out{RoomPredictOut(m)}, nil
}

func (c *Controller) share(m RoomShare) ([]Out, error) {
	if c.mode.role() != RoleInstructor {
		return nil, proto.Errorf(proto.CodeBadState, "", "share_predictions: only a room's instructor shows the class's predictions")
	}
	return []Out{RoomShareOut(m)}, nil
}

func (c *Controller) remove(m RoomRemove) ([]Out, error) {
	if c.mode.role() != RoleInstructor {
		return nil, proto.Errorf(proto.CodeBadState, "", "remove: only a room's instructor removes a student")
	}
	return []Out{RoomRemoveOut(m)}, nil
}

// truncate cuts s to at most n bytes, at a character's boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// The decoders of the inputs above.

func decodeRoomJoin(raw []byte) (In, int, error) {
	var w struct {
		envelope
		Room   string `json:"room"`
		Role   string `json:"role"`
		Token  string `json:"token"`
		Client string `json:"client"`
		Name   string `json:"name"`
		Resume bool   `json:"resume"`
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Room == "" || len(w.Room) > MaxValue {
		return nil, 0, proto.Errorf(proto.CodeBadField, "room", "room_join needs room: the room's id")
	}
	if w.Role != RoleInstructor && w.Role != RoleStudent {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "role", `role must be "student" or "instructor", got %q`, w.Role)
	}
	if len(w.Token) > MaxValue || len(w.Client) > MaxValue || len(w.Name) > MaxValue {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "", "a token, client or name has at most %d bytes", MaxValue)
	}
	return RoomJoin{w.Room, w.Role, w.Token, w.Client, w.Name, w.Resume}, w.ID, nil
}

func decodeRoomDropped(raw []byte) (In, int, error) {
	var w struct {
		envelope
		Room    string `json:"room"`
		Refused string `json:"refused"`
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Room == "" || len(w.Room) > MaxValue || len(w.Refused) > MaxValue {
		return nil, 0, proto.Errorf(proto.CodeBadField, "room", "room_dropped needs room: the room's id")
	}
	return RoomDropped{w.Room, w.Refused}, w.ID, nil
}

// question reads a tutorial's question (a step from 1: step 0, the
// introduction, asks nothing).
func question(typ string, tutorial string, step, q *int) (proto.Question, error) {
	if err := checkStep(typ, tutorial, step, 1); err != nil {
		return proto.Question{}, err
	}
	if q == nil {
		return proto.Question{}, proto.Errorf(proto.CodeBadField, "question", "%s needs question", typ)
	}
	if *q < 0 || *q > MaxQuestion {
		return proto.Question{}, proto.Errorf(proto.CodeOutOfRange, "question", "question must be between 0 and %d, got %d", MaxQuestion, *q)
	}
	return proto.Question{Tutorial: tutorial, Step: *step, Question: *q}, nil
}

func decodePredict(raw []byte) (In, int, error) {
	var w struct {
		envelope
		Tutorial string  `json:"tutorial"`
		Step     *int    `json:"step"`
		Question *int    `json:"question"`
		Answer   *string `json:"answer"`
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	q, err := question(proto.TypePredict, w.Tutorial, w.Step, w.Question)
	if err != nil {
		return nil, 0, err
	}
	if w.Answer == nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "answer", "predict needs answer")
	}
	return RoomPredict{q.Tutorial, q.Step, q.Question, *w.Answer}, w.ID, nil
}

func decodeShare(raw []byte) (In, int, error) {
	var w struct {
		envelope
		Tutorial string `json:"tutorial"`
		Step     *int   `json:"step"`
		Question *int   `json:"question"`
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	q, err := question(proto.TypeShare, w.Tutorial, w.Step, w.Question)
	if err != nil {
		return nil, 0, err
	}
	return RoomShare(q), w.ID, nil
}

func decodeRemove(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Remove
	}
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if w.Client == "" || len(w.Client) > MaxValue {
		return nil, 0, proto.Errorf(proto.CodeBadField, "client", "remove needs client: a roster entry's")
	}
	return RoomRemove(w.Remove), w.ID, nil
}
