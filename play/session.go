package play

import (
	"fmt"

	"ringlab/engine"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/view"
)

// Pane is one configuration running: its world and what the game reads of
// it.
type Pane struct {
	Config   Config
	Scenario scenario.Scenario
	World    *engine.World
	Snap     view.Snapshot
	Rates    view.Rates
	// Metrics are the counters table's figures (engine.PartsTable).
	Metrics engine.Readout
	// Events are the newest events of the world that ran while the
	// session logged them (one at a time or a few a frame: see logging),
	// each with what it changed, oldest first; at most EventLogSize.
	Events []engine.TraceEvent

	perf    perfMarks    // the perf top's marks (perf.go)
	capture *paneCapture // the capture that feeds its device, nil none (capture.go)
	dirty   bool
}

// EventLogSize is how many events a pane's log keeps.
const EventLogSize = 12

// Events are logged when they run one at a time or a few per call: a Play
// of at most EventLogBatch events, a step of at most EventLogBatch events,
// or the events of a one-packet step (at most EventLogPacket of them).
// Faster runs are not logged: describing an event reads every counter.
const (
	EventLogBatch  = 16
	EventLogPacket = 64
)

// Session runs a State: one world, or two in compare mode. The second
// world follows the first in lockstep on simulated time: whenever the
// first has run, the second runs until the same time. Steps queue and
// run in budgets of events (Work), so a long replay never blocks a
// browser tab, and how the budgets fall never changes the result.
type Session struct {
	Panes []*Pane // A, then B in compare mode
	Speed float64 // events per second; 0 as fast as it goes
	Queue int     // receive queue shown

	logging int      // events of pane A still to log (Pane.Events) in this call or step
	log     Log      // every step given since the run started
	queue   []Step   // steps not finished yet; queue[0] is running
	cur     target   // queue[0]'s absolute goal, valid when started
	bAt     sim.Time // B has run every event up to here (valid when bRun)
	bRun    bool

	marks    [2]marks           // each pane's marks (timeline.go)
	spare    [2][]*engine.World // worlds of dropped marks, to copy marks into
	limited  bool               // LimitWorlds was called: keep bounds marks and spares
	keep     int                // worlds each pane keeps besides its own, when limited
	lastWork uint64             // pane A's work at its mark before the position
	near     uint64             // pane A's near mark, 0 none
	horizon  Position           // the furthest pane A has been (Horizon)
	rw       *rewind            // the move backwards running, nil none
	until    *until             // the search for a function running, nil none
	notes    []string           // what the session has to say (Notes)
}

// target is a step's goal in absolute terms, fixed when it starts.
type target struct {
	started bool
	events  uint64
	packets uint64
	at      sim.Time
}

// DefaultSpeed is the speed a run starts at when the state gives none:
// slow enough to follow a 16-entry ring.
const DefaultSpeed = 10

// NewSession builds the worlds of st and queues its log for replay.
func NewSession(st State) (*Session, error) {
	s := &Session{Speed: st.Speed}
	if s.Speed < 0 {
		s.Speed = DefaultSpeed
	}
	a, err := newPane(st.A)
	if err != nil {
		return nil, err
	}
	s.Panes = []*Pane{a}
	if st.B != nil {
		b, err := newPane(*st.B)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		s.Panes = append(s.Panes, b)
	}
	for _, c := range st.Log {
		s.Do(c)
	}
	return s, nil
}

func newPane(c Config) (*Pane, error) {
	sc, err := c.Build()
	if err != nil {
		return nil, err
	}
	spec, err := c.ProgramSpec()
	if err != nil {
		return nil, err
	}
	if c.Capture != nil {
		pc, err := parseCapture(c.CaptureName, c.Capture, c.CaptureRate)
		if err != nil {
			return nil, err
		}
		w, err := engine.NewReplay(sc, spec, pc.rep)
		if err != nil {
			return nil, fmt.Errorf("capture %q: %w", c.CaptureName, err)
		}
		return &Pane{Config: c, Scenario: sc, World: w, capture: pc, dirty: true}, nil
	}
	w, err := engine.NewWithXDP(sc, spec) // spec is nil without an object: the library's program
	if err != nil {
		return nil, err
	}
	return &Pane{Config: c, Scenario: sc, World: w, dirty: true}, nil
}

// State returns what a link must carry to reproduce the session.
func (s *Session) State() State {
	st := State{A: s.Panes[0].Config.clone(), Log: append(Log(nil), s.log...), Speed: s.Speed}
	if len(s.Panes) > 1 {
		b := s.Panes[1].Config.clone()
		st.B = &b
	}
	return st
}

// Log returns the commands given since the run started.
func (s *Session) Log() Log { return append(Log(nil), s.log...) }

// Do queues a step and records it in the log.
func (s *Session) Do(c Step) {
	c = Step{c.unit(), c.count()}
	s.log = s.log.Append(c)
	s.queue = append(s.queue, c)
}

// Pending reports whether steps, a move backwards or a search are
// waiting or running.
func (s *Session) Pending() bool { return len(s.queue) > 0 || s.rw != nil || s.until != nil }

// Busy reports whether Work has anything to do: steps, or the second
// world behind the first.
func (s *Session) Busy() bool { return s.Pending() || s.bBehind() }

func (s *Session) bBehind() bool {
	return len(s.Panes) > 1 && (!s.bRun || s.bAt < s.Panes[0].World.Now())
}

// Work runs at most budget events (over both worlds) of what is queued:
// first the second world catches up with the first, then the first runs
// the next step. It returns the events run.
func (s *Session) Work(budget int) int {
	used := 0
	if s.rw != nil {
		used += s.workRewind(budget)
		if s.rw != nil {
			return used
		}
	}
	if s.until != nil {
		used += s.workUntil(budget - used)
		if s.until != nil || s.rw != nil {
			return used
		}
	}
	for used < budget {
		if s.bBehind() {
			used += s.followB(budget - used)
			continue
		}
		if len(s.queue) == 0 {
			break
		}
		n, done := s.advance(min(budget-used, followChunk))
		used += n
		if done {
			s.queue = s.queue[1:]
			s.cur = target{}
			s.Panes[0].Rates.Sample(s.Panes[0].World) // and its end
		}
		if n == 0 && !done {
			break
		}
	}
	return used
}

// followChunk is how many events the first world runs before the second
// catches up, so the two stay close while a long step runs.
const followChunk = 512

// advance runs up to budget events of queue[0] on the first world and
// reports whether the step is finished.
func (s *Session) advance(budget int) (int, bool) {
	a := s.Panes[0]
	w := a.World
	c := s.queue[0]
	if !s.cur.started {
		s.cur = target{started: true}
		s.logging = 0
		a.Rates.Sample(w) // the step's start: its rates are taken from here
		switch c.Unit {
		case UnitEvent:
			s.cur.events = w.Sim.Queue.Fired() + c.N
			if c.N <= EventLogBatch {
				s.logging = int(c.N)
			}
		case UnitPacket:
			s.cur.packets = w.Received() + c.N
			if c.N == 1 {
				s.logging = EventLogPacket
			}
		case UnitNs:
			s.cur.at = w.Now().Add(sim.Duration(c.N))
		}
	}
	n := 0
	defer func() {
		if n > 0 {
			a.dirty = true
		}
	}()
	for n < budget {
		// The last events of a long step are listed too: the Events
		// panel shows how the step ended, a link opens with them.
		switch c.Unit {
		case UnitEvent:
			fired := w.Sim.Queue.Fired()
			if fired >= s.cur.events {
				return n, true
			}
			if s.logging <= 0 && s.cur.events-fired <= EventLogSize {
				s.logging = int(s.cur.events - fired)
			}
			if s.cur.events-fired <= TailEvents {
				s.tailRates()
			}
		case UnitPacket:
			got := w.Received()
			if got >= s.cur.packets {
				return n, true
			}
			if s.cur.packets-got <= TailPackets {
				s.tailRates()
			}
			// One NAPI poll receives up to its budget (64) at once.
			if s.logging <= 0 && s.cur.packets-got <= EventLogPacket {
				s.logging = EventLogPacket
			}
		case UnitNs:
			if at, ok := w.Sim.Queue.Peek(); !ok || at > s.cur.at {
				// Nothing left before the goal: move the clock there
				// (World.RunUntil's last step).
				if w.Err() == nil {
					_ = w.RunUntil(s.cur.at)
				}
				a.dirty = true
				return n, true
			}
			if s.cur.at.Sub(w.Now()) <= TailNs {
				s.tailRates()
			}
		}
		if !s.stepA() {
			return n, true // idle or stopped: the step ends here
		}
		n++
		if w.Sim.Queue.Fired()%RateSampleEvents == 0 {
			a.Rates.Sample(w) // a long step leaves its last stretch's rates
		}
	}
	return n, false
}

// The last stretch of a move or a step samples pane A's rates every
// TailSampleNs of simulated time: where it ends, the rates have the
// world's own history behind them (a rate over the stretch before the
// new position), not the few microseconds since it began. The stretch is
// the last TailEvents events, TailPackets packets or TailNs of the move.
const (
	TailSampleNs = view.SmoothNs / 10
	TailNs       = view.RatesLen * TailSampleNs
	TailEvents   = NearEvents
	TailPackets  = 256
)

// tailRates samples pane A's rates when TailSampleNs passed since the
// last reading.
func (s *Session) tailRates() {
	a := s.Panes[0]
	at, ok := a.Rates.LastAt()
	if !ok || int64(a.World.Now())-at >= TailSampleNs {
		a.Rates.Sample(a.World)
	}
}

// RateSampleEvents is how often a long step samples pane A's rates, in
// events (a step also samples where it starts and ends): often enough
// that the flow and rate views show the step's last stretch when it ends,
// rarely enough to cost nothing (a sample reads every counter).
const RateSampleEvents = 4096

// stepA runs one event of pane A's world, and logs it while logging lasts;
// it marks the world at each multiple of MarkEvery events.
func (s *Session) stepA() bool {
	a := s.Panes[0]
	var ok bool
	if s.logging <= 0 {
		ok = a.World.Step()
	} else {
		s.logging--
		var ev engine.TraceEvent
		ev, ok = a.World.StepTraced()
		if ok {
			if len(a.Events) == EventLogSize {
				copy(a.Events, a.Events[1:])
				a.Events = a.Events[:EventLogSize-1]
			}
			a.Events = append(a.Events, ev)
		}
	}
	if ok && a.World.Sim.Queue.Fired()%1024 == 0 {
		s.markA()
	}
	return ok
}

// followB runs the second world towards the first's time, at most budget
// events; it reports the events run.
func (s *Session) followB(budget int) int {
	t := s.Panes[0].World.Now()
	b := s.Panes[1]
	w := b.World
	n := 0
	for n < budget {
		at, ok := w.Sim.Queue.Peek()
		if !ok || at > t || w.Err() != nil {
			if w.Err() == nil {
				_ = w.RunUntil(t)
			}
			s.bAt, s.bRun = t, true
			b.dirty = true
			s.markB(t)
			return n
		}
		if !w.Step() {
			break
		}
		n++
	}
	b.dirty = true
	if n == 0 { // stopped: nothing more will happen
		s.bAt, s.bRun = t, true
	}
	return n
}

// Play runs up to n events of the first world right away (at most budget),
// as playing does, and logs what ran. It does nothing while steps are
// pending. It returns the events run.
func (s *Session) Play(n uint64, budget int) int {
	if s.Pending() || n == 0 {
		return 0
	}
	a := s.Panes[0]
	s.logging = 0
	if n <= EventLogBatch {
		s.logging = int(n)
	}
	k := 0
	for uint64(k) < n && k < budget && s.stepA() {
		k++
	}
	s.logging = 0
	if k > 0 {
		a.dirty = true
		s.log = s.log.Append(Step{UnitEvent, uint64(k)})
	}
	return k
}

// Stopped returns why the first world stopped, or nil.
func (s *Session) Stopped() error { return s.Panes[0].World.Err() }

// Refresh fills the snapshot, rates and metrics of every pane that ran
// since the last refresh; it reports whether any did.
func (s *Session) Refresh() bool {
	any := false
	for _, p := range s.Panes {
		if !p.dirty {
			continue
		}
		p.dirty = false
		p.Snap.Fill(p.World, s.Queue)
		p.Rates.Sample(p.World)
		p.World.Read(&p.Metrics, engine.PartsTable)
		p.perf.observe(p.World)
		any = true
	}
	return any
}

// MarkDirty makes the next Refresh read every pane again.
func (s *Session) MarkDirty() {
	for _, p := range s.Panes {
		p.dirty = true
	}
}

// restart rebuilds every world from the configurations with an empty log.
func (s *Session) restart(a Config, b *Config) error {
	pa, err := newPane(a)
	if err != nil {
		return err
	}
	panes := []*Pane{pa}
	if b != nil {
		pb, err := newPane(*b)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		panes = append(panes, pb)
	}
	s.Panes = panes
	s.log, s.queue, s.cur, s.bRun = nil, nil, target{}, false
	s.marks, s.spare, s.lastWork, s.near, s.rw, s.until = [2]marks{}, [2][]*engine.World{}, 0, 0, nil, nil
	s.horizon = Position{}
	return nil
}

func (s *Session) configB() *Config {
	if len(s.Panes) < 2 {
		return nil
	}
	c := s.Panes[1].Config
	return &c
}

// Reset starts the run again from time zero with the same configuration.
func (s *Session) Reset() error { return s.restart(s.Panes[0].Config, s.configB()) }

// Reconfigure replaces configuration pane (0: A, 1: B). A new A restarts
// both worlds (lockstep starts at zero); a new B is rebuilt and catches up
// with A's time, which is what a replay of the link does too.
func (s *Session) Reconfigure(pane int, c Config) error {
	switch {
	case pane == 0:
		return s.restart(c, s.configB())
	case pane == 1 && len(s.Panes) > 1:
		p, err := newPane(c)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		s.Panes[1] = p
		s.bRun = false
		s.marks[1], s.spare[1] = nil, nil
		return nil
	}
	return fmt.Errorf("%w: no pane %d", ErrParam, pane)
}

// Set changes one parameter of a pane's configuration.
func (s *Session) Set(pane int, key, value string) error {
	if pane < 0 || pane >= len(s.Panes) {
		return fmt.Errorf("%w: no pane %d", ErrParam, pane)
	}
	c, err := s.Panes[pane].Config.With(key, value)
	if err != nil {
		return err
	}
	return s.Reconfigure(pane, c)
}

// SetCompare turns compare mode on (B starts as a copy of A's
// configuration and catches up with A) or off.
func (s *Session) SetCompare(on bool) error {
	switch {
	case on && len(s.Panes) == 1:
		p, err := newPane(s.Panes[0].Config.clone())
		if err != nil {
			return err
		}
		s.Panes = append(s.Panes, p)
		s.bRun = false
		s.marks[1], s.spare[1] = nil, nil
	case !on && len(s.Panes) > 1:
		s.Panes = s.Panes[:1]
		s.marks[1], s.spare[1] = nil, nil
	}
	return nil
}
