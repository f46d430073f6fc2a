package play

import (
	"encoding/json"
	"fmt"

	"ringlab/engine/scenario"
)

// Following a workshop room (docs/protocol.md, "Workshop rooms"). Every
// browser in a room runs its own engine on the room's scenario and
// applies the same numbered log of commands, in order, each once the run
// is idle, so that every engine sees the same sequence. The page holds
// the socket and passes the server's messages on (RoomWelcome,
// RoomCommand); the controller says what to send (RoomSendOut).
//
// The instructor's own preset, parameter (pane A), steps, play and pause
// are not applied when given: they go to the room, and are applied when
// the room's broadcast of them comes back, as every student applies
// them. While the instructor plays, a seek to its simulated time goes
// out every SeekPeriod; students run no clock of their own, they follow
// the seeks. A tutorial step or reveal runs at once in the instructor's
// page and goes to the room for the students. A student can detach (the
// log keeps growing) and snap back (the room's scenario, then the whole
// log).

// Roles in a room.
const (
	RoleInstructor = "instructor"
	RoleStudent    = "student"
)

type room struct {
	id        string
	role      string // "" outside a room
	scenario  json.RawMessage
	log       []RoomEntry // every command received, gap-free
	next      int         // index in log of the next command to apply
	applied   uint64      // seq of the last command applied
	attached  bool
	playing   bool // the room's play or pause
	replaying bool
}

func (r *room) pending() bool {
	return r.role != "" && r.attached && r.next < len(r.log) || r.replaying
}

func (r *room) state() RoomState {
	var seq uint64
	if n := len(r.log); n > 0 {
		seq = r.log[n-1].Seq
	}
	return RoomState{Room: r.id, Role: r.role, Attached: r.attached, Playing: r.playing,
		Seq: seq, Applied: r.applied, Replaying: r.replaying}
}

func (c *Controller) roomSend(cmd In) Out {
	b, err := EncodeCommand(cmd)
	if err != nil {
		panic(fmt.Sprintf("play: a room command that does not encode: %v", err)) // only commands get here
	}
	return RoomSendOut{Cmd: b}
}

func note(text string) []Out { return []Out{NoteOut{Source: "room", Text: text}} }

// intercept takes over what the page does while in a room; taken is false
// for what the page does to its own run as usual. Requests (with an id)
// are the page's own: never taken.
func (c *Controller) intercept(in In, id int) (outs []Out, taken bool) {
	r := &c.room
	if r.role == "" || id != 0 {
		return nil, false
	}
	switch in.(type) {
	case Preset, Set, Step, Back, GoTo, Until, Play, Pause, Toggle, Reset, Compare, Scenario, XDPObject, Load:
	default:
		return nil, false
	}
	if r.role == RoleStudent {
		if !r.attached {
			return nil, false
		}
		return note("You are following the room: detach to explore on your own."), true
	}
	switch m := in.(type) {
	case Preset:
		if m.Pane == 0 {
			return []Out{c.roomSend(m)}, true
		}
		return nil, true // a room shares pane A only
	case Set:
		if m.Pane == 0 {
			return []Out{c.roomSend(m)}, true
		}
		return nil, true
	case Step:
		if m.Unit != UnitNs {
			m.N = min(max(m.N, 1), MaxRoomStep)
		}
		return []Out{c.roomSend(m)}, true
	case Back, GoTo, Until:
		return []Out{c.roomSend(in)}, true
	case Play, Pause, Toggle:
		play := false
		switch in.(type) {
		case Play:
			play = true
		case Toggle:
			play = !c.playing
		}
		if !play {
			r.playing = false // no periodic seek between this pause and its echo
			return []Out{c.roomSend(Pause{})}, true
		}
		cmd := Play{}
		if s := c.sess.Speed; s > 0 && s <= MaxRoomSpeed {
			cmd.Speed = s
		}
		return []Out{c.roomSend(cmd)}, true
	}
	// Reset, compare, a scenario, an XDP object or a link would take the
	// instructor off the room's log.
	return note(fmt.Sprintf("%q is not shared with the room; leave the room to use it.", inType(in))), true
}

// roomInput handles what the page passes on from the room's socket, and
// the student's detach and snap back.
func (c *Controller) roomInput(in In) ([]Out, error) {
	r := &c.room
	switch m := in.(type) {
	case RoomWelcome:
		if m.You != RoleInstructor && m.You != RoleStudent {
			return nil, fmt.Errorf("room_welcome: role %q: want instructor or student", m.You)
		}
		*r = room{id: m.Room, role: m.You, scenario: m.Scenario, log: append([]RoomEntry(nil), m.Log...), attached: true}
		return c.replay()
	case RoomCommand:
		if r.role == "" {
			return nil, errNotInRoom
		}
		if n := len(r.log); n > 0 && m.Seq <= r.log[n-1].Seq {
			return nil, nil // already have it
		}
		r.log = append(r.log, RoomEntry(m))
	case RoomLeave:
		*r = room{}
	case RoomDetach:
		if r.role != RoleStudent {
			return nil, fmt.Errorf("room_detach: only a student detaches")
		}
		r.attached, r.replaying = false, false
	case RoomSnap:
		if r.role != RoleStudent {
			return nil, fmt.Errorf("room_snap: only a student snaps back")
		}
		r.attached = true
		return c.replay()
	}
	return c.drainRoom(), nil
}

// replay starts again from the room's scenario; the whole log follows as
// the run becomes idle.
func (c *Controller) replay() ([]Out, error) {
	r := &c.room
	r.replaying, r.next, r.applied, r.playing = true, 0, 0, false
	c.playing = false
	if len(c.sess.Panes) > 1 {
		if err := c.sess.SetCompare(false); err != nil {
			return nil, err
		}
	}
	var base Config
	var preset struct {
		Preset string `json:"preset"`
	}
	var fields map[string]json.RawMessage
	switch {
	case len(r.scenario) == 0 || string(r.scenario) == "null":
		base = DefaultConfig()
	case json.Unmarshal(r.scenario, &fields) == nil && len(fields) == 1 && json.Unmarshal(r.scenario, &preset) == nil && preset.Preset != "":
		base = Config{Preset: preset.Preset}
	default:
		sc, err := scenario.DecodeBytes(r.scenario)
		if err != nil {
			return nil, fmt.Errorf("the room's scenario: %w", err)
		}
		base = Config{Scenario: &sc}
	}
	if err := c.reconfigure(0, base); err != nil {
		return nil, fmt.Errorf("the room's scenario: %w", err)
	}
	return c.drainRoom(), nil
}

// drainRoom applies the room's commands in order, each once the run is
// idle (a command that needs the run's time, a seek, reads it after
// everything before it ran), and returns what they answer.
func (c *Controller) drainRoom() []Out {
	r := &c.room
	var outs []Out
	for r.role != "" && r.attached && r.next < len(r.log) && !c.sess.Busy() {
		e := r.log[r.next]
		r.next++
		outs = append(outs, c.applyRoom(e)...)
		r.applied = e.Seq
		c.force = true
	}
	if r.replaying && (r.next >= len(r.log) || !r.attached) && !c.sess.Busy() {
		r.replaying = false
		c.force = true
	}
	return outs
}

// applyRoom applies one command of the room's log.
func (c *Controller) applyRoom(e RoomEntry) []Out {
	r := &c.room
	fail := func(err error) []Out {
		return []Out{ErrorOut{Source: "room", Message: fmt.Sprintf("command %d: %v", e.Seq, err)}}
	}
	in, err := ParseCommand(e.Cmd)
	if err != nil {
		return fail(err)
	}
	instructor := r.role == RoleInstructor
	switch m := in.(type) {
	case Preset, Set, Step:
		outs, err := c.run(in, 0)
		if err != nil {
			return fail(err)
		}
		return outs
	case Play:
		r.playing = true
		// The instructor's clock drives the room; students follow its seeks.
		if instructor {
			c.playing = true
		}
	case Pause:
		r.playing = false
		c.playing = false
		if instructor && !r.replaying {
			return []Out{c.roomSend(Seek{int64(c.sess.Panes[0].World.Now())})}
		}
	case Seek:
		if !instructor { // the instructor is there already: it is its own time
			c.seek(m.TNs)
		}
	case TutorialStep:
		// The instructor ran the step before sending it; everyone else
		// runs it now and the panel opens there.
		if !instructor {
			out, err := c.tutorialStep(m.Tutorial, m.Step, 0, true)
			if err != nil {
				return fail(err)
			}
			return []Out{out}
		}
	case TutorialReveal:
		if !instructor {
			return []Out{TutorialRevealOut(m)}
		}
	}
	return nil
}
