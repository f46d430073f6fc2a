package virtionet

import (
	"ringlab/engine/bpf"
	"ringlab/engine/device"
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
	in := &rq.xdpIn
	in.Buf = buf
	in.Data, in.DataEnd, in.DataMeta = XDPHeadroom, XDPHeadroom+int(stored), XDPHeadroom
	in.IngressIfindex, in.RxQueueIndex, in.EgressIfindex = 1, uint32(rq.Index), 0
	in.CPU = c.ID
	in.Clock = env.Clock
	res := &rq.xdpRes
	env.Prog.Run(in, res)
	c.Spend(c.Costs().XDPProg + sim.Duration((res.Insns+7)/8)*c.Costs().XDPInsn8)
	rq.Stats.XDPPackets++
	// Length after bpf_xdp_adjust_head / adjust_tail.
	newLen := int(n) - (res.Data - in.Data) + (res.DataEnd - in.DataEnd)
	if newLen < 0 {
		newLen = 0
	}
	switch res.Action {
	case bpf.XDPPass:
		return bpf.XDPPass, uint32(newLen), true
	case bpf.XDPTx:
		rq.Stats.XDPTx++
		f := rq.toFrame(b, uint32(newLen))
		if f == xdp.NoFrame {
			rq.xdpDrop(b)
			return bpf.XDPDrop, 0, false
		}
		rq.d.xdpXmit(rq, f)
		rq.xdpXmit |= xmitTX
		return bpf.XDPTx, 0, false
	case bpf.XDPRedirect:
		rq.Stats.XDPRedirects++
		if !rq.doRedirect(b, uint32(newLen), res.Redirect) {
			rq.xdpDrop(b)
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
	rq.xdpDrop(b)
	return bpf.XDPDrop, 0, false
}

// xdpDrop is the err_xdp path: count and free at once. A pool page goes
// straight back into the alloc cache (the driver knows it runs in the
// pool's NAPI).
func (rq *RQ) xdpDrop(b *rxBuf) {
	rq.Stats.XDPDrops++
	rq.Stats.Drops++
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
	rq.release(b.page, b.pool, directCtx)
}

var directCtx = skb.Context{Softirq: true, Direct: true}

// toFrame is xdp_convert_buff_to_frame: the frame lives in the buffer's
// headroom and remembers its memory model.
func (rq *RQ) toFrame(b *rxBuf, n uint32) xdp.FrameID {
	env := rq.d.env
	id := env.Frames.Alloc()
	if id == xdp.NoFrame {
		return xdp.NoFrame
	}
	f := env.Frames.Get(id)
	f.Set(b.page, b.off, n, XDPHeadroom, b.truesize, xdp.MemPageShared, int16(rq.Index), int16(rq.CPU.ID))
	if b.pool {
		f.Mem = xdp.MemPagePool
	}
	rq.move(b.page, mem.XDPFrame)
	return id
}

// doRedirect is xdp_do_redirect: the target the program chose through
// bpf_redirect_map. It reports false when there is none (the driver then
// drops).
func (rq *RQ) doRedirect(b *rxBuf, n uint32, r bpf.Redirect) bool {
	env := rq.d.env
	c := rq.CPU
	if r.Kind != bpf.RedirectMap || r.Map == nil {
		return false
	}
	switch r.Map.Type() {
	case bpf.CPUMap:
		if env.Cpumap == nil || !env.Cpumap.Has(int(r.Key)) {
			return false
		}
		f := rq.toFrame(b, n)
		if f == xdp.NoFrame {
			return false
		}
		rq.move(b.page, mem.CpumapRing)
		return env.Cpumap.Enqueue(c, int(r.Key), f)
	case bpf.DevMap:
		if env.Devmap == nil {
			return false
		}
		if _, ok := r.Map.DevMapEntry(r.Key); !ok {
			return false
		}
		f := rq.toFrame(b, n)
		if f == xdp.NoFrame {
			return false
		}
		rq.move(b.page, mem.TxQueue)
		env.Devmap.Enqueue(c, f)
		return true
	}
	return false
}

// receiveMergeableXDP is the XDP part of receive_mergeable: a buffer
// without headroom, or a multi-buffer packet for a program without frags
// support, is first copied into a fresh page (mergeable_xdp_get_buf,
// xdp_linearize_page).
func (rq *RQ) receiveMergeableXDP(b *rxBuf, length, headroom uint32, numBuf int) {
	c := rq.CPU
	n := length - HdrLen
	if headroom < rq.d.headroom() || (numBuf > 1 && !rq.d.s.XDP.Frags) {
		rq.Stats.Linearized++
		c.Spend(c.Costs().PageAlloc + memcpyCost(c, n))
		n += rq.consumeRest(numBuf, true)
		if n+XDPHeadroom+ShinfoSize > mem.PageSize {
			rq.Stats.XDPDrops++
			rq.Stats.Drops++
			rq.release(b.page, b.pool, softirqCtx)
			return
		}
	} else {
		// Multi-buffer XDP: the frags ride along; they are freed with the
		// packet here (a simplification: the engine keeps only the head
		// buffer of a multi-buffer xdp_buff).
		n += rq.consumeRest(numBuf, false)
	}
	act, n2, ok := rq.runXDP(b, n)
	if !ok || act != bpf.XDPPass {
		return
	}
	rq.buildAndDeliver(b, n2)
}

// xdpXmit is virtnet_xdp_xmit for one frame from XDP_TX: reclaim what the
// host has sent, then queue the frame on this CPU's send queue. A full
// ring returns the frame to its pool from NAPI (xdp_return_frame_rx_napi)
// and counts tx_xdp_tx_drops.
func (d *Driver) xdpXmit(rq *RQ, f xdp.FrameID) {
	c := rq.CPU
	sq := d.SQ[c.ID%len(d.SQ)]
	sq.Dev.CatchUp(c.Now())
	d.freeOldXmit(sq, rq)
	sq.Stats.XDPTx++
	fr := d.env.Frames.Get(f)
	c.Spend(c.Costs().VirtqueueAdd)
	addr := uint64(fr.Page)<<mem.PageShift + uint64(fr.Off)
	if err := sq.VQ.AddOutbuf(virtq.SG{Addr: addr, Len: fr.Len + HdrLen}, virtq.Token(f)+1); err != nil {
		sq.Stats.XDPTxDrops++
		d.fail(d.env.Frames.Return(c, f, d.env.Releaser, directCtx))
		return
	}
	rq.move(fr.Page, mem.TxQueue)
}

// freeOldXmit is the reclaim loop of virtnet_xdp_xmit / free_old_xmit:
// every frame the host has sent goes back with xdp_return_frame.
func (d *Driver) freeOldXmit(sq *SQ, rq *RQ) {
	c := rq.CPU
	for {
		tok, _, _, ok := sq.VQ.GetBuf()
		if !ok {
			return
		}
		c.Spend(c.Costs().VirtqueueGetBuf)
		f := xdp.FrameID(tok - 1)
		fr := d.env.Frames.Get(f)
		sq.Stats.Packets++
		sq.Stats.Bytes += uint64(fr.Len)
		d.fail(d.env.Frames.Return(c, f, d.env.Releaser, softirqCtx))
	}
}
