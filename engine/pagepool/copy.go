package pagepool

import "fmt"

// CopyFrom makes r's pools' state src's, pool by pool. r must belong to a
// twin of src's world: the same pools created in the same order (see
// sim.Sim.CopyFrom for how a world is copied).
func (r *Registry) CopyFrom(src *Registry) error {
	if len(r.list) != len(src.list) || len(r.byID) != len(src.byID) {
		return fmt.Errorf("pagepool: copy: %d pools into %d", len(src.list), len(r.list))
	}
	r.kernel = src.kernel
	for i, p := range r.list {
		if p.id != src.list[i].id {
			return fmt.Errorf("pagepool: copy: pool %d is id %d, %d in the copy", i, src.list[i].id, p.id)
		}
		p.copyFrom(src.list[i])
	}
	return nil
}

func (p *Pool) copyFrom(src *Pool) {
	own := *p
	*p = *src
	p.r, p.m, p.napi = own.r, own.m, own.napi
	p.p.NAPI, p.p.DMA = own.p.NAPI, own.p.DMA
	p.ring.copyFrom(&src.ring, &own.ring)
}

// copyFrom sets r, which holds src's value, back to own's slices with
// src's contents.
func (r *PtrRing) copyFrom(src, own *PtrRing) {
	r.queue = append(own.queue[:0], src.queue...)
	r.lines = append(own.lines[:0], src.lines...)
}
