package play

import (
	"ringlab/proto"
	"ringlab/tutorials"
)

// The class: who is in the room (RoomPresence), the instructor's roster
// (RoomRoster), the class's predictions (RoomPredictions) and what the
// room admits (RoomClass), as the room's socket says them; the page
// passes them on as they came, and the room's state (RoomState) is what
// its panel draws. The controller adds what it knows: each question's
// kind and, where this page may show it, the engine's answer and how
// each answer of the class fares against it.

type (
	// RoomPresence is who is in the room.
	RoomPresence proto.Presence
	// RoomRoster is the instructor's roster.
	RoomRoster proto.Roster
	// RoomPredictions is the class's predictions (the instructor's), or
	// the one question the instructor showed the room (Shared).
	RoomPredictions proto.Predictions
	// RoomClass is what the room admits, to its instructors, with the
	// invitation the join links carry.
	RoomClass proto.Class
)

func (RoomPresence) isIn()    {}
func (RoomRoster) isIn()      {}
func (RoomPredictions) isIn() {}
func (RoomClass) isIn()       {}

// class is what the room says of its class (room.class).
type class struct {
	students, instructors int
	admits                *proto.Class // the instructor's
	roster                []proto.RosterEntry
	predictions           []proto.QuestionPredicted
	shared                *proto.QuestionPredicted
}

// Predicted is the class's predictions at a tutorial's question as the
// panel draws them: how many gave each answer and, once this page may
// show the engine's answer (the instructor's always, a student's when
// the question is revealed), that answer and each answer's verdict.
type Predicted struct {
	Tutorial string     `json:"tutorial"`
	Step     int        `json:"step"`
	Question int        `json:"question"`
	Count    int        `json:"count"`
	Answers  []Answered `json:"answers"`
	// Kind, Unit and Options are the question's (yesno, choice, number,
	// text), when this page ran the step: how to draw the answers.
	Kind    string   `json:"kind,omitempty"`
	Unit    string   `json:"unit,omitempty"`
	Options []string `json:"options,omitempty"`
	// Revealed: the question is revealed on this page.
	Revealed bool           `json:"revealed"`
	Key      *tutorials.Key `json:"key,omitempty"`
}

// Answered is one answer of the class, how many gave it, and its
// verdict against the key (tutorials.Grade) when the key is shown.
type Answered struct {
	Answer  string `json:"answer"`
	Count   int    `json:"count"`
	Verdict string `json:"verdict,omitempty"`
}

// OtherAnswers is the room's bucket of the answers past those it names.
const OtherAnswers = "(other answers)"

// classIn takes what the room says of its class.
func (c *Controller) classIn(in In) error {
	if !c.inRoom() {
		return errNotInRoom
	}
	k := &c.room.class
	switch m := in.(type) {
	case RoomPresence:
		k.students, k.instructors = m.Students, m.Instructors
	case RoomRoster:
		k.roster = m.Students
	case RoomPredictions:
		if m.Shared {
			if len(m.Questions) > 0 {
				q := m.Questions[0]
				k.shared = &q
			}
		} else {
			k.predictions = m.Questions
		}
	case RoomClass:
		cl := proto.Class(m)
		k.admits = &cl
	}
	return nil
}

// describeClass fills in the class's part of the room's state.
func (c *Controller) describeClass(st *RoomState) {
	k := &c.room.class
	st.Students, st.Instructors = k.students, k.instructors
	leads := c.mode.role() == RoleInstructor
	if leads {
		st.Class = k.admits
		st.Roster = k.roster
		for _, q := range k.predictions {
			st.Predictions = append(st.Predictions, c.predicted(q, true))
		}
	}
	if k.shared != nil {
		p := c.predicted(*k.shared, leads)
		st.Shared = &p
	}
}

// predicted is q as the panel draws it; leads: the key is shown
// whether or not the question is revealed.
func (c *Controller) predicted(q proto.QuestionPredicted, leads bool) Predicted {
	p := Predicted{Tutorial: q.Tutorial, Step: q.Step, Question: q.Question, Count: q.Count, Answers: make([]Answered, len(q.Answers))}
	for i, a := range q.Answers {
		p.Answers[i] = Answered{Answer: a.Answer, Count: a.Count}
	}
	key, ok := c.tut.key(q.Tutorial, q.Step, q.Question)
	if !ok {
		return p
	}
	p.Kind, p.Unit, p.Options = key.Kind, key.Unit, key.Options
	p.Revealed = c.tut.revealed[q.Question]
	if !leads && !p.Revealed {
		return p
	}
	p.Key = &key
	for i, a := range p.Answers {
		if a.Answer != OtherAnswers {
			p.Answers[i].Verdict = key.Grade(a.Answer).Verdict
		}
	}
	return p
}

// key is the answer's key of question q (from 0) of the step the panel
// shows, as the step's run gave it: the first answer with a key in the
// question's block.
func (r *tutorialRun) key(tutorial string, step, q int) (tutorials.Key, bool) {
	if r.t == nil || r.name != tutorial || r.step != step || r.result == nil || step < 1 || step > len(r.t.Steps) {
		return tutorials.Key{}, false
	}
	s := &r.t.Steps[step-1]
	items := map[int]*tutorials.Item{}
	for i := range r.result.Items {
		items[r.result.Items[i].Line] = &r.result.Items[i]
	}
	n := 0
	for _, seg := range s.Segments {
		asks := false
		for _, d := range seg.Directives {
			asks = asks || s.Directives[d].Op == tutorials.OpQuestion
		}
		if !asks {
			continue
		}
		if n == q {
			for _, d := range seg.Directives {
				dir := &s.Directives[d]
				if it := items[dir.Line]; dir.Op == tutorials.OpAnswer && it != nil && it.Key != nil {
					return *it.Key, true
				}
			}
			return tutorials.Key{}, false
		}
		n++
	}
	return tutorials.Key{}, false
}

func decodePresence(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Presence
	}
	err := proto.Strict(raw, &w)
	return RoomPresence(w.Presence), w.ID, err
}

func decodeRoster(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Roster
	}
	err := proto.Strict(raw, &w)
	return RoomRoster(w.Roster), w.ID, err
}

func decodePredictions(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Predictions
	}
	err := proto.Strict(raw, &w)
	return RoomPredictions(w.Predictions), w.ID, err
}

func decodeClass(raw []byte) (In, int, error) {
	var w struct {
		envelope
		proto.Class
	}
	err := proto.Strict(raw, &w)
	return RoomClass(w.Class), w.ID, err
}
