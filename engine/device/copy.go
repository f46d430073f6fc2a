package device

import "fmt"

// CopyFrom makes r's state src's: the host thread's clock and sleep, the
// frames waiting, the bytes written into buffers and the counters, and
// its traffic's position. r keeps its virtqueue and costs, which belong to
// its own world (see sim.Sim.CopyFrom for how a world is copied).
func (r *RX) CopyFrom(src *RX) error {
	if len(r.window) != len(src.window) || (r.traffic == nil) != (src.traffic == nil) {
		return fmt.Errorf("device: copy: a host of %d window bytes into one of %d", len(src.window), len(r.window))
	}
	own := *r
	*r = *src
	r.q, r.traffic, r.costs, r.vcpu, r.iotlb = own.q, own.traffic, own.costs, own.vcpu, own.iotlb
	r.window = own.window
	copy(r.window, src.window)
	r.pend = append(own.pend[:0], src.pend...)
	if r.traffic != nil {
		return r.traffic.CopyFrom(src.traffic)
	}
	return nil
}

// CopyFrom makes t's state src's: the next arrival, the flow and size
// drawn next, the random generator's position and the TCP sender. A
// replay's frames and log stay t's (the world copies its log).
func (t *Traffic) CopyFrom(src *Traffic) error {
	if len(t.flows) != len(src.flows) || (t.tcp == nil) != (src.tcp == nil) || (t.pcg == nil) != (src.pcg == nil) || (t.rep == nil) != (src.rep == nil) {
		return fmt.Errorf("device: copy: traffic of %d flows into %d", len(src.flows), len(t.flows))
	}
	own := *t
	*t = *src
	t.flows, t.tmpls, t.spec, t.rng, t.pcg, t.tcp, t.rep = own.flows, own.tmpls, own.spec, own.rng, own.pcg, own.tcp, own.rep
	if t.pcg != nil {
		*t.pcg = *src.pcg
	}
	if t.tcp != nil {
		t.tcp.CopyFrom(src.tcp)
	}
	return nil
}

// CopyFrom makes x's state src's. x keeps its virtqueue and costs.
func (x *TX) CopyFrom(src *TX) {
	own := *x
	*x = *src
	x.q, x.costs, x.vcpu = own.q, own.costs, own.vcpu
}

// Footprint is the bytes r's window of frame bytes takes.
func (r *RX) Footprint() int64 { return int64(cap(r.window)) }
