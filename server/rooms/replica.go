package rooms

import (
	"errors"
	"fmt"
	"sync"

	"ringlab/play"
	"ringlab/server/wsmsg"
	"ringlab/tutorials"
)

// workChunk is how many events a replica runs between two checks of a
// command's cost: a command found too costly has run at most this much
// more than its budget.
const workChunk = 1 << 12

// replica is the server's copy of a room's world: the controller every
// student's page runs (play.NewFollower), applying the room's log. A
// command is applied to it before it is logged, so the server knows what
// it costs every browser to replay (play's ReplayCost) and which world it
// leaves, and refuses what no browser could follow.
type replica struct {
	c     *play.Controller
	bytes int64  // its world's memory estimate
	used  uint64 // the pool's clock when it was last used
	// segment is the work every command since the world's last reset
	// cost: what a late joiner replays (a move back, which lowers the
	// world's own count, costs a replay too).
	segment uint64
}

// replicaPool holds the rooms' replicas within a memory budget, least
// recently used dropped first (a dropped replica is rebuilt from the log,
// which MaxReplayWork bounds, when its room is commanded again). One
// replica works at a time, so the server's replay never takes more than
// one core whatever the rooms do.
type replicaPool struct {
	work sync.Mutex // held while a replica works

	mu     sync.Mutex
	limit  int64
	byRoom map[*room]*replica
	bytes  int64
	clock  uint64
}

func newReplicaPool(limit int64) *replicaPool {
	return &replicaPool{limit: limit, byRoom: map[*room]*replica{}}
}

// drop forgets a room's replica (the room expired, or the replica is no
// longer the log's).
func (p *replicaPool) drop(rm *room) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rep, ok := p.byRoom[rm]; ok {
		p.bytes -= rep.bytes
		delete(p.byRoom, rm)
	}
}

// resize records a replica's new world and drops the least recently used
// others until the pool fits its budget.
func (p *replicaPool) resize(rm *room, rep *replica, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.byRoom[rm]; ok && cur == rep {
		p.bytes += bytes - rep.bytes
	} else {
		p.byRoom[rm] = rep
		p.bytes += bytes
	}
	rep.bytes = bytes
	p.clock++
	rep.used = p.clock
	for p.bytes > p.limit && len(p.byRoom) > 1 {
		var oldest *room
		for r, x := range p.byRoom {
			if x != rep && (oldest == nil || x.used < p.byRoom[oldest].used) {
				oldest = r
			}
		}
		p.bytes -= p.byRoom[oldest].bytes
		delete(p.byRoom, oldest)
	}
}

func (p *replicaPool) get(rm *room) *replica {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byRoom[rm]
}

// errBuild is a log the server cannot replay (a store from elsewhere).
var errBuild = errors.New("rooms: the room's log does not replay")

// build makes rm's replica by replaying its log (from its last reset: at
// most MaxReplayWork, which is what every command was checked against).
func (p *replicaPool) build(rm *room, lim Limits) (*replica, error) {
	log := rm.Log()
	entries := make([]play.RoomEntry, len(log))
	for i, e := range log {
		entries[i] = play.RoomEntry{Seq: e.Seq, Cmd: e.Cmd}
	}
	c := play.NewFollower()
	c.Step(play.RoomWelcome{Room: rm.id, You: play.RoleStudent, Scenario: rm.scenario, Log: entries})
	for more := true; more; {
		c.Tick(0)
		more = c.Work(workChunk)
		if c.ReplayCost() > 2*lim.MaxReplayWork {
			return nil, fmt.Errorf("%w: more than %d units of work", errBuild, 2*lim.MaxReplayWork)
		}
	}
	if err := errorIn(c.Ready().Send); err != nil {
		return nil, fmt.Errorf("%w: %v", errBuild, err)
	}
	rep := &replica{c: c, segment: c.ReplayCost()}
	p.resize(rm, rep, c.Session().Panes[0].Scenario.MemoryEstimate())
	return rep, nil
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
// it had started running (charging the room what it ran).
func (p *replicaPool) apply(rm *room, e Entry, lim Limits) *wsmsg.Error {
	p.work.Lock()
	defer p.work.Unlock()
	rep := p.get(rm)
	if rep == nil {
		var err error
		if rep, err = p.build(rm, lim); err != nil {
			return wsmsg.Errorf(wsmsg.CodeInternal, "", "%v", err)
		}
	}
	in, err := play.ParseCommand(e.Cmd)
	if err != nil { // the validator made it canonical: a custom one may not have
		return wsmsg.Errorf(wsmsg.CodeBadField, "cmd", "%v", err)
	}
	reset, werr := check(rep.c.Session().Panes[0].Config, in, lim)
	if werr != nil {
		return werr
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
	for more := true; more; {
		rep.c.Tick(0)
		more = rep.c.Work(workChunk)
		if n := cost(); n > lim.MaxCommandWork {
			p.drop(rm)
			rm.work.spend(n)
			return wsmsg.Errorf(wsmsg.CodeLimitExceeded, "cmd", "this command would cost every browser more than %d units of replay (events and packets): a smaller step or seek, please", lim.MaxCommandWork)
		}
		if segment() > lim.MaxReplayWork {
			p.drop(rm)
			rm.work.spend(cost())
			return wsmsg.Errorf(wsmsg.CodeLimitExceeded, "", "the room's world has run %d units of replay (events and packets) since it was last built, all a late joiner may have to catch up on: "+
				"a preset, a set or a tutorial step builds a new world (or create a new room)", lim.MaxReplayWork)
		}
	}
	if err := errorIn(rep.c.Ready().Send); err != nil {
		p.drop(rm) // its log has the refused command
		return wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd", "every page would refuse this command: %v", err)
	}
	rm.work.spend(cost())
	rep.segment = segment()
	if rep.c.Session().Panes[0].World != w0 {
		p.resize(rm, rep, rep.c.Session().Panes[0].Scenario.MemoryEstimate())
	} else {
		p.resize(rm, rep, rep.bytes)
	}
	return nil
}

// check refuses, before anything runs, what every page would refuse and a
// world no tab can hold; it reports whether the command rebuilds the
// world (play.RoomReset).
func check(cur play.Config, in play.In, lim Limits) (bool, *wsmsg.Error) {
	switch m := in.(type) {
	case play.TutorialStep:
		t, err := tutorials.Find(m.Tutorial)
		if err != nil {
			return false, wsmsg.Errorf(wsmsg.CodeNotFound, "cmd.tutorial", "%v", err)
		}
		if m.Step > len(t.Steps) {
			return false, wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd.step", "%s has steps 0 to %d, not %d", t.Name, len(t.Steps), m.Step)
		}
	case play.TutorialReveal:
		t, err := tutorials.Find(m.Tutorial)
		if err != nil {
			return false, wsmsg.Errorf(wsmsg.CodeNotFound, "cmd.tutorial", "%v", err)
		}
		if m.Step > len(t.Steps) {
			return false, wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd.step", "%s has steps 1 to %d, not %d", t.Name, len(t.Steps), m.Step)
		}
	}
	next, reset, err := play.RoomReset(cur, in)
	if err != nil {
		switch in.(type) {
		case play.Preset:
			return false, wsmsg.Errorf(wsmsg.CodeNotFound, "cmd.name", "%v", err)
		case play.Set:
			return false, wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd.value", "%v", err)
		}
		return false, wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd", "%v", err)
	}
	if !reset {
		return false, nil
	}
	sc, err := next.Build()
	if err != nil {
		return false, wsmsg.Errorf(wsmsg.CodeOutOfRange, "cmd", "%v", err)
	}
	if est := sc.MemoryEstimate(); est > lim.MaxWorldBytes {
		return true, wsmsg.Errorf(wsmsg.CodeLimitExceeded, "cmd", "the world this builds needs about %d MiB in every browser tab; a room's world has at most %d MiB", est>>20, lim.MaxWorldBytes>>20)
	}
	return true, nil
}
