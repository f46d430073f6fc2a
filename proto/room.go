package proto

import "encoding/json"

// Message types of a workshop room's socket, /ws/room/{id}
// (docs/protocol.md). welcome, command and beacon also cross the page
// to the game under the same names, with the same fields.
const (
	TypeJoin     = "join"
	TypeCommand  = "command" // client: {cmd}; server: {seq, cmd}
	TypePing     = "ping"
	TypeWelcome  = "welcome"
	TypePong     = "pong"
	TypePresence = "presence"
	TypeError    = "error"
	// Beside the log: the instructor's beacon (relayed to students, not
	// logged), a student's status and prediction, the roster and the
	// class's predictions (to instructors), a shared distribution, a
	// student removed.
	TypeBeacon      = "beacon"
	TypeStatus      = "status"
	TypePredict     = "predict"
	TypeShare       = "share_predictions"
	TypeRoster      = "roster"
	TypePredictions = "predictions"
	TypeRemove      = "remove"
	// TypeClass is the instructor's word on the class (its size, who may
	// join) and the server's answer to the instructors.
	TypeClass = "class"
)

// Entry is one numbered command of a room's log: the server's command
// message, and an element of a welcome's log.
type Entry struct {
	Seq uint64          `json:"seq"` // from 1, no gaps
	Cmd json.RawMessage `json:"cmd"` // canonical (play.EncodeCommand)
}

// Command is the instructor's command for the room: its connection's
// authority, no token.
type Command struct {
	Cmd json.RawMessage `json:"cmd"`
}

// Beacon is the instructor's periodic word on where the room stands,
// relayed by the room to its students: after command Seq (a seek to
// TNs) pane A's digest was Digest (empty: not comparable), the room
// playing or not at Speed. A following student whose own digest there
// differs resyncs.
type Beacon struct {
	Seq     uint64  `json:"seq"`
	TNs     int64   `json:"t_ns"`
	Digest  string  `json:"digest"`
	Playing bool    `json:"playing"`
	Speed   float64 `json:"speed"`
}

// Status is what a student's page is to the room, for the instructor's
// roster: following, detached, replaying or resyncing, the last command
// it applied, the tutorial step its panel shows and whether every
// question of that step is revealed. The page's controller writes it
// (play's status message) and the page sends it on as it is.
type Status struct {
	State    string `json:"state"`
	Applied  uint64 `json:"applied"`
	Tutorial string `json:"tutorial"`
	Step     int    `json:"step"`
	Revealed bool   `json:"revealed"`
}

// Welcome is the room's answer to a join: the protocol's version, the
// role joined as, the room's scenario (null: the page's default) and its
// log after Since, with the room's rules. The server writes Log after
// the rest (every joiner shares its JSON), so it comes last.
type Welcome struct {
	Version     int             `json:"version"`
	Room        string          `json:"room"`
	You         string          `json:"you"` // instructor or student
	Scenario    json.RawMessage `json:"scenario"`
	Since       uint64          `json:"since"` // the log starts after this seq (0: the whole log)
	Students    int             `json:"students"`
	Instructors int             `json:"instructors"`
	Limits      Limits          `json:"limits"`
	// Class is the room's class: its size, who may join and, to
	// instructors only, the invitation the join link carries.
	Class *Class  `json:"class,omitempty"`
	Log   []Entry `json:"log,omitempty"`
}

// Class is what a room admits: at most Size students, and when
// InvitationOnly only those whose connection carries Invite (the join
// link's invite=, which instructors alone are told).
type Class struct {
	Size           int    `json:"size"`
	InvitationOnly bool   `json:"invitation_only"`
	Invite         string `json:"invite,omitempty"`
	// Reserved is the seats the server holds for the class and its
	// instructors while the room is in use (the server's answer to a
	// class message).
	Reserved int `json:"reserved,omitempty"`
}

// Limits tells clients the rules of the room.
type Limits struct {
	MaxStudents       int    `json:"max_students"`
	CommandsPerSecond int    `json:"commands_per_second"`
	MaxLogEntries     int    `json:"max_log_entries"`
	MaxCommandBytes   int    `json:"max_command_bytes"`
	MaxCommandWork    uint64 `json:"max_command_work"`
	MaxReplayWork     uint64 `json:"max_replay_work"`
}

// MaxAnswer is the most bytes of a prediction's answer a room counts.
const MaxAnswer = 64

// Join is the page's join, the first message on a room's socket: the
// role, the instructor's token, the last command the page holds when it
// reconnects (Since: the welcome's log starts after it), and a
// student's id across reconnects (Client) and name for the roster. The
// page's controller writes it (play's join message).
type Join struct {
	Role   string `json:"role"`
	Token  string `json:"token,omitempty"`
	Since  uint64 `json:"since,omitempty"`
	Client string `json:"client,omitempty"`
	Name   string `json:"name,omitempty"`
}

// Question names a tutorial's question: the instructor's
// share_predictions (show the class's distribution to the room).
type Question struct {
	Tutorial string `json:"tutorial"`
	Step     int    `json:"step"`
	Question int    `json:"question"`
}

// Predict is a student's prediction at a tutorial's question (at most
// MaxAnswer bytes): the last one a student gives counts.
type Predict struct {
	Tutorial string `json:"tutorial"`
	Step     int    `json:"step"`
	Question int    `json:"question"`
	Answer   string `json:"answer"`
}

// Remove is the instructor's: the student whose roster entry has Client
// leaves the room and may not join again.
type Remove struct {
	Client string `json:"client"`
}

// Presence is who is in the room: the server says it when it changes.
type Presence struct {
	Students    int `json:"students"`
	Instructors int `json:"instructors"`
}

// Roster is the instructor's: every student of the room after command
// Seq of its log.
type Roster struct {
	Seq      uint64        `json:"seq"`
	Students []RosterEntry `json:"roster"`
}

// Predictions is the class's predictions, to instructors; Shared: the
// one question the instructor showed the room, to everyone.
type Predictions struct {
	Shared    bool                `json:"shared,omitempty"`
	Questions []QuestionPredicted `json:"questions"`
}

// RosterEntry is one student as the instructor's roster shows it.
type RosterEntry struct {
	Client   string `json:"client"` // the page's id: what remove names
	Name     string `json:"name"`
	State    string `json:"state"` // following, detached, resyncing, replaying, lagging, gone
	Applied  uint64 `json:"applied"`
	Tutorial string `json:"tutorial,omitempty"`
	Step     int    `json:"step"`
	Revealed bool   `json:"revealed"`
}

// QuestionPredicted is the class's predictions at one tutorial question:
// how many answered and how many gave each answer (anonymous).
type QuestionPredicted struct {
	Tutorial string       `json:"tutorial"`
	Step     int          `json:"step"`
	Question int          `json:"question"`
	Count    int          `json:"count"`
	Answers  []AnswerSeen `json:"answers"`
}

// AnswerSeen is one answer and how many gave it.
type AnswerSeen struct {
	Answer string `json:"answer"`
	Count  int    `json:"count"`
}
