package virtionet

import (
	"errors"

	"ringlab/engine/mem"
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
		c.Spend(c.Costs().KickMMIO)
	} else {
		c.Spend(c.Costs().KickVMExit)
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
		// skb_page_frag_refill + get_page: one reference per buffer.
		page, off, ok := rq.frag.Alloc(c, size, L1CacheBytes)
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

// freeBuffer gives back a buffer that was never posted.
func (rq *RQ) freeBuffer(page mem.PageID, pool bool) {
	rq.d.fail(rq.d.env.Releaser.Release(rq.CPU, page, pool, softirqCtx))
}

// mapBuffer makes the buffer's device address: vring_map_one_sg per buffer
// (DMA by the ring), or the pool's premapped address plus the offset.
func (rq *RQ) mapBuffer(b *rxBuf) (uint64, error) {
	env := rq.d.env
	if rq.d.premapped && b.pool {
		return rq.Pool.DMAAddr(b.page) + uint64(b.off), nil
	}
	addr, err := env.DMA.MapRange(rq.CPU, b.page, b.off, b.len)
	if err != nil {
		return 0, err
	}
	b.dma, b.mapped = addr, true
	return addr, nil
}

// post adds one buffer of one descriptor with ctx.
func (rq *RQ) post(page mem.PageID, off, length, truesize uint32, pool bool, ctx uint64) error {
	c := rq.CPU
	slot := rq.takeSlot()
	if slot < 0 {
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
		if addr, err = rq.mapBuffer(b); err != nil {
			rq.putSlot(slot)
			rq.freeBuffer(page, pool)
			return errNoMem
		}
	}
	c.Spend(c.Costs().VirtqueueAdd)
	if err := rq.VQ.AddInbuf(virtq.SG{Addr: addr, Len: length}, virtq.Token(slot+1), ctx); err != nil {
		rq.unmap(b)
		rq.putSlot(slot)
		rq.freeBuffer(page, pool)
		return err
	}
	if rq.d.wholePage { // rq.move(page, mem.Virtqueue) without the call
		if err := rq.d.env.Mem.Move(page, mem.Virtqueue, rq.Index); err != nil {
			rq.d.fail(err)
		}
	}
	return nil
}

// unmap undoes a ring mapping.
func (rq *RQ) unmap(b *rxBuf) {
	if b.mapped {
		rq.d.fail(rq.d.env.DMA.Unmap(rq.CPU, b.dma))
		b.dma, b.mapped = 0, false
	}
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
	return rq.post(page, start, HdrLen+GoodPacketLen, size, pool, uint64(xdpHeadroom))
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
	headroom := rq.d.headroom()
	var tailroom uint32
	if headroom != 0 {
		tailroom = ShinfoSize
	}
	room := uint32(skbDataAlign(int(headroom + tailroom)))
	length := rq.getMergeableBufLen(room)
	var page mem.PageID
	var off uint32
	var pool bool
	if rq.d.poolFrags {
		// allocBuffer's page_pool fragment case, without the call.
		id, o, err := rq.Pool.AllocFrag(rq.CPU, length+room)
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
		// buffer when another of this size would not fit.
		if hole := rq.Pool.FragRemaining(); hole < length+room {
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
	return rq.post(page, off+headroom, length, truesize, pool, ctx)
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
// page->private, posted as num_skbfrags + 2 descriptors: the header, the
// rest of the first page, then one descriptor per page.
func (rq *RQ) addRecvbufBig() error {
	d := rq.d
	n := d.numSkbFrags
	if rq.VQ.NumFree() < n+2 {
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
	// vring_map_one_sg for each sg.
	dma := d.env.DMA
	for i := range sg {
		if dma.IOMMU() {
			c.Spend(c.Costs().DMAMapIOMMU + c.Costs().DMAUnmapIOMMU)
		} else {
			c.Spend(c.Costs().DMAMapDirect + c.Costs().DMAUnmapDirect)
		}
		c.Spend(c.Costs().VirtqueueAdd)
		_ = i
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
