package rooms

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"ringlab/play"
	"ringlab/proto"
)

// workChunk is how many events a replica runs between two checks of a
// command's cost: a command found too costly has run at most this much
// more than its budget, and a turn (sched.go) at most this much more
// than its quantum. An event may carry a NAPI poll of 64 packets, about
// 200 units of work: a chunk is at most about 100,000 units (a few
// milliseconds of the engine).
const workChunk = 1 << 9

// replica is the server's copy of a room's world: the controller every
// student's page runs (play.NewFollower), applying the room's log. A
// command is applied to it before it is logged, so the server knows what
// it costs every browser to replay (play's ReplayCost) and which world it
// leaves, and refuses what no browser could follow.
type replica struct {
	c *play.Controller // nil until built
	// held is what it holds: every world its session keeps (the live
	// one, its marks and spares: play's Session.Worlds) times its
	// world's MemoryEstimate, which is never below what the engine
	// allocates for one. ceiling, while it works, is the most it may
	// hold meanwhile (reserved before it starts).
	held, ceiling int64
	working       bool
	addr          string    // the address that last commanded it
	used          uint64    // the pool's clock when it was last used
	usedAt        time.Time // and when, on the wall clock (activeFor)
	want          int64     // the ceiling its command waits for, while queued
	queued        bool      // its command waits in line for memory (fitLocked)
	// segment is the work every command since the world's last reset
	// cost: what a late joiner replays (a move back, which lowers the
	// world's own count, costs a replay too).
	segment uint64
}

// charge is what the pool counts for rep: what it holds, or its ceiling
// while it works.
func (rep *replica) charge() int64 {
	if rep.working {
		return max(rep.held, rep.ceiling)
	}
	return rep.held
}

// replicaPool holds the rooms' replicas within a memory budget counted as
// the server spends it (each replica's worlds, marks included, and the
// ceiling of those working), dropping idle ones (of the address holding
// most, the least recently used first) to make room; a dropped replica is
// rebuilt from the log, which MaxReplayWork bounds, when its room is
// commanded again. A command that finds no room waits for a working
// replica to finish, and is refused after memoryWait; the memory freed
// goes to the waiter of the address whose replicas charge least, the
// longest waiting first, so a host commanding many rooms waits behind
// the room of another. Each address commanding rooms (active: with a
// replica working, a command waiting, or one used within activeFor) may
// hold its share of the budget, the budget divided among them, and its
// first working replica whatever that costs: a host whose rooms hold
// their share waits for one of them to finish, however much is free, so
// another host's next command finds room (issue 27: sixteen rooms of
// four addresses replaying refused seeks held the whole budget while
// they waited for their turns, an instructor of a fifth address waited
// up to 9 s for memory, its replica dropped and rebuilt at each
// command). Replicas work in turns (sched.go): one at a time, fairly
// across the addresses that command them.
type replicaPool struct {
	turns   turns
	quantum uint64 // the work a turn runs: quantumWork (less in tests)

	mu     sync.Mutex
	freed  *sync.Cond // on mu: a replica finished working or was dropped
	limit  int64
	byRoom map[*room]*replica
	bytes  int64 // the replicas' charges
	clock  uint64
	// waiting are the commands waiting for memory (fitLocked), in the
	// order they came.
	waiting []*replica
}

// memoryWait is how long a command waits for the replicas' memory before
// it is refused.
const memoryWait = 20 * time.Second

// activeFor is how long an address whose replicas are all idle still
// counts among those sharing the budget: an instructor between two
// commands keeps its share and its replica; a host gone quiet for longer
// leaves both to the others (its idle replicas are dropped first).
const activeFor = time.Minute

// Worlds a replica keeps besides its live one: at most maxKept marks, and
// fewer for a large world, so that its ceiling is within a quarter of the
// budget where it can be (a world of MaxWorldBytes keeps none: a move
// back replays from its last reset, on the room's budget of work).
const maxKept = 3

// transient is the worlds a replica may hold for a moment beyond its live
// one and kept ones: the copy that replaces a mark, and the new world of
// a reset while the old one is still referenced.
const transient = 2

func newReplicaPool(limit int64) *replicaPool {
	p := &replicaPool{limit: limit, byRoom: map[*room]*replica{}, quantum: quantumWork}
	p.freed = sync.NewCond(&p.mu)
	return p
}

// kept is how many worlds a replica of a world of est bytes keeps
// besides its own.
func (p *replicaPool) kept(est int64) int {
	n := int(p.limit/4/max(est, 1)) - 1 - transient
	return min(max(n, 0), maxKept)
}

// ceilingOf is the most a replica of a world of est bytes holds.
func (p *replicaPool) ceilingOf(est int64) int64 {
	return int64(1+p.kept(est)+transient) * est
}

// heldBy is what c holds (its worlds times the largest of its panes'
// estimates) and that estimate.
func heldBy(c *play.Controller) (held, est int64) {
	s := c.Session()
	for _, pn := range s.Panes {
		est = max(est, pn.Scenario.MemoryEstimate())
	}
	return int64(s.Worlds()) * est, est
}

// Bytes returns what the replicas hold now (their ceilings for those
// working).
func (p *replicaPool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}

// drop forgets a room's replica (the room expired, or the replica is no
// longer the log's).
func (p *replicaPool) drop(rm *room) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(rm)
}

func (p *replicaPool) dropLocked(rm *room) {
	if rep, ok := p.byRoom[rm]; ok {
		p.bytes -= rep.charge()
		delete(p.byRoom, rm)
		p.freed.Broadcast()
	}
}

// recountLocked sets rep's held bytes and ceiling, and the pool's count
// (rep.working must not change in between).
func (p *replicaPool) recountLocked(rep *replica, held, ceiling int64) {
	p.bytes -= rep.charge()
	rep.held, rep.ceiling = held, ceiling
	p.bytes += rep.charge()
}

// evictLocked drops idle replicas until the pool is within its budget:
// those of addresses no longer active first, then those of the address
// whose replicas charge most (a host commanding many rooms makes room
// from its own first), the least recently used first. It reports
// whether the pool fits.
func (p *replicaPool) evictLocked() bool {
	for p.bytes > p.limit {
		byAddr, active := p.chargesLocked()
		// before reports whether idle replica x goes before v.
		before := func(x, v *replica) bool {
			if ax, av := active[x.addr], active[v.addr]; ax != av {
				return !ax
			}
			if cx, cv := byAddr[x.addr], byAddr[v.addr]; cx != cv {
				return cx > cv
			}
			if x.addr != v.addr {
				return x.addr < v.addr
			}
			return x.used < v.used
		}
		var victim *room
		for r, x := range p.byRoom {
			if !x.working && (victim == nil || before(x, p.byRoom[victim])) {
				victim = r
			}
		}
		if victim == nil {
			return false
		}
		p.dropLocked(victim)
	}
	return true
}

// chargesLocked returns what each address's replicas charge, and which
// addresses are active: with a replica working, a command waiting for
// memory, or a replica used within activeFor.
func (p *replicaPool) chargesLocked() (byAddr map[string]int64, active map[string]bool) {
	byAddr, active = map[string]int64{}, map[string]bool{}
	now := time.Now()
	for _, x := range p.byRoom {
		byAddr[x.addr] += x.charge()
		if x.working || now.Sub(x.usedAt) < activeFor {
			active[x.addr] = true
		}
	}
	for _, w := range p.waiting {
		active[w.addr] = true
	}
	return byAddr, active
}

// shareOf is the budget each active address may hold.
func (p *replicaPool) shareOf(active map[string]bool) int64 {
	return p.limit / int64(max(len(active), 1))
}

// mayTakeLocked reports whether rep, not yet counted at its ceiling, may
// be: its address's replicas then charge within its share, or no other
// replica of the address works (one waiting in line does not).
func (p *replicaPool) mayTakeLocked(rep *replica, ceiling int64, byAddr map[string]int64, active map[string]bool) bool {
	if byAddr[rep.addr]-rep.charge()+max(ceiling, rep.held) <= p.shareOf(active) {
		return true
	}
	for _, x := range p.byRoom {
		if x != rep && x.working && !x.queued && x.addr == rep.addr {
			return false
		}
	}
	return true
}

// start makes rm's replica (a new one when it has none) a working one
// with the ceiling of a world of est bytes, evicting idle replicas or
// waiting for working ones to finish until it fits; addr is who
// commands it.
func (p *replicaPool) start(rm *room, addr string, est int64) (*replica, *proto.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rep := p.byRoom[rm]
	if rep == nil {
		rep = &replica{}
		p.byRoom[rm] = rep
	}
	rep.addr = addr
	p.recountLocked(rep, rep.held, rep.held)
	rep.working = true
	p.clock++
	rep.used, rep.usedAt = p.clock, time.Now()
	if e := p.fitLocked(rep, est, true); e != nil {
		p.recountLocked(rep, rep.held, 0)
		rep.working = false
		if rep.c == nil {
			p.dropLocked(rm)
		}
		return nil, e
	}
	return rep, nil
}

// grow raises working rep's ceiling to a world of est bytes (a reset to a
// larger world), as start does.
func (p *replicaPool) grow(rep *replica, est int64) *proto.Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ceilingOf(est) <= rep.ceiling {
		return nil
	}
	return p.fitLocked(rep, est, false)
}

// fitLocked sets working rep's ceiling to a world of est bytes once the
// pool fits it, evicting idle replicas or waiting (with rep counted at
// what it holds) for working ones to finish, at most memoryWait. A
// command starting waits in line (inLine); a replica growing mid-work
// does not: what it holds is what the line waits for.
func (p *replicaPool) fitLocked(rep *replica, est int64, inLine bool) *proto.Error {
	ceiling := p.ceilingOf(est)
	if ceiling > p.limit {
		return proto.Errorf(proto.CodeLimitExceeded, "", "the server holds each room's world up to %d times (as it runs, and its marks) in a budget of %d MiB for every room: a world of %d MiB does not fit",
			ceiling/max(est, 1), p.limit>>20, est>>20)
	}
	deadline := time.Now().Add(memoryWait)
	var timer *time.Timer
	// In line with the commands already waiting: memory that frees goes
	// to the first (firstLocked), not to whichever takes the lock first.
	// The first may not fit yet where a later one would: the later one
	// waits, at most until the first is served or gives up.
	if inLine {
		rep.want, rep.queued = ceiling, true
		p.waiting = append(p.waiting, rep)
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if inLine {
			rep.queued = false
			p.waiting = slices.DeleteFunc(p.waiting, func(w *replica) bool { return w == rep })
			p.freed.Broadcast() // another waiter may be first now
		}
	}()
	for {
		if !inLine || p.firstLocked() == rep {
			p.recountLocked(rep, rep.held, max(ceiling, rep.held))
			if p.evictLocked() {
				return nil
			}
			// Working replicas hold the budget: wait for one to finish.
			p.recountLocked(rep, rep.held, rep.held)
		}
		if !time.Now().Before(deadline) {
			if byAddr, active := p.chargesLocked(); inLine && !p.mayTakeLocked(rep, ceiling, byAddr, active) {
				return proto.Errorf(proto.CodeUnavailable, "", "the rooms you command hold your share of the server's memory for replicas (%d of %d MiB, shared by the %d hosts commanding rooms): try again when one of your commands is done",
					byAddr[rep.addr]>>20, p.shareOf(active)>>20, len(active))
			}
			return proto.Errorf(proto.CodeUnavailable, "", "the server's replicas of the rooms' worlds are at their memory budget (%d MiB): try again in a moment", p.limit>>20)
		}
		if timer == nil {
			timer = time.AfterFunc(memoryWait, func() {
				p.mu.Lock()
				p.freed.Broadcast()
				p.mu.Unlock()
			})
		}
		p.freed.Wait()
	}
}

// firstLocked is the waiter the memory freed goes to: of those whose
// address may take a ceiling more (mayTakeLocked), the one of the
// address whose replicas charge least (what they hold, their ceilings
// while they work), the longest waiting of it.
func (p *replicaPool) firstLocked() *replica {
	byAddr, active := p.chargesLocked()
	var first *replica
	for _, w := range p.waiting {
		if !p.mayTakeLocked(w, w.want, byAddr, active) {
			continue
		}
		if first == nil || byAddr[w.addr] < byAddr[first.addr] {
			first = w
		}
	}
	return first
}

// done ends rep's work: it holds what its controller holds (nothing when
// it was never built), and its ceiling is given back.
func (p *replicaPool) done(rm *room, rep *replica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byRoom[rm] != rep {
		return // dropped meanwhile
	}
	held := int64(0)
	if rep.c != nil {
		held, _ = heldBy(rep.c)
	}
	p.recountLocked(rep, held, 0) // its ceiling is given back, then it is idle
	rep.working = false
	if rep.c == nil {
		p.dropLocked(rm)
	}
	p.evictLocked() // this one counted at its ceiling meanwhile; others may have been counted over
	p.freed.Broadcast()
}

// update counts what rep holds after a turn of work (within its ceiling,
// which counts until it is done).
func (p *replicaPool) update(rm *room, rep *replica) {
	held, _ := heldBy(rep.c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byRoom[rm] == rep {
		p.recountLocked(rep, held, rep.ceiling)
		p.evictLocked() // a world larger than its room's estimate
	}
}

func (p *replicaPool) get(rm *room) *replica {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rep := p.byRoom[rm]; rep != nil && rep.c != nil {
		return rep
	}
	return nil
}

// errBuild is a log the server cannot replay (a store from elsewhere).
var errBuild = errors.New("rooms: the room's log does not replay")

// work runs c's work in turns on addr's behalf until it is done or check
// says stop (called after every chunk with the work run so far); it
// returns what check returned. The work is counted in play's units
// (ReplayCost: events, and three per packet), forward only: a move back
// restores a mark, and what it replays from there counts.
func (p *replicaPool) work(addr string, c *play.Controller, check func(ran uint64) *proto.Error) *proto.Error {
	p.turns.acquire(addr)
	defer p.turns.release()
	var ran, turn uint64
	last := c.ReplayCost()
	for more := true; more; {
		c.Tick(0)
		more = c.Work(workChunk)
		now := c.ReplayCost()
		n := uint64(1) // a chunk that ran nothing forward still took its turn's time
		if now > last {
			n = now - last
		}
		last = now
		ran += n
		if e := check(ran); e != nil {
			return e
		}
		if turn += n; turn >= p.quantum && more {
			p.turns.yield(addr)
			turn = 0
		}
	}
	return nil
}

// build makes rep's controller by replaying rm's log (from its last
// reset: at most MaxReplayWork, which is what every command was checked
// against), in turns.
func (p *replicaPool) build(rm *room, rep *replica, addr string, lim Limits) error {
	log := rm.Log()
	entries := make([]play.RoomEntry, len(log))
	for i, e := range log {
		entries[i] = play.RoomEntry(e)
	}
	c := play.NewFollower()
	c.Session().LimitWorlds(p.kept(rm.worldBytes()))
	c.Step(play.RoomWelcome{Room: rm.id, You: play.RoleStudent, Scenario: rm.scenario, Log: entries})
	if e := p.work(addr, c, func(uint64) *proto.Error {
		if c.ReplayCost() > 2*lim.MaxReplayWork {
			return proto.Errorf(proto.CodeInternal, "", "%v: more than %d units of work", errBuild, 2*lim.MaxReplayWork)
		}
		return nil
	}); e != nil {
		return errors.New(e.Message)
	}
	if err := errorIn(c.Ready().Send); err != nil {
		return fmt.Errorf("%w: %v", errBuild, err)
	}
	_, est := heldBy(c)
	c.Session().LimitWorlds(p.kept(est))
	rm.setWorldBytes(est)
	rep.c, rep.segment = c, c.ReplayCost()
	p.update(rm, rep)
	return nil
}

// errorIn returns the first error a replica's Ready sends: what its
// inputs were refused for and what the commands it applied failed on
// alike (Ready is the controller's only output).
func errorIn(outs []play.Out) error {
	for _, o := range outs {
		if e, ok := o.(play.ErrorOut); ok {
			return errors.New(e.Message)
		}
	}
	return nil
}

// apply checks entry e of rm's log on its replica and applies it there:
// the command must be one every page applies (a preset that exists, a set
// the page takes, a tutorial step the tutorial has), leave a world a
// browser tab can hold (MaxWorldBytes), cost at most MaxCommandWork to
// replay and leave the room's world at most MaxReplayWork from its last
// reset. A refused command leaves the replica as it was, or drops it when
// it had started running (charging the room what it ran). addr is the
// address of the connection that sent it: the replay's turns are shared
// fairly across addresses.
func (p *replicaPool) apply(rm *room, addr string, e Entry, lim Limits) *proto.Error {
	in, err := play.ParseCommand(e.Cmd)
	if err != nil { // the validator made it canonical: a custom one may not have
		return proto.Errorf(proto.CodeBadField, "cmd", "%v", err)
	}
	est := rm.worldBytes()
	if rep := p.get(rm); rep != nil {
		// A reset's world is checked before anything is reserved.
		reset, next, werr := check(rep.c, in, lim)
		if werr != nil {
			return werr
		}
		if reset {
			est = max(est, next)
		}
	}
	rep, werr := p.start(rm, addr, est)
	if werr != nil {
		return werr
	}
	defer p.done(rm, rep)
	if rep.c == nil {
		if err := p.build(rm, rep, addr, lim); err != nil {
			return proto.Errorf(proto.CodeInternal, "", "%v", err)
		}
	}
	reset, next, werr := check(rep.c, in, lim)
	if werr != nil {
		return werr
	}
	if reset {
		if werr := p.grow(rep, next); werr != nil {
			return werr
		}
		rep.c.Session().LimitWorlds(p.kept(max(next, rm.worldBytes())))
	}
	w0 := rep.c.Session().Panes[0].World
	before := rep.c.ReplayCost()
	cost := func() uint64 {
		switch after := rep.c.ReplayCost(); {
		case reset:
			return after
		case after >= before:
			return after - before
		default:
			// A move back: the page restores its nearest mark and
			// replays from it, at most a mark's spacing.
			return play.MarkWork
		}
	}
	segment := func() uint64 {
		if reset {
			return cost()
		}
		return rep.segment + cost()
	}
	rep.c.Step(play.RoomCommand{Seq: e.Seq, Cmd: e.Cmd})
	var ran uint64
	turns := 0
	if werr := p.work(addr, rep.c, func(n uint64) *proto.Error {
		ran = n
		if turns++; turns%16 == 0 {
			p.update(rm, rep)
		}
		if n := cost(); n > lim.MaxCommandWork {
			return proto.Errorf(proto.CodeLimitExceeded, "cmd", "this command would cost every browser more than %d units of replay (events and packets): a smaller step or seek, please", lim.MaxCommandWork)
		}
		if segment() > lim.MaxReplayWork {
			return proto.Errorf(proto.CodeLimitExceeded, "", "the room's world has run %d units of replay (events and packets) since it was last built, all a late joiner may have to catch up on: "+
				"a preset, a set or a tutorial step builds a new world (or create a new room)", lim.MaxReplayWork)
		}
		return nil
	}); werr != nil {
		p.drop(rm)
		// The room pays what the server ran, or what every browser
		// would have: the larger.
		rm.work.spend(max(cost(), ran))
		return werr
	}
	if err := errorIn(rep.c.Ready().Send); err != nil {
		p.drop(rm) // its log has the refused command
		return proto.Errorf(proto.CodeOutOfRange, "cmd", "every page would refuse this command: %v", err)
	}
	rm.work.spend(max(cost(), ran))
	rep.segment = segment()
	if rep.c.Session().Panes[0].World != w0 {
		_, est := heldBy(rep.c)
		rep.c.Session().LimitWorlds(p.kept(est))
		rm.setWorldBytes(est)
	}
	return nil
}

// check refuses, before anything runs, what every page would refuse and a
// world no tab can hold; it reports whether the command rebuilds the
// world (play.RoomReset), and the new world's estimate when it does.
func check(c *play.Controller, in play.In, lim Limits) (reset bool, est int64, _ *proto.Error) {
	cur := c.Session().Panes[0].Config
	switch m := in.(type) {
	case play.TutorialStep:
		t, err := c.FindTutorial(m.Tutorial)
		if err != nil {
			return false, 0, proto.Errorf(proto.CodeNotFound, "cmd.tutorial", "%v", err)
		}
		if m.Step > len(t.Steps) {
			return false, 0, proto.Errorf(proto.CodeOutOfRange, "cmd.step", "%s has steps 0 to %d, not %d", t.Name, len(t.Steps), m.Step)
		}
	case play.TutorialReveal:
		t, err := c.FindTutorial(m.Tutorial)
		if err != nil {
			return false, 0, proto.Errorf(proto.CodeNotFound, "cmd.tutorial", "%v", err)
		}
		if m.Step > len(t.Steps) {
			return false, 0, proto.Errorf(proto.CodeOutOfRange, "cmd.step", "%s has steps 1 to %d, not %d", t.Name, len(t.Steps), m.Step)
		}
	}
	next, reset, err := c.RoomReset(cur, in)
	if err != nil {
		switch in.(type) {
		case play.Preset:
			return false, 0, proto.Errorf(proto.CodeNotFound, "cmd.name", "%v", err)
		case play.Set:
			return false, 0, proto.Errorf(proto.CodeOutOfRange, "cmd.value", "%v", err)
		}
		return false, 0, proto.Errorf(proto.CodeOutOfRange, "cmd", "%v", err)
	}
	if !reset {
		return false, 0, nil
	}
	sc, err := next.Build()
	if err != nil {
		return false, 0, proto.Errorf(proto.CodeOutOfRange, "cmd", "%v", err)
	}
	if est := sc.MemoryEstimate(); est > lim.MaxWorldBytes {
		return true, 0, proto.Errorf(proto.CodeLimitExceeded, "cmd", "the world this builds needs about %d MiB in every browser tab; a room's world has at most %d MiB", est>>20, lim.MaxWorldBytes>>20)
	}
	return true, sc.MemoryEstimate(), nil
}
