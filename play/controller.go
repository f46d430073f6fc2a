package play

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"

	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
	"ringlab/engine/view"
	"ringlab/engine/vocab"
	"ringlab/proto"
)

// Wall-clock periods of the page's updates, in ns of wall time as the
// shell reports it with Tick.
const (
	StatePeriod  = 125_000_000   // a state at least this often, about 8 a second
	RecordPeriod = 250_000_000   // the selection's live inspect record at most this often
	SeekPeriod   = 1_000_000_000 // an instructor's seek while the room plays
	StatusPeriod = 300_000_000   // a student's status for the roster at most this often
	// MotionStep is how far apart a moving picture's frames are when the
	// browser asks for reduced motion (Motion): four pictures a second,
	// each a step, in place of an animation at the screen's rate.
	MotionStep = 250_000_000
)

// Controller is the playground's logic, driven the way a raft node is:
// Step takes one input at a time; Tick tells it how much wall time
// passed; Work runs the engine in budgets of events; Ready says what to
// draw and what to send, and is its only output: what an input answers
// (a reply, an error naming it, a command for the room) goes out with
// the next Ready, in order with what the work produced. It holds
// the run (a Session: the configurations, the command log, compare
// mode), the playing state and speed, the selection, the canvas layout,
// the tutorial being read and the workshop room followed. It does no I/O
// and reads no clock: the same inputs give the same outputs, which the
// transcripts in testdata pin.
type Controller struct {
	sess    *Session
	playing bool
	bench   string

	gap     int64   // wall ns between the last two ticks (Tick)
	acc     float64 // events owed to the speed, less than one
	owed    uint64  // whole events owed this tick
	accrued bool    // owed is this tick's

	sinceState, sinceRecord, sinceSeek int64         // wall ns
	sinceStatus                        int64         // wall ns since the last status for the roster
	statusSent                         *proto.Status // the last one, nil none since the welcome
	rejoin                             rejoin        // the page's joins of its room (join.go)
	force                              bool          // a state is due
	syncs                              []int         // ids of Sync requests waiting for the work to end
	outbox                             []Out         // what the inputs and the work produced for Ready

	sel        view.Target
	selChanged bool

	w, h   float64 // canvas size (Resize)
	layout view.Layout
	laid   [4]int  // panes, CPUs, ring size and ring mode the layout was made for
	phase  float64 // the flow view's animation clock: ticks while something moves

	// drawn is the last Draw made; stirred says an input came since. A
	// tick with neither an input, nor a world that changed, nor anything
	// moving hands the shell drawn again with Same set: a page at rest
	// draws nothing.
	drawn   *Draw
	stirred bool
	// reduced is the browser's prefers-reduced-motion (Motion): a moving
	// picture is drawn every MotionStep, sinceDraw ns after the last.
	reduced   bool
	sinceDraw int64

	ring           view.RingView // how the ring view draws (View, view.go)
	hovering       bool          // the pointer is over the canvas (Hover)
	hoverX, hoverY float64
	lastTip        *Tip // the last frame's

	described map[string]bool // rows whose Number the page has

	tut tutorialRun
	// lessons are the tutorials loaded from outside (lesson.go), by
	// name, the oldest first in lessonOrder.
	lessons     map[string]*lesson
	lessonOrder []string
	mode        mode      // local, or a room's instructor, following or detached (mode.go)
	room        room      // the room's log, in a room
	live        *liveView // the live view while the canvas shows a server's source (live.go), nil while it shows the panes
	watch       *watchRun // a tutorial run played at a speed to follow, nil none
	headless    bool      // a follower without a page (NewFollower)
}

// Bench modes of a ?bench= link (web/README.md, "Benchmark mode").
var benchModes = []string{"", "empty", "view", "engine"}

// New starts the playground on a link's query: the run it describes
// (a bare link plays the default preset), or the default with an error
// when the link does not describe one. The first Ready sends the page
// ready, the error if any, and a state.
func New(query string) *Controller {
	c := &Controller{described: map[string]bool{}, mode: local{}}
	vals, _ := url.ParseQuery(strings.TrimPrefix(query, "?"))
	c.bench = vals.Get("bench")
	var problem string
	if !contains(benchModes, c.bench) {
		problem = fmt.Sprintf("unknown bench mode %q (empty, view, engine)", c.bench)
		c.bench = ""
	}
	st, err := DecodeState(query)
	if err != nil {
		problem = "this link does not describe a run: " + err.Error()
		st = State{A: DefaultConfig(), Speed: -1}
	}
	if c.bench == "engine" {
		st = State{A: Config{Preset: "xdp-drop"}, Speed: 0}
	}
	if c.sess, err = NewSession(st); err != nil {
		problem = "cannot start this run: " + err.Error()
		c.sess, _ = NewSession(State{A: DefaultConfig(), Speed: -1})
	}
	// A bare link starts playing; a link with a log shows exactly where
	// the sender stopped.
	c.playing = len(st.Log) == 0
	c.send(c.ready())
	if problem != "" {
		c.send(ErrorOut{Source: "url", Message: problem})
	}
	c.sess.Refresh()
	c.send(c.state())
	return c
}

// send queues messages for the next Ready.
func (c *Controller) send(outs ...Out) { c.outbox = append(c.outbox, outs...) }

// Bench returns the link's benchmark mode ("" outside one).
func (c *Controller) Bench() string { return c.bench }

// Session returns the run (for the shell's benchmark counters and tests).
func (c *Controller) Session() *Session { return c.sess }

func (c *Controller) ready() ReadyOut {
	var ps []PresetInfo
	for _, p := range scenario.Presets() {
		ps = append(ps, PresetInfo{p.Name, p.Description, p.Seed})
	}
	return ReadyOut{Presets: ps, Params: Params(), KeyMetrics: view.KeyMetrics, Bench: c.bench}
}

// Step takes one input. What it answers (a reply, a command for the
// room, the error naming the message when it is refused) goes out with
// the next Ready; the error is returned too, for a caller that drives
// the controller itself (a shell posts Ready and nothing else). Every
// input but Resize, Motion and Hover makes the next Ready send a state.
func (c *Controller) Step(in In) error {
	id := 0
	if r, ok := in.(Request); ok {
		id, in = r.ID, r.In
	}
	if r, ok := in.(Resize); ok { // the shell's every frame
		w, h := canvasSide(r.W), canvasSide(r.H)
		c.stirred = c.stirred || w != c.w || h != c.h
		c.w, c.h = w, h
		return nil
	}
	if m, ok := in.(Motion); ok { // the shell's, from the browser's setting
		c.stirred = c.stirred || m.Reduced != c.reduced
		c.reduced = m.Reduced
		return nil
	}
	if h, ok := in.(Hover); ok {
		c.stirred = c.stirred || c.hovering != !h.Off || h.X != c.hoverX || h.Y != c.hoverY
		c.hovering, c.hoverX, c.hoverY = !h.Off, h.X, h.Y
		return nil
	}
	c.stirred = true
	c.force = true
	outs, err := c.handle(in, id)
	c.send(outs...)
	if err != nil {
		c.send(ErrorOut{Source: nameOf(in), ID: id, Code: codeOf(err), Message: err.Error()})
	}
	return err
}

// StepJSON takes one message of the page in its JSON form (Decode). A
// message the codec refuses is answered like a refused input: an error
// naming its type, and its id when it has one.
func (c *Controller) StepJSON(raw []byte) error {
	in, err := Decode(raw)
	if err != nil {
		src := MessageType(raw)
		if src == "" {
			src = "message"
		}
		c.send(ErrorOut{Source: src, ID: requestID(raw), Code: codeOf(err), Message: err.Error()})
		return err
	}
	return c.Step(in)
}

// handle gives in to the live view's step while it is on, to the room
// mode's (mode.go), then to the run.
func (c *Controller) handle(in In, id int) ([]Out, error) {
	if m, ok := in.(TutorialReveal); ok {
		c.revealed(m) // the panel revealed it
	}
	if c.live != nil {
		if outs, taken, err := c.live.step(c, in); taken {
			return outs, err
		}
	}
	if outs, taken, err := c.mode.step(c, in, id); taken {
		return outs, err
	}
	return c.run(in, id)
}

// run does what in asks of the run itself.
func (c *Controller) run(in In, id int) ([]Out, error) {
	s := c.sess
	if is(in, moves) {
		c.watch = nil // the person took the run elsewhere
	}
	switch m := in.(type) {
	case Hello:
		return []Out{c.ready()}, nil
	case Click:
		if c.overviewClick(m.X, m.Y) {
			return nil, nil
		}
		return c.click(m.X, m.Y, id), nil
	case View:
		return nil, c.setView(m)
	case Sync:
		c.syncs = append(c.syncs, id)
	case Play:
		c.playing = true
	case Pause:
		c.playing = false
	case Toggle:
		c.playing = !c.playing
	case Step:
		s.Do(m)
		c.playing = false
	case Seek:
		c.seek(m.TNs)
	case Back:
		c.playing = false
		return nil, s.Back(m.Unit, m.N)
	case GoTo:
		c.playing = false
		return nil, s.GoTo(m.Unit, m.N)
	case Until:
		c.playing = false
		return nil, s.Until(m.Func)
	case Speed:
		s.Speed = m.EPS
		c.acc = 0
	case Reset:
		c.sel = view.Target{}
		return nil, s.Reset()
	case Preset:
		if _, err := scenario.LookupPreset(m.Name); err != nil {
			return nil, err
		}
		return nil, c.reconfigure(m.Pane, Config{Preset: m.Name})
	case Scenario:
		sc, err := scenario.DecodeBytes([]byte(m.JSON))
		if err != nil {
			return nil, err
		}
		return nil, c.reconfigure(m.Pane, Config{Scenario: &sc})
	case Set:
		if m.Pane >= len(s.Panes) {
			return nil, fmt.Errorf("set: no pane %d", m.Pane)
		}
		if err := s.Set(m.Pane, m.Key, m.Value); err != nil {
			return nil, err
		}
		c.afterReconfigure(m.Pane)
	case XDPObject:
		if m.Pane < 0 || m.Pane >= len(s.Panes) {
			return nil, fmt.Errorf("xdp_object: no pane %d", m.Pane)
		}
		if len(m.Bytes) == 0 {
			return nil, errors.New("xdp_object: the file is empty")
		}
		cf, err := s.Panes[m.Pane].Config.WithObject(m.Name, m.Bytes)
		if err != nil {
			return nil, err
		}
		return nil, c.reconfigure(m.Pane, cf)
	case Pcap:
		if m.Pane < 0 || m.Pane >= len(s.Panes) {
			return nil, fmt.Errorf("pcap: no pane %d", m.Pane)
		}
		if len(m.Bytes) == 0 {
			return nil, errors.New("pcap: the file is empty")
		}
		cf, err := s.Panes[m.Pane].Config.WithCapture(m.Name, m.Bytes, m.RatePPS)
		if err != nil {
			return nil, err
		}
		return nil, c.reconfigure(m.Pane, cf)
	case PcapExport:
		if m.Pane < 0 || m.Pane >= len(s.Panes) {
			return nil, fmt.Errorf("pcap_export: no pane %d", m.Pane)
		}
		p := s.Panes[m.Pane]
		if p.capture == nil {
			return nil, errors.New("pcap_export: no capture is loaded: load one first")
		}
		b, err := p.capture.export(p.World)
		if err != nil {
			return nil, fmt.Errorf("pcap_export: %w", err)
		}
		return []Out{PcapExportOut{ID: id, Name: exportName(p.Config.CaptureName), Frames: len(p.capture.c.Packets), Bytes: b}}, nil
	case Compare:
		if err := s.SetCompare(m.On); err != nil {
			return nil, err
		}
		if !m.On && c.sel.Pane > 0 {
			c.sel = view.Target{}
		}
	case Queue:
		if m.Queue < 0 || m.Queue >= s.Panes[0].Snap.NumQueues {
			return nil, fmt.Errorf("queue: no receive queue %d", m.Queue)
		}
		s.Queue = m.Queue
		s.MarkDirty()
	case Load:
		st, err := DecodeState(m.Query)
		if err != nil {
			return nil, err
		}
		ns, err := NewSession(st)
		if err != nil {
			return nil, err
		}
		c.sess, c.sel = ns, view.Target{}
		c.playing = len(st.Log) == 0
	case Inspect:
		out := c.record(m.Target, "request", id)
		if _, ok := out.(InspectOut); ok {
			c.sel = m.Target // its record follows while it changes
		}
		return []Out{out}, nil
	case DigestReq:
		return []Out{DigestOut{ID: id, Digest: c.Digest()}}, nil
	case Layout:
		l := c.lay()
		conv := func(r view.Rect) Rect { return Rect{r.X, r.Y, r.W, r.H} }
		out := LayoutOut{ID: id, W: c.w, H: c.h, Form: string(l.Form), WantH: l.WantH, Texts: c.layoutTexts()}
		for _, p := range l.Panes {
			out.Panes = append(out.Panes, map[string]Rect{"ring": conv(p.Ring), "flow": conv(p.Flow),
				"cpus": conv(p.CPUs), "pages": conv(p.Pages), "rates": conv(p.Rates)})
		}
		return []Out{out}, nil
	case Where:
		x, y, ok := c.lay().Where(m.Target, c.snaps())
		return []Out{WhereOut{ID: id, X: x, Y: y, OK: ok}}, nil
	case Tutorials, Tutorial, TutorialGrade:
		return c.tutorialInfo(in, id)
	case LessonLoad:
		return c.lessonLoad(m, id)
	case Lesson:
		return nil, c.roomLesson(m)
	case TutorialStep:
		out, err := c.tutorialStep(m.Tutorial, m.Step, id, false)
		if err != nil {
			return nil, err
		}
		return []Out{out}, nil
	case TutorialReveal:
		// The panel revealed it already.
	case RoomWelcome:
		return c.welcome(m)
	case RoomLeave:
		c.leave()
	case RoomCommand:
		return nil, errNotInRoom // a room's modes take it
	case RoomBeacon:
		// Only a following student checks one (student.go).
	case RoomDetach:
		return nil, errors.New("room_detach: only a student detaches")
	case RoomSnap:
		return nil, errors.New("room_snap: only a student snaps back")
	case RoomLog:
		return []Out{RoomLogOut{ID: id, Log: append([]RoomEntry{}, c.room.log...)}}, nil
	case RoomJoin:
		return c.join(m)
	case RoomDropped:
		return c.dropped(m), nil
	case RoomPredict:
		return c.predict(m)
	case RoomShare:
		return c.share(m)
	case RoomRemove:
		return c.remove(m)
	case RoomPresence, RoomRoster, RoomPredictions, RoomClass:
		return nil, c.classIn(in)
	case LiveHello:
		// The simulation steps aside while the canvas shows the source:
		// paused, to play again on live_off if it was playing.
		c.live = newLiveView(m)
		c.live.resume, c.playing = c.playing, false
		c.force = true
		return []Out{c.live.liveOut()}, nil
	case LiveSnapshot:
		return nil, errors.New("live_snapshot before live_hello: the page passes the hello first")
	case LiveStatus, LiveOff:
		// The live view is off: it starts connected, with its hello.
	default:
		return nil, fmt.Errorf("unknown message %T", in)
	}
	return nil, nil
}

// seek queues what takes pane A to simulated time t (nothing when it is
// there or past).
func (c *Controller) seek(t int64) {
	if d := t - int64(c.sess.Panes[0].World.Now()); d > 0 {
		c.sess.Do(Step{UnitNs, uint64(d)})
	}
	c.playing = false
}

func (c *Controller) reconfigure(pane int, cf Config) error {
	if err := c.sess.Reconfigure(pane, cf); err != nil {
		return err
	}
	c.afterReconfigure(pane)
	return nil
}

func (c *Controller) afterReconfigure(pane int) {
	if pane == 0 || c.sel.Pane == pane { // A rebuilds both worlds
		c.sel = view.Target{}
	}
	c.sess.Queue = 0
}

func (c *Controller) snaps() []*view.Snapshot {
	out := make([]*view.Snapshot, len(c.sess.Panes))
	for i, p := range c.sess.Panes {
		out[i] = &p.Snap
	}
	return out
}

// lay returns the layout of the canvas for the panes and CPUs now.
func (c *Controller) lay() *view.Layout {
	n := len(c.sess.Panes)
	ncpu := 1
	for _, p := range c.sess.Panes {
		ncpu = max(ncpu, p.Scenario.CPUs)
	}
	size := 0
	for _, p := range c.sess.Panes {
		size = max(size, p.Scenario.RingSize)
	}
	if c.layout.W != c.w || c.layout.H != c.h || c.laid != [4]int{n, ncpu, size, ringModeKey(c.ring.Mode)} || len(c.layout.Panes) != n {
		// Lines when asked, or when the circle a circle's layout gives is
		// too small for the ring (RingShape's rule for auto): a stack then
		// gives the ring the height lines need, not a circle's.
		lines := c.ring.Mode == view.RingLinear
		if c.ring.Mode == view.RingAuto {
			l := view.NewLayout(c.w, c.h, n, ncpu, false)
			for i := range l.Panes {
				if g := l.Panes[i].RingGeom(size); !g.Readable() {
					lines = true
				}
			}
		}
		c.layout = view.NewLayout(c.w, c.h, n, ncpu, lines)
		c.laid = [4]int{n, ncpu, size, ringModeKey(c.ring.Mode)}
	}
	c.layout.Ring = c.ring
	return &c.layout
}

func (c *Controller) click(x, y float64, id int) []Out {
	t := c.lay().HitTest(x, y, c.snaps())
	if t.Kind == view.KindNone {
		if id != 0 {
			return []Out{ErrorOut{Source: "click", ID: id, Message: fmt.Sprintf("nothing to inspect at (%.0f, %.0f)", x, y)}}
		}
		return nil
	}
	c.sel = t
	c.sinceRecord = 0
	return []Out{c.record(t, "click", id)}
}

func (c *Controller) record(t view.Target, source string, id int) Out {
	if t.Pane < 0 || t.Pane >= len(c.sess.Panes) {
		return ErrorOut{Source: "inspect", ID: id, Message: fmt.Sprintf("no pane %d", t.Pane)}
	}
	p := c.sess.Panes[t.Pane]
	var rec view.Record
	var err error
	if t.Kind == KindFrame {
		if p.capture == nil {
			return ErrorOut{Source: "inspect", ID: id, Message: fmt.Sprintf("frame: no capture is loaded in pane %d", t.Pane)}
		}
		rec, err = p.capture.record(p.World, t)
	} else {
		rec, err = view.Inspect(p.World, c.sess.Queue, t)
	}
	if err != nil {
		return ErrorOut{Source: "inspect", ID: id, Message: err.Error()}
	}
	return InspectOut{Source: source, ID: id, Record: rec}
}

// Tick tells the controller how much wall time passed since the previous
// tick, in ns; playing runs what the speed owes for it. Call it once a
// tick, before Work.
func (c *Controller) Tick(elapsed int64) {
	c.gap = max(elapsed, 0)
	c.sinceState += c.gap
	c.sinceRecord += c.gap
	c.sinceSeek += c.gap
	c.sinceStatus += c.gap
	c.sinceDraw += c.gap
	if f, ok := c.mode.(following); ok {
		f.wall += c.gap
	}
	if c.live != nil {
		c.live.sinceSnap += c.gap
	}
}

// Work runs at most about budget events of what is due: the room's next
// command when the run is idle, then queued steps (a replay, the second
// world catching up), then what playing owes this tick. It reports
// whether more is due now; the shell calls it until then or until its
// own deadline.
func (c *Controller) Work(budget int) bool {
	c.send(c.drainRoom()...)
	s := c.sess
	if s.Busy() {
		s.Work(budget)
		for _, n := range s.Notes() {
			c.send(NoteOut{Source: "until", Text: n})
		}
		c.force = c.force || !s.Busy()
		c.send(c.drainRoom()...)
		return c.busy()
	}
	if !c.playing || c.roomPending() {
		return false
	}
	if !c.accrued {
		// What the speed owes for the wall time since the last tick: the
		// speed holds whatever the tick rate.
		c.accrued = true
		if s.Speed <= 0 {
			c.owed = math.MaxUint64
		} else {
			c.acc += s.Speed * float64(c.gap) / 1e9
			c.owed = uint64(c.acc)
			c.acc -= float64(c.owed)
		}
	}
	if f, ok := c.mode.(following); ok {
		c.owed = f.owes(s.Panes[0].World.Sim.Queue.Fired(), c.owed)
	}
	if c.owed == 0 {
		return false
	}
	if c.watch != nil {
		return c.playWatch()
	}
	n := s.Play(min(c.owed, uint64(budget)), budget)
	if n == 0 {
		if s.Stopped() != nil || !s.Pending() {
			c.owed = 0 // idle or stopped: nothing more this tick
			return false
		}
	}
	c.owed -= uint64(n)
	if s.Busy() { // the second world follows
		s.Work(budget)
	}
	return c.owed > 0
}

// Rewinding reports whether a move backwards is running: the person
// waits for it, and the shell may give it more of a frame.
func (c *Controller) Rewinding() bool { return c.sess.Rewinding() }

// busy reports whether work is due that a Sync waits for.
func (c *Controller) busy() bool { return c.sess.Busy() || c.roomPending() }

// Frame is the result of a tick: what to send the page and what to draw.
type Frame struct {
	Send []Out
	Draw Draw
}

// Draw is everything the shell draws; it reads nothing else. With Live
// set the canvas draws the live source instead of the panes.
type Draw struct {
	W, H    float64
	Layout  *view.Layout
	Header  string // the canvas's top line
	Stopped string // why pane A's world stopped, "" while it runs
	Panes   []DrawPane
	Sel     view.Target
	Phase   float64 // ticks so far, for the flow view's animation
	Live    *LiveDraw
	Tip     *Tip // what the pointer hovers, explained
	// Same says nothing here differs from the last Ready's Draw: no
	// input came, no world changed and nothing moves (not playing, not
	// working, no live view), or, with reduced motion (Motion), the next
	// step is not due. The shell may keep the picture it has.
	Same bool
}

// DrawPane is one pane's pictures.
type DrawPane struct {
	Label string // "A: preset default, ring_size=32" in compare mode
	Snap  *view.Snapshot
	Rates *view.Rates
	XDP   bool // a program is attached: the flow view shows its verdicts
	// Texts are every line of text the pane's views draw (Layout.Texts).
	Texts []view.Text
}

// Ready ends a tick: it refreshes the snapshots of what ran and returns
// what to send (what the inputs answered and the work produced, a state
// when one is due, the Syncs the finished work answers, the selection's
// live record, the room's commands) and what to draw. It is the
// controller's only output.
func (c *Controller) Ready() Frame {
	s := c.sess
	refreshed := s.Refresh()
	if refreshed {
		c.selChanged = true
	}
	if s.Stopped() != nil && c.playing {
		c.playing = false
		c.force = true
	}
	if s.Speed > 0 && c.owed > 0 {
		c.acc = 0 // too slow to keep up: do not pile up a debt
	}
	c.owed, c.accrued = 0, false
	moving := c.playing || c.busy() || c.live != nil || c.watch != nil
	if moving && !c.reduced {
		c.phase++ // with reduced motion the flow view's dots stand still
	}
	out := c.outbox
	c.outbox = nil
	if m, ok := c.mode.(*instructor); ok {
		out = append(out, m.ready(c)...)
	}
	if st, ok := c.status(); ok {
		out = append(out, st)
	}
	idle := !c.busy()
	// A state when asked for, and every StatePeriod: the page keeps its
	// address, the tip's text and what it shows of the tutorial by them.
	if c.force || c.sinceState >= StatePeriod || (len(c.syncs) > 0 && idle) {
		out = append(out, c.state())
		c.sinceState, c.force = 0, false
	}
	if len(c.syncs) > 0 && idle {
		for _, id := range c.syncs {
			out = append(out, SyncedOut{ID: id})
		}
		c.syncs = c.syncs[:0]
	}
	if c.sel.Kind != view.KindNone && c.selChanged && c.sinceRecord >= RecordPeriod {
		out = append(out, c.record(c.sel, "live", 0))
		c.sinceRecord, c.selChanged = 0, false
	}
	// Nothing changed, or, with reduced motion, what moves waits for its
	// next step (an input is drawn at once).
	still := !refreshed && !moving || c.reduced && c.sinceDraw < MotionStep
	if c.drawn != nil && still && !c.stirred && c.Bench() == "" {
		d := *c.drawn
		d.Same = true
		return Frame{Send: out, Draw: d}
	}
	c.stirred, c.sinceDraw = false, 0
	d := c.draw()
	c.drawn = &d
	return Frame{Send: out, Draw: d}
}

func (c *Controller) draw() Draw {
	s := c.sess
	d := Draw{W: c.w, H: c.h, Layout: c.lay(), Sel: c.sel, Phase: c.phase}
	a := &s.Panes[0].Snap
	st := "paused"
	if c.playing {
		st = "playing, as fast as it goes"
		if s.Speed > 0 {
			st = fmt.Sprintf("playing, %g events/s", s.Speed)
		}
	}
	if c.busy() {
		st = "working through commands..."
	}
	d.Header = fmt.Sprintf("ringlab  %s  %s mode   t = %s   %d events   %d packets   %s",
		a.Name, a.Mode, view.FormatNs(a.Now), a.Events, a.Packets, st)
	d.Stopped = a.Err
	if c.live != nil {
		d.Live = c.live.draw(c.w, c.h)
		d.Header = d.Live.Header
	}
	for i, p := range s.Panes {
		dp := DrawPane{Label: []string{"A: ", "B: "}[i] + describe(&p.Config),
			Snap: &p.Snap, Rates: &p.Rates, XDP: p.Scenario.XDP != nil}
		if c.live == nil {
			dp.Texts = d.Layout.Texts(i, dp.Snap, dp.Rates, dp.XDP)
		}
		d.Panes = append(d.Panes, dp)
	}
	if c.live == nil {
		d.Tip = c.tip(&d)
	}
	c.lastTip = d.Tip
	return d
}

// state is the page's picture of the run.
func (c *Controller) state() StateOut {
	s := c.sess
	st := s.State()
	out := StateOut{Playing: c.playing, Speed: s.Speed, Busy: c.busy(), Query: st.Encode(),
		Compare: len(s.Panes) > 1, Queue: s.Queue, NumQueues: s.Panes[0].Snap.NumQueues}
	for i, p := range s.Panes {
		ps := PaneState{Name: p.Scenario.Name, Description: p.Scenario.Description, Mode: p.Snap.Mode,
			Config: describe(&p.Config), Params: map[string]string{}, Error: p.Snap.Err}
		if p.Config.Scenario == nil {
			ps.Preset = p.Config.presetName()
		}
		for _, kv := range p.Config.Set {
			ps.Changed = append(ps.Changed, kv.Key+"="+kv.Value)
		}
		for _, k := range ParamKeys() {
			ps.Params[k], _ = GetParam(&p.Scenario, k)
		}
		if p.Rates.Ready() { // no rate over a few microseconds
			ps.Rates = map[string]float64{}
			for i, v := range p.Rates.Latest() {
				ps.Rates[view.Series(i).Name()] = math.Round(v)
			}
		}
		ps.Perf = p.perf.state(p.Scenario.KernelVersion())
		if p.capture != nil {
			ps.Capture = p.capture.state(p.World, &p.Config)
		}
		for _, m := range p.Metrics.Figures {
			ps.Metrics = append(ps.Metrics, [2]any{m.Name, m.Value})
			if !c.described[m.Name] {
				c.described[m.Name] = true
				if d, ok := vocab.Lookup(m.Name); ok {
					if out.Numbers == nil {
						out.Numbers = map[string]Number{}
					}
					out.Numbers[m.Name] = Number{d.Unit, d.Kind, d.Help}
				}
			}
		}
		if i == 0 {
			v := p.Scenario.KernelVersion()
			for _, e := range p.Events {
				es := EventState{Seq: e.Seq, Head: e.Head(), Changes: e.ChangeList(), Say: e.Say}
				for _, f := range e.Funcs {
					kf, _ := kernel.LookupFunc(f)
					ref := FuncRef{Name: f, File: kf.File, Does: kf.Does, URL: kernel.SourceURL(f, v)}
					if as := kernel.NameAt(f, v); as != f {
						ref.As = as
					}
					if file, line, ok := kernel.FuncLine(f, v); ok {
						ref.File, ref.Line = file, line // where it was at the scenario's kernel
					}
					es.Funcs = append(es.Funcs, ref)
				}
				ps.Events = append(ps.Events, es)
			}
		}
		out.Panes = append(out.Panes, ps)
	}
	if c.inRoom() {
		r := c.roomState()
		out.Room = &r
	}
	p, h := s.Position(), s.Horizon()
	out.Position = PositionOut{Events: p.Events, Packets: p.Packets, AtNs: int64(p.At),
		HorizonEvents: h.Events, HorizonNs: int64(h.At), Rewinding: s.Rewinding()}
	if c.live != nil {
		out.Live = c.live.state(c.live.draw(c.w, c.h))
	}
	out.View = c.viewOut()
	if c.sel.Kind != view.KindNone {
		sel := c.sel
		out.Selected = &sel
	}
	return out
}

// describe writes a configuration in words: "preset default,
// ring_size=32".
func describe(c *Config) string {
	var b strings.Builder
	if c.Scenario != nil {
		b.WriteString("scenario " + c.Scenario.Name)
	} else {
		b.WriteString("preset " + c.presetName())
	}
	for _, kv := range c.Set {
		b.WriteString(", " + kv.Key + "=" + kv.Value)
	}
	if c.Capture != nil {
		b.WriteString(", capture " + c.CaptureName)
	}
	return b.String()
}

// codeOf is the code of a refusal the codec names (proto's), "" for
// another error.
func codeOf(err error) string {
	if e, ok := errors.AsType[*proto.Error](err); ok {
		return e.Code
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errNotInRoom is the room inputs' error outside a room.
var errNotInRoom = errors.New("not in a workshop room")

// MaxCanvas is the largest canvas side the controller lays out, in CSS
// pixels: more than any browser gives a canvas (Chromium's limit is
// 32,767 device pixels a side), so that a resize from a page message
// cannot ask the views for billions of pixels of drawing.
const MaxCanvas = 16384

// canvasSide is a resize's side within 0..MaxCanvas (NaN is 0).
func canvasSide(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return min(v, MaxCanvas)
}

// ringModeKey numbers a ring mode for the layout's cache key.
func ringModeKey(m view.RingMode) int {
	switch m {
	case view.RingLinear:
		return 1
	case view.RingCircle:
		return 2
	}
	return 0
}

// errFollowing refuses what would take a following student's world off
// the room's; its code tells the page to offer a detach.
var errFollowing = proto.Errorf(proto.CodeFollowing, "", "you are following the room: detach first to run a step of your own")

// errReplaying refuses an instructor's tutorial step while its page
// replays the room's log (a reload, a rejoin): run then, it would land on
// a world halfway to the room's and reach no student; the room's own
// step comes with the log.
var errReplaying = proto.Errorf(proto.CodeReplaying, "", "this page is still catching up with the room (replaying its log): take the step again once it has")
