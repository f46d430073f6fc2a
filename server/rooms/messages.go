package rooms

import "encoding/json"

// Message types of /ws/room/{id} (docs/protocol.md).
const (
	typeJoin     = "join"
	typeCommand  = "command"
	typePing     = "ping"
	typeWelcome  = "welcome"
	typePong     = "pong"
	typePresence = "presence"
	// Since issue #16: the instructor's beacon (relayed to students, not
	// logged), a student's status and prediction, the roster and the
	// class's predictions (to instructors), a shared distribution.
	typeBeacon      = "beacon"
	typeStatus      = "status"
	typePredict     = "predict"
	typeShare       = "share_predictions"
	typeRoster      = "roster"
	typePredictions = "predictions"
	// Since issue #27: the instructor removes a student.
	typeRemove = "remove"
)

// Roles a client may join as.
const (
	RoleStudent    = "student"
	RoleInstructor = "instructor"
)

// Client messages.
type (
	joinMsg struct {
		Type  string  `json:"type"`
		Role  string  `json:"role"`
		Token *string `json:"token"`
		// Since is the seq of the last command the client has (it
		// reconnects): the welcome's log starts after it.
		Since *uint64 `json:"since"`
		// Client names the page across reconnects (its roster entry);
		// Name is what the instructor's roster shows.
		Client *string `json:"client"`
		Name   *string `json:"name"`
	}
	// removeMsg is the instructor's: the student whose roster entry has
	// this client leaves the room and may not join again.
	removeMsg struct {
		Type   string `json:"type"`
		Client string `json:"client"`
	}
	// beaconMsg is the instructor's periodic word on where the room
	// stands: after command Seq, pane A at TNs has digest Digest (empty
	// when it cannot be compared), playing or not, at Speed.
	beaconMsg struct {
		Type    string  `json:"type"`
		Seq     uint64  `json:"seq"`
		TNs     int64   `json:"t_ns"`
		Digest  string  `json:"digest"`
		Playing bool    `json:"playing"`
		Speed   float64 `json:"speed"`
	}
	// statusMsg is a student's state for the roster.
	statusMsg struct {
		Type     string `json:"type"`
		State    string `json:"state"`
		Applied  uint64 `json:"applied"`
		Tutorial string `json:"tutorial"`
		Step     int    `json:"step"`
		Revealed bool   `json:"revealed"`
	}
	// predictMsg is a student's prediction at a tutorial question.
	predictMsg struct {
		Type     string `json:"type"`
		Tutorial string `json:"tutorial"`
		Step     int    `json:"step"`
		Question int    `json:"question"`
		Answer   string `json:"answer"`
	}
	// shareMsg asks the server to show one question's distribution to
	// the whole room.
	shareMsg struct {
		Type     string `json:"type"`
		Tutorial string `json:"tutorial"`
		Step     int    `json:"step"`
		Question int    `json:"question"`
	}
	// commandMsg carries no token: a command's authority is the
	// connection's, which joined as instructor with it.
	commandMsg struct {
		Type string          `json:"type"`
		Cmd  json.RawMessage `json:"cmd"`
	}
	pingMsg struct {
		Type string `json:"type"`
	}
)

// Entry is one numbered command of a room's log.
type Entry struct {
	Seq uint64          `json:"seq"` // from 1, no gaps
	Cmd json.RawMessage `json:"cmd"` // canonical, as the Validator returned it
}

// Server messages.
type (
	welcomeMsg struct {
		Type        string          `json:"type"`
		Room        string          `json:"room"`
		You         string          `json:"you"` // the role joined as
		Scenario    json.RawMessage `json:"scenario"`
		Since       uint64          `json:"since"` // the log starts after this seq (0: the whole log)
		Log         []Entry         `json:"log"`
		Students    int             `json:"students"`
		Instructors int             `json:"instructors"`
		Limits      roomLimits      `json:"limits"`
	}
	// welcomeHead is welcomeMsg without its log, which join writes
	// after it (shared by every joiner): the same message on the wire.
	welcomeHead struct {
		Type        string          `json:"type"`
		Room        string          `json:"room"`
		You         string          `json:"you"`
		Scenario    json.RawMessage `json:"scenario"`
		Since       uint64          `json:"since"`
		Students    int             `json:"students"`
		Instructors int             `json:"instructors"`
		Limits      roomLimits      `json:"limits"`
	}
	commandOut struct {
		Type string          `json:"type"`
		Seq  uint64          `json:"seq"`
		Cmd  json.RawMessage `json:"cmd"`
	}
	presenceMsg struct {
		Type        string `json:"type"`
		Students    int    `json:"students"`
		Instructors int    `json:"instructors"`
	}
	rosterMsg struct {
		Type     string        `json:"type"`
		Seq      uint64        `json:"seq"` // the log's last
		Students []RosterEntry `json:"roster"`
	}
	predictionsMsg struct {
		Type      string              `json:"type"`
		Shared    bool                `json:"shared,omitempty"` // the instructor showed it to the room
		Questions []QuestionPredicted `json:"questions"`
	}
	pongMsg struct {
		Type string `json:"type"`
	}
	createResponse struct {
		Room            string   `json:"room"`
		JoinURL         string   `json:"join_url"`
		JoinURLs        []string `json:"join_urls"`
		WebSocketPath   string   `json:"ws_path"`
		InstructorToken string   `json:"instructor_token"`
	}
	roomInfo struct {
		Room     string   `json:"room"`
		JoinURL  string   `json:"join_url"`
		JoinURLs []string `json:"join_urls"`
	}
	createRequest struct {
		Scenario json.RawMessage `json:"scenario"`
	}
)

// roomLimits tells clients the rules of the room.
type roomLimits struct {
	MaxStudents       int    `json:"max_students"`
	CommandsPerSecond int    `json:"commands_per_second"`
	MaxLogEntries     int    `json:"max_log_entries"`
	MaxCommandBytes   int    `json:"max_command_bytes"`
	MaxCommandWork    uint64 `json:"max_command_work"`
	MaxReplayWork     uint64 `json:"max_replay_work"`
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("rooms: encoding " + err.Error())
	}
	return b
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
