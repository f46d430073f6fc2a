package virtq

import "fmt"

// CopyFrom makes q's state src's: the descriptor table, both rings, the
// driver's shadows and the device's view. q must have been built with
// src's configuration (see sim.Sim.CopyFrom for how a world is copied).
func (q *Queue) CopyFrom(src *Queue) error {
	if q.num != src.num || q.hasCtx != src.hasCtx || q.indirect != src.indirect {
		return fmt.Errorf("virtq: copy: queue %s of %d entries into %s of %d", src.name, src.num, q.name, q.num)
	}
	own := *q
	*q = *src
	q.desc = append(own.desc[:0], src.desc...)
	q.avail.ring = append(own.avail.ring[:0], src.avail.ring...)
	q.used.ring = append(own.used.ring[:0], src.used.ring...)
	q.state = append(own.state[:0], src.state...)
	q.extra = append(own.extra[:0], src.extra...)
	q.slots = append(own.slots[:0], src.slots...)
	q.indir = own.indir[:min(len(own.indir), len(src.indir))]
	for i := range q.indir {
		q.indir[i] = copyTable(q.indir[i], src.indir[i])
	}
	for i := len(q.indir); i < len(src.indir); i++ {
		q.indir = append(q.indir, copyTable(nil, src.indir[i]))
	}
	return nil
}

// copyTable copies an indirect table with its capacity (which decides when
// indirTable allocates, and counts it), keeping nil (no table yet) nil.
func copyTable(dst, src []Desc) []Desc {
	if src == nil {
		return nil
	}
	if cap(dst) != cap(src) {
		dst = make([]Desc, cap(src))
	}
	dst = dst[:cap(src)]
	copy(dst, src[:cap(src)])
	return dst[:len(src)]
}
