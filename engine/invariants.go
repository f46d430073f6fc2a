package engine

import (
	"fmt"

	"ringlab/engine/mem"
)

// Check verifies the world's invariants: the page allocator's (every page
// in exactly one place, the counts adding up), every pool's accounting,
// and every receive ring's descriptors (num_free plus the descriptors of
// posted buffers equals the ring size). It is cheap enough to run after
// every event in tests.
func (w *World) Check() error {
	if err := w.Mem.Check(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if err := w.Pools.Check(); err != nil {
		return fmt.Errorf("page_pool: %w", err)
	}
	for _, rq := range w.Driver.RQ {
		if broken, why := rq.VQ.Broken(); broken {
			return fmt.Errorf("rx queue %d broken: %s", rq.Index, why)
		}
		posted := rq.PostedDescriptors()
		if rq.VQ.NumFree()+posted != rq.VQ.Size() {
			return fmt.Errorf("rx queue %d: num_free %d + %d posted descriptors != ring size %d",
				rq.Index, rq.VQ.NumFree(), posted, rq.VQ.Size())
		}
	}
	var total int64
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		total += w.Mem.Count(l)
	}
	if total != int64(w.Mem.NumPages()) {
		return fmt.Errorf("pages per location add up to %d, memory has %d", total, w.Mem.NumPages())
	}
	return nil
}
