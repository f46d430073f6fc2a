package virtionet

import (
	"fmt"

	"ringlab/engine/bpf"
	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
)

var softirqCtx = skb.Context{Softirq: true}

// xdp_xmit flags of virtnet_poll.
const (
	xmitTX    = 1 << 0 // VIRTIO_XDP_TX
	xmitRedir = 1 << 1 // VIRTIO_XDP_REDIR
)

// move records where a whole-page buffer's page is now.
func (rq *RQ) move(page mem.PageID, loc mem.Loc) {
	if rq.d.wholePage {
		if err := rq.d.env.Mem.Move(page, loc, rq.Index); err != nil {
			rq.d.fail(err)
		}
	}
}

// release gives back the reference a buffer holds on its page.
func (rq *RQ) release(page mem.PageID, pool bool, ctx skb.Context) {
	if err := rq.d.env.Releaser.Release(rq.CPU, page, pool, ctx); err != nil {
		rq.d.fail(err)
	}
}

// putPage is virtnet_put_page(rq, page, true): a buffer the driver drops or
// copies out of in its NAPI poll goes back with allow_direct, into the
// alloc cache of the queue's page_pool (__page_pool_put_page's
// allow_direct && in_softirq()), whatever the kernel's NAPI-local rules.
// Both page_pool series for virtio_net pass true on every receive path
// (page_to_skb's page_to_free, receive_small's and receive_mergeable's
// errors, mergeable_buf_free, xdp_linearize_page, skb_can_coalesce); only
// virtnet_rq_free_buf (a runt, a buffer never used) and a failed
// virtqueue_add_inbuf_ctx pass false. A page_frag page is put_page either
// way.
func (rq *RQ) putPage(page mem.PageID, pool bool) { rq.release(page, pool, directCtx) }

// getBuf is virtqueue_get_buf_ctx plus what the driver keeps of the
// buffer; the DMA mapping is undone (ring mode) or synced for the CPU
// (premapped).
//
// The buffer is copied into *b (a buffer passed by value goes through
// narrow stores and wide reloads that stall); *b is unchanged when ok is
// false.
func (rq *RQ) getBuf(b *rxBuf) (length uint32, ctx uint64, ok bool) {
	c := rq.CPU
	c.Charge(sim.SymVirtqueueGetBuf, c.Costs().VirtqueueGetBuf)
	tok, length, ctx, ok := rq.VQ.GetBuf()
	if !ok {
		return 0, 0, false
	}
	if rq.d.indirectBig {
		c.Charge(sim.SymVirtqueueGetBuf, c.Costs().Kfree) // detach_buf_split frees the indirect table
	}
	slot := int32(tok) - 1
	if slot < 0 || int(slot) >= len(rq.bufs) || rq.bufs[slot].page == mem.NoPage {
		rq.d.fail(fmt.Errorf("virtio_net: rx queue %d: token %d names no posted buffer", rq.Index, tok))
		return 0, 0, false
	}
	*b = rq.bufs[slot]
	if rq.d.stream {
		b.seq = rq.Dev.FrameSeq(b.head)
	}
	rq.putSlot(slot)
	if b.mapped {
		rq.unmap(slot) // vring_unmap_one_split, or virtnet_rq_get_buf's virtnet_rq_unmap
		b.mapped = false
	} else if b.pool && rq.d.premapped {
		// The engine's own bound: virtio_ring returns the used length
		// unchecked, and the driver checks it only after this sync
		// (receive_buf); syncing no more than was posted keeps a device
		// that writes a bad length from turning into an error of the
		// DMA layer instead of the driver's rx_length_errors.
		n := length
		if n > b.len {
			n = b.len
		}
		rq.d.fail(rq.Pool.SyncForCPU(c, b.page, b.off, n))
	}
	return length, ctx, true
}

// receiveBuf is receive_buf: drop runts, then the mode's receive path.
func (rq *RQ) receiveBuf(b *rxBuf, length uint32, ctx uint64) {
	c := rq.CPU
	c.Charge(sim.SymReceiveBuf, c.Costs().RxPacket)
	if length < HdrLen+EthHlen {
		// receive_buf: "short packet", rx_length_errors; the buffer goes
		// back (virtnet_rq_free_buf), no skb: no kfree_skb.
		rq.Stats.LengthErrors++
		rq.dropPkt(drop.RxLength)
		rq.freeUnused(b)
		return
	}
	switch {
	case rq.d.mergeable:
		rq.receiveMergeable(b, length, ctx)
	case rq.d.bigPackets:
		rq.receiveBig(b, length)
	default:
		rq.receiveSmall(b, length, ctx)
	}
}

// freeUnused is virtnet_rq_free_unused_buf.
func (rq *RQ) freeUnused(b *rxBuf) {
	if rq.d.bigPackets {
		rq.givePages(b.page)
		return
	}
	rq.release(b.page, b.pool, softirqCtx)
}

// ewmaAdd is ewma_pkt_len_add with precision 0 and weight 64.
func (rq *RQ) ewmaAdd(v uint32) {
	if rq.ewma == 0 {
		rq.ewma = v
		return
	}
	rq.ewma = uint32((uint64(rq.ewma)*(ewmaWeight-1) + uint64(v)) / ewmaWeight)
}

// EWMA is the mergeable buffer length average (ewma_pkt_len_read).
func (rq *RQ) EWMA() uint32 { return rq.ewma }

// receiveSmall is receive_small: one buffer with headroom; XDP runs in
// place; PASS builds the skb around the buffer.
func (rq *RQ) receiveSmall(b *rxBuf, length uint32, ctx uint64) {
	c := rq.CPU
	n := length - HdrLen
	rq.Stats.Bytes += uint64(n)
	if n > GoodPacketLen {
		// receive_small: "rx error: len %u exceeds max size", put_page.
		rq.Stats.LengthErrors++
		rq.dropPkt(drop.RxLength)
		rq.putPage(b.page, b.pool)
		return
	}
	if rq.d.xdpEnabled {
		headroom := uint32(ctx)
		if headroom < rq.d.headroom() {
			// Posted before XDP was attached: xdp_linearize_page.
			rq.Stats.Linearized++
			c.Charge(sim.SymReceiveSmall, c.Costs().PageAlloc+memcpyCost(c, n))
		}
		act, n2, ok := rq.runXDP(b, n)
		if !ok {
			return
		}
		n = n2
		if act != bpf.XDPPass {
			return
		}
	}
	rq.buildAndDeliver(b, n)
}

// buildAndDeliver is build_skb around the buffer (its page is the skb's
// head) and napi_gro_receive; a multi-buffer XDP packet's frags become the
// skb's (build_skb_from_xdp_buff: xdp_update_skb_shared_info, truesize
// grown by the frags').
func (rq *RQ) buildAndDeliver(b *rxBuf, n uint32) {
	c := rq.CPU
	env := rq.d.env
	c.Charge(rq.modeSym(), c.Costs().BuildSKB)
	id := env.SKBs.Alloc(c.ID, rq.Index, c.Now())
	if id == skb.NoSKB {
		// build_skb returned NULL: receive_small's err, put_page.
		rq.dropPkt(drop.RxNoSKB)
		if rq.xdpNFrags > 0 {
			rq.putXDPFrags()
		}
		rq.putPage(b.page, b.pool)
		return
	}
	s := env.SKBs.Get(id)
	s.Seq = b.seq
	s.Head = b.page
	s.Len = n
	s.Truesize = b.truesize
	s.PPRecycle = b.pool
	// skb_tailroom after skb_reserve(headroom) and skb_put(len): the
	// buffer less skb_shared_info, what precedes the data and the data.
	s.Tailroom = clampTailroom(int(b.truesize) - ShinfoSize - rq.d.skbLead - int(n))
	if rq.d.wholePage { // rq.move(b.page, mem.SKB) without the call
		if err := env.Mem.Move(b.page, mem.SKB, rq.Index); err != nil {
			rq.d.fail(err)
		}
	}
	if rq.xdpNFrags > 0 {
		for i := range rq.xdpFrags[:rq.xdpNFrags] {
			fr := &rq.xdpFrags[i]
			s.AddFrag(fr.page, fr.off, fr.len, fr.truesize)
			rq.move(fr.page, mem.SKB)
		}
		rq.xdpNFrags = 0
	}
	rq.deliver(id)
}

// deliver is napi_gro_receive of a built skb on the queue's CPU.
func (rq *RQ) deliver(id skb.ID) {
	c := rq.CPU
	rq.d.fail(rq.gro.Receive(c, id, rq.d.tcpStream, rq.d.jiffy(c.Now())))
}

// jiffy is the jiffies count at t.
func (d *Driver) jiffy(t sim.Time) int64 { return int64(t) / int64(d.env.Sim.Sched.Tick) }

func memcpyCost(c *sim.CPU, n uint32) sim.Duration {
	return sim.Duration((n+63)/64) * c.Costs().Memcpy64
}

// clampTailroom clamps a computed skb_tailroom to what SKB.Tailroom holds.
func clampTailroom(n int) uint16 {
	return uint16(min(max(n, 0), 0xffff))
}

// receiveMergeable is receive_mergeable.
func (rq *RQ) receiveMergeable(b *rxBuf, length uint32, ctx uint64) {
	c := rq.CPU
	truesize := uint32(ctx & (1<<MrgCtxHeaderShift - 1))
	headroom := uint32(ctx >> MrgCtxHeaderShift)
	var tailroom uint32
	if headroom != 0 {
		tailroom = ShinfoSize
	}
	room := uint32(skbDataAlign(int(headroom + tailroom)))
	rq.Stats.Bytes += uint64(length - HdrLen)
	numBuf := int(rq.Dev.NumBuffers(b.head)) // the header's num_buffers
	if length > truesize-room || numBuf < 1 || numBuf > rq.VQ.Size() {
		rq.Stats.LengthErrors++
		rq.errSKB(b, numBuf, drop.RxLength)
		return
	}
	if rq.d.xdpEnabled {
		if numBuf == 1 && headroom >= rq.d.headroom() {
			// receiveMergeableXDP of one buffer with XDP headroom (the
			// common case), without the call.
			if act, n, ok := rq.runXDP(b, length-HdrLen); ok && act == bpf.XDPPass {
				rq.buildAndDeliver(b, n)
			}
			return
		}
		rq.receiveMergeableXDP(b, length, headroom, numBuf)
		return
	}
	id := rq.pageToSKB(b, length, truesize, headroom)
	if id == skb.NoSKB {
		rq.errSKB(b, numBuf, drop.RxNoSKB)
		return
	}
	skbs := rq.d.env.SKBs
	s := skbs.Get(id)
	curr, cs := id, s // curr_skb: the head, or the last skb of its frag_list
	for numBuf--; numBuf > 0; numBuf-- {
		var nb rxBuf
		n, nctx, ok := rq.getBuf(&nb)
		if !ok {
			// "rx error: %d buffers out of %d missing": err_skb frees
			// the skb with dev_kfree_skb, which is consume_skb.
			rq.Stats.LengthErrors++
			rq.dropPkt(drop.RxLength)
			rq.d.fail(skbs.Free(c, id, rq.d.env.Releaser, softirqCtx))
			return
		}
		rq.Stats.Bytes += uint64(n)
		ts := uint32(nctx & (1<<MrgCtxHeaderShift - 1))
		hr := uint32(nctx >> MrgCtxHeaderShift)
		var tr uint32
		if hr != 0 {
			tr = ShinfoSize
		}
		if n > ts-uint32(skbDataAlign(int(hr+tr))) {
			rq.Stats.LengthErrors++
			rq.putPage(nb.page, nb.pool)
			rq.d.fail(skbs.Free(c, id, rq.d.env.Releaser, softirqCtx))
			rq.errSKB(&rxBuf{page: mem.NoPage}, numBuf-1, drop.RxLength)
			return
		}
		// virtnet_skb_append_frag (6.x): at MAX_SKB_FRAGS a fresh skb
		// (alloc_skb(0, GFP_ATOMIC)) is chained through frag_list and
		// takes the frags that follow; the head counts its truesize and,
		// from then on, the bytes and truesize of each buffer.
		if cs.NrFrags == skb.MaxSkbFrags {
			c.Charge(sim.SymReceiveMergeable, c.Costs().AllocSKB)
			nid := skbs.Alloc(c.ID, rq.Index, c.Now())
			if nid == skb.NoSKB {
				// err_skb: this buffer, the skb and the buffers left.
				rq.putPage(nb.page, nb.pool)
				rq.d.fail(skbs.Free(c, id, rq.d.env.Releaser, softirqCtx))
				rq.errSKB(&rxBuf{page: mem.NoPage}, numBuf, drop.RxNoSKB)
				return
			}
			skbs.Chain(id, curr, nid)
			curr, cs = nid, skbs.Get(nid)
			// skb_mark_for_recycle(curr_skb); the head's truesize counts
			// nskb's, SKB_TRUESIZE(0).
			cs.PPRecycle = s.PPRecycle
			s.Truesize += skb.StructTruesize + ShinfoSize
			rq.Stats.FragList++
		}
		if curr != id {
			s.Len += n
			s.Truesize += ts
		}
		if cs.CanCoalesce(nb.page, nb.off) {
			// skb_coalesce_rx_frag: the frag already holds a reference.
			rq.Stats.Coalesced++
			cs.Coalesce(n, ts)
			rq.putPage(nb.page, nb.pool)
			continue
		}
		cs.AddFrag(nb.page, nb.off, n, ts) // below MAX_SKB_FRAGS: cannot fail
		c.Charge(sim.SymReceiveMergeable, c.Costs().Atomic)
		rq.move(nb.page, mem.SKB)
	}
	rq.ewmaAdd(s.Len)
	rq.deliver(id)
}

// errSKB is receive_mergeable's err_skb path: drop this buffer and the
// numBuf-1 that follow, the packet counted once, for why. The kernel
// frees a built skb there with dev_kfree_skb (consume_skb): no
// skb_drop_reason.
func (rq *RQ) errSKB(b *rxBuf, numBuf int, why drop.Reason) {
	if b.page != mem.NoPage {
		rq.putPage(b.page, b.pool)
	}
	rq.consumeRest(numBuf, false)
	rq.dropPkt(why)
}

// dropPkt counts a packet the driver drops (virtnet_rq_stats drops),
// with its reason.
func (rq *RQ) dropPkt(why drop.Reason) {
	rq.Stats.Drops++
	rq.Stats.Reasons.Add(why)
}

// consumeRest takes the numBuf-1 buffers that follow a packet's first,
// counts their bytes, charges a copy of each when copied is set (as
// xdp_linearize_page does), and frees them; a missing buffer is a length
// error ("%d buffers out of %d missing"). It returns the bytes taken.
func (rq *RQ) consumeRest(numBuf int, copied bool) uint32 {
	c := rq.CPU
	var total uint32
	for ; numBuf > 1; numBuf-- {
		var nb rxBuf
		n, _, ok := rq.getBuf(&nb)
		if !ok {
			rq.Stats.LengthErrors++
			break
		}
		rq.Stats.Bytes += uint64(n)
		if copied {
			c.Charge(sim.SymReceiveMergeable, memcpyCost(c, n))
		}
		total += n
		rq.putPage(nb.page, nb.pool)
	}
	return total
}

// pageToSKB is page_to_skb for mergeable buffers: a packet that does not
// leave room for skb_shared_info, or is short, gets a small head with the
// first bytes copied (GOOD_COPY_LEN); a short packet is copied whole and
// its buffer freed at once; the rest stays in the page as frag 0.
func (rq *RQ) pageToSKB(b *rxBuf, length, truesize, headroom uint32) skb.ID {
	c := rq.CPU
	env := rq.d.env
	n := length - HdrLen
	tailroom := int(truesize) - int(headroom) - HdrLen - int(n)
	if n > GoodCopyLen && tailroom >= ShinfoSize {
		c.Charge(sim.SymPageToSKB, c.Costs().BuildSKB)
		id := env.SKBs.Alloc(c.ID, rq.Index, c.Now())
		if id == skb.NoSKB {
			return skb.NoSKB
		}
		s := env.SKBs.Get(id)
		s.Seq = b.seq
		s.Head, s.Len, s.Truesize, s.PPRecycle = b.page, n, truesize, b.pool
		s.Tailroom = clampTailroom(tailroom - ShinfoSize)
		rq.move(b.page, mem.SKB)
		return id
	}
	c.Charge(sim.SymPageToSKB, c.Costs().AllocSKB)
	id := env.SKBs.Alloc(c.ID, rq.Index, c.Now())
	if id == skb.NoSKB {
		return skb.NoSKB
	}
	s := env.SKBs.Get(id)
	s.Seq = b.seq
	s.PPRecycle = b.pool
	cp := uint32(EthHlen)
	if n <= GoodCopyLen {
		cp = n
	}
	c.Charge(sim.SymPageToSKB, memcpyCost(c, cp))
	s.Len = cp
	s.Truesize = GoodCopyLen
	if rest := n - cp; rest > 0 {
		s.AddFrag(b.page, b.off+HdrLen+cp, rest, truesize)
		rq.move(b.page, mem.SKB)
	} else {
		rq.Stats.Copied++
		s.Tailroom = uint16(GoodCopyLen - cp) // the whole packet in the GOOD_COPY_LEN head
		rq.putPage(b.page, b.pool)
	}
	return id
}

// receiveBig is receive_big and page_to_skb for a chain of pages: truesize
// PAGE_SIZE, no headroom, and the packet starts after the padded header
// (hdr_padded_len = sizeof(struct padded_vnet_hdr)) in the first page.
// Since 5.13 a packet longer than GOOD_COPY_LEN whose data leaves room for
// skb_shared_info in that page (tailroom = PAGE_SIZE - 32 - len >= 320,
// so up to 3744 bytes) becomes an skb built around the first page
// (bigBuildSKB). Any other packet gets a small head with its first bytes
// copied (all of it up to GOOD_COPY_LEN, else the Ethernet header) and
// continues page by page as frags. Pages the packet does not reach go back
// to rq->pages (give_pages).
//
// The used length is the device's, unchecked by virtio_ring: receive_big
// drops (rx_drops, not rx_length_errors) one longer than the pages
// posted, (num_skbfrags + 1) * PAGE_SIZE. That check is from 2025 and went
// to the stable releases; before it, page_to_skb dropped "too much data"
// past MAX_SKB_FRAGS * PAGE_SIZE, and a length between the two walked off
// the chain. The engine keeps the 2025 check on every kernel, and its walk
// stops at the end of the chain (the 20 bytes the check still allows past
// the posted space, sizeof(struct padded_vnet_hdr) - hdr_len, are not
// there to fill).
func (rq *RQ) receiveBig(b *rxBuf, length uint32) {
	c := rq.CPU
	env := rq.d.env
	m := env.Mem
	n := length - HdrLen
	rq.Stats.Bytes += uint64(n)
	if length > uint32(rq.d.numSkbFrags+1)*mem.PageSize {
		// receive_big: "rx error: len %u exceeds allocated size",
		// give_pages.
		rq.dropPkt(drop.RxLength)
		rq.givePages(b.page)
		return
	}
	if rq.d.buildBig && n > GoodCopyLen && int(mem.PageSize)-PaddedVnetHdrLen-int(n) >= ShinfoSize {
		rq.bigBuildSKB(b, n)
		return
	}
	c.Charge(sim.SymReceiveBig, c.Costs().AllocSKB)
	id := env.SKBs.Alloc(c.ID, rq.Index, c.Now())
	if id == skb.NoSKB {
		// page_to_skb returned NULL: receive_big's err, give_pages.
		rq.dropPkt(drop.RxNoSKB)
		rq.givePages(b.page)
		return
	}
	s := env.SKBs.Get(id)
	s.Seq = b.seq
	cp := uint32(EthHlen)
	if n <= GoodCopyLen {
		cp = n
		rq.Stats.Copied++
	}
	c.Charge(sim.SymReceiveBig, memcpyCost(c, cp))
	s.Len, s.Truesize = cp, GoodCopyLen
	n -= cp
	page := b.page
	off := uint32(PaddedVnetHdrLen) + cp
	for n > 0 && page != mem.NoPage {
		size := uint32(mem.PageSize) - off
		if size > n {
			size = n
		}
		next := m.Page(page).Private
		if !s.AddFrag(page, off, size, mem.PageSize) {
			break // cannot happen within MAX_SKB_FRAGS pages: page and the rest go back
		}
		m.Page(page).Private = mem.NoPage
		rq.move(page, mem.SKB)
		n -= size
		page = next
		off = 0
	}
	if page != mem.NoPage {
		rq.givePages(page)
	}
	rq.deliver(id)
}

// bigBuildSKB is page_to_skb's build_skb case for a big buffer
// (virtnet_build_skb(buf, PAGE_SIZE, 32, len)): the first page is the
// skb's head, with the packet in place after the padded header, and the
// rest of the chain (page->private) goes back to rq->pages. 5.13 and 5.14
// leaked that rest until afd92d82c9d7 (5.15, backported to stable); the
// engine gives it back on every kernel.
func (rq *RQ) bigBuildSKB(b *rxBuf, n uint32) {
	c := rq.CPU
	env := rq.d.env
	c.Charge(sim.SymReceiveBig, c.Costs().BuildSKB)
	id := env.SKBs.Alloc(c.ID, rq.Index, c.Now())
	if id == skb.NoSKB {
		// page_to_skb returned NULL: receive_big's err, give_pages.
		rq.dropPkt(drop.RxNoSKB)
		rq.givePages(b.page)
		return
	}
	first := env.Mem.Page(b.page)
	if rest := first.Private; rest != mem.NoPage {
		first.Private = mem.NoPage
		rq.givePages(rest)
	}
	s := env.SKBs.Get(id)
	s.Seq = b.seq
	s.Head, s.Len, s.Truesize = b.page, n, mem.PageSize
	rq.Stats.BigBuilt++
	rq.move(b.page, mem.SKB)
	rq.deliver(id)
}

// modeSym is the function buildAndDeliver's build_skb runs in:
// receive_mergeable for a mergeable queue's XDP_PASS
// (build_skb_from_xdp_buff), receive_small otherwise.
func (rq *RQ) modeSym() sim.Sym {
	if rq.d.mergeable {
		return sim.SymReceiveMergeable
	}
	return sim.SymReceiveSmall
}
