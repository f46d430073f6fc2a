package bpf

import "fmt"

// CopyFrom makes p's state src's: the values of its maps (and of the
// programs a devmap or cpumap entry runs). p must have been built from the
// same collection spec as src, so its code and maps have the same shapes;
// its code, which does not change, stays its own. See sim.Sim.CopyFrom for
// how a world is copied.
func (p *Program) CopyFrom(src *Program) error {
	return p.copyFrom(src, map[*Program]bool{})
}

func (p *Program) copyFrom(src *Program, done map[*Program]bool) error {
	if done[p] {
		return nil
	}
	done[p] = true
	if p.name != src.name || len(p.code) != len(src.code) || len(p.maps) != len(src.maps) {
		return fmt.Errorf("bpf: copy: program %q of %d instructions and %d maps into %q of %d and %d",
			src.name, len(src.code), len(src.maps), p.name, len(p.code), len(p.maps))
	}
	// p.m, the machine, stays p's: it holds nothing from one run to the
	// next (a run sets its registers, and the verifier's rules keep a
	// program from reading stack it did not write).
	for i, m := range p.maps {
		if err := m.copyFrom(src.maps[i], done); err != nil {
			return fmt.Errorf("bpf: copy: program %q: %w", p.name, err)
		}
	}
	return nil
}

func (m *Map) copyFrom(src *Map, done map[*Program]bool) error {
	if m.spec.Name != src.spec.Name || len(m.values) != len(src.values) || len(m.progs) != len(src.progs) ||
		(m.htab == nil) != (src.htab == nil) {
		return fmt.Errorf("map %q differs from %q", src.spec.Name, m.spec.Name)
	}
	copy(m.values, src.values)
	copy(m.present, src.present)
	if m.htab != nil {
		m.htab.copyFrom(src.htab)
	}
	for i, p := range m.progs {
		if (p == nil) != (src.progs[i] == nil) {
			return fmt.Errorf("map %q: entry %d runs a program in one copy only", m.spec.Name, i)
		}
		if p != nil {
			if err := p.copyFrom(src.progs[i], done); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *htab) copyFrom(src *htab) {
	own := *h
	*h = *src
	h.buckets = append(own.buckets[:0], src.buckets...)
	h.next = append(own.next[:0], src.next...)
	h.hashes = append(own.hashes[:0], src.hashes...)
	h.keys = append(own.keys[:0], src.keys...)
	h.free = append(own.free[:0], src.free...)
}
