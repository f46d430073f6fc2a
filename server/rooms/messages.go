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
	// joinMsg is a page's join (proto's, as the page's controller
	// writes it: play/join.go). A field left out is its zero value:
	// no token, no since, no client, no name.
	joinMsg struct {
		Type string `json:"type"`
		proto.Join
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
		Type string `json:"type"`
		proto.Presence
	}
	rosterMsg struct {
		Type string `json:"type"`
		proto.Roster
	}
	predictionsMsg struct {
		Type string `json:"type"`
		proto.Predictions
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

// The roster and the class's predictions are proto's: the page's game
// reads them as the server writes them.
type (
	RosterEntry       = proto.RosterEntry
	QuestionPredicted = proto.QuestionPredicted
	AnswerSeen        = proto.AnswerSeen
)
