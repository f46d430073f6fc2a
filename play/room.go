package play

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"

	"ringlab/engine/scenario"
	"ringlab/proto"
	"ringlab/tutorials"
)

// Following a workshop room (docs/protocol.md, "Workshop rooms"). Every
// browser in a room runs its own engine on the room's scenario and
// applies the same numbered log of commands, in order, each once the run
// is idle, so that every engine sees the same sequence. The page holds
// the socket and passes the server's frames on verbatim (RoomWelcome,
// RoomCommand, RoomBeacon); the controller keeps the log (each seq once),
// says where a reconnect resumes (RoomState.Seq) and what to send
// (RoomSendOut, RoomBeaconOut, a student's RoomStatusOut).
//
// What a page does in a room is its mode's (mode.go): an instructor's
// preset, steps, play and pause go to the room and are applied when
// their broadcast comes back, and while it plays its seeks pin the
// room's time (instructor.go); a student follows the log and the seeks,
// or detaches (the log keeps growing) and snaps back (the room's
// scenario, then the whole log) (student.go).
//
// A late joiner, a student snapping back and a page that reconnects all
// start from a welcome's log, which may be long. Two rules keep what
// they replay bounded (the server bounds the rest, docs/protocol.md):
// a command that rebuilds pane A's world (a preset, a set, a tutorial
// step with a scenario: RoomReset) discards everything the world did
// before, so a replay folds the log up to the last such command into
// one configuration, builds that world once and runs only the commands
// after it (checkpointing on the log itself); and a welcome whose log
// continues the one the page has applied (a reconnect) is caught up, not
// replayed.

// Roles in a room.
const (
	RoleInstructor = "instructor"
	RoleStudent    = "student"
)

// room is what every member of a room keeps, whatever its mode: the log
// and where applying it stands.
type room struct {
	id        string
	scenario  json.RawMessage
	log       []RoomEntry // every command received, gap-free
	next      int         // index in log of the next command to apply
	applied   uint64      // seq of the last command applied
	playing   bool        // the room's play or pause
	speed     float64     // the room's play command's speed
	replaying bool
	// mark is the command whose work, once done, leaves the world where
	// every page's is (landed); markSeek says it is a seek.
	mark     uint64
	markSeek bool
	// lessons are the lessons the log carried, by name (lesson.go).
	lessons map[string]bool
	// class is what the room says of its class (class.go).
	class class
}

// keepDigests is how many commands' digests a page keeps for the
// beacons (an instructor's of the seeks it sent, a student's of the
// commands it landed).
const keepDigests = 32

// roomPending reports whether the room's log has commands to apply.
func (c *Controller) roomPending() bool {
	r := &c.room
	return c.mode.applies() && r.next < len(r.log) || r.replaying
}

// roomState is the page's picture of the room.
func (c *Controller) roomState() RoomState {
	r := &c.room
	st := RoomState{Room: r.id, Role: c.mode.role(), Playing: r.playing, Seq: r.last(), Applied: r.applied, Replaying: r.replaying}
	c.mode.describe(&st)
	c.describeClass(&st)
	return st
}

func (c *Controller) roomSend(cmd In) Out {
	b, err := EncodeCommand(cmd)
	if err != nil {
		panic(fmt.Sprintf("play: a room command that does not encode: %v", err)) // only commands get here
	}
	c.rejoin.sending(b, nameOf(cmd))
	return RoomSendOut{Cmd: b}
}

func note(text string) []Out { return []Out{NoteOut{Source: "room", Text: text}} }

// welcome joins the room a welcome names, in the role it gives: the log
// replayed from the room's scenario, or caught up when it continues the
// one this page follows (a reconnect).
func (c *Controller) welcome(m RoomWelcome) ([]Out, error) {
	var next mode
	switch m.You {
	case RoleInstructor:
		next = &instructor{}
	case RoleStudent:
		next = following{&student{}}
	default:
		return nil, fmt.Errorf("welcome: role %q: want instructor or student", m.You)
	}
	r := &c.room
	c.statusSent = nil // the room forgot this connection's status: say it again
	c.rejoin.retries = 0
	defer func() {
		if c.inRoom() {
			c.room.class.students, c.room.class.instructors = m.Students, m.Instructors
			if m.Class != nil {
				c.room.class.admits = m.Class
			}
		}
	}()
	if m.Since > 0 {
		// A reconnect asked for the log after the last command it holds.
		if !c.follows(m) || m.Since > r.last() {
			c.rejoin.whole = true // the next join asks for the whole log
			return nil, proto.Errorf(proto.CodeBadState, "since", "the room's log after command %d, and this page holds commands up to %d of room %q: join again for the whole log", m.Since, r.last(), r.id)
		}
		return c.caughtUp(c.logRoom(m.Log...))
	}
	if c.continues(m) {
		return c.caughtUp(c.logRoom(m.Log...))
	}
	c.room = room{id: m.Room, scenario: m.Scenario}
	if err := c.addLog(m.Log...); err != nil {
		c.leave()
		return nil, err
	}
	c.mode = next
	return c.caughtUp(c.replay())
}

// caughtUp adds to a welcome's outputs what it shows was lost on the
// way (rejoin.lost).
func (c *Controller) caughtUp(outs []Out, err error) ([]Out, error) {
	if err != nil {
		return nil, err
	}
	return append(outs, c.rejoin.lost()...), nil
}

// last is the seq of the last command the room's log holds, 0 when it
// holds none: what a reconnect asks the log after (RoomState.Seq).
func (r *room) last() uint64 {
	if n := len(r.log); n > 0 {
		return r.log[n-1].Seq
	}
	return 0
}

// add appends the entries of es the log does not hold yet: a seq the
// log has is a duplicate (a welcome overlapping what the page had, a
// broadcast that crossed a reconnect), dropped; a seq past the next one
// is a gap, refused.
func (r *room) add(es ...RoomEntry) error {
	for _, e := range es {
		last := r.last()
		if e.Seq <= last {
			continue
		}
		if e.Seq != last+1 {
			return proto.Errorf(proto.CodeBadState, "seq", "command %d after command %d: the room's log has a gap", e.Seq, last)
		}
		r.log = append(r.log, e)
	}
	return nil
}

// leave is the room left: the page's run is its own again.
func (c *Controller) leave() {
	c.room = room{}
	c.mode = local{}
}

// logRoom takes commands the room numbered and broadcast, once each (by
// seq), and applies what is due. A gap in the numbering (a command
// lost) is refused: the room's log is applied whole or not at all.
func (c *Controller) logRoom(es ...RoomEntry) ([]Out, error) {
	if err := c.addLog(es...); err != nil {
		return nil, err
	}
	return c.drainRoom(), nil
}

// addLog appends es to the room's log (room.add) and takes each entry
// new to it as the broadcast of a command this page may have sent
// (rejoin.acked).
func (c *Controller) addLog(es ...RoomEntry) error {
	last := c.room.last()
	if err := c.room.add(es...); err != nil {
		return err
	}
	for _, e := range es {
		if e.Seq > last {
			c.rejoin.acked(e.Cmd)
		}
	}
	return nil
}

// follows reports whether a welcome is of the room c follows, in the same
// role, on the same scenario.
func (c *Controller) follows(m RoomWelcome) bool {
	r := &c.room
	return c.inRoom() && r.id == m.Room && c.mode.role() == m.You && string(r.scenario) == string(m.Scenario)
}

// continues reports whether a welcome with the whole log is the room c
// already follows with a log that begins with c's (what the page gets
// when it reconnects without asking for the rest only).
func (c *Controller) continues(m RoomWelcome) bool {
	r := &c.room
	if !c.follows(m) || len(m.Log) < len(r.log) {
		return false
	}
	for i, e := range r.log {
		if m.Log[i].Seq != e.Seq || string(m.Log[i].Cmd) != string(e.Cmd) {
			return false
		}
	}
	return true
}

// RoomReset reports whether a room command rebuilds pane A's world from
// a configuration of its own, and which, on top of cur (pane A's): a
// preset, a set, or a tutorial step that has a scenario at or before
// it. What the world did before such a command no longer matters.
func RoomReset(cur Config, in In) (next Config, reset bool, err error) {
	return roomReset(cur, in, tutorials.Find)
}

// RoomReset is the package's RoomReset with the tutorials this page has,
// the lessons its room's log carried among them (FindTutorial).
func (c *Controller) RoomReset(cur Config, in In) (next Config, reset bool, err error) {
	return roomReset(cur, in, c.FindTutorial)
}

func roomReset(cur Config, in In, find func(string) (*tutorials.Tutorial, error)) (next Config, reset bool, err error) {
	switch m := in.(type) {
	case Preset:
		if _, err := scenario.LookupPreset(m.Name); err != nil {
			return cur, false, err
		}
		return Config{Preset: m.Name}, true, nil
	case Reset:
		return cur, true, nil // the same world from time zero
	case Set:
		c, err := cur.With(m.Key, m.Value)
		if err != nil {
			return cur, false, err
		}
		return c, true, nil
	case TutorialStep:
		t, err := find(m.Tutorial)
		if err != nil || m.Step < 1 || m.Step > len(t.Steps) {
			return cur, false, err
		}
		if p := t.PathTo(m.Step); p.Scenario != nil {
			cp := *p.Scenario
			return Config{Scenario: &cp}, true, nil
		}
	}
	return cur, false, nil
}

// ReplayCost is the work a page replays to reach pane A's world from the
// room's last reset, in the session's units of engine work (workOf: the
// events the world has run and three per packet its driver received, as
// one event may carry a whole NAPI poll of packets). The server bounds it
// per command and in all.
func (c *Controller) ReplayCost() uint64 { return workOf(c.sess.Panes[0].World) }

// NewFollower returns a controller that follows a room without a page:
// what it runs is what a student's page runs, except the tutorials' own
// sessions, which only fill the tutorial panel (the server replays a
// room's commands with it to know what they cost).
func NewFollower() *Controller {
	c := New("speed=0")
	c.headless = true
	c.outbox = nil // no page to greet
	return c
}

// replay starts again from the room's scenario: the log up to its last
// reset folds into the configuration that reset builds (RoomReset), what
// the commands before it leave besides the world (the room's play or
// pause, the tutorial panel's step and reveals) is set without running
// them, and the commands from there on follow as the run becomes idle.
func (c *Controller) replay() ([]Out, error) {
	r := &c.room
	r.replaying, r.next, r.applied, r.playing = true, 0, 0, false
	r.mark, r.speed = 0, 0
	c.playing = false
	if len(c.sess.Panes) > 1 {
		if err := c.sess.SetCompare(false); err != nil {
			return nil, err
		}
	}
	rec, err := scenario.DecodeRecipe(r.scenario) // null, a recipe, or a whole scenario
	if err != nil {
		return nil, fmt.Errorf("the room's scenario: %w", err)
	}
	base := configOf(rec)
	cfg, from, outs := c.checkpoint(base)
	if err := c.reconfigure(0, cfg); err != nil {
		if from == 0 {
			return nil, fmt.Errorf("the room's scenario: %w", err)
		}
		return nil, fmt.Errorf("the room's configuration after command %d: %w", r.log[from-1].Seq, err)
	}
	r.next = from
	if from > 0 {
		r.applied = r.log[from-1].Seq
	}
	return append(outs, c.drainRoom()...), nil
}

// checkpoint folds the room's log from base up to its last reset and
// returns the configuration to build, the index of the first command to
// apply as usual, and what the commands before it say to the page.
func (c *Controller) checkpoint(base Config) (Config, int, []Out) {
	r := &c.room
	cfg, from, at := base, 0, base
	cmds := make([]In, len(r.log))
	for i, e := range r.log {
		in, err := ParseCommand(e.Cmd)
		if err != nil {
			continue // applied as usual: its error is the page's to show
		}
		cmds[i] = in
		if l, ok := in.(Lesson); ok {
			// Kept now: the steps after it name it, skipped or not.
			c.roomLesson(l)
			continue
		}
		next, reset, err := c.RoomReset(cfg, in)
		if err != nil || !reset {
			continue
		}
		cfg = next
		if _, tut := in.(TutorialStep); tut {
			from, at = i, base // a tutorial step runs its own steps: applied as usual
		} else {
			from, at = i+1, cfg
		}
	}
	// What the skipped commands leave besides the world.
	leads := c.mode.role() == RoleInstructor
	var outs []Out
	lastStep := -1
	for i := 0; i < from; i++ {
		switch cmds[i].(type) {
		case Play:
			r.playing, c.playing = true, leads
			r.speed = cmds[i].(Play).Speed
		case Pause:
			r.playing, c.playing = false, false
		case TutorialStep:
			lastStep = i
		}
	}
	if lastStep >= 0 {
		m := cmds[lastStep].(TutorialStep)
		if out, err := c.tutorialPanel(m.Tutorial, m.Step, true); err == nil {
			outs = append(outs, out)
		}
		for i := lastStep + 1; i < from; i++ {
			if m, ok := cmds[i].(TutorialReveal); ok {
				outs = append(outs, c.revealed(m))
			}
		}
	}
	return at, from, outs
}

// drainRoom applies the room's commands in order, each once the run is
// idle (a command that needs the run's time, a seek, reads it after
// everything before it ran), and returns what they answer.
func (c *Controller) drainRoom() []Out {
	r := &c.room
	var outs []Out
	for {
		if r.mark != 0 && !c.sess.Busy() {
			outs = append(outs, c.landed()...)
		}
		if !(c.mode.applies() && r.next < len(r.log) && !c.sess.Busy()) {
			break
		}
		e := r.log[r.next]
		r.next++
		outs = append(outs, c.applyRoom(e)...)
		r.applied = e.Seq
		c.force = true
	}
	if r.replaying && (r.next >= len(r.log) || !c.mode.applies()) && !c.sess.Busy() {
		r.replaying = false
		c.force = true
		if f, ok := c.mode.(following); ok {
			if f.resyncing {
				outs = append(outs, note(fmt.Sprintf("Resynced: back in step with the room (command %d).", r.applied))...)
			}
			f.resyncing = false
			outs = append(outs, f.checkBeacon(c)...) // the one a late joiner's welcome came with
		}
	}
	return outs
}

// landed is the work of the room's marked command done: the mode keeps
// or sends its digest there.
func (c *Controller) landed() []Out {
	r := &c.room
	seq, seek := r.mark, r.markSeek
	r.mark, r.markSeek = 0, false
	if c.headless {
		return nil
	}
	return c.mode.landed(c, seq, seek)
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
	// Its digest is taken once its work is done (landed), where every
	// page's world is the same: after a command that builds the world,
	// or one applied while the room is paused (a step, a move); a
	// following student's own play makes its place its own while the
	// room plays (the seeks pin it).
	switch in.(type) {
	case Preset, Set, Reset, TutorialStep:
		r.mark = e.Seq
	case Step, Back, GoTo, Until, TutorialReveal:
		if !r.playing {
			r.mark = e.Seq
		}
	}
	if !is(in, byMode) {
		outs, err := c.run(in, 0)
		if err != nil {
			r.mark = 0
			return fail(err)
		}
		return outs
	}
	switch m := in.(type) {
	case Play:
		r.playing, r.speed = true, m.Speed
	case Pause:
		r.playing, c.playing = false, false
	}
	outs, err := c.mode.apply(c, e.Seq, in)
	if err != nil {
		return fail(err)
	}
	return outs
}

// roomTutorialStep runs a tutorial step of the room's log: the panel
// opens there.
func (c *Controller) roomTutorialStep(m TutorialStep) ([]Out, error) {
	out, err := c.tutorialStep(m.Tutorial, m.Step, 0, true)
	if err != nil {
		return nil, err
	}
	return []Out{out}, nil
}

// RoomApplied returns the seq of the last room command the run applied
// (0 outside a room).
func (c *Controller) RoomApplied() uint64 { return c.room.applied }

// Digest names pane A's world in a few bytes: its time, events, every
// counter and where every page is. Two pages of a room in step have the
// same digest; the page asks for it with a digest request.
func (c *Controller) Digest() string {
	w := c.sess.Panes[0].World
	h := fnv.New128a()
	fmt.Fprintf(h, "t=%d events=%d\n", w.Now(), w.Sim.Queue.Fired())
	for _, n := range w.Totals() {
		fmt.Fprintf(h, "%s=%d\n", n.Name, n.Value)
	}
	pages := w.Pages()
	locs := make([]string, 0, len(pages))
	for l := range pages {
		locs = append(locs, l)
	}
	slices.Sort(locs)
	for _, l := range locs {
		fmt.Fprintf(h, "%s=%d\n", l, pages[l])
	}
	return hex.EncodeToString(h.Sum(nil))
}
