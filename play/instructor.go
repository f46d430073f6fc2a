package play

import "fmt"

// instructor is the mode of a page that leads a room. Its preset,
// parameter (pane A), steps, play and pause are not applied when given:
// they go to the room, and are applied when the room's broadcast of them
// comes back, as every student applies them. While it plays, a seek to
// its simulated time goes out every SeekPeriod (ready). A tutorial step
// or reveal runs at once and goes to the room for the students; a step
// taken while the page replays the room's log is refused (errReplaying),
// a reveal goes to the room (it changes no world).
type instructor struct {
	// sent are the digests of the seeks sent, by time, until their echo
	// numbers them (the beacon after a seek says what this page's digest
	// was there).
	sent     []timeDigest
	lastSeek int64 // the last seek sent
	seekSent bool
	// lessons are the lessons sent to the room, by name, before their
	// echo (room.lessons) says the room has them.
	lessons map[string]bool
}

type timeDigest struct {
	t      int64
	digest string
}

// maxTies bounds the events at one time an instructor runs before a seek
// there.
const maxTies = 1000

func (*instructor) role() string  { return RoleInstructor }
func (*instructor) applies() bool { return true }

func (m *instructor) step(c *Controller, in In, id int) ([]Out, bool, error) {
	r := &c.room
	switch in := in.(type) {
	case RoomCommand:
		outs, err := c.logRoom(RoomEntry(in))
		return outs, true, err
	case TutorialStep:
		if r.replaying {
			return nil, true, errReplaying
		}
		var send []Out
		if l := c.lessons[in.Tutorial]; l != nil && !r.lessons[in.Tutorial] && !m.lessons[in.Tutorial] {
			// A lesson the room does not have goes first, in its log.
			if len(l.packed) > MaxRoomLesson {
				return nil, true, fmt.Errorf("this lesson is %d characters packed; a room carries at most %d: split it into shorter lessons", len(l.packed), MaxRoomLesson)
			}
			send = append(send, c.roomSend(Lesson{l.packed}))
		}
		outs, err := c.run(in, id)
		if err != nil {
			return nil, true, err
		}
		if len(send) > 0 {
			if m.lessons == nil {
				m.lessons = map[string]bool{}
			}
			m.lessons[in.Tutorial] = true
		}
		return append(append(outs, send...), c.roomSend(in)), true, nil
	case TutorialReveal:
		// The panel revealed it already (a person's click, also while
		// the page replays the log: the panel never sends one of its
		// own); the room's students reveal it.
		c.revealed(in) // for the class's predictions at it
		return []Out{c.roomSend(in)}, true, nil
	case Speed:
		return nil, false, nil // the page's pace, which its play command carries
	}
	if !is(in, drives) || id != 0 {
		return nil, false, nil // what does not drive the run, and a request, are the page's own
	}
	switch in := in.(type) {
	case Preset:
		if in.Pane == 0 {
			return []Out{c.roomSend(in)}, true, nil
		}
		return nil, true, nil // a room shares pane A only
	case Set:
		if in.Pane == 0 {
			return []Out{c.roomSend(in)}, true, nil
		}
		return nil, true, nil
	case Step:
		if in.Unit != UnitNs {
			in.N = min(max(in.N, 1), MaxRoomStep)
		}
		return m.pinned(c, in), true, nil
	case Back, GoTo, Until, Reset:
		return m.pinned(c, in), true, nil
	case Seek:
		return nil, false, nil
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
			return []Out{c.roomSend(Pause{})}, true, nil
		}
		cmd := Play{}
		if s := c.sess.Speed; s > 0 && s <= MaxRoomSpeed {
			cmd.Speed = s
		}
		return []Out{c.roomSend(cmd)}, true, nil
	}
	// Compare, a scenario, an XDP object or a link would take the
	// instructor off the room's log.
	return note(fmt.Sprintf("%q is not shared with the room; leave the room to use it.", nameOf(in))), true, nil
}

// pinned sends a command whose effect depends on where pane A stands.
// While the room plays, the instructor first stops where it is and pins
// that in the log (a seek, then a pause), so every page applies the
// command from the same place.
func (m *instructor) pinned(c *Controller, in In) []Out {
	r := &c.room
	if !r.playing || !c.playing {
		return []Out{c.roomSend(in)}
	}
	c.playing, r.playing = false, false
	return []Out{m.sendSeek(c), c.roomSend(Pause{}), c.roomSend(in)}
}

// sendSeek is the seek to where the instructor is, and the digest it
// remembers for the beacon that follows the seek's echo.
func (m *instructor) sendSeek(c *Controller) Out {
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
	m.lastSeek, m.seekSent = t, true
	m.sent = append(m.sent, timeDigest{t, d})
	if len(m.sent) > keepDigests {
		m.sent = m.sent[1:]
	}
	return c.roomSend(Seek{t})
}

// ready is what the instructor sends at the end of a tick: a seek to
// where it is every SeekPeriod while the room plays.
func (m *instructor) ready(c *Controller) []Out {
	if !c.room.playing || !c.playing || c.sinceSeek < SeekPeriod || c.sess.Busy() {
		return nil
	}
	c.sinceSeek = 0
	return []Out{m.sendSeek(c)}
}

// apply: the instructor's clock drives the room; its page ran a tutorial
// step before sending it, and runs it again only when it replays the log
// (a reload).
func (m *instructor) apply(c *Controller, seq uint64, in In) ([]Out, error) {
	r := &c.room
	switch in := in.(type) {
	case Play:
		c.playing = true
		c.sinceSeek = 0 // the first seek a period from now, as the students expect
	case Pause:
		if r.replaying {
			return nil, nil
		}
		if m.seekSent && m.lastSeek == int64(c.sess.Panes[0].World.Now()) {
			return nil, nil // pinned there already (pinned)
		}
		return []Out{m.sendSeek(c)}, nil
	case Seek:
		// It is there already: the seek is its own time. Its echo
		// numbers the digest the instructor took when it sent it.
		for i, s := range m.sent {
			if s.t == in.TNs {
				m.sent = m.sent[i+1:]
				if r.replaying {
					break
				}
				return []Out{RoomBeaconOut{Seq: seq, TNs: in.TNs, Digest: s.digest, Playing: r.playing, Speed: r.speed}}, nil
			}
		}
	case TutorialStep:
		if r.replaying {
			return c.roomTutorialStep(in)
		}
	case TutorialReveal:
		if r.replaying {
			return []Out{c.revealed(in)}, nil
		}
	}
	return nil, nil
}

// landed: every other page applies the same command from the same world,
// so its digest after it is this one.
func (*instructor) landed(c *Controller, seq uint64, _ bool) []Out {
	r := &c.room
	if r.replaying {
		return nil
	}
	w := c.sess.Panes[0].World
	return []Out{RoomBeaconOut{Seq: seq, TNs: int64(w.Now()), Digest: c.Digest(), Playing: r.playing, Speed: r.speed}}
}

func (*instructor) describe(st *RoomState) { st.Attached = true }
