package virtionet

import (
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/virtq"
)

// What an invariant checker needs to know of the driver's buffers.

// DescPerBuf is the number of descriptors of the main table each posted
// receive buffer takes: one for small and mergeable buffers (one entry,
// and their queue has a ctx, so never indirect); for big buffers
// (add_recvbuf_big) big_packets_num_skbfrags + 2, or one when they go
// indirect (virtqueue_add_split: descs_used = 1, the entries in a table of
// their own).
func (rq *RQ) DescPerBuf() int {
	if rq.d.bigPackets && !rq.d.indirectBig {
		return rq.d.numSkbFrags + 2
	}
	return 1
}

// SGPerBuf is the number of scatter-gather entries each posted buffer is
// made of (total_sg): big_packets_num_skbfrags + 2 in big mode, one
// otherwise. An indirect buffer's table has this many entries.
func (rq *RQ) SGPerBuf() int {
	if rq.d.bigPackets {
		return rq.d.numSkbFrags + 2
	}
	return 1
}

// Indirect reports whether the posted buffers are indirect chains.
func (rq *RQ) Indirect() bool { return rq.d.indirectBig }

// PagesPerBuf is the number of pages each posted buffer keeps located in
// mem.Virtqueue: big_packets_num_skbfrags + 1 in big mode, one for the
// other whole-page sources, none when buffers share pages (page_frag and
// page_pool fragments leave their pages where the allocator put them).
func (rq *RQ) PagesPerBuf() int {
	switch {
	case rq.d.bigPackets:
		return rq.d.numSkbFrags + 1
	case rq.d.wholePage:
		return 1
	}
	return 0
}

// RingMapped reports whether each posted buffer holds a DMA mapping of its
// own (vring_map_one_sg at add, unmapped at get), rather than a page_pool
// page or a page_frag block premapped once (PremappedBlocks). Big mode
// charges the mapping without tracking it.
func (rq *RQ) RingMapped() bool {
	return !rq.d.bigPackets && !rq.d.fragPremap && !(rq.d.premapped && (rq.d.source == srcPagePool || rq.d.source == srcPagePoolFrag))
}

// CheckPosted checks the buffer behind a posted head: tok names a buffer
// slot in use that remembers head; a whole-page buffer's pages are in
// mem.Virtqueue for this queue (big mode: the chain through page->private
// has PagesPerBuf pages, as add_recvbuf_big builds it); a ring-mapped
// buffer is mapped.
func (rq *RQ) CheckPosted(head uint16, tok virtq.Token) error {
	slot := int64(tok) - 1
	if slot < 0 || slot >= int64(len(rq.bufs)) || rq.bufs[slot].page == mem.NoPage {
		return fmt.Errorf("rx queue %d: head %d carries token %d, which names no buffer in use", rq.Index, head, tok)
	}
	b := &rq.bufs[slot]
	if b.head != head {
		return fmt.Errorf("rx queue %d: head %d names buffer %d, which was posted at head %d", rq.Index, head, slot, b.head)
	}
	m := rq.d.env.Mem
	if want := rq.PagesPerBuf(); want > 0 {
		n := 0
		for p := b.page; p != mem.NoPage; p = m.Page(p).Private {
			if n++; n > want || !m.Valid(p) {
				return fmt.Errorf("rx queue %d: buffer %d's page chain is longer than %d pages", rq.Index, slot, want)
			}
			if loc, owner := m.Loc(p); loc != mem.Virtqueue || owner != rq.Index {
				return fmt.Errorf("rx queue %d: page %d of posted buffer %d is in %v (owner %d)", rq.Index, p, slot, loc, owner)
			}
			if !rq.d.bigPackets {
				break
			}
		}
		if n != want {
			return fmt.Errorf("rx queue %d: posted buffer %d has %d pages, want %d", rq.Index, slot, n, want)
		}
	}
	if rq.RingMapped() && (!b.mapped || rq.d.env.DMA.Live(b.page) == 0) {
		return fmt.Errorf("rx queue %d: posted buffer %d (page %d) is not mapped", rq.Index, slot, b.page)
	}
	if rq.d.fragPremap {
		// virtnet_rq_alloc: the buffer holds a reference on its block's
		// struct virtnet_rq_dma, and the block is mapped.
		blk := rq.bufMaps[slot].blk
		if !b.mapped || blk <= 0 || int(blk) > len(rq.rqDMA) {
			return fmt.Errorf("rx queue %d: posted buffer %d (page %d) names no premapped block", rq.Index, slot, b.page)
		}
		d := &rq.rqDMA[blk-1]
		if d.page != m.Head(b.page) || d.ref == 0 || rq.d.env.DMA.Live(d.page) == 0 {
			return fmt.Errorf("rx queue %d: posted buffer %d (page %d) is in block %d, whose mapping (ref %d) is gone", rq.Index, slot, b.page, d.page, d.ref)
		}
	}
	return nil
}

// IRQArmed reports whether an event waits for the next frame the host
// lands while callbacks are enabled (armIRQ).
func (rq *RQ) IRQArmed() bool { return rq.irqArmed }

// PostedBuffers calls f with the page, length and truesize (the ctx the
// driver posted with) of every buffer the device holds, in slot order.
func (rq *RQ) PostedBuffers(f func(page mem.PageID, length, truesize uint32)) {
	for i := range rq.bufs {
		if b := &rq.bufs[i]; b.page != mem.NoPage {
			f(b.page, b.len, b.truesize)
		}
	}
}
