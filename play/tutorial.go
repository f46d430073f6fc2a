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
		t, err := tutorials.Find(m.Name)
		if err != nil {
			return nil, err
		}
		return []Out{TutorialOut{ID: id, Tutorial: t}}, nil
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
	// Pane A: the same world.
	first := -1
	for i := n - 1; i >= 0; i-- {
		if t.Steps[i].Scenario != nil {
			first = i
			break
		}
	}
	if first >= 0 {
		if len(c.sess.Panes) > 1 {
			if err := c.sess.SetCompare(false); err != nil {
				return TutorialStepOut{}, err
			}
		}
		sc := *t.Steps[first].Scenario
		if err := c.reconfigure(0, Config{Scenario: &sc}); err != nil {
			return TutorialStepOut{}, err
		}
		for i := first; i < n; i++ {
			for _, d := range t.Steps[i].Directives {
				if d.Op != tutorials.OpRun {
					continue
				}
				switch {
				case d.Packets > 0:
					c.sess.Do(Step{UnitPacket, d.Packets})
				case d.DurationNS > 0:
					c.sess.Do(Step{UnitNs, uint64(d.DurationNS)})
				case d.Events > 0:
					c.sess.Do(Step{UnitEvent, d.Events})
				}
			}
		}
	}
	c.playing = false
	return out, nil
}

// tutorialPanel runs the tutorial's own session to step n (its figures
// and checks, for the panel) and returns what the panel shows, as a room
// asks for it; pane A is untouched. A follower without a page runs no
// session: its panel has no result.
func (c *Controller) tutorialPanel(name string, n int, fromRoom bool) (TutorialStepOut, error) {
	if c.tut.t == nil || c.tut.name != name {
		t, err := tutorials.Find(name)
		if err != nil {
			return TutorialStepOut{}, err
		}
		c.tut = tutorialRun{name: name, t: t}
	}
	t := c.tut.t
	out := TutorialStepOut{Tutorial: t.Name, Step: n, Steps: len(t.Steps), Room: true}
	if n == 0 && fromRoom {
		return out, nil
	}
	if n < 1 || n > len(t.Steps) {
		return TutorialStepOut{}, fmt.Errorf("tutorial_step: %s has steps 1 to %d, not %d", t.Name, len(t.Steps), n)
	}
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
	return out, nil
}
