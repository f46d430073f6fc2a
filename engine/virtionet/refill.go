package virtionet

import (
	"errors"
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// errNoMem is -ENOMEM from an add_recvbuf_*: the refill stops, and the
// caller retries (receive: refill_work before 6.19, the next NAPI poll
// since).
var errNoMem = errors.New("no memory for a receive buffer")

// headroom is virtnet_get_headroom.
func (d *Driver) headroom() uint32 {
	if d.xdpEnabled {
		return XDPHeadroom
	}
	return 0
}

// tryFillRecv is try_fill_recv: add buffers until the ring is full or an
// allocation fails, then kick if the device asked to be told.
func (rq *RQ) tryFillRecv() bool {
	d := rq.d
	c := rq.CPU
	rq.Stats.Refills++
	// The host must be where it would be now before it sees new buffers.
	rq.catchUp(c.Now())
	oom := false
	for rq.VQ.NumFree() > 0 {
		var err error
		switch {
		case d.mergeable:
			err = rq.addRecvbufMergeable()
		case d.bigPackets:
			err = rq.addRecvbufBig()
		default:
			err = rq.addRecvbufSmall()
		}
		if err != nil {
			oom = errors.Is(err, errNoMem)
			if !oom && !errors.Is(err, virtq.ErrNoSpace) {
				d.fail(err)
			}
			break
		}
	}
	if rq.VQ.KickPrepare() && rq.VQ.Notify() {
		rq.Stats.Kicks++
		rq.kick()
	}
	return !oom
}

// kick charges the notification and wakes the host.
func (rq *RQ) kick() {
	c := rq.CPU
	if rq.d.nic {
		c.Charge(sim.SymVirtqueueNotify, c.Costs().KickMMIO)
	} else {
		c.Charge(sim.SymVirtqueueNotify, c.Costs().KickVMExit)
	}
	rq.Dev.Kick(c.Now())
}

// takeSlot returns a free rxBuf slot index (its token is index+1).
func (rq *RQ) takeSlot() int32 {
	i := rq.freeBuf
	if i < 0 {
		return -1
	}
	rq.freeBuf = rq.bufs[i].next
	return i
}

func (rq *RQ) putSlot(i int32) {
	rq.bufs[i].set(mem.NoPage, 0, 0, 0, false, rq.freeBuf, 0)
	rq.freeBuf = i
}

// allocBuffer takes size bytes from the queue's buffer source. It returns
// the block head, the offset of the buffer in it, and whether it is a pool
// page.
func (rq *RQ) allocBuffer(size uint32) (mem.PageID, uint32, bool, error) {
	c := rq.CPU
	env := rq.d.env
	switch rq.d.source {
	case srcPageFrag:
		if rq.d.fragPremap {
			page, off, err := rq.virtnetRqAlloc(size)
			return page, off, false, err
		}
		// skb_page_frag_refill, then get_page(alloc_frag->page) and
		// alloc_frag->offset += size: one reference per buffer.
		page, off, ok := rq.frag.Alloc(c, size)
		if !ok {
			rq.Stats.AllocFails++
			return mem.NoPage, 0, false, errNoMem
		}
		return page, off, false, nil
	case srcPage:
		id, err := env.Mem.AllocPages(c, 0, mem.Driver, rq.Index)
		if err != nil {
			rq.Stats.AllocFails++
			return mem.NoPage, 0, false, errNoMem
		}
		return id, 0, false, nil
	case srcPagePool, srcPagePoolFrag:
		if !rq.d.poolFrags {
			// The 2023 series' 2/5: page_pool_dev_alloc_pages, a whole
			// page per buffer.
			id, err := rq.Pool.Alloc(c)
			if err != nil {
				rq.Stats.AllocFails++
				return mem.NoPage, 0, false, errNoMem
			}
			return id, 0, true, nil
		}
		// page_pool_alloc_frag(size): the 2026 driver, and the 2023
		// series' 3/5 (PP_FLAG_PAGE_FRAG).
		id, off, err := rq.Pool.AllocFrag(c, size)
		if err != nil {
			rq.Stats.AllocFails++
			return mem.NoPage, 0, false, errNoMem
		}
		return id, off, true, nil
	}
	return mem.NoPage, 0, false, errNoMem // no other source
}

// VirtnetRqDMASize is sizeof(struct virtnet_rq_dma) {dma_addr_t addr; u32
// ref; u16 len; u16 need_sync}: the bytes at the head of each premapped
// page_frag block that no buffer gets (6.6+).
const VirtnetRqDMASize = 16

// rqDMA is struct virtnet_rq_dma: the one DMA mapping of a page_frag block
// (6.6+).
type rqDMA struct {
	page mem.PageID // the block's head, NoPage when the slot is free
	addr uint64     // dma->addr: the DMA address of the block's byte VirtnetRqDMASize
	ref  uint32     // dma->ref: buffers carved and not yet taken back, plus one while the block is rq->last_dma
	next int32      // free list
}

// virtnetRqAlloc is virtnet_rq_alloc with rq->do_dma (6.6+; from 6.13
// add_recvbuf_* call skb_page_frag_refill themselves, the same steps):
// skb_page_frag_refill; on a block just started (offset 0) the previous
// block's mapping loses rq->last_dma's reference (virtnet_rq_unmap), the
// new block is mapped once, whole but for the struct virtnet_rq_dma at
// its head, with a page reference of its own (get_page) and dma->ref = 1;
// then ++dma->ref, get_page and offset += size for the buffer. A mapping
// failure is -ENOMEM. Costs one map per block, none per buffer.
func (rq *RQ) virtnetRqAlloc(size uint32) (mem.PageID, uint32, error) {
	c := rq.CPU
	env := rq.d.env
	f := rq.frag
	if !f.Refill(c, size) {
		rq.Stats.AllocFails++
		return mem.NoPage, 0, errNoMem
	}
	if f.Offset() == 0 {
		// New pages: the last block's mapping is unmapped once its
		// buffers are all back.
		if rq.lastDMA >= 0 {
			rq.rqUnmap(rq.lastDMA)
			rq.lastDMA = -1
		}
		slot := rq.freeDMA
		if slot < 0 {
			rq.d.fail(fmt.Errorf("virtio_net: rx queue %d: no struct virtnet_rq_dma slot left", rq.Index))
			return mem.NoPage, 0, errNoMem
		}
		addr, err := env.DMA.MapRange(c, f.Page(), VirtnetRqDMASize, f.Size()-VirtnetRqDMASize)
		if err != nil {
			rq.Stats.AllocFails++
			return mem.NoPage, 0, errNoMem
		}
		rq.freeDMA = rq.rqDMA[slot].next
		rq.rqDMA[slot] = rqDMA{page: f.Page(), addr: addr, ref: 1, next: -1}
		rq.mappedBlocks++
		// The mapping's own reference: the block outlives its last buffer
		// until it is unmapped.
		rq.d.fail(env.Mem.GetPage(c, f.Page()))
		f.Reserve(VirtnetRqDMASize)
		rq.lastDMA = slot
	}
	rq.rqDMA[rq.lastDMA].ref++
	// An order-0 fallback block cannot hold a PAGE_SIZE buffer after the
	// header: the kernel overran it (the regression behind 6.11's
	// "disable premapped mode by default"), and 6.13 shortens the buffer
	// in add_recvbuf_mergeable. The engine takes what is left.
	page, off := f.Take(c, min(size, f.Remaining()))
	return page, off, nil
}

// rqUnmap is virtnet_rq_unmap on the block of slot: --dma->ref, and at 0
// the block is unmapped (dma_unmap_page_attrs, DMA_ATTR_SKIP_CPU_SYNC) and
// the mapping's page reference dropped (put_page), which frees the block
// when its buffers are gone too. A coherent mapping needs no sync
// (dma->need_sync is false on x86).
func (rq *RQ) rqUnmap(slot int32) {
	d := &rq.rqDMA[slot]
	if d.ref == 0 || d.page == mem.NoPage {
		rq.d.fail(fmt.Errorf("virtio_net: rx queue %d: virtnet_rq_unmap of a free struct virtnet_rq_dma", rq.Index))
		return
	}
	if d.ref--; d.ref > 0 {
		return
	}
	env := rq.d.env
	rq.d.fail(env.DMA.Unmap(rq.CPU, d.addr))
	_, err := env.Mem.PutPage(rq.CPU, d.page)
	rq.d.fail(err)
	*d = rqDMA{page: mem.NoPage, next: rq.freeDMA}
	rq.freeDMA = slot
	rq.mappedBlocks--
}

// PremappedBlocks is the number of page_frag blocks the driver has mapped
// (struct virtnet_rq_dma in use); 0 unless the kernel premaps them.
func (rq *RQ) PremappedBlocks() int { return rq.mappedBlocks }

// freeBuffer gives back a buffer that was never posted.
func (rq *RQ) freeBuffer(page mem.PageID, pool bool) {
	rq.d.fail(rq.d.env.Releaser.Release(rq.CPU, page, pool, softirqCtx))
}

// mapBuffer makes the buffer's device address: vring_map_one_sg per buffer
// (DMA by the ring), the pool's premapped address plus the offset, or, for
// a premapped page_frag block (6.6+), the block's address plus the offset
// past its struct virtnet_rq_dma (virtnet_rq_init_one_sg).
// b is the buffer of slot.
func (rq *RQ) mapBuffer(b *rxBuf, slot int32) (uint64, error) {
	env := rq.d.env
	if rq.d.premapped && b.pool {
		return rq.Pool.DMAAddr(b.page) + uint64(b.off), nil
	}
	if rq.d.fragPremap {
		// The buffer was carved from the current block: rq->last_dma.
		d := &rq.rqDMA[rq.lastDMA]
		rq.bufMaps[slot].blk = rq.lastDMA + 1
		b.mapped = true
		return d.addr + uint64(b.off) - VirtnetRqDMASize, nil
	}
	addr, err := env.DMA.MapRange(rq.CPU, b.page, b.off, b.len)
	if err != nil {
		return 0, err
	}
	rq.bufMaps[slot].dma = addr
	b.mapped = true
	return addr, nil
}

// post adds one buffer of one descriptor with ctx. placed: the page of a
// whole-page buffer is in mem.Virtqueue already (AllocFragTo put it there).
func (rq *RQ) post(page mem.PageID, off, length, truesize uint32, pool bool, ctx uint64, placed bool) error {
	c := rq.CPU
	slot := rq.takeSlot()
	if slot < 0 {
		if rq.d.fragPremap {
			rq.rqUnmap(rq.lastDMA) // the reference virtnetRqAlloc took
		}
		rq.freeBuffer(page, pool)
		return virtq.ErrNoSpace
	}
	b := &rq.bufs[slot]
	b.set(page, off, length, truesize, pool, -1, rq.VQ.FreeHead())
	var addr uint64
	if rq.d.premapped && pool {
		addr = rq.Pool.DMAAddr(page) + uint64(off) // mapBuffer's premapped case, inlined
	} else {
		var err error
		if addr, err = rq.mapBuffer(b, slot); err != nil {
			rq.putSlot(slot)
			rq.freeBuffer(page, pool)
			return errNoMem
		}
	}
	c.Charge(sim.SymVirtqueueAdd, c.Costs().VirtqueueAdd)
	if err := rq.VQ.AddInbuf(virtq.SG{Addr: addr, Len: length}, virtq.Token(slot+1), ctx); err != nil {
		if b.mapped {
			rq.unmap(slot)
		}
		rq.putSlot(slot)
		rq.freeBuffer(page, pool)
		return err
	}
	if rq.d.wholePage && !placed { // rq.move(page, mem.Virtqueue) without the call
		if err := rq.d.env.Mem.Move(page, mem.Virtqueue, rq.Index); err != nil {
			rq.d.fail(err)
		}
	}
	return nil
}

// unmap undoes the ring mapping of the buffer of slot
// (vring_unmap_one_split), or gives back its share of its premapped block
// (virtnet_rq_unmap): the mapping a mapped buffer holds.
func (rq *RQ) unmap(slot int32) {
	m := &rq.bufMaps[slot]
	if m.blk != 0 {
		rq.rqUnmap(m.blk - 1)
		m.blk = 0
		return
	}
	rq.d.fail(rq.d.env.DMA.Unmap(rq.CPU, m.dma))
	m.dma = 0
}

// addRecvbufSmall is add_recvbuf_small: one buffer big enough for
// GOOD_PACKET_LEN after the header, the pad and the XDP headroom, with
// room for skb_shared_info so build_skb can use it in place. From a
// page_pool (the 2026 driver; small mode had none before) it is
// page_pool_alloc_frag of that size: two to a page without XDP.
func (rq *RQ) addRecvbufSmall() error {
	xdpHeadroom := rq.d.headroom()
	size := uint32(skbDataAlign(HdrLen+RxPad+GoodPacketLen+int(xdpHeadroom)) + ShinfoSize)
	page, off, pool, err := rq.allocBuffer(size)
	if err != nil {
		return err
	}
	// The device writes after the pad and headroom: sg_init_one(buf +
	// VIRTNET_RX_PAD + xdp_headroom, hdr_len + GOOD_PACKET_LEN).
	start := off + RxPad + xdpHeadroom
	return rq.post(page, start, HdrLen+GoodPacketLen, size, pool, uint64(xdpHeadroom), false)
}

// getMergeableBufLen is get_mergeable_buf_len: PAGE_SIZE - room with XDP,
// else the EWMA of packet lengths clamped to [min_buf_len, PAGE_SIZE -
// hdr_len], plus the header, L1-aligned.
func (rq *RQ) getMergeableBufLen(room uint32) uint32 {
	if room != 0 {
		return mem.PageSize - room
	}
	avg := rq.ewma
	if avg < rq.minBufLen {
		avg = rq.minBufLen
	}
	if max := uint32(mem.PageSize - HdrLen); avg > max {
		avg = max
	}
	return uint32(skbDataAlign(int(HdrLen + avg)))
}

// addRecvbufMergeable is add_recvbuf_mergeable: a buffer of the EWMA's
// length plus room, its truesize len + room in ctx.
//
//   - page_frag and page_pool fragments (the 2026 driver's
//     page_pool_alloc_frag, the 2023 series' 3/5): when the rest of the
//     page cannot hold another buffer of this size, the hole goes to
//     this one (length and truesize, only without headroom: XDP assumes
//     frame_sz is what it posted) and the page's offset moves past it
//     either way.
//   - page_pool pages (the 2023 series' 2/5): a whole page per buffer,
//     no hole, and still truesize len + room: mergeable_len_to_ctx(len +
//     room, headroom).
//   - whole pages from the page allocator (source page, not a kernel
//     variant): the truesize is the page.
func (rq *RQ) addRecvbufMergeable() error {
	headroom, room := rq.d.headroom(), rq.d.mrgRoom
	length := rq.getMergeableBufLen(room)
	var page mem.PageID
	var off uint32
	var pool bool
	if rq.d.poolFrags {
		// allocBuffer's page_pool fragment case, without the call.
		// A page-sized buffer's page goes to the ring's location at
		// once: one move, where AllocFrag's to mem.Driver would be
		// followed by post's to mem.Virtqueue in the same instant.
		to, owner := mem.Driver, rq.CPU.ID
		if rq.d.wholePage {
			to, owner = mem.Virtqueue, rq.Index
		}
		id, o, err := rq.Pool.AllocFragTo(rq.CPU, length+room, to, owner)
		if err != nil {
			rq.Stats.AllocFails++
			return errNoMem
		}
		page, off, pool = id, o, true
	} else {
		var err error
		if page, off, pool, err = rq.allocBuffer(length + room); err != nil {
			return err
		}
	}
	truesize := length + room
	switch {
	case rq.d.poolFrags:
		// hole = (PAGE_SIZE << order) - frag_offset: given to this
		// buffer when another of this size would not fit. A buffer
		// that fills its page (XDP's) leaves none: nothing to add.
		if hole := rq.Pool.FragRemaining(); hole < length+room && hole > 0 {
			if headroom == 0 {
				length += hole
				truesize += hole
			}
			rq.Pool.FragOffsetAdd(hole)
		}
	case rq.d.source == srcPageFrag:
		// The hole: when the rest of the page cannot hold another buffer,
		// give it to this one (only without headroom: XDP assumes
		// frame_sz is what it posted).
		if hole := rq.frag.Hole(length + room); hole > 0 && headroom == 0 {
			length += hole
			truesize += hole
		}
	case rq.d.source == srcPage:
		// A whole page per buffer: the truesize is the page.
		truesize = mem.PageSize
	}
	ctx := uint64(headroom)<<MrgCtxHeaderShift | uint64(truesize)
	return rq.post(page, off+headroom, length, truesize, pool, ctx, rq.d.poolFrags && rq.d.wholePage)
}

// getAPage is get_a_page: a spare page from rq->pages, else alloc_page.
func (rq *RQ) getAPage() (mem.PageID, error) {
	m := rq.d.env.Mem
	if p := rq.pages; p != mem.NoPage {
		pg := m.Page(p)
		rq.pages = pg.Private
		pg.Private = mem.NoPage
		return p, m.Move(p, mem.Driver, rq.Index)
	}
	id, err := m.AllocPages(rq.CPU, 0, mem.Driver, rq.Index)
	if err != nil {
		rq.Stats.AllocFails++
		return mem.NoPage, errNoMem
	}
	return id, nil
}

// givePages is give_pages: put a chain back on rq->pages.
func (rq *RQ) givePages(first mem.PageID) {
	m := rq.d.env.Mem
	end := first
	for {
		rq.d.fail(m.Move(end, mem.BigChain, rq.Index))
		next := m.Page(end).Private
		if next == mem.NoPage {
			break
		}
		end = next
	}
	m.Page(end).Private = rq.pages
	rq.pages = first
}

// addRecvbufBig is add_recvbuf_big: num_skbfrags + 1 pages chained through
// page->private, posted as num_skbfrags + 2 entries: the header, the rest
// of the first page, then one per page. virtqueue_add_inbuf puts them in
// num_skbfrags + 2 descriptors of the ring, or, when the queue may go
// indirect (INDIRECT_DESC negotiated, and big-mode queues have no ctx), in
// a table of their own behind a single ring descriptor
// (virtqueue_add_split: descs_used = 1).
func (rq *RQ) addRecvbufBig() error {
	d := rq.d
	n := d.numSkbFrags
	// virtqueue_add_split fails with ENOSPC when num_free < descs_used;
	// it is tested before taking pages, which add_recvbuf_big would then
	// give back to rq->pages.
	if rq.VQ.NumFree() < rq.DescPerBuf() {
		return virtq.ErrNoSpace
	}
	m := d.env.Mem
	var sgs [20]virtq.SG
	sg := sgs[:n+2]
	list := mem.NoPage
	for i := n + 1; i > 1; i-- {
		p, err := rq.getAPage()
		if err != nil {
			if list != mem.NoPage {
				rq.givePages(list)
			}
			return err
		}
		sg[i] = virtq.SG{Addr: pfnAddr(p, 0), Len: mem.PageSize}
		m.Page(p).Private = list
		list = p
	}
	first, err := rq.getAPage()
	if err != nil {
		if list != mem.NoPage {
			rq.givePages(list)
		}
		return err
	}
	sg[0] = virtq.SG{Addr: pfnAddr(first, 0), Len: HdrLen}
	sg[1] = virtq.SG{Addr: pfnAddr(first, PaddedVnetHdrLen), Len: mem.PageSize - PaddedVnetHdrLen}
	m.Page(first).Private = list
	slot := rq.takeSlot()
	if slot < 0 {
		rq.givePages(first)
		return virtq.ErrNoSpace
	}
	rq.bufs[slot] = rxBuf{head: rq.VQ.FreeHead(), page: first, len: uint32(mem.PageSize*(n+1) - PaddedVnetHdrLen + HdrLen), truesize: mem.PageSize, next: -1}
	c := rq.CPU
	costs := c.Costs()
	// vring_map_one_sg and the descriptor write for each entry; the
	// unmap at detach (vring_unmap_one_split) is charged here too.
	mapPair := costs.DMAMapDirect + costs.DMAUnmapDirect
	if d.env.DMA.IOMMU() {
		mapPair = costs.DMAMapIOMMU + costs.DMAUnmapIOMMU
	}
	c.Charge(sim.SymAddRecvbufBig, sim.Duration(len(sg))*(mapPair+costs.VirtqueueAdd))
	if d.indirectBig {
		// alloc_indirect_split: kmalloc_array(total_sg) with the refill's
		// GFP_ATOMIC; vring_map_single maps the filled table (unmapped
		// at detach). Its kfree is charged in getBuf.
		c.Charge(sim.SymAddRecvbufBig, costs.Kmalloc+mapPair)
	}
	if err := rq.VQ.Add(nil, sg, virtq.Token(slot+1), 0); err != nil {
		rq.putSlot(slot)
		rq.givePages(first)
		return err
	}
	for p := first; p != mem.NoPage; p = m.Page(p).Private {
		d.fail(m.Move(p, mem.Virtqueue, rq.Index))
	}
	return nil
}

// pfnAddr is a physical address for descriptors the engine does not map
// through mem.DMA (big mode charges the mapping cost without tracking it).
func pfnAddr(p mem.PageID, off uint32) uint64 {
	return uint64(p)<<mem.PageShift + uint64(off)
}

// MergeableBufLen is the length the next mergeable buffer would get
// (get_mergeable_buf_len without XDP room).
func (rq *RQ) MergeableBufLen() uint32 { return rq.getMergeableBufLen(0) }

// FragStats are the counters of the queue's page_frag (zero without one).
func (rq *RQ) FragStats() mem.FragStats {
	if rq.frag == nil {
		return mem.FragStats{}
	}
	return rq.frag.Stats()
}
