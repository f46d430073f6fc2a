package engine

import (
	"fmt"

	"ringlab/engine/drop"
	"ringlab/engine/mem"
)

// Check verifies the world's invariants: the page allocator's (every page
// in exactly one place, the counts adding up), every pool's accounting,
// every virtqueue's structure (virtq.Queue.Check) and every receive ring's
// descriptors (num_free plus the descriptors of posted buffers equals the
// ring size), and the conservation of frames, skbs, DMA mappings and
// whole-page buffers (see CheckEveryEvent). It walks every page: O(pages),
// a millisecond or so. CheckEveryEvent checks after every event what the
// event touched, and runs Check periodically.
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
		if err := rq.VQ.Check(); err != nil {
			return fmt.Errorf("rx queue %d: %w", rq.Index, err)
		}
		posted := rq.PostedDescriptors()
		if rq.VQ.NumFree()+posted != rq.VQ.Size() {
			return fmt.Errorf("rx queue %d: num_free %d + %d posted descriptors != ring size %d",
				rq.Index, rq.VQ.NumFree(), posted, rq.VQ.Size())
		}
	}
	for _, sq := range w.Driver.SQ {
		if err := sq.VQ.Check(); err != nil {
			return fmt.Errorf("tx queue %d: %w", sq.Index, err)
		}
	}
	if err := w.checkConservation(); err != nil {
		return err
	}
	if err := w.checkSKBPages(); err != nil {
		return err
	}
	if err := w.checkDrops(); err != nil {
		return err
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

// checkDrops checks that every drop carries a reason: the drops by
// reason add up to the drops each part counts under its own name
// (Stats.DropTotal), and Totals lists every reason counted.
func (w *World) checkDrops() error {
	s := w.Stats()
	if by, named := s.Drops.Total(), s.DropTotal(); by != named {
		return fmt.Errorf("drops by reason add up to %d, the parts' drop counters to %d (%v)", by, named, s.Drops)
	}
	for r, n := range s.Drops {
		if n > 0 && !s.Listed[r] {
			return fmt.Errorf("%d drops for %s, a reason Totals does not list", n, drop.Counter(drop.Reason(r), s.Kernel))
		}
	}
	return nil
}

// checkSKBPages checks, where buffers own their page, that the pages
// located in skbs are the page references live skbs hold, the skbs
// chained through frag_list included (skb_release_data gives back each
// one: a page in an skb that no skb holds is lost, one held but located
// elsewhere is counted twice). O(skb pool). The cpumap kthread moves a
// frame's pages to the skb it builds (Cpumap.SetMem).
func (w *World) checkSKBPages() error {
	if w.Driver.RQ[0].PagesPerBuf() == 0 {
		return nil
	}
	if refs, n := w.SKBs.PageRefs(), w.Mem.Count(mem.SKB); refs != n {
		return fmt.Errorf("%w: %d pages are located in skbs, live skbs hold %d page references", errConservation, n, refs)
	}
	return nil
}
