package play

import (
	"fmt"

	"ringlab/tutorials"
)

// The tutorials (package tutorials, embedded): the page's panel asks for
// the list, one tutorial's text, and to run a step. Running step N runs
// the tutorial's own session to step N (its figures and checks come back
// in the reply) and shows the same world in pane A: the scenario of the
// last step up to N that has one, then every run directive from that
// step to N, paused.

// tutorialRun is the tutorial being read, so that stepping forward runs
// one step rather than all of them again.
type tutorialRun struct {
	name string
	t    *tutorials.Tutorial
	sess *tutorials.Session
	// step is the step the panel shows (from 1; 0 none yet), and
	// revealed its questions the panel revealed: what a student's status
	// tells the roster.
	step     int
	revealed map[int]bool
	// result is what the step the panel shows did (its answers' keys);
	// nil when this page did not run it.
	result *tutorials.StepResult
}

// at is the tutorial step the panel shows and whether every question of
// it is revealed ("", 0 when none ran).
func (r *tutorialRun) at() (name string, step int, all bool) {
	if r.t == nil || r.step < 1 || r.step > len(r.t.Steps) {
		return "", 0, false
	}
	asked := r.t.Steps[r.step-1].Questions()
	all = asked > 0
	for q := range asked {
		all = all && r.revealed[q]
	}
	return r.name, r.step, all
}

// revealed notes that the panel reveals question m (the room's
// instructor revealed it, or the person did) and returns what tells the
// panel.
func (c *Controller) revealed(m TutorialReveal) TutorialRevealOut {
	if c.tut.name == m.Tutorial && c.tut.step == m.Step {
		if c.tut.revealed == nil {
			c.tut.revealed = map[int]bool{}
		}
		c.tut.revealed[m.Question] = true
	}
	return TutorialRevealOut(m)
}

func (c *Controller) tutorialInfo(in In, id int) ([]Out, error) {
	switch m := in.(type) {
	case Tutorials:
		all, err := tutorials.All()
		out := TutorialsOut{ID: id, Tutorials: []TutorialInfo{}}
		for _, t := range all {
			out.Tutorials = append(out.Tutorials, TutorialInfo{t.Number, t.Name, t.Title, t.Level, t.Minutes, len(t.Steps)})
		}
		if err != nil {
			out.Error = err.Error()
		}
		return []Out{out}, nil
	case Tutorial:
		t, err := c.FindTutorial(m.Name)
		if err != nil {
			return nil, err
		}
		return []Out{TutorialOut{ID: id, Tutorial: t}}, nil
	case TutorialGrade:
		return []Out{TutorialGradeOut{ID: id, Grade: m.Key.Grade(m.Prediction)}}, nil
	}
	return nil, nil
}

// tutorialStep runs step n (from 1) of tutorial name and shows its world
// in pane A, paused. Step 0, the introduction, runs nothing; only a
// room's log asks for it (the panel shows the introduction by itself).
func (c *Controller) tutorialStep(name string, n, id int, fromRoom bool) (TutorialStepOut, error) {
	out, err := c.tutorialPanel(name, n, fromRoom)
	if err != nil {
		return TutorialStepOut{}, err
	}
	out.ID, out.Room = id, fromRoom
	if n == 0 {
		return out, nil
	}
	t := c.tut.t
	// Pane A: the same world (tutorials' path to it).
	p := t.PathTo(n)
	if p.From < 0 {
		c.playing = false
		return out, nil
	}
	if len(c.sess.Panes) > 1 {
		if err := c.sess.SetCompare(false); err != nil {
			return TutorialStepOut{}, err
		}
	}
	sc := *p.Scenario
	// The world says what it is: the tutorial's step and the
	// configuration its directives gave it (the preset's own words
	// would describe the preset, not what the set lines changed).
	sc.Name = fmt.Sprintf("%s step %d", t.Name, n)
	sc.Description = t.Describe(p, n)
	if err := c.reconfigure(0, Config{Scenario: &sc}); err != nil {
		return TutorialStepOut{}, err
	}
	var watch *tutorials.RunSpec // the step's last run, when it asks to be watched
	for _, r := range p.Runs {
		if watch != nil {
			c.queueRun(*watch)
			watch = nil
		}
		// In a room every browser jumps: a run played at each one's
		// own pace would let the room's next command land midway.
		if r.Watch && r.Step == n-1 && !c.inRoom() {
			watch = &r.RunSpec
			continue
		}
		c.queueRun(r.RunSpec)
	}
	c.playing = false
	if watch != nil {
		c.watchRun(*watch)
	}
	return out, nil
}

// stepUnits are the session's units of a tutorial's runs.
var stepUnits = map[tutorials.RunUnit]Unit{tutorials.RunEvents: UnitEvent, tutorials.RunPackets: UnitPacket, tutorials.RunTime: UnitNs}

// queueRun queues a tutorial's run as a step of pane A.
func (c *Controller) queueRun(r tutorials.RunSpec) {
	if r.N > 0 {
		c.sess.Do(Step{stepUnits[r.Unit], r.N})
	}
}

// WatchSpeed is the speed a watched tutorial run plays at, in events a
// second, when the page's own is faster (or as fast as it goes).
const WatchSpeed = 8

// watchRun is a tutorial run played rather than jumped: pane A plays,
// event by event, until it stands where the run stops, then pauses.
type watchRun struct {
	unit   Unit
	n      uint64
	target uint64 // events or packets of pane A to reach; set when it starts
	begun  bool
	speed  float64 // the page's speed before, given back at the end
	set    bool    // the watch set the speed
}

// watchRun plays r (events=N or packets=N) after what is queued.
func (c *Controller) watchRun(r tutorials.RunSpec) {
	w := &watchRun{unit: stepUnits[r.Unit], n: r.N}
	c.watch = w
	if c.sess.Speed <= 0 || c.sess.Speed > WatchSpeed {
		w.speed, w.set = c.sess.Speed, true
		c.sess.Speed = WatchSpeed
		c.acc = 0
	}
	c.playing = true
}

// playWatch plays what the tick owes of the watched run, one event at a
// time so that it stops exactly where the run would (a run of packets
// stops after the event that received the last of them); it reports
// whether more is owed now.
func (c *Controller) playWatch() bool {
	s, w := c.sess, c.watch
	pos := s.Position()
	if !w.begun {
		w.begun = true
		if w.unit == UnitPacket {
			w.target = pos.Packets + w.n
		} else {
			w.target = pos.Events + w.n
		}
	}
	reached := func() bool {
		p := s.Position()
		if w.unit == UnitPacket {
			return p.Packets >= w.target
		}
		return p.Events >= w.target
	}
	for c.owed > 0 && !reached() {
		if s.Play(1, 1) == 0 {
			break
		}
		c.owed--
	}
	if reached() || s.Stopped() != nil {
		if w.set && s.Speed == WatchSpeed {
			s.Speed = w.speed // the page's own speed again
		}
		c.watch, c.playing, c.owed = nil, false, 0
		c.force = true
		return false
	}
	return false
}

// tutorialPanel runs the tutorial's own session to step n (its figures
// and checks, for the panel) and returns what the panel shows, as a room
// asks for it; pane A is untouched. A follower without a page runs no
// session: its panel has no result.
func (c *Controller) tutorialPanel(name string, n int, fromRoom bool) (TutorialStepOut, error) {
	if c.tut.t == nil || c.tut.name != name {
		t, err := c.FindTutorial(name)
		if err != nil {
			return TutorialStepOut{}, err
		}
		c.tut = tutorialRun{name: name, t: t}
	}
	t := c.tut.t
	out := TutorialStepOut{Tutorial: t.Name, Step: n, Steps: len(t.Steps), Room: true}
	if n == 0 && fromRoom {
		c.tut.step, c.tut.revealed, c.tut.result = 0, nil, nil
		return out, nil
	}
	if n < 1 || n > len(t.Steps) {
		return TutorialStepOut{}, fmt.Errorf("tutorial_step: %s has steps 1 to %d, not %d", t.Name, len(t.Steps), n)
	}
	c.tut.step, c.tut.revealed, c.tut.result = n, nil, nil
	if c.headless {
		return out, nil
	}
	// The tutorial's session: continue when step n is the next one,
	// otherwise start again and run the steps before.
	if c.tut.sess == nil || c.tut.sess.Next() != n-1 {
		c.tut.sess = tutorials.NewSession(t, tutorials.Options{})
		for c.tut.sess.Next() < n-1 {
			c.tut.sess.RunStep()
		}
	}
	out.Result = c.tut.sess.RunStep()
	res := out.Result
	c.tut.result = &res
	return out, nil
}
