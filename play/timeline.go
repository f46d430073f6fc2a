package play

import (
	"errors"
	"fmt"

	"ringlab/engine"
	"ringlab/engine/sim"
)

// Going back. A world only runs forward, and is deterministic: the state
// at event N is the state any replay of the same configuration reaches at
// event N. So the session keeps marks, copies of each world taken as it
// runs (engine.World.Clone), and a move backwards restores the nearest
// mark before the target and runs forward from it. Marks are never
// wrong: a change of configuration starts a new run and drops them, and
// nothing else changes where a run goes, so a mark past the position a
// move went back to is still the future and serves a move forward too.
//
// A mark is taken each MarkWork units of the engine's work (workOf: an
// event, and three per packet received, which is about what each costs
// it), so that a replay from the nearest mark is about as long in any
// scenario; pane B (compare mode) is marked likewise when it has caught
// up with A's time. Each pane keeps as many marks as MarkBytes holds (at
// least MinMarks, at most MaxMarks): past that, the mark whose
// neighbours are closest goes, so marks stay dense where the run is and
// thin out behind it, and its world is kept to copy the next mark into
// (engine.World.CopyFrom: a tenth of a Clone). A move backwards also
// marks NearEvents before its target, so that stepping back event by
// event replays at most that many.

// Marks. A mark of a preset is about 11 MiB (its struct pages, frames,
// skbs and descriptor windows: engine.World.Footprint).
const (
	MarkWork   = 200_000
	MarkBytes  = 96 << 20
	MinMarks   = 3
	MaxMarks   = 8
	NearEvents = 1 << 10
)

// markWork is MarkWork, smaller under the race detector's tests (which
// replay ten times slower), so that they cross as many marks.
var markWork uint64 = MarkWork

// ErrNoWay is what a move backwards returns when it cannot start.
var ErrNoWay = errors.New("play: cannot go there")

// workOf is the engine's work in w so far, in MarkWork's units.
func workOf(w *engine.World) uint64 { return w.Sim.Queue.Fired() + 3*w.Received() }

// mark is a world kept as it was: pane A's at an event boundary (its
// clock at the last event's time), pane B's caught up with A's time at.
type mark struct {
	fired uint64
	work  uint64
	at    sim.Time
	w     *engine.World
}

// marks are one pane's, oldest first.
type marks []mark

// add keeps m in order; past max marks, it drops one and returns its
// world (nil when none was dropped).
func (ms marks) add(m mark, max int) (marks, *engine.World) {
	i := 0
	for i < len(ms) && ms[i].fired < m.fired {
		i++
	}
	if i < len(ms) && ms[i].fired == m.fired {
		return ms, m.w // kept already
	}
	ms = append(ms, mark{})
	copy(ms[i+1:], ms[i:])
	ms[i] = m
	if len(ms) <= max {
		return ms, nil
	}
	// The mark whose neighbours are closest goes (never the first or the
	// last): the spacing grows behind the run, where it is visited least.
	best, gap := 1, ^uint64(0)
	for j := 1; j < len(ms)-1; j++ {
		if g := ms[j+1].work - ms[j-1].work; g < gap {
			best, gap = j, g
		}
	}
	w := ms[best].w
	return append(ms[:best], ms[best+1:]...), w
}

// before returns the latest mark at or before event fired (or, byTime, at
// or before time at), or false.
func (ms marks) before(fired uint64, at sim.Time, byTime bool) (mark, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if byTime && ms[i].at <= at || !byTime && ms[i].fired <= fired {
			return ms[i], true
		}
	}
	return mark{}, false
}

// drop removes the mark at event fired and returns its world.
func (ms marks) drop(fired uint64) (marks, *engine.World) {
	for i := range ms {
		if ms[i].fired == fired {
			w := ms[i].w
			return append(ms[:i], ms[i+1:]...), w
		}
	}
	return ms, nil
}

// rewind is a move backwards running: pane A, restored from a mark, runs
// forward to the target; a move by packets first finds its target.
type rewind struct {
	from mark // the mark A was restored from (zero: a fresh world)

	// The target: event to (byTime false) or time at (byTime).
	to     uint64
	at     sim.Time
	byTime bool
	near   uint64 // take a near mark on the way at this event (0: none)

	// A move back by packets runs to before, remembering the last packet
	// stop (an event that received packets) before it, then runs again to
	// that stop. Finding is true during the first run.
	finding bool
	before  uint64
	stops   int      // stops still to go back (n of the move)
	found   []uint64 // the last stops seen, newest last (at most stops)
}

// Position is where pane A stands: events run, packets received and
// simulated time.
type Position struct {
	Events  uint64
	Packets uint64
	At      sim.Time
}

// Position returns where pane A stands.
func (s *Session) Position() Position {
	w := s.Panes[0].World
	return Position{w.Sim.Queue.Fired(), w.Received(), w.Now()}
}

// Horizon is the furthest pane A has been in this run (the most events,
// and the time then).
func (s *Session) Horizon() Position {
	if p := s.Position(); p.Events > s.horizon.Events {
		s.horizon = p
	}
	return s.horizon
}

// Rewinding reports whether a move backwards is running.
func (s *Session) Rewinding() bool { return s.rw != nil }

// Back moves pane A back n events, n packet stops (the positions a step
// of one packet stops at: just after an event that received packets), or
// n ns of simulated time, clamped at the start. It cancels the steps not
// run yet. The run's log becomes the position's (e<events> or t<ns>), so
// a link opens there.
func (s *Session) Back(u Unit, n uint64) error {
	s.Horizon()
	n = max(n, 1)
	p := s.Position()
	switch u {
	case UnitEvent, "":
		return s.GoTo(UnitEvent, p.Events-min(n, p.Events))
	case UnitNs:
		return s.GoTo(UnitNs, uint64(p.At)-min(n, uint64(p.At)))
	case UnitPacket:
		if p.Events == 0 {
			return nil
		}
		s.cancel()
		return s.startFind(s.Position().Events, int(min(n, 1<<20)))
	}
	return fmt.Errorf("%w: back: unit %q", ErrParam, u)
}

// GoTo moves pane A to event n (UnitEvent), to the first packet stop with
// n packets received (UnitPacket: a replay of the run's first n packets),
// or to simulated time n (UnitNs), backwards or forwards. It cancels the
// steps not run yet.
func (s *Session) GoTo(u Unit, n uint64) error {
	s.Horizon()
	s.cancel()
	p := s.Position()
	switch u {
	case UnitEvent, "":
		if n >= p.Events {
			if n > p.Events {
				s.jumpForward(n, 0, false)
			}
			return nil
		}
		return s.restore(rewind{to: n}, n, 0, false)
	case UnitNs:
		if n > MaxSeekNs {
			return fmt.Errorf("%w: go to %d ns: at most %d", ErrParam, n, int64(MaxSeekNs))
		}
		t := sim.Time(n)
		if t >= p.At {
			if t > p.At {
				s.jumpForward(0, t, true)
			}
			return nil
		}
		return s.restore(rewind{at: t, byTime: true}, 0, t, true)
	case UnitPacket:
		// A fresh replay: the first n packets from the start, as a link
		// of one step does.
		if err := s.restart(s.Panes[0].Config, s.configB()); err != nil {
			return err
		}
		if n > 0 {
			s.Do(Step{UnitPacket, n})
		}
		return nil
	}
	return fmt.Errorf("%w: go to: unit %q", ErrParam, u)
}

// cancel drops the steps not run yet, and a move or a search halfway:
// the log becomes where pane A stands (an event boundary, as each leaves
// it between events).
func (s *Session) cancel() {
	if s.rw != nil || s.until != nil || len(s.queue) > 0 {
		s.setLog(rewind{to: s.Panes[0].World.Sim.Queue.Fired()})
	}
	s.queue, s.cur, s.rw, s.until = nil, target{}, nil, nil
	s.logging = 0
}

// MaxUntil is how many events Until looks through.
const MaxUntil = 100_000

// until is a search for the next event that runs a kernel function.
type until struct {
	watch *engine.FuncWatch
	left  uint64
}

// Until runs pane A to the next event that runs kernel function f (its
// handler cites it, or it moves a counter f counts: engine.FuncWatch),
// looking at most MaxUntil events on, and lists the events up to it. It
// cancels the steps not run yet; it fails at once when no event of the
// world can run f. Notes says how the search ended.
func (s *Session) Until(f string) error {
	s.Horizon()
	fw, err := s.Panes[0].World.WatchFunc(f)
	if err != nil {
		return err
	}
	s.cancel()
	s.until = &until{watch: fw, left: MaxUntil}
	return nil
}

// workUntil runs up to budget events of the search; it returns the
// events run.
func (s *Session) workUntil(budget int) int {
	u := s.until
	w := u.watch.World()
	n := 0
	for n < budget {
		if u.left == 0 {
			s.until = nil
			s.setLog(rewind{to: w.Sim.Queue.Fired()})
			s.note(fmt.Sprintf("%s did not run in the next %d events; ask again to look further.", u.watch.Func, MaxUntil))
			return n
		}
		ran, ok := u.watch.Step()
		u.left--
		if !ok {
			s.until = nil
			s.setLog(rewind{to: w.Sim.Queue.Fired()})
			s.note(fmt.Sprintf("The world stopped before %s ran again.", u.watch.Func))
			return n
		}
		n++
		if ran {
			// There: go back over the last events, listing them.
			s.until = nil
			to := w.Sim.Queue.Fired()
			s.Panes[0].dirty = true
			if err := s.restore(rewind{to: to}, to, 0, false); err != nil {
				s.setLog(rewind{to: to})
			}
			return n
		}
	}
	s.Panes[0].dirty = true
	return n
}

// note keeps a sentence for the page (Notes).
func (s *Session) note(text string) { s.notes = append(s.notes, text) }

// Notes returns and forgets what the session has to say (how a search
// ended).
func (s *Session) Notes() []string {
	n := s.notes
	s.notes = nil
	return n
}

// jumpForward goes forward to event to (or time at): from a mark past the
// position when one is nearer the target, then by a step.
func (s *Session) jumpForward(to uint64, at sim.Time, byTime bool) {
	p := s.Position()
	if m, ok := s.marks[0].before(to, at, byTime); ok && m.work > workOf(s.Panes[0].World)+markWork/4 {
		if err := s.restore(rewind{to: to, at: at, byTime: byTime}, to, at, byTime); err == nil {
			return
		}
	}
	// The step is not logged as given: the log becomes the target.
	if byTime {
		s.queue = append(s.queue, Step{UnitNs, uint64(at - p.At)})
	} else {
		s.queue = append(s.queue, Step{UnitEvent, to - p.Events})
	}
	s.setLog(rewind{to: to, at: at, byTime: byTime})
}

// restore starts rw: pane A from the latest mark before its target (a
// fresh world when there is none), pane B from its own before that
// mark's time; the log becomes the target's.
func (s *Session) restore(rw rewind, to uint64, at sim.Time, byTime bool) error {
	m, ok := s.marks[0].before(to, at, byTime)
	if rw.finding {
		// A stop is seen by the event that makes it: the search starts
		// at least two events before its end.
		ok = rw.before >= 2
		if ok {
			m, ok = s.marks[0].before(rw.before-2, 0, false)
		}
	}
	a := s.Panes[0]
	if !ok {
		m = mark{}
	}
	w, err := s.worldAt(0, m, ok)
	if err != nil {
		return err
	}
	s.lastWork = m.work
	a.World, a.Events, a.dirty = w, nil, true
	a.Rates.Reset()
	if len(s.Panes) > 1 {
		if err := s.restoreB(m.at); err != nil {
			return err
		}
	}
	rw.from = m
	if !rw.finding && !rw.byTime && rw.to > m.fired+2*NearEvents {
		rw.near = rw.to - NearEvents
	}
	s.rw = &rw
	s.cur = target{}
	s.logging = 0
	if !rw.finding {
		s.setLog(rw)
	}
	return nil
}

// restoreB puts pane B at its latest mark at or before time t.
func (s *Session) restoreB(t sim.Time) error {
	b := s.Panes[1]
	m, ok := s.marks[1].before(0, t, true)
	w, err := s.worldAt(1, m, ok)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	b.World, b.Events, b.dirty = w, nil, true
	b.Rates.Reset()
	s.bAt, s.bRun = m.at, ok
	return nil
}

// setLog makes the run's log the position rw goes to.
func (s *Session) setLog(rw rewind) {
	switch {
	case rw.byTime && rw.at > 0:
		s.log = Log{{UnitNs, uint64(rw.at)}}
	case !rw.byTime && rw.to > 0:
		s.log = Log{{UnitEvent, rw.to}}
	default:
		s.log = nil
	}
}

// startFind starts a move back n packet stops from event before.
func (s *Session) startFind(before uint64, n int) error {
	return s.restore(rewind{finding: true, before: before, stops: n}, 0, 0, false)
}

// workRewind runs up to budget events of the move backwards; it returns
// the events run.
func (s *Session) workRewind(budget int) int {
	rw := s.rw
	w := s.Panes[0].World
	q := w.Sim.Queue
	n := 0
	for n < budget {
		fired := q.Fired()
		if rw.finding {
			if fired+1 >= rw.before {
				s.found(rw)
				return n
			}
			got := w.Received()
			if !w.Step() {
				s.found(rw)
				return n
			}
			n++
			if w.Received() > got {
				rw.found = append(rw.found, q.Fired())
				if len(rw.found) > rw.stops {
					rw.found = rw.found[1:]
				}
			}
			continue
		}
		if rw.byTime {
			if at, ok := q.Peek(); !ok || at > rw.at {
				if w.Err() == nil {
					_ = w.RunUntil(rw.at)
				}
				s.rewound()
				return n
			}
			if rw.at.Sub(w.Now()) <= TailNs {
				s.tailRates() // the rates at the target: its last stretch's
			}
		} else if fired >= rw.to {
			s.rewound()
			return n
		} else if rw.to-fired <= TailEvents {
			s.tailRates()
		}
		if rw.near != 0 && fired == rw.near {
			s.keepNear()
		}
		if !rw.byTime && rw.to-fired <= EventLogSize {
			s.logging = 1 // the last events before the target are listed
		}
		if !s.stepA() {
			s.rewound()
			return n
		}
		n++
	}
	s.Panes[0].dirty = true
	return n
}

// found ends a move by packets' first run: the target is the stop n back
// from the position (the start when there were fewer).
func (s *Session) found(rw *rewind) {
	switch {
	case len(rw.found) >= rw.stops:
		rw.to = rw.found[len(rw.found)-rw.stops]
	case rw.from.fired == 0:
		rw.to = 0
	default:
		// Fewer stops since the mark than wanted: look from the mark
		// before it (rare: a mark is MarkEvery events).
		n := rw.stops - len(rw.found)
		if err := s.restore(rewind{finding: true, before: rw.from.fired + 1, stops: n}, 0, 0, false); err != nil {
			s.rw = nil
		}
		return
	}
	s.rw = nil
	if err := s.restore(rewind{to: rw.to}, rw.to, 0, false); err != nil {
		s.rw = nil
		return
	}
	for _, c := range s.queue { // steps given while it looked: after the target
		s.log = s.log.Append(c)
	}
}

// rewound ends a move backwards.
func (s *Session) rewound() {
	s.rw = nil
	s.logging = 0
	s.Panes[0].dirty = true
}

// worldAt returns a world in mark m's state (ok), which is the pane's
// own world with the mark copied in, or a fresh one (the pane's world is
// then kept to copy a mark into later).
func (s *Session) worldAt(pane int, m mark, ok bool) (*engine.World, error) {
	p := s.Panes[pane]
	var w *engine.World
	if ok {
		if err := p.World.CopyFrom(m.w); err == nil {
			return p.World, nil
		}
		var err error
		if w, err = s.copyOf(pane, m.w); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoWay, err)
		}
	} else {
		fresh, err := newPane(p.Config)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoWay, err)
		}
		w = fresh.World
	}
	s.recycle(pane, p.World)
	return w, nil
}

// copyOf returns a copy of w, into a kept world of the pane when there is
// one.
func (s *Session) copyOf(pane int, w *engine.World) (*engine.World, error) {
	if n := len(s.spare[pane]); n > 0 {
		c := s.spare[pane][n-1]
		s.spare[pane] = s.spare[pane][:n-1]
		if err := c.CopyFrom(w); err == nil {
			return c, nil
		}
	}
	return w.Clone()
}

// recycle keeps w, a world of the pane's configuration no longer used, to
// copy a mark into (at most two, and within LimitWorlds).
func (s *Session) recycle(pane int, w *engine.World) {
	n := 2
	if s.limited {
		n = min(n, s.keep-len(s.marks[pane]))
	}
	if w != nil && len(s.spare[pane]) < n {
		s.spare[pane] = append(s.spare[pane], w)
	}
}

// maxMarks is how many marks of the pane MarkBytes holds (within
// LimitWorlds).
func (s *Session) maxMarks(pane int) int {
	n := int(MarkBytes / max(s.Panes[pane].World.Footprint(), 1))
	n = min(max(n, MinMarks), MaxMarks)
	if s.limited {
		n = min(n, s.keep)
	}
	return n
}

// LimitWorlds bounds the worlds the session keeps besides each pane's
// own (its marks, and the worlds of dropped marks it copies marks into)
// to n: a holder short of memory (a server's replica of a room) keeps
// fewer, and a move back then replays from further back (from the run's
// start with none). Marks kept past n are dropped now.
func (s *Session) LimitWorlds(n int) {
	s.limited, s.keep = true, max(n, 0)
	for pane := range s.marks {
		for len(s.marks[pane]) > s.keep {
			// The oldest goes: the run is past it.
			if s.marks[pane][0].fired == s.near {
				s.near = 0
			}
			s.marks[pane] = s.marks[pane][1:]
		}
		s.spare[pane] = s.spare[pane][:min(len(s.spare[pane]), s.keep-len(s.marks[pane]))]
	}
}

// Worlds returns how many worlds the session holds: each pane's own, its
// marks and the spare worlds it copies marks into. What the session
// holds in memory is about that many times its world's.
func (s *Session) Worlds() int {
	n := len(s.Panes)
	for pane := range s.marks {
		n += len(s.marks[pane]) + len(s.spare[pane])
	}
	return n
}

// mark keeps a copy of the pane's world, as it stands, as a mark at time at.
func (s *Session) mark(pane int, at sim.Time) {
	w := s.Panes[pane].World
	if w.Err() != nil || s.maxMarks(pane) == 0 {
		return
	}
	c, err := s.copyOf(pane, w)
	if err != nil {
		return // a world that cannot be copied is replayed from further back
	}
	var old *engine.World
	s.marks[pane], old = s.marks[pane].add(mark{w.Sim.Queue.Fired(), workOf(w), at, c}, s.maxMarks(pane))
	s.recycle(pane, old)
}

// markA marks pane A when MarkWork has passed since the mark before it.
// It is called every 1024 events (reading the work sums the queues).
func (s *Session) markA() {
	w := s.Panes[0].World
	if work := workOf(w); work >= s.lastWork+markWork {
		s.mark(0, w.Now())
		s.lastWork = work
	}
}

// keepNear marks pane A where it stands, replacing the last near mark.
func (s *Session) keepNear() {
	if s.near != 0 {
		var old *engine.World
		s.marks[0], old = s.marks[0].drop(s.near)
		s.recycle(0, old)
	}
	w := s.Panes[0].World
	s.near = w.Sim.Queue.Fired()
	s.mark(0, w.Now())
}

// markB marks pane B, caught up with time t, when MarkWork has passed
// since its last mark.
func (s *Session) markB(t sim.Time) {
	w := s.Panes[1].World
	if n := len(s.marks[1]); n > 0 && workOf(w) < s.marks[1][n-1].work+markWork || n == 0 && workOf(w) < markWork {
		return
	}
	s.mark(1, t)
}

// Marks reports how many marks each pane keeps, and at which events.
func (s *Session) Marks() [][]uint64 {
	out := make([][]uint64, len(s.Panes))
	for i := range out {
		for _, m := range s.marks[i] {
			out[i] = append(out[i], m.fired)
		}
	}
	return out
}
