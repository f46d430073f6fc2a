package play

import (
	"fmt"

	"ringlab/proto"
)

// student is what a student's page keeps beside the room's log, following
// it or not. Students run no clock of their own: they follow the
// instructor's seeks, and a following student plays on its own between
// them (smooth following) while it checks the instructor's beacons (no
// silent drift).
type student struct {
	// Smooth following: a student plays on its own while the room plays,
	// at the instructor's pace (the room's speed, or rate once measured),
	// up to cap events: a little short of where the next seek is
	// expected, so it rarely has to go back. wall is wall ns since the
	// last seek landed.
	rate      float64
	cap       uint64
	markFired uint64
	paced     bool // markFired and wall count from a play or a landed seek
	wall      int64
	// No silent drift: a seek of the log is where a student's digest is
	// taken once it lands (digests); the instructor's beacon says what
	// its own was there.
	digests   []seqDigest
	beacon    *RoomBeacon
	resyncing bool
	resyncs   int
	checked   uint64
}

type seqDigest struct {
	seq    uint64
	digest string
}

// followShort is how far short of the next expected seek a following
// student stops (a fraction of a seek period's events).
const followShort = 0.9

// restart forgets the pace and the digests: the log is replayed.
func (s *student) restart() { s.digests, s.beacon, s.cap, s.rate, s.paced = nil, nil, 0, 0, false }

// follow sets how far a student may play on its own from fired events:
// most of a seek period at the instructor's pace once measured, half of
// one at the play command's speed before (the instructor's page may not
// keep up with its speed).
func (s *student) follow(fired uint64, speed float64) {
	pace, short := s.rate, followShort
	if pace <= 0 {
		pace, short = speed, 0.5
	}
	s.cap = fired + uint64(short*pace*float64(SeekPeriod)/1e9)
}

// following is the mode of a student applying the room's log.
type following struct{ *student }

func (following) role() string  { return RoleStudent }
func (following) applies() bool { return true }

func (f following) step(c *Controller, in In, id int) ([]Out, bool, error) {
	switch in := in.(type) {
	case RoomCommand:
		outs, err := c.logRoom(RoomEntry(in))
		return outs, true, err
	case RoomBeacon:
		f.beacon = &in
		outs := f.checkBeacon(c)
		return append(outs, c.drainRoom()...), true, nil
	case RoomDetach:
		c.mode = detached(f)
		// Where a seek would have landed is the room's, no longer this
		// page's.
		c.room.replaying, c.room.mark, c.room.markSeek = false, 0, false
		return c.drainRoom(), true, nil
	case RoomSnap:
		f.resyncing = false
		f.restart()
		outs, err := c.replay()
		return outs, true, err
	case TutorialStep:
		// It would take this page's world off the room's.
		return nil, true, errFollowing
	}
	if !is(in, drives) {
		return nil, false, nil
	}
	// Nothing takes a following student's world off the room's, a
	// request (with an id) no more than a key.
	if id != 0 {
		return nil, true, errFollowing
	}
	return []Out{NoteOut{Source: "room", Code: proto.CodeFollowing, Text: "You are following the room: detach to explore on your own."}}, true, nil
}

// owes is what a following student may play of owed events from fired:
// it plays on its own between the room's seeks, up to where the next one
// is expected.
func (f following) owes(fired, owed uint64) uint64 {
	if fired >= f.cap {
		return 0
	}
	return min(owed, f.cap-fired)
}

// apply: a student applies the instructor's play at its pace, goes to
// the instructor's seeks, and runs a tutorial's steps as the instructor
// did.
func (f following) apply(c *Controller, seq uint64, in In) ([]Out, error) {
	r := &c.room
	switch in := in.(type) {
	case Play:
		if in.Speed > 0 {
			c.sess.Speed = in.Speed
		}
		f.markFired, f.wall, f.rate, f.paced = c.sess.Panes[0].World.Sim.Queue.Fired(), 0, 0, true
		f.follow(f.markFired, r.speed)
		c.playing = !c.headless && !r.replaying
	case Seek:
		w := c.sess.Panes[0].World
		if now := int64(w.Now()); in.TNs >= now {
			if in.TNs > now {
				c.sess.Do(Step{UnitNs, uint64(in.TNs - now)})
			}
		} else if err := c.sess.GoTo(UnitNs, uint64(in.TNs)); err != nil {
			// Ahead of the room (it played on its own): back to it.
			return nil, err
		}
		c.playing = false // until it lands (landed)
		r.mark, r.markSeek = seq, true
	case TutorialStep:
		return c.roomTutorialStep(in)
	case TutorialReveal:
		return []Out{c.revealed(in)}, nil
	}
	return nil, nil
}

// landed: a seek done measures the instructor's pace and lets local play
// go on to the next expected seek; the digest is kept for the beacon.
func (f following) landed(c *Controller, seq uint64, seek bool) []Out {
	r := &c.room
	if seek {
		fired := c.sess.Panes[0].World.Sim.Queue.Fired()
		if f.paced && r.playing && fired > f.markFired && f.wall > 0 && !r.replaying {
			f.rate = float64(fired-f.markFired) / (float64(f.wall) / 1e9)
		}
		f.markFired, f.wall, f.paced = fired, 0, r.playing
		f.follow(fired, r.speed)
		if r.playing {
			c.playing = true
		}
	}
	f.digests = append(f.digests, seqDigest{seq, c.Digest()})
	if len(f.digests) > keepDigests {
		f.digests = f.digests[1:]
	}
	return f.checkBeacon(c)
}

// checkBeacon compares the instructor's beacon with the student's digest
// at the same command: a difference means this page's world drifted from
// the room's (a bug, a tampered page), and it resyncs from the log.
func (f following) checkBeacon(c *Controller) []Out {
	r := &c.room
	b := f.beacon
	if b == nil || r.replaying {
		return nil
	}
	if b.Digest == "" {
		f.beacon = nil
		return nil
	}
	for _, d := range f.digests {
		if d.seq != b.Seq {
			continue
		}
		f.beacon = nil
		if d.digest == b.Digest {
			f.checked = b.Seq
			c.force = true
			return nil
		}
		f.resyncs++
		f.restart()
		outs, err := c.replay()
		if err != nil {
			return []Out{ErrorOut{Source: "room", Message: "resyncing: " + err.Error()}}
		}
		f.resyncing = true
		c.force = true
		return append(note(fmt.Sprintf("Your world had drifted from the room's (at command %d): resyncing from the room's log.", b.Seq)), outs...)
	}
	if r.applied >= b.Seq && r.mark == 0 {
		f.beacon = nil // a seek this page did not land on (a replay passed it)
	}
	return nil
}

// status is a student's status for the instructor's roster, when one is
// due: it changed since the last one sent (or none was since the
// welcome) and StatusPeriod has passed since.
func (c *Controller) status() (RoomStatusOut, bool) {
	if c.mode.role() != RoleStudent || c.headless {
		return RoomStatusOut{}, false
	}
	r := c.roomState()
	st := proto.Status{State: r.Status, Applied: r.Applied}
	st.Tutorial, st.Step, st.Revealed = c.tut.at()
	if c.statusSent != nil && (*c.statusSent == st || c.sinceStatus < StatusPeriod) {
		return RoomStatusOut{}, false
	}
	c.statusSent, c.sinceStatus = &st, 0
	return RoomStatusOut(st), true
}

func (f following) describe(st *RoomState) {
	st.Attached, st.Resyncs, st.Checked = true, f.resyncs, f.checked
	switch {
	case st.Replaying && f.resyncing:
		st.Status = "resyncing"
	case st.Replaying:
		st.Status = "replaying"
	default:
		st.Status = "following"
	}
}

// detached is the mode of a student exploring on its own: the room's log
// keeps growing, applied once it snaps back.
type detached struct{ *student }

func (detached) role() string  { return RoleStudent }
func (detached) applies() bool { return false }

func (d detached) step(c *Controller, in In, _ int) ([]Out, bool, error) {
	switch in := in.(type) {
	case RoomCommand:
		outs, err := c.logRoom(RoomEntry(in))
		return outs, true, err
	case RoomBeacon, RoomDetach:
		return nil, true, nil // a snap back replays the log: no beacon to check
	case RoomSnap:
		f := following(d)
		c.mode = f
		f.resyncing = false
		f.restart()
		outs, err := c.replay()
		return outs, true, err
	}
	return nil, false, nil
}

// apply and landed are never called: a detached student applies nothing
// of the room's log, and detaching forgot where a seek would land.
func (detached) apply(*Controller, uint64, In) ([]Out, error) { return nil, nil }
func (detached) landed(*Controller, uint64, bool) []Out       { return nil }

func (d detached) describe(st *RoomState) {
	st.Status, st.Resyncs, st.Checked = "detached", d.resyncs, d.checked
}
