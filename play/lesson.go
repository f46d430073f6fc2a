package play

import (
	"fmt"

	"ringlab/proto"
	"ringlab/tutorials"
)

// Lessons: tutorials that do not ship (tutorials.ParseLesson). The page
// hands one over as text (a file it read, a URL it fetched) or packed (a
// link's fragment); the controller checks it with the tutorials' own
// parser and keeps it under its name (tutorials.LessonName), beside the
// embedded ones, so that the panel, a step and a room find it as they
// find those. A room carries a lesson in its log: an instructor's page
// sends the lesson command, the text packed, before the first step of a
// lesson the room does not have, and every page that applies or replays
// the log (a late joiner, a reconnect, the server's replica) keeps it.

const (
	// MaxLinkLesson is the longest packed lesson a link carries in its
	// fragment (characters): a longer one is shared by its URL.
	MaxLinkLesson = 32 << 10
	// MaxRoomLesson is the longest packed lesson a room's lesson command
	// carries (characters), below the room socket's 64 KiB message.
	MaxRoomLesson = 56 << 10
	// maxLessons is how many lessons a page keeps; loading another
	// forgets the oldest (not the one being read).
	maxLessons = 32
)

type (
	// LessonLoad checks a lesson and keeps it: its text (Text) or
	// PackLesson's form of it (Packed), one of them; Source names it in
	// errors (a file's name, a URL). A request: the answer is a
	// LessonOut, or an error naming the line.
	LessonLoad struct {
		Text, Packed, Source string
	}
	// Lesson is the room's command that carries a lesson, packed: every
	// page of the room keeps it, and the room's tutorial steps name it.
	Lesson struct{ Packed string }
)

func (LessonLoad) isIn() {}
func (Lesson) isIn()     {}

// LessonOut is a lesson loaded: the tutorial as the panel reads it, its
// size, and what a link carries of it (Link, the packed text, empty when
// it is longer than MaxLinkLesson).
type LessonOut struct {
	ID       int                 `json:"id,omitempty"`
	Tutorial *tutorials.Tutorial `json:"tutorial"`
	Bytes    int                 `json:"bytes"`
	Link     string              `json:"link,omitempty"`
	// Room says whether a room can carry it (false: longer than
	// MaxRoomLesson packed).
	Room bool `json:"room"`
}

func (LessonOut) isOut() {}

type wLessonLoad struct {
	envelope
	Text   *string `json:"text,omitempty"`
	Packed *string `json:"packed,omitempty"`
	Source string  `json:"source,omitempty"`
}

type wLesson struct {
	envelope
	Packed string `json:"packed"`
}

// maxSource bounds a lesson's source (a file name, a URL).
const maxSource = 2048

func decodeLessonLoad(raw []byte) (In, int, error) {
	var w wLessonLoad
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if (w.Text == nil) == (w.Packed == nil) {
		return nil, 0, proto.Errorf(proto.CodeBadField, "text", "lesson_load needs text (the lesson's Markdown) or packed (a link's), one of them")
	}
	if len(w.Source) > maxSource {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "source", "source has at most %d bytes", maxSource)
	}
	in := LessonLoad{Source: w.Source}
	if w.Text != nil {
		in.Text = *w.Text
	} else {
		in.Packed = *w.Packed
	}
	return in, w.ID, nil
}

// decodeLesson reads a room's lesson command and checks the lesson in it
// as every page will: a command that does not parse is refused by the
// server before it is numbered.
func decodeLesson(raw []byte) (In, int, error) {
	var w wLesson
	if err := proto.Strict(raw, &w); err != nil {
		return nil, 0, err
	}
	if len(w.Packed) > MaxRoomLesson {
		return nil, 0, proto.Errorf(proto.CodeOutOfRange, "packed", "a room's lesson is at most %d characters packed, got %d: split it into shorter lessons", MaxRoomLesson, len(w.Packed))
	}
	text, err := tutorials.UnpackLesson(w.Packed)
	if err != nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "packed", "%v", err)
	}
	if _, err := tutorials.ParseLesson("lesson", text); err != nil {
		return nil, 0, proto.Errorf(proto.CodeBadField, "packed", "%v", err)
	}
	return Lesson{w.Packed}, w.ID, nil
}

func encodeLesson(e envelope, in In) any { return wLesson{e, in.(Lesson).Packed} }

// lesson is one lesson the page keeps.
type lesson struct {
	t      *tutorials.Tutorial
	packed string
	bytes  int
}

// lessonLoad checks a lesson the page gives and keeps it; an error
// changes nothing.
func (c *Controller) lessonLoad(m LessonLoad, id int) ([]Out, error) {
	src := m.Source
	if src == "" {
		src = "lesson"
	}
	text := []byte(m.Text)
	if m.Packed != "" {
		var err error
		if text, err = tutorials.UnpackLesson(m.Packed); err != nil {
			return nil, fmt.Errorf("%s: %v", src, err)
		}
	}
	// The tutorials' parser, then the names its checks read (CheckNames:
	// a misspelt counter is an error now, not a failed check later).
	t, err := tutorials.ParseLesson(src, text)
	if err != nil {
		return nil, err
	}
	if err := tutorials.CheckNames(t); err != nil {
		return nil, err
	}
	l := c.keepLesson(t, text, "")
	out := LessonOut{ID: id, Tutorial: l.t, Bytes: l.bytes, Room: len(l.packed) <= MaxRoomLesson}
	if len(l.packed) <= MaxLinkLesson {
		out.Link = l.packed
	}
	return []Out{out}, nil
}

// keepLesson keeps a parsed lesson and its text; packed is its packed
// form when the caller has it.
func (c *Controller) keepLesson(t *tutorials.Tutorial, text []byte, packed string) *lesson {
	if l, ok := c.lessons[t.Name]; ok {
		return l
	}
	if packed == "" {
		packed = tutorials.PackLesson(text)
	}
	l := &lesson{t: t, packed: packed, bytes: len(text)}
	if c.lessons == nil {
		c.lessons = map[string]*lesson{}
	}
	if len(c.lessonOrder) >= maxLessons {
		// The oldest goes, unless it is the one being read.
		for i, old := range c.lessonOrder {
			if old != c.tut.name {
				delete(c.lessons, old)
				c.lessonOrder = append(c.lessonOrder[:i], c.lessonOrder[i+1:]...)
				break
			}
		}
	}
	c.lessons[t.Name] = l
	c.lessonOrder = append(c.lessonOrder, t.Name)
	return l
}

// roomLesson keeps a lesson of the room's log (its command checked it
// already) and notes that the room has it.
func (c *Controller) roomLesson(m Lesson) error {
	text, err := tutorials.UnpackLesson(m.Packed)
	if err != nil {
		return err
	}
	t, err := tutorials.ParseLesson("lesson", text)
	if err != nil {
		return err
	}
	l := c.keepLesson(t, text, m.Packed)
	if c.room.lessons == nil {
		c.room.lessons = map[string]bool{}
	}
	c.room.lessons[l.t.Name] = true
	return nil
}

// FindTutorial returns the tutorial a name names: a lesson the page (or
// its room) loaded, or an embedded tutorial (tutorials.Find).
func (c *Controller) FindTutorial(name string) (*tutorials.Tutorial, error) {
	if tutorials.IsLesson(name) {
		if l, ok := c.lessons[name]; ok {
			return l.t, nil
		}
		return nil, fmt.Errorf("no lesson %q on this page: load it again (its file, its URL or its link)", name)
	}
	return tutorials.Find(name)
}
