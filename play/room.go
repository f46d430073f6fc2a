package play

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"

	"ringlab/engine/scenario"
	"ringlab/tutorials"
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

	// Smooth following: a student plays on its own while the room plays,
	// at the instructor's pace (speed, or rate once measured), up to cap
	// events: a little short of where the next seek is expected, so it
	// rarely has to go back. wall is wall ns since the last seek landed.
	speed, rate float64
	cap         uint64
	markFired   uint64
	paced       bool // markFired and wall count from a play or a landed seek
	wall        int64
	// No silent drift: a seek of the log (seq mark) is where a student's
	// digest is taken once it lands; the instructor's beacon says what
	// its own was there. sent are the instructor's digests of the seeks
	// it sent, by time, until their echo numbers them.
	mark      uint64
	digests   []seqDigest
	beacon    *RoomBeacon
	sent      []timeDigest
	resyncing bool
	resyncs   int
	checked   uint64
	markSeek  bool  // the mark is a seek (or a play): the instructor's place
	lastSeek  int64 // the instructor's last seek sent (seekSent)
	seekSent  bool
}

type seqDigest struct {
	seq    uint64
	digest string
}

type timeDigest struct {
	t      int64
	digest string
}

// keepDigests is how many commands' digests a page keeps for the
// beacons.
const keepDigests = 32

// maxTies bounds the events at one time an instructor runs before a seek
// there.
const maxTies = 1000

// followShort is how far short of the next expected seek a following
// student stops (a fraction of a seek period's events).
const followShort = 0.9

func (r *room) pending() bool {
	return r.role != "" && r.attached && r.next < len(r.log) || r.replaying
}

func (r *room) state() RoomState {
	var seq uint64
	if n := len(r.log); n > 0 {
		seq = r.log[n-1].Seq
	}
	st := RoomState{Room: r.id, Role: r.role, Attached: r.attached, Playing: r.playing,
		Seq: seq, Applied: r.applied, Replaying: r.replaying, Resyncs: r.resyncs, Checked: r.checked}
	if r.role == RoleStudent {
		switch {
		case !r.attached:
			st.Status = "detached"
		case r.replaying && r.resyncing:
			st.Status = "resyncing"
		case r.replaying:
			st.Status = "replaying"
		default:
			st.Status = "following"
		}
	}
	return st
}

// sendSeek is the instructor's seek to where it is, and the digest it
// remembers for the beacon that follows the seek's echo.
func (c *Controller) sendSeek() Out {
	r := &c.room
	w := c.sess.Panes[0].World
	t := int64(w.Now())
	// A seek to t runs every event due at t: so does the instructor, so
	// that it is where the seek lands everyone else.
	for i := 0; i < maxTies && !c.sess.Pending(); i++ {
		if at, ok := w.Sim.Queue.Peek(); !ok || int64(at) > t || c.sess.Play(1, 1) == 0 {
			break
		}
	}
	d := ""
	if at, ok := w.Sim.Queue.Peek(); !ok || int64(at) > t {
		d = c.Digest() // a seek to t lands here: nothing else is due at t
	}
	r.lastSeek, r.seekSent = t, true
	r.sent = append(r.sent, timeDigest{t, d})
	if len(r.sent) > keepDigests {
		r.sent = r.sent[1:]
	}
	return c.roomSend(Seek{t})
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
	if r.role == "" {
		return nil, false
	}
	switch in.(type) {
	case Preset, Set, Step, Seek, Back, GoTo, Until, Play, Pause, Toggle, Reset, Compare, Scenario, XDPObject, Load:
	case Speed:
		if r.role != RoleStudent {
			return nil, false
		}
	default:
		return nil, false
	}
	if r.role == RoleStudent {
		if !r.attached {
			return nil, false
		}
		// Nothing takes a following student's world off the room's,
		// a request (with an id) no more than a key.
		if id != 0 {
			return []Out{ErrorOut{Source: inType(in), ID: id, Message: errFollowing.Error()}}, true
		}
		return note("You are following the room: detach to explore on your own."), true
	}
	if id != 0 {
		return nil, false
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
		return c.pinned(m), true
	case Back, GoTo, Until, Reset:
		return c.pinned(in), true
	case Seek:
		return nil, false
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
	// Compare, a scenario, an XDP object or a link would take the
	// instructor off the room's log.
	return note(fmt.Sprintf("%q is not shared with the room; leave the room to use it.", inType(in))), true
}

// pinned sends a command whose effect depends on where pane A stands.
// While the room plays, the instructor first stops where it is and pins
// that in the log (a seek, then a pause), so every page applies the
// command from the same place.
func (c *Controller) pinned(in In) []Out {
	r := &c.room
	if !r.playing || !c.playing {
		return []Out{c.roomSend(in)}
	}
	c.playing, r.playing = false, false
	return []Out{c.sendSeek(), c.roomSend(Pause{}), c.roomSend(in)}
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
		if r.continues(m) {
			// A reconnect: the same room, a log that extends ours.
			r.log = append(r.log, m.Log[len(r.log):]...)
			return c.drainRoom(), nil
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
	case RoomBeacon:
		if r.role != RoleStudent {
			return nil, nil // an instructor's own, or outside a room
		}
		b := m
		r.beacon = &b
		outs := c.checkBeacon()
		return append(outs, c.drainRoom()...), nil
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
		r.attached, r.resyncing = true, false
		return c.replay()
	}
	return c.drainRoom(), nil
}

// continues reports whether a welcome is the room r already follows with a
// log that begins with r's (what the page gets when it reconnects).
func (r *room) continues(m RoomWelcome) bool {
	if r.role == "" || r.id != m.Room || r.role != m.You || string(r.scenario) != string(m.Scenario) || len(m.Log) < len(r.log) {
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
		t, err := tutorials.Find(m.Tutorial)
		if err != nil || m.Step < 1 || m.Step > len(t.Steps) {
			return cur, false, err
		}
		for i := m.Step - 1; i >= 0; i-- {
			if sc := t.Steps[i].Scenario; sc != nil {
				cp := *sc
				return Config{Scenario: &cp}, true, nil
			}
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
	r.mark, r.digests, r.beacon, r.cap, r.rate, r.speed, r.paced = 0, nil, nil, 0, 0, 0, false
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
		next, reset, err := RoomReset(cfg, in)
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
	instructor := r.role == RoleInstructor
	var outs []Out
	lastStep := -1
	for i := 0; i < from; i++ {
		switch cmds[i].(type) {
		case Play:
			r.playing, c.playing = true, instructor
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
				outs = append(outs, TutorialRevealOut(m))
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
		if !(r.role != "" && r.attached && r.next < len(r.log) && !c.sess.Busy()) {
			break
		}
		e := r.log[r.next]
		r.next++
		outs = append(outs, c.applyRoom(e)...)
		r.applied = e.Seq
		c.force = true
	}
	if r.replaying && (r.next >= len(r.log) || !r.attached) && !c.sess.Busy() {
		r.replaying, r.resyncing = false, false
		c.force = true
		outs = append(outs, c.checkBeacon()...) // the one a late joiner's welcome came with
	}
	return outs
}

// landed is a student's seek done: its digest is kept for the beacon,
// the instructor's pace measured, and local play may go on to the next
// expected seek.
func (c *Controller) landed() []Out {
	r := &c.room
	seq, seek := r.mark, r.markSeek
	r.mark, r.markSeek = 0, false
	if c.headless {
		return nil
	}
	w := c.sess.Panes[0].World
	if r.role == RoleInstructor {
		if r.replaying {
			return nil
		}
		// Every other page applies the same command from the same
		// world: its digest after it is this one.
		return []Out{RoomBeaconOut{Seq: seq, TNs: int64(w.Now()), Digest: c.Digest(), Playing: r.playing, Speed: r.speed}}
	}
	if seek {
		fired := w.Sim.Queue.Fired()
		if r.paced && r.playing && fired > r.markFired && r.wall > 0 && !r.replaying {
			r.rate = float64(fired-r.markFired) / (float64(r.wall) / 1e9)
		}
		r.markFired, r.wall, r.paced = fired, 0, r.playing
		r.follow(fired)
		if r.playing {
			c.playing = true
		}
	}
	r.digests = append(r.digests, seqDigest{seq, c.Digest()})
	if len(r.digests) > keepDigests {
		r.digests = r.digests[1:]
	}
	return c.checkBeacon()
}

// follow sets how far a student may play on its own from fired events:
// most of a seek period at the instructor's pace once measured, half of
// one at the play command's speed before (the instructor's page may not
// keep up with its speed).
func (r *room) follow(fired uint64) {
	pace, short := r.rate, followShort
	if pace <= 0 {
		pace, short = r.speed, 0.5
	}
	r.cap = fired + uint64(short*pace*float64(SeekPeriod)/1e9)
}

// checkBeacon compares the instructor's beacon with the student's digest
// at the same command: a difference means this page's world drifted from
// the room's (a bug, a tampered page), and it resyncs from the log.
func (c *Controller) checkBeacon() []Out {
	r := &c.room
	b := r.beacon
	if b == nil || r.role != RoleStudent || !r.attached || r.replaying {
		return nil
	}
	if b.Digest == "" {
		r.beacon = nil
		return nil
	}
	for _, d := range r.digests {
		if d.seq != b.Seq {
			continue
		}
		r.beacon = nil
		if d.digest == b.Digest {
			r.checked = b.Seq
			c.force = true
			return nil
		}
		r.resyncs++
		outs, err := c.replay()
		if err != nil {
			return []Out{ErrorOut{Source: "room", Message: "resyncing: " + err.Error()}}
		}
		r.resyncing = true
		c.force = true
		return append(note(fmt.Sprintf("Your world had drifted from the room's (at command %d): resyncing from the room's log.", b.Seq)), outs...)
	}
	if r.applied >= b.Seq && r.mark == 0 {
		r.beacon = nil // a seek this page did not land on (a replay passed it)
	}
	return nil
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
	// Its digest is taken once its work is done (landed), where every
	// page's world is the same: after a command that builds the world,
	// or one applied while the room is paused (a step, a move); a
	// following student's own play makes its place its own while the
	// room plays (the seeks pin it, below).
	switch in.(type) {
	case Preset, Set, Reset, TutorialStep:
		r.mark = e.Seq
	case Step, Back, GoTo, Until, TutorialReveal:
		if !r.playing {
			r.mark = e.Seq
		}
	}
	switch m := in.(type) {
	case Preset, Set, Step, Back, GoTo, Until, Reset:
		outs, err := c.run(in, 0)
		if err != nil {
			r.mark = 0
			return fail(err)
		}
		return outs
	case Play:
		r.playing = true
		r.speed = m.Speed
		// The instructor's clock drives the room; a student plays on its
		// own at its pace (its speed, once measured its rate) up to about
		// where the next seek is expected.
		if instructor {
			c.playing = true
			c.sinceSeek = 0 // the first seek a period from now, as the students expect
		} else {
			if m.Speed > 0 {
				c.sess.Speed = m.Speed
			}
			r.markFired, r.wall, r.rate, r.paced = c.sess.Panes[0].World.Sim.Queue.Fired(), 0, 0, true
			r.follow(r.markFired)
			c.playing = !c.headless && !r.replaying
		}
	case Pause:
		r.playing = false
		c.playing = false
		if instructor && !r.replaying {
			if r.seekSent && r.lastSeek == int64(c.sess.Panes[0].World.Now()) {
				return nil // pinned there already (pinned)
			}
			return []Out{c.sendSeek()}
		}
	case Seek:
		if !instructor { // the instructor is there already: it is its own time
			w := c.sess.Panes[0].World
			if now := int64(w.Now()); m.TNs >= now {
				if m.TNs > now {
					c.sess.Do(Step{UnitNs, uint64(m.TNs - now)})
				}
			} else if err := c.sess.GoTo(UnitNs, uint64(m.TNs)); err != nil {
				// Ahead of the room (it played on its own): back to it.
				return fail(err)
			}
			c.playing = false // until it lands (landed)
			r.mark, r.markSeek = e.Seq, true
			break
		}
		for i, s := range r.sent {
			if s.t == m.TNs {
				r.sent = r.sent[i+1:]
				if r.replaying {
					break
				}
				return []Out{RoomBeaconOut{Seq: e.Seq, TNs: m.TNs, Digest: s.digest, Playing: r.playing, Speed: r.speed}}
			}
		}
	case TutorialStep:
		// The instructor ran the step before sending it; everyone else
		// runs it now and the panel opens there, and so does the
		// instructor's page when it replays the log (a reload).
		if !instructor || r.replaying {
			out, err := c.tutorialStep(m.Tutorial, m.Step, 0, true)
			if err != nil {
				return fail(err)
			}
			return []Out{out}
		}
	case TutorialReveal:
		if !instructor || r.replaying {
			return []Out{TutorialRevealOut(m)}
		}
	}
	return nil
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
