package xdp

import (
	"fmt"
	"reflect"
)

// CopyFrom makes p's state src's: every frame, every shared info and the
// free lists. p must have src's size (see sim.Sim.CopyFrom for how a world
// is copied).
func (p *FramePool) CopyFrom(src *FramePool) error {
	if len(p.frames) != len(src.frames) || len(p.seqs) != len(src.seqs) {
		return fmt.Errorf("xdp: copy: %d frames (%d numbered) into %d (%d)", len(src.frames), len(src.seqs), len(p.frames), len(p.seqs))
	}
	own := *p
	*p = *src
	p.frames = own.frames
	copy(p.frames, src.frames)
	p.shinfos = append(own.shinfos[:0], src.shinfos...)
	p.seqs = own.seqs
	copy(p.seqs, src.seqs)
	return nil
}

// CopyFrom makes m's state src's: the bulk queues, each entry's ptr_ring
// and locks, and the counters. m must have src's entries (the same
// targets and queue size); it keeps its links to its own world.
func (m *Cpumap) CopyFrom(src *Cpumap) error {
	if len(m.entries) != len(src.entries) || m.run != src.run {
		return fmt.Errorf("xdp: copy: a cpumap of %d CPUs into one of %d", len(src.entries), len(m.entries))
	}
	for i, e := range m.entries {
		if (e == nil) != (src.entries[i] == nil) || e != nil && len(e.ring) != len(src.entries[i].ring) {
			return fmt.Errorf("xdp: copy: the cpumap entries for CPU %d differ", i)
		}
	}
	own := *m
	*m = *src
	m.sim, m.frames, m.skbs, m.stack, m.rel, m.pools, m.mem = own.sim, own.frames, own.skbs, own.stack, own.rel, own.pools, own.mem
	m.bhEnable = own.bhEnable
	m.entries = own.entries
	for i, e := range m.entries {
		if e != nil {
			e.copyFrom(src.entries[i])
		}
	}
	m.bq = own.bq
	for i := range m.bq {
		copy(m.bq[i], src.bq[i])
	}
	return nil
}

func (e *cpumapEntry) copyFrom(src *cpumapEntry) {
	own := *e
	*e = *src
	e.ring = own.ring
	copy(e.ring, src.ring)
	e.prod, e.cons = own.prod, own.cons
	*e.prod, *e.cons = *src.prod, *src.cons
	e.gro = own.gro
	if e.gro != nil {
		e.gro.CopyFrom(src.gro)
	}
}

// CopyFrom makes m's state src's: the bulk queues, the next device's TX
// ring and the counters. m must have src's sizes.
func (m *Devmap) CopyFrom(src *Devmap) error {
	if len(m.bq) != len(src.bq) || len(m.next.ring) != len(src.next.ring) || m.next.irq != src.next.irq {
		return fmt.Errorf("xdp: copy: a devmap of %d CPUs and %d TX slots into one of %d and %d",
			len(src.bq), len(src.next.ring), len(m.bq), len(m.next.ring))
	}
	own := *m
	*m = *src
	m.sim, m.net, m.frames, m.rel = own.sim, own.net, own.frames, own.rel
	m.bq = own.bq
	copy(m.bq, src.bq)
	m.next = own.next
	ring := m.next.ring
	*m.next = *src.next
	m.next.ring = ring
	copy(ring, src.next.ring)
	return nil
}

// Footprint is the bytes p's frames and shared infos take.
func (p *FramePool) Footprint() int64 {
	return int64(cap(p.frames))*int64(reflect.TypeFor[Frame]().Size()) + int64(cap(p.shinfos))*int64(reflect.TypeFor[shinfo]().Size())
}
