package virtionet

import "fmt"

// CopyFrom makes d's state src's: every queue's ring, buffers, host and
// counters, its page_frag and DMA blocks, and the refill's state. d must
// have been built from src's Config in a twin world; it keeps its links
// to that world (see sim.Sim.CopyFrom for how a world is copied). The
// page pools, memory and the rest are copied by their owners.
func (d *Driver) CopyFrom(src *Driver) error {
	if len(d.RQ) != len(src.RQ) || len(d.SQ) != len(src.SQ) || d.napiKind != src.napiKind {
		return fmt.Errorf("virtionet: copy: %d queue pairs into %d", len(src.RQ), len(d.RQ))
	}
	own := *d
	*d = *src
	d.env, d.RQ, d.SQ = own.env, own.RQ, own.SQ
	for i, rq := range d.RQ {
		if err := rq.copyFrom(src.RQ[i]); err != nil {
			return fmt.Errorf("virtionet: copy: rx%d: %w", i, err)
		}
	}
	for i, sq := range d.SQ {
		if err := sq.copyFrom(src.SQ[i]); err != nil {
			return fmt.Errorf("virtionet: copy: tx%d: %w", i, err)
		}
	}
	return nil
}

func (rq *RQ) copyFrom(src *RQ) error {
	if len(rq.bufs) != len(src.bufs) || len(rq.bufMaps) != len(src.bufMaps) || (rq.frag == nil) != (src.frag == nil) {
		return fmt.Errorf("%d buffers into %d", len(src.bufs), len(rq.bufs))
	}
	own := *rq
	*rq = *src
	rq.d, rq.CPU, rq.VQ, rq.Dev, rq.Pool, rq.frag = own.d, own.CPU, own.VQ, own.Dev, own.Pool, own.frag
	// xdpIn and xdpRes are scratch that every XDP run sets first; they hold
	// pointers into their own world.
	rq.xdpIn, rq.xdpRes = own.xdpIn, own.xdpRes
	rq.gro = own.gro
	rq.gro.CopyFrom(src.gro)
	rq.bufs = own.bufs
	copy(rq.bufs, src.bufs)
	rq.bufMaps = own.bufMaps
	copy(rq.bufMaps, src.bufMaps)
	rq.rqDMA = append(own.rqDMA[:0], src.rqDMA...)
	rq.xdpBuf = append(own.xdpBuf[:0], src.xdpBuf...)
	if rq.frag != nil {
		rq.frag.CopyFrom(src.frag)
	}
	if err := rq.VQ.CopyFrom(src.VQ); err != nil {
		return err
	}
	return rq.Dev.CopyFrom(src.Dev)
}

func (sq *SQ) copyFrom(src *SQ) error {
	own := *sq
	*sq = *src
	sq.VQ, sq.Dev = own.VQ, own.Dev
	if err := sq.VQ.CopyFrom(src.VQ); err != nil {
		return err
	}
	sq.Dev.CopyFrom(src.Dev)
	return nil
}
