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
	pongMsg struct {
		Type string `json:"type"`
	}
	createResponse struct {
		Room            string `json:"room"`
		JoinURL         string `json:"join_url"`
		WebSocketPath   string `json:"ws_path"`
		InstructorToken string `json:"instructor_token"`
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
