package engine

import (
	"fmt"
	"reflect"

	"ringlab/engine/mem"
)

// Clone returns a world in w's state that runs on its own: the same
// events follow in both, and running one never changes the other. It is
// what a checkpoint is (the playground steps back by running a clone of
// the nearest checkpoint forward), and what a what-if from the middle of
// a run starts from.
//
// A clone is a twin built from w's scenario and XDP object, into which
// each component copies w's state (the CopyFrom methods of sim, mem,
// pagepool, skb, xdp, bpf, virtq, device, transport and virtionet): the
// twin keeps its own links between components and its own event
// handlers, and takes every counter, page, ring entry and pending event.
// A checked world (CheckEveryEvent, CheckLiveness) gives a checked clone.
// It costs about what building the world costs, plus a copy of its struct
// pages.
func (w *World) Clone() (*World, error) {
	c, err := build(w.origin.s, w.origin.spec, w.origin.rep)
	if err != nil {
		return nil, fmt.Errorf("engine: clone: %w", err)
	}
	if err := c.copyFrom(w); err != nil {
		return nil, fmt.Errorf("engine: clone: %w", err)
	}
	return c, nil
}

func (w *World) copyFrom(src *World) error {
	if err := w.Sim.CopyFrom(src.Sim); err != nil {
		return err
	}
	if err := w.Mem.CopyFrom(src.Mem); err != nil {
		return err
	}
	if err := w.Pools.CopyFrom(src.Pools); err != nil {
		return err
	}
	if err := w.SKBs.CopyFrom(src.SKBs); err != nil {
		return err
	}
	if err := w.Frames.CopyFrom(src.Frames); err != nil {
		return err
	}
	if err := w.Net.CopyFrom(src.Net); err != nil {
		return err
	}
	if err := w.Stack.CopyFrom(src.Stack); err != nil {
		return err
	}
	if (w.Cpumap == nil) != (src.Cpumap == nil) || (w.Devmap == nil) != (src.Devmap == nil) ||
		(w.Prog == nil) != (src.Prog == nil) || (w.streams == nil) != (src.streams == nil) {
		return fmt.Errorf("the twin's XDP or streams differ from the world's")
	}
	if w.Cpumap != nil {
		if err := w.Cpumap.CopyFrom(src.Cpumap); err != nil {
			return err
		}
	}
	if w.Devmap != nil {
		if err := w.Devmap.CopyFrom(src.Devmap); err != nil {
			return err
		}
	}
	if w.Prog != nil {
		if err := w.Prog.CopyFrom(src.Prog); err != nil {
			return err
		}
	}
	if err := w.Driver.CopyFrom(src.Driver); err != nil {
		return err
	}
	if w.streams != nil {
		w.streams.copyFrom(src.streams)
	}
	if (w.replay == nil) != (src.replay == nil) {
		return fmt.Errorf("the twin's replay differs from the world's")
	}
	if w.replay != nil {
		if err := w.replay.CopyFrom(src.replay); err != nil {
			return err
		}
	}
	w.napiLocal, w.err = src.napiLocal, src.err
	if src.live != nil {
		w.live = &liveness{window: src.live.window, q: append([]queueProgress(nil), src.live.q...)}
	}
	if src.checker != nil {
		w.checker = src.checker.copyFor(w)
	}
	return nil
}

// copyFor returns a copy of c checking w, a clone of c's world.
func (c *eventChecker) copyFor(w *World) *eventChecker {
	n := *c
	n.w = w
	n.pages = append([]pageShadow(nil), c.pages...)
	n.touched = append([]mem.PageID(nil), c.touched...)
	n.pcp = append([]int64(nil), c.pcp...)
	n.cache = append([]int(nil), c.cache...)
	n.ring = append([]int(nil), c.ring...)
	n.marked = append([]int64(nil), c.marked...)
	n.mapped = append([]int(nil), c.mapped...)
	n.pools = w.Pools.List(nil)
	n.availSeen = append([]uint16(nil), c.availSeen...)
	return &n
}

// CopyFrom makes w's state src's, as Clone does, into a world already
// built from src's scenario and XDP object (a clone of src, or of a world
// built like it). It saves building the twin: a keeper of checkpoints
// recycles the worlds of those it drops.
func (w *World) CopyFrom(src *World) error {
	if !sameOrigin(w, src) {
		return fmt.Errorf("engine: copy: the worlds were built from different scenarios")
	}
	if err := w.copyFrom(src); err != nil {
		return fmt.Errorf("engine: copy: %w", err)
	}
	return nil
}

// sameOrigin reports whether a and b were built from the same scenario and
// XDP object.
func sameOrigin(a, b *World) bool {
	return a.origin.spec == b.origin.spec && a.origin.rep == b.origin.rep && reflect.DeepEqual(a.origin.s, b.origin.s)
}

// Footprint estimates the bytes w holds: its struct pages, frames, skbs
// and descriptor windows, which are nearly all of it (a keeper of
// checkpoints bounds their number by it).
func (w *World) Footprint() int64 {
	n := int64(w.Mem.NumPages()) * int64(reflect.TypeFor[mem.Page]().Size())
	n += w.Frames.Footprint() + w.SKBs.Footprint()
	for _, rq := range w.Driver.RQ {
		n += rq.Dev.Footprint()
	}
	return n
}
