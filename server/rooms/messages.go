package rooms

import (
	"encoding/json"

	"ringlab/proto"
)

// Message types of /ws/room/{id} (docs/protocol.md): proto's.
const (
	typeJoin        = proto.TypeJoin
	typeCommand     = proto.TypeCommand
	typePing        = proto.TypePing
	typeWelcome     = proto.TypeWelcome
	typePong        = proto.TypePong
	typePresence    = proto.TypePresence
	typeBeacon      = proto.TypeBeacon
	typeStatus      = proto.TypeStatus
	typePredict     = proto.TypePredict
	typeShare       = proto.TypeShare
	typeRoster      = proto.TypeRoster
	typePredictions = proto.TypePredictions
	typeRemove      = proto.TypeRemove
	typeClass       = proto.TypeClass
	// typeLesson is play's lesson command, the one command past
	// MaxCommandBytes (up to MaxLessonBytes).
	typeLesson = "lesson"
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
	// classSetMsg is the instructor's: the class size, whether only the
	// invitation admits students, a new invitation (the old one admits
	// nobody new). The server answers every instructor with the class.
	classSetMsg struct {
		Type           string `json:"type"`
		Size           *int   `json:"size"`
		InvitationOnly *bool  `json:"invitation_only"`
		NewInvite      bool   `json:"new_invite"`
	}
	// classInfo is the server's: the room's class, to its instructors,
	// with the seats reserved for it while it is in use.
	classInfo struct {
		Type string `json:"type"`
		proto.Class
	}
	// removeMsg is the instructor's: the student whose roster entry has
	// this client leaves the room and may not join again.
	removeMsg struct {
		Type string `json:"type"`
		proto.Remove
	}
	// statusMsg is a student's state for the roster (proto's, as the
	// page's controller writes it).
	statusMsg struct {
		Type string `json:"type"`
		proto.Status
	}
	// predictMsg is a student's prediction at a tutorial question.
	predictMsg struct {
		Type string `json:"type"`
		proto.Predict
	}
	// shareMsg asks the server to show one question's distribution to
	// the whole room.
	shareMsg struct {
		Type string `json:"type"`
		proto.Question
	}
	pingMsg struct {
		Type string `json:"type"`
	}
)

// Entry is one numbered command of a room's log.
type Entry = proto.Entry

// Server messages.
type (
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
		// Invite is what a student's connection carries (the join
		// links' invite=).
		Invite         string `json:"invite"`
		ClassSize      int    `json:"class_size"`
		InvitationOnly bool   `json:"invitation_only"`
	}
	roomInfo struct {
		Room     string   `json:"room"`
		JoinURL  string   `json:"join_url"`
		JoinURLs []string `json:"join_urls"`
	}
	// createRequest is a room's starting world: a scenario (a recipe's
	// JSON form, or a whole scenario: checkScenario), or a recipe in its
	// text form, as a link carries it (scenario.ParseRecipe).
	createRequest struct {
		Scenario json.RawMessage `json:"scenario"`
		Recipe   string          `json:"recipe"`
		// ClassSize is the class's students at most (default
		// Limits.ClassSize); InvitationOnly false lets the plain room id
		// admit students (default true).
		ClassSize      *int  `json:"class_size"`
		InvitationOnly *bool `json:"invitation_only"`
	}
)

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
