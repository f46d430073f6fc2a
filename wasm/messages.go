//go:build js && wasm

package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"ringlab/engine/scenario"
	"ringlab/engine/view"
)

// The page's messages and the game's replies (web/README.md).

func (g *game) postReady() {
	type preset struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Seed        string `json:"seed,omitempty"`
	}
	var ps []preset
	for _, p := range scenario.Presets() {
		ps = append(ps, preset{p.Name, p.Description, p.Seed})
	}
	post(map[string]any{"type": "ready", "presets": ps, "params": view.Params(), "bench": g.bench})
}

func (g *game) click(x, y float64, id int) {
	t := g.layout.HitTest(x, y, g.snaps)
	if t.Kind == view.KindNone {
		if id != 0 {
			post(map[string]any{"type": "error", "source": "click", "id": id, "message": fmt.Sprintf("nothing to inspect at (%.0f, %.0f)", x, y)})
		}
		return
	}
	g.sel = t
	g.postRecord(t, "click", id)
	g.lastRecord = time.Now()
}

func (g *game) postRecord(t view.Target, source string, id int) {
	if t.Pane < 0 || t.Pane >= len(g.sess.Panes) {
		post(map[string]any{"type": "error", "source": "inspect", "id": id, "message": fmt.Sprintf("no pane %d", t.Pane)})
		return
	}
	rec, err := view.Inspect(g.sess.Panes[t.Pane].World, g.sess.Queue, t)
	if err != nil {
		post(map[string]any{"type": "error", "source": "inspect", "id": id, "message": err.Error()})
		return
	}
	post(map[string]any{"type": "inspect", "source": source, "id": id, "record": rec})
}

func (g *game) handleMessages() {
	msgs, bad := g.in.take()
	for _, e := range bad {
		post(map[string]any{"type": "error", "source": "message", "message": e})
	}
	for _, m := range msgs {
		if err := g.handle(m); err != nil {
			post(map[string]any{"type": "error", "source": m.Type, "id": m.ID, "message": err.Error()})
		}
		g.force = true
	}
}

func (g *game) handle(m inMsg) error {
	s := g.sess
	switch m.Type {
	case "hello":
		g.postReady()
	case "click":
		g.click(m.X, m.Y, m.ID)
	case "sync":
		g.syncs = append(g.syncs, m.ID)
	case "play":
		g.playing = true
	case "pause":
		g.playing = false
	case "toggle":
		g.playing = !g.playing
	case "step":
		n := max(m.N, 1)
		switch m.Unit {
		case "", "event":
			s.Do(view.Command{Op: view.OpEvents, N: n})
		case "packet":
			s.Do(view.Command{Op: view.OpPackets, N: n})
		case "ns":
			s.Do(view.Command{Op: view.OpTime, N: n})
		default:
			return fmt.Errorf("step: unit %q: want event, packet or ns", m.Unit)
		}
		g.playing = false
	case "speed":
		if m.EPS == nil || *m.EPS < 0 || *m.EPS > view.MaxSpeed || math.IsNaN(*m.EPS) {
			return errors.New("speed: eps must be 0 (as fast as it goes) or a positive number of events per second")
		}
		s.Speed = *m.EPS
		g.acc = 0
	case "reset":
		g.sel = view.Target{}
		return s.Reset()
	case "preset":
		if _, err := scenario.LookupPreset(m.Name); err != nil {
			return err
		}
		return g.reconfigure(m.Pane, view.Config{Preset: m.Name})
	case "scenario":
		sc, err := scenario.DecodeBytes([]byte(m.JSON))
		if err != nil {
			return err
		}
		return g.reconfigure(m.Pane, view.Config{Scenario: &sc})
	case "set":
		if m.Pane < 0 || m.Pane >= len(s.Panes) {
			return fmt.Errorf("set: no pane %d", m.Pane)
		}
		if err := s.Set(m.Pane, m.Key, m.Value); err != nil {
			return err
		}
		g.afterReconfigure(m.Pane)
	case "xdp_object":
		if m.Pane < 0 || m.Pane >= len(s.Panes) {
			return fmt.Errorf("xdp_object: no pane %d", m.Pane)
		}
		if len(m.bytes) == 0 {
			return errors.New("xdp_object: the file is empty")
		}
		c, err := s.Panes[m.Pane].Config.WithObject(m.Name, m.bytes)
		if err != nil {
			return err
		}
		return g.reconfigure(m.Pane, c)
	case "compare":
		if err := s.SetCompare(m.On); err != nil {
			return err
		}
		if !m.On && g.sel.Pane > 0 {
			g.sel = view.Target{}
		}
	case "queue":
		if m.Queue < 0 || m.Queue >= s.Panes[0].Snap.NumQueues {
			return fmt.Errorf("queue: no receive queue %d", m.Queue)
		}
		s.Queue = m.Queue
		s.MarkDirty()
	case "load":
		st, err := view.DecodeState(m.Query)
		if err != nil {
			return err
		}
		ns, err := view.NewSession(st)
		if err != nil {
			return err
		}
		g.sess, g.sel = ns, view.Target{}
		g.playing = len(st.Log) == 0
	case "inspect":
		g.sel = view.Target{Kind: view.Kind(m.Kind), Pane: m.Pane, Index: m.Index}
		g.postRecord(g.sel, "request", m.ID)
	case "layout":
		type rect struct{ X, Y, W, H float64 }
		conv := func(r view.Rect) rect { return rect{r.X, r.Y, r.W, r.H} }
		var panes []map[string]rect
		for _, p := range g.layout.Panes {
			panes = append(panes, map[string]rect{"ring": conv(p.Ring), "flow": conv(p.Flow), "cpus": conv(p.CPUs),
				"pages": conv(p.Pages), "rates": conv(p.Rates)})
		}
		post(map[string]any{"type": "layout", "id": m.ID, "w": g.w, "h": g.h, "panes": panes})
	case "where":
		t := view.Target{Kind: view.Kind(m.Kind), Pane: m.Pane, Index: m.Index}
		x, y, ok := g.layout.Where(t, g.snaps)
		post(map[string]any{"type": "where", "id": m.ID, "x": x, "y": y, "ok": ok})
	default:
		if ok, err := g.handleTutorial(m); ok { // tutorial messages: wasm/tutorial.go
			return err
		}
		return fmt.Errorf("unknown message type %q", m.Type)
	}
	return nil
}

func (g *game) reconfigure(pane int, c view.Config) error {
	if err := g.sess.Reconfigure(pane, c); err != nil {
		return err
	}
	g.afterReconfigure(pane)
	return nil
}

func (g *game) afterReconfigure(pane int) {
	if pane == 0 {
		g.sel = view.Target{}
	}
	g.sess.Queue = 0
}

type paneState struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Mode        string            `json:"mode"`
	Config      string            `json:"config"`
	Params      map[string]string `json:"params"`
	Metrics     [][2]any          `json:"metrics"`
	Error       string            `json:"error,omitempty"`
	Events      []eventState      `json:"events,omitempty"` // the pane's event log (view.Pane.Events)
}

// eventState is one logged event: its number, when and what ran, and what
// it changed.
type eventState struct {
	Seq     uint64 `json:"seq"`
	Head    string `json:"head"`
	Changes string `json:"changes"`
}

func (g *game) postState() {
	s := g.sess
	st := s.State()
	panes := make([]paneState, 0, len(s.Panes))
	for _, p := range s.Panes {
		ps := paneState{Name: p.Scenario.Name, Description: p.Scenario.Description, Mode: p.Snap.Mode,
			Config: describe(&p.Config), Params: map[string]string{}, Error: p.Snap.Err}
		for _, k := range view.ParamKeys() {
			v, _ := view.GetParam(&p.Scenario, k)
			ps.Params[k] = v
		}
		for _, m := range p.Metrics {
			ps.Metrics = append(ps.Metrics, [2]any{m.Name, m.Value})
		}
		for _, e := range p.Events {
			ps.Events = append(ps.Events, eventState{e.Seq, e.Head(), e.ChangeList()})
		}
		panes = append(panes, ps)
	}
	msg := map[string]any{
		"type":       "state",
		"playing":    g.playing,
		"speed":      s.Speed,
		"busy":       s.Busy(),
		"query":      st.Encode(),
		"compare":    len(s.Panes) > 1,
		"queue":      s.Queue,
		"num_queues": s.Panes[0].Snap.NumQueues,
		"panes":      panes,
	}
	post(msg)
}

func describe(c *view.Config) string {
	var b strings.Builder
	if c.Scenario != nil {
		b.WriteString("scenario " + c.Scenario.Name)
	} else {
		b.WriteString("preset " + c.Preset)
	}
	for _, kv := range c.Set {
		b.WriteString(", " + kv.Key + "=" + kv.Value)
	}
	return b.String()
}
