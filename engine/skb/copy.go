package skb

import (
	"fmt"
	"reflect"
)

// CopyFrom makes p's state src's: every skb and the free list. p must have
// src's size (see sim.Sim.CopyFrom for how a world is copied).
func (p *Pool) CopyFrom(src *Pool) error {
	if len(p.skbs) != len(src.skbs) {
		return fmt.Errorf("skb: copy: %d skbs into %d", len(src.skbs), len(p.skbs))
	}
	skbs := p.skbs
	*p = *src
	p.skbs = skbs
	copy(p.skbs, src.skbs)
	return nil
}

// CopyFrom makes st's state src's: the socket queues, defer lists, wakeups
// and counters. st keeps its simulation, pool, releaser, observer and
// handlers, which belong to its own world.
func (st *Stack) CopyFrom(src *Stack) error {
	if len(st.sockq) != len(src.sockq) || st.wake != src.wake || st.ipi != src.ipi {
		return fmt.Errorf("skb: copy: a stack of %d CPUs into one of %d", len(src.sockq), len(st.sockq))
	}
	own := *st
	*st = *src
	st.sim, st.net, st.pool, st.rel, st.obs = own.sim, own.net, own.pool, own.rel, own.obs
	st.app = own.app
	st.rmem = append(own.rmem[:0], src.rmem...)
	st.rcvbuf = append(own.rcvbuf[:0], src.rcvbuf...)
	st.copied = append(own.copied[:0], src.copied...)
	st.ipiSent = append(own.ipiSent[:0], src.ipiSent...)
	st.sockq = copyLists(own.sockq, src.sockq)
	st.deferred = copyLists(own.deferred, src.deferred)
	return nil
}

// copyLists copies src's lists into dst's, reusing their arrays.
func copyLists(dst, src [][]ID) [][]ID {
	dst = dst[:min(len(dst), len(src))]
	for i := range dst {
		dst[i] = append(dst[i][:0], src[i]...)
	}
	for i := len(dst); i < len(src); i++ {
		dst = append(dst, append([]ID(nil), src[i]...))
	}
	return dst
}

// Footprint is the bytes p's skbs take.
func (p *Pool) Footprint() int64 { return int64(cap(p.skbs)) * int64(reflect.TypeFor[SKB]().Size()) }
