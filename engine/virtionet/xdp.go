package virtionet

import (
	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/drop"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/virtq"
	"ringlab/engine/xdp"
)

// runXDP runs the program on a buffer holding n frame bytes and carries out
// the verdict as virtnet_xdp_handler and its callers do. It returns the
// action and the frame length after the program; ok is false when the
// buffer was consumed (TX, REDIRECT, DROP, ABORTED).
//
// The program sees the stored window of the frame (its first
// device.WindowSize - 12 bytes, every header a program parses) behind 256
// bytes of headroom; data_end is the end of what is stored.
func (rq *RQ) runXDP(b *rxBuf, n uint32) (bpf.Action, uint32, bool) {
	c := rq.CPU
	env := rq.d.env
	stored := min(n, device.WindowSize-device.VirtioNetHdrLen)
	buf := rq.xdpBuf
	if env.Prog.ReadsPacket() {
		// The window's bytes, built straight into the buffer when the
		// window does not hold them yet.
		rq.Dev.CopyFrame(b.head, buf[XDPHeadroom:XDPHeadroom+stored])
	}
	// The input lives in the queue, not on the stack: the program keeps a
	// pointer to it during the run, so a local would escape (one heap
	// allocation per packet). It is written field by field: a composite
	// literal is built on the stack and copied in wide loads that stall on
	// the narrow stores that built it.
	res := &rq.xdpRes
	newLen := int(n)
	if rq.d.constProg {
		// A constant program's verdict without building the input and
		// without the run: what Run returns for it (bpf.ConstVerdict).
		res.Action, res.Redirect, res.Fault, res.Insns = rq.d.constAct, bpf.Redirect{}, bpf.Fault{}, 2
	} else {
		in := &rq.xdpIn
		in.Buf = buf
		in.Data, in.DataEnd, in.DataMeta = XDPHeadroom, XDPHeadroom+int(stored), XDPHeadroom
		in.IngressIfindex, in.RxQueueIndex, in.EgressIfindex = 1, uint32(rq.Index), 0
		in.CPU = c.ID
		in.Clock = env.Clock
		env.Prog.Run(in, res)
		// Length after bpf_xdp_adjust_head / adjust_tail.
		newLen += -(res.Data - in.Data) + (res.DataEnd - in.DataEnd)
		if newLen < 0 {
			newLen = 0
		}
	}
	c.Charge(sim.SymBPFProgRunXDP, c.Costs().XDPProg+sim.Duration((res.Insns+7)/8)*c.Costs().XDPInsn8)
	rq.Stats.XDPPackets++
	var fate *device.Fate
	if rq.d.replay {
		fate = rq.replayXDP(b, res)
	}
	switch res.Action {
	case bpf.XDPPass:
		return bpf.XDPPass, uint32(newLen), true
	case bpf.XDPTx:
		rq.Stats.XDPTx++
		f := rq.toFrame(b, uint32(newLen), mem.XDPFrame)
		if f == xdp.NoFrame {
			// virtnet_xdp_handler: "convert buff to frame failed for
			// xdp", XDP_DROP.
			replayFailed(fate, drop.XDPFrame)
			rq.xdpDrop(b, drop.XDPFrame)
			return bpf.XDPDrop, 0, false
		}
		rq.d.xdpXmit(rq, f)
		rq.xdpXmit |= xmitTX
		return bpf.XDPTx, 0, false
	case bpf.XDPRedirect:
		rq.Stats.XDPRedirects++
		if why := rq.doRedirect(b, uint32(newLen), res.Redirect); why != drop.None {
			replayFailed(fate, why)
			rq.xdpDrop(b, why)
			return bpf.XDPDrop, 0, false
		}
		rq.xdpXmit |= xmitRedir
		return bpf.XDPRedirect, 0, false
	case bpf.XDPAborted:
		// trace_xdp_exception: counted, and the interpreter's reason (the
		// instruction offset and what it did) kept for the summary.
		rq.Stats.XDPAborted++
		if res.Fault.Faulted() {
			rq.LastFault = res.Fault
		}
	}
	// virtnet_xdp_handler: XDP_DROP, and XDP_ABORTED (or an action it
	// does not know, bpf_warn_invalid_xdp_action) after
	// trace_xdp_exception. Native XDP runs before any skb exists: the
	// buffer is recycled, no kfree_skb (generic XDP's do_xdp_generic is
	// what frees an skb with SKB_DROP_REASON_XDP).
	why := drop.XDPAbort
	if res.Action == bpf.XDPDrop {
		why = drop.XDPDrop
	}
	rq.xdpDrop(b, why)
	return bpf.XDPDrop, 0, false
}

// xdpDrop is the err_xdp path: count and free at once, the frags of a
// multi-buffer packet first (put_xdp_frags). A pool page goes straight
// back into the alloc cache (the driver knows it runs in the pool's NAPI).
func (rq *RQ) xdpDrop(b *rxBuf, why drop.Reason) {
	rq.Stats.XDPDrops++
	rq.dropPkt(why)
	if rq.xdpNFrags > 0 {
		rq.putXDPFrags()
	}
	if b.pool {
		// What Releaser.Release does with a head page of this queue's
		// pool and a direct put (page_pool_put_full_page with
		// allow_direct; with it set, the put's context does not matter),
		// without the interface call and the pool lookup.
		if pg := rq.d.env.Mem.Page(b.page); pg != nil && pg.IsHead() && pg.PP == rq.Pool.ID() && pg.PPMagic == pagepool.Signature {
			rq.d.fail(rq.Pool.Put(rq.CPU, b.page, pagepool.SyncFull, true, pagepool.Softirq))
			return
		}
	}
	rq.putPage(b.page, b.pool)
}

var directCtx = skb.Context{Softirq: true, Direct: true}

// putXDPFrags is put_xdp_frags: the frags of the multi-buffer packet
// being received go back at once, from the pool's NAPI.
func (rq *RQ) putXDPFrags() {
	for i := range rq.xdpFrags[:rq.xdpNFrags] {
		fr := &rq.xdpFrags[i]
		rq.putPage(fr.page, fr.pool)
	}
	rq.xdpNFrags = 0
}

// toFrame is xdp_convert_buff_to_frame: the frame lives in the buffer's
// headroom and remembers its memory model; a multi-buffer packet's frags
// stay in the head buffer's skb_shared_info and so go with the frame. The
// frame's pages go to loc: mem.XDPFrame, or where the caller queues the
// frame at once (a cpumap's ring, a devmap's transmit queue), one move
// rather than two in the same instant.
func (rq *RQ) toFrame(b *rxBuf, n uint32, loc mem.Loc) xdp.FrameID {
	env := rq.d.env
	id := env.Frames.Alloc()
	if id == xdp.NoFrame {
		return xdp.NoFrame
	}
	f := env.Frames.Get(id)
	f.Set(b.page, b.off, n, XDPHeadroom, b.truesize, xdp.MemPageShared, int16(rq.Index), int16(rq.CPU.ID))
	env.Frames.SetSeq(id, b.seq)
	if b.pool {
		f.Mem = xdp.MemPagePool
	}
	if rq.xdpNFrags > 0 && !rq.fragsToFrame(id, loc) {
		return xdp.NoFrame
	}
	rq.move(b.page, loc)
	return id
}

// fragsToFrame hands the packet's frags to frame id. Should the frame
// pool have no shared info left (it is sized so that it does not), the
// frame is given back and the caller drops the packet, frags included.
// The frags' pages go to loc.
func (rq *RQ) fragsToFrame(id xdp.FrameID, loc mem.Loc) bool {
	env := rq.d.env
	for i := range rq.xdpFrags[:rq.xdpNFrags] {
		fr := &rq.xdpFrags[i]
		if !env.Frames.AddFrag(id, fr.page, fr.off, fr.len) {
			env.Frames.Free(id)
			return false
		}
	}
	for i := range rq.xdpFrags[:rq.xdpNFrags] {
		rq.move(rq.xdpFrags[i].page, loc)
	}
	rq.xdpNFrags = 0 // the frame holds them now
	return true
}

// moveFrame records where a frame's pages are now: its head's and its
// frags'.
func (rq *RQ) moveFrame(id xdp.FrameID, loc mem.Loc) {
	env := rq.d.env
	f := env.Frames.Get(id)
	rq.move(f.Page, loc)
	if f.NrFrags > 0 {
		for _, fr := range env.Frames.Frags(id) {
			rq.move(fr.Page, loc)
		}
	}
}

// doRedirect is xdp_do_redirect: the target the program chose through
// bpf_redirect_map. It returns why the driver drops the packet when the
// redirect fails (virtnet_xdp_handler's XDP_REDIRECT: an error is
// XDP_DROP): drop.XDPRedir when there is no target, drop.XDPFrame when
// no xdp_frame could be made; drop.None when the frame is queued.
func (rq *RQ) doRedirect(b *rxBuf, n uint32, r bpf.Redirect) drop.Reason {
	env := rq.d.env
	c := rq.CPU
	if r.Kind != bpf.RedirectMap || r.Map == nil {
		return drop.XDPRedir
	}
	switch r.Map.Type() {
	case bpf.CPUMap:
		if env.Cpumap == nil || !env.Cpumap.Has(int(r.Key)) {
			return drop.XDPRedir
		}
		f := rq.toFrame(b, n, mem.CpumapRing)
		if f == xdp.NoFrame {
			return drop.XDPFrame
		}
		if !env.Cpumap.Enqueue(c, int(r.Key), f) {
			return drop.XDPRedir
		}
		return drop.None
	case bpf.DevMap:
		if env.Devmap == nil {
			return drop.XDPRedir
		}
		if _, ok := r.Map.DevMapEntry(r.Key); !ok {
			return drop.XDPRedir
		}
		f := rq.toFrame(b, n, mem.TxQueue)
		if f == xdp.NoFrame {
			return drop.XDPFrame
		}
		env.Devmap.Enqueue(c, f)
		return drop.None
	}
	return drop.XDPRedir
}

// receiveMergeableXDP is receive_mergeable_xdp for what receiveMergeable's
// inline case does not take: a buffer without XDP headroom, or a packet of
// several buffers. For a program without frags support (xdp.frags) the
// packet is first copied into a fresh page (mergeable_xdp_get_buf,
// xdp_linearize_page). With it, a short headroom costs a copy of the first
// buffer alone (mergeable_xdp_get_buf), and the other buffers become the
// xdp_buff's frags (virtnet_build_xdp_buff_mrg), which share the verdict:
// freed with the packet (put_xdp_frags), carried by the xdp_frame on TX
// and REDIRECT, the skb's frags on PASS (build_skb_from_xdp_buff).
func (rq *RQ) receiveMergeableXDP(b *rxBuf, length, headroom uint32, numBuf int) {
	c := rq.CPU
	n := length - HdrLen
	if !rq.d.xdpFrags {
		if headroom < rq.d.headroom() || numBuf > 1 {
			rq.Stats.Linearized++
			c.Charge(sim.SymReceiveMergeable, c.Costs().PageAlloc+memcpyCost(c, n))
			n += rq.consumeRest(numBuf, true)
			if n+XDPHeadroom+ShinfoSize > mem.PageSize {
				// xdp_linearize_page: the packet does not fit a page;
				// receive_mergeable_xdp's err_xdp.
				rq.Stats.XDPDrops++
				rq.dropPkt(drop.XDPBuff)
				rq.putPage(b.page, b.pool)
				return
			}
		}
		if act, n2, ok := rq.runXDP(b, n); ok && act == bpf.XDPPass {
			rq.buildAndDeliver(b, n2)
		}
		return
	}
	if headroom < rq.d.headroom() {
		// The first buffer alone into a fresh page with headroom (the
		// engine keeps the buffer's page and charges the copy).
		if n+uint32(skbDataAlign(XDPHeadroom+ShinfoSize)) > mem.PageSize {
			rq.xdpErr(b, numBuf)
			return
		}
		rq.Stats.Linearized++
		c.Charge(sim.SymReceiveMergeable, c.Costs().PageAlloc+memcpyCost(c, n))
	}
	if numBuf > skb.MaxSkbFrags+1 { // virtnet_build_xdp_buff_mrg: -EINVAL
		rq.xdpErr(b, numBuf)
		return
	}
	if left := rq.buildXDPFrags(numBuf); left >= 0 {
		rq.putXDPFrags()
		rq.xdpErr(b, left)
		return
	}
	if act, n2, ok := rq.runXDP(b, n); ok && act == bpf.XDPPass {
		rq.buildAndDeliver(b, n2)
	}
	rq.xdpNFrags = 0 // every verdict consumed them
}

// xdpErr is receive_mergeable_xdp's err_xdp: the head buffer and the
// numBuf-1 buffers still in the ring are freed (mergeable_buf_free), the
// packet counted as an XDP drop.
func (rq *RQ) xdpErr(b *rxBuf, numBuf int) {
	rq.putPage(b.page, b.pool)
	rq.consumeRest(numBuf, false)
	rq.Stats.XDPDrops++
	rq.dropPkt(drop.XDPBuff)
}

// buildXDPFrags is virtnet_build_xdp_buff_mrg's loop: the numBuf-1 buffers
// after the first become the packet's frags (rq.xdpFrags), each checked
// against its truesize. On a missing buffer or a bad length it stops and
// returns what mergeable_buf_free is then called with (its buffers after
// this one are still in the ring); -1 when every frag is in.
func (rq *RQ) buildXDPFrags(numBuf int) int {
	for numBuf--; numBuf > 0; numBuf-- {
		fr := &rq.xdpFrags[rq.xdpNFrags]
		n, ctx, ok := rq.getBuf(fr)
		if !ok {
			// "rx error: %d buffers out of %d missing"
			rq.Stats.LengthErrors++
			return numBuf
		}
		rq.Stats.Bytes += uint64(n)
		ts := uint32(ctx & (1<<MrgCtxHeaderShift - 1))
		hr := uint32(ctx >> MrgCtxHeaderShift)
		var tr uint32
		if hr != 0 {
			tr = ShinfoSize
		}
		if n > ts-uint32(skbDataAlign(int(hr+tr))) || ts > mem.PageSize {
			rq.Stats.LengthErrors++
			rq.putPage(fr.page, fr.pool)
			return numBuf
		}
		fr.len, fr.truesize = n, ts
		rq.xdpNFrags++
	}
	return -1
}

// xdpXmit is virtnet_xdp_xmit for one frame from XDP_TX: reclaim what the
// host has sent, then queue the frame on this CPU's send queue, its head
// and each frag one sg entry (__virtnet_xdp_xmit_one). A full ring returns
// the frame to its pool from NAPI (xdp_return_frame_rx_napi) and counts
// tx_xdp_tx_drops.
func (d *Driver) xdpXmit(rq *RQ, f xdp.FrameID) {
	c := rq.CPU
	sq := d.SQ[c.ID%len(d.SQ)]
	sq.Dev.CatchUp(c.Now())
	d.freeOldXmit(c, sq)
	sq.Stats.XDPTx++
	fr := d.env.Frames.Get(f)
	c.Charge(sim.SymVirtqueueAdd, c.Costs().VirtqueueAdd)
	addr := uint64(fr.Page)<<mem.PageShift + uint64(fr.Off)
	var err error
	if fr.NrFrags == 0 {
		err = sq.VQ.AddOutbuf(virtq.SG{Addr: addr, Len: fr.Len + HdrLen}, virtq.Token(f)+1)
	} else {
		sg := append(sq.sg[:0], virtq.SG{Addr: addr, Len: fr.Len + HdrLen})
		for _, fg := range d.env.Frames.Frags(f) {
			sg = append(sg, virtq.SG{Addr: uint64(fg.Page)<<mem.PageShift + uint64(fg.Off), Len: fg.Len})
		}
		err = sq.VQ.Add(sg, nil, virtq.Token(f)+1, 0)
	}
	if err != nil {
		// virtnet_xdp_xmit: __virtnet_xdp_xmit_one found no room;
		// xdp_tx_drops, and the frame goes back
		// (xdp_return_frame_rx_napi): an xdp_frame, no skb.
		sq.Stats.XDPTxDrops++
		sq.Stats.Reasons.Add(drop.XDPTxFull)
		d.fail(d.env.Frames.Return(c, f, d.env.Releaser, directCtx))
		return
	}
	sq.frags += int(fr.NrFrags)
	sq.descs += sq.descsOf(fr)
	rq.moveFrame(f, mem.TxQueue)
}

// descsOf is how many descriptors frame fr's buffer takes in the send
// queue: one per sg entry, or one for them all when indirect descriptors
// were negotiated (the send queue has no ctx).
func (sq *SQ) descsOf(fr *xdp.Frame) int {
	if fr.NrFrags == 0 || sq.VQ.Indirect() {
		return 1
	}
	return 1 + int(fr.NrFrags)
}

// freeOldXmit is the reclaim loop of virtnet_xdp_xmit / free_old_xmit on
// c: every frame the host has sent goes back with xdp_return_frame, every
// ACK is freed.
func (d *Driver) freeOldXmit(c *sim.CPU, sq *SQ) {
	for {
		tok, _, _, ok := sq.VQ.GetBuf()
		if !ok {
			return
		}
		c.Charge(sim.SymVirtqueueGetBuf, c.Costs().VirtqueueGetBuf)
		if tok == ackToken {
			sq.Stats.Packets++
			sq.Stats.Bytes += ackBytes
			sq.acks--
			sq.descs--
			continue
		}
		f := xdp.FrameID(tok - 1)
		fr := d.env.Frames.Get(f)
		sq.Stats.Packets++
		sq.Stats.Bytes += uint64(fr.Len) // xdp_get_frame_len: the head, then the frags
		for _, fg := range d.env.Frames.Frags(f) {
			sq.Stats.Bytes += uint64(fg.Len)
		}
		sq.frags -= int(fr.NrFrags)
		sq.descs -= sq.descsOf(fr)
		d.fail(d.env.Frames.Return(c, f, d.env.Releaser, softirqCtx))
	}
}

// An ACK on a send queue: its token (no xdp_frame's: frames are numbered
// from 1 well below it), the address of its linear data (a kmalloc'd
// sk_buff head, outside the pages the engine tracks) and its length, the
// virtio_net header in front of a 66-byte frame (Ethernet, IPv4, TCP
// with the timestamp option).
const (
	ackToken virtq.Token = 1 << 62
	ackAddr  uint64      = 1 << 52
	ackBytes             = 66
)

// XmitACK is start_xmit of a pure ACK that TCP sent on c (tcp_send_ack):
// reclaim what the host has sent (free_old_xmit_skbs), add the ACK to
// c's send queue as one descriptor (the header and the frame in one
// buffer, VIRTIO_F_ANY_LAYOUT), and kick the host when the ring's rules
// say it waits for one (virtqueue_kick_prepare: EVENT_IDX's avail_event,
// set when the host's handle_tx found the ring empty). A full ring drops
// the ACK (the kernel stops the queue and the qdisc holds it; the engine
// counts it instead, tx_ack_drops).
func (d *Driver) XmitACK(c *sim.CPU) {
	sq := d.SQ[c.ID%len(d.SQ)]
	sq.Dev.CatchUp(c.Now())
	d.freeOldXmit(c, sq)
	c.Charge(sim.SymVirtqueueAdd, c.Costs().VirtqueueAdd)
	if err := sq.VQ.AddOutbuf(virtq.SG{Addr: ackAddr, Len: ackBytes + HdrLen}, ackToken); err != nil {
		sq.Stats.ACKDrops++
		sq.Stats.Reasons.Add(drop.ACKTxFull)
		return
	}
	sq.acks++
	sq.descs++
	sq.Stats.ACKs++
	d.kickTX(c, sq)
}

// replayTaken records, for a replay, that the driver took the frame in
// b's buffer (its first) from the ring.
//
//go:noinline
func (rq *RQ) replayTaken(b *rxBuf) {
	b.seq = rq.Dev.FrameSeq(b.head)
	if f := rq.Dev.Traffic().Fate(b.seq, device.OutcomeReceived); f != nil {
		f.Taken = rq.CPU.Now()
	}
}

// replayXDP records, for a replay, the program's verdict on b's frame
// and what it read and wrote of it (bpf.Program.TracePacketAccess).
//
//go:noinline
func (rq *RQ) replayXDP(b *rxBuf, res *bpf.Result) *device.Fate {
	f := rq.Dev.Traffic().Fate(b.seq, device.OutcomeXDP)
	if f == nil {
		return nil
	}
	f.Action, f.Failed, f.Insns = uint8(min(res.Action, 255)), false, int32(res.Insns)
	f.Loads, f.Stores, f.ReadLo, f.ReadHi, f.WriteLo, f.WriteHi, f.HeadMove, f.TailMove = 0, 0, 0, 0, 0, 0, 0, 0
	if rq.d.constProg {
		return f // nothing read or written
	}
	in := &rq.xdpIn
	a := rq.d.env.Prog.LastPacketAccess()
	f.Loads, f.Stores = int32(a.Loads), int32(a.Stores)
	if a.Loads > 0 {
		f.ReadLo, f.ReadHi = int32(a.ReadLo-in.Data), int32(a.ReadHi-in.Data)
	}
	if a.Stores > 0 {
		f.WriteLo, f.WriteHi = int32(a.WriteLo-in.Data), int32(a.WriteHi-in.Data)
	}
	f.HeadMove, f.TailMove = int32(res.Data-in.Data), int32(res.DataEnd-in.DataEnd)
	return f
}

// replayFailed marks a replayed frame whose TX or REDIRECT the driver
// could not carry out (it drops it).
func replayFailed(f *device.Fate, why drop.Reason) {
	if f != nil {
		f.Failed, f.Drop = true, why
	}
}
