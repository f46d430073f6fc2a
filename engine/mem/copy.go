package mem

import "fmt"

// CopyFrom makes m's state src's: every struct page, the free lists, the
// per-CPU lists, the counts, the move log and the DMA devices' mappings. m must have been
// built with src's configuration, with as many DMA devices made in the same
// order; it keeps its own links to the simulation. This is how a world is
// checkpointed (engine.World.Clone): build a twin, then copy each
// component's state into it. Each CopyFrom here copies the whole value and
// then puts back what is the copy's own (its links and its slices, whose
// contents it copies), so that a field added later is copied too; a test
// checks that a copy shares no memory with its source.
func (m *Mem) CopyFrom(src *Mem) error {
	if len(m.pages) != len(src.pages) || len(m.pcp) != len(src.pcp) || len(m.dmas) != len(src.dmas) {
		return fmt.Errorf("mem: copy: %d pages, %d CPUs, %d DMA devices into %d, %d, %d",
			len(src.pages), len(src.pcp), len(src.dmas), len(m.pages), len(m.pcp), len(m.dmas))
	}
	own := *m
	*m = *src
	m.sim, m.queue = own.sim, own.queue
	m.pages = own.pages
	copy(m.pages, src.pages)
	m.pcp = own.pcp
	copy(m.pcp, src.pcp)
	m.cpuNode = append(own.cpuNode[:0], src.cpuNode...)
	m.touched = append(own.touched[:0], src.touched...)
	m.log = own.log
	copy(m.log, src.log)
	m.dmas = own.dmas
	for i, d := range m.dmas {
		d.copyFrom(src.dmas[i])
	}
	return nil
}

func (d *DMA) copyFrom(src *DMA) {
	own := *d
	*d = *src
	d.m = own.m
	d.slots = append(own.slots[:0], src.slots...)
	d.byPage = append(own.byPage[:0], src.byPage...)
}

// CopyFrom makes f's state src's: its current block, offset and counts. f
// keeps its memory (both must belong to twin memories, see Mem.CopyFrom).
func (f *Frag) CopyFrom(src *Frag) {
	m := f.m
	*f = *src
	f.m = m
}
