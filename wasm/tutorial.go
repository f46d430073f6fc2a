//go:build js && wasm

package main

import (
	"fmt"

	"ringlab/engine/view"
	"ringlab/tutorials"
)

// The tutorials (package tutorials, embedded in the game): the page's
// tutorial panel (web/tutorial.js) asks for the list, one tutorial's steps,
// and to run a step. Running step N runs the tutorial's own session to
// step N (its figures and checks come back as the reply) and shows the
// same world in pane A: the scenario of the last step up to N that has
// one, then every run directive from that step to N, paused.

// tutorialState keeps the session of the tutorial being read, so stepping
// forward runs one step rather than all of them again.
type tutorialState struct {
	name string
	t    *tutorials.Tutorial
	sess *tutorials.Session
}

var tut tutorialState

// handleTutorial handles the tutorial messages; it reports whether m was one.
func (g *game) handleTutorial(m inMsg) (bool, error) {
	switch m.Type {
	case "tutorials":
		all, err := tutorials.All()
		type entry struct {
			Number  int    `json:"number"`
			Name    string `json:"name"`
			Title   string `json:"title"`
			Level   string `json:"level"`
			Minutes int    `json:"minutes"`
			Steps   int    `json:"steps"`
		}
		list := []entry{}
		for _, t := range all {
			list = append(list, entry{t.Number, t.Name, t.Title, t.Level, t.Minutes, len(t.Steps)})
		}
		msg := map[string]any{"type": "tutorials", "id": m.ID, "tutorials": list}
		if err != nil {
			msg["error"] = err.Error()
		}
		post(msg)
	case "tutorial":
		t, err := tutorials.Find(m.Name)
		if err != nil {
			return true, err
		}
		post(map[string]any{"type": "tutorial", "id": m.ID, "tutorial": t})
	case "tutorial_step":
		return true, g.tutorialStep(m)
	default:
		return false, nil
	}
	return true, nil
}

func (g *game) tutorialStep(m inMsg) error {
	n := m.Index // 1-based step number
	if tut.t == nil || tut.name != m.Name {
		t, err := tutorials.Find(m.Name)
		if err != nil {
			return err
		}
		tut = tutorialState{name: m.Name, t: t}
	}
	t := tut.t
	if n < 1 || n > len(t.Steps) {
		return fmt.Errorf("tutorial_step: %s has steps 1 to %d, not %d", t.Name, len(t.Steps), n)
	}
	// The tutorial's session: continue when step n is the next one,
	// otherwise start again and run the steps before.
	if tut.sess == nil || tut.sess.Next() != n-1 {
		tut.sess = tutorials.NewSession(t, tutorials.Options{})
		for tut.sess.Next() < n-1 {
			tut.sess.RunStep()
		}
	}
	res := tut.sess.RunStep()

	// Pane A: the same world.
	first := -1
	for i := n - 1; i >= 0; i-- {
		if t.Steps[i].Scenario != nil {
			first = i
			break
		}
	}
	if first >= 0 {
		if len(g.sess.Panes) > 1 {
			if err := g.sess.SetCompare(false); err != nil {
				return err
			}
		}
		sc := *t.Steps[first].Scenario
		if err := g.reconfigure(0, view.Config{Scenario: &sc}); err != nil {
			return err
		}
		for i := first; i < n; i++ {
			for _, d := range t.Steps[i].Directives {
				if d.Op != tutorials.OpRun {
					continue
				}
				switch {
				case d.Packets > 0:
					g.sess.Do(view.Command{Op: view.OpPackets, N: d.Packets})
				case d.DurationNS > 0:
					g.sess.Do(view.Command{Op: view.OpTime, N: uint64(d.DurationNS)})
				case d.Events > 0:
					g.sess.Do(view.Command{Op: view.OpEvents, N: d.Events})
				}
			}
		}
	}
	g.playing = false
	post(map[string]any{"type": "tutorial_step", "id": m.ID, "name": t.Name, "step": n, "steps": len(t.Steps), "result": res})
	return nil
}
