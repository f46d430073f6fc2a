package virtq

import "fmt"

// minIndirect is the smallest per-head indirect table allocated; tables grow
// by doubling (capped at num), so a head allocates O(log num) times at most
// and never once its largest buffer shape has been seen.
const minIndirect = 4

// Add stands for virtqueue_add_split (reached through virtqueue_add_sgs):
// it posts one buffer made of the out entries (device-readable) followed by
// the in entries (device-writable) and publishes its head on the avail ring.
// token must be non-zero; ctx must be 0 unless the queue was created with
// Config.Ctx. Indirect descriptors are used when negotiated, the buffer has
// more than one entry and the queue has no ctx (virtqueue_use_indirect).
//
// Errors: ErrNoSpace (ENOSPC, counted; with out entries it also notifies
// the device, as the kernel does "for historical reasons"), ErrBroken (EIO),
// and caller mistakes ErrZeroToken, ErrCtx, ErrNoSG, ErrTooManySG. ErrNoSpace
// and ErrBroken are returned bare, so the full-ring path does not allocate.
//
// Cost: O(len(out)+len(in)); no allocation unless a head needs a larger
// indirect table than it had before.
func (q *Queue) Add(out, in []SG, token Token, ctx uint64) error {
	return q.addSplit(out, in, token, ctx)
}

// AddInbuf is virtqueue_add_inbuf_ctx with one entry: the virtio_net
// receive refill hot path. It is addSplit for one writable entry (never
// indirect: that needs two), written out; anything addSplit would refuse
// goes through addSplit, which says why.
func (q *Queue) AddInbuf(sg SG, token Token, ctx uint64) error {
	if token == 0 || (ctx != 0 && !q.hasCtx) || q.broken || q.numFree == 0 {
		one := [1]SG{sg}
		return q.addSplit(nil, one[:], token, ctx)
	}
	head := q.freeHead
	e := &q.extra[head]
	e.addr, e.len, e.flags = sg.Addr, sg.Len, DescFWrite
	q.desc[head] = Desc{Addr: sg.Addr, Len: sg.Len, Flags: DescFWrite, Next: e.next}
	q.slots[head] = SlotAvail
	q.freeHead = e.next
	q.numFree--

	st := &q.state[head]
	st.data, st.ctx, st.indir = token, ctx, false
	q.publish(head)
	return nil
}

// AddOutbuf is virtqueue_add_outbuf with one entry.
func (q *Queue) AddOutbuf(sg SG, token Token) error {
	one := [1]SG{sg}
	return q.addSplit(one[:], nil, token, 0)
}

// addSplit is virtqueue_add_split. out and in do not escape.
func (q *Queue) addSplit(out, in []SG, token Token, ctx uint64) error {
	if token == 0 { // BUG_ON(data == NULL)
		return ErrZeroToken
	}
	if ctx != 0 && !q.hasCtx {
		return ErrCtx
	}
	if q.broken {
		return ErrBroken
	}
	total := len(out) + len(in)
	if total == 0 { // BUG_ON(total_sg == 0)
		return ErrNoSG
	}
	if uint64(total) > uint64(q.num) { // the kernel WARNs, then fails with ENOSPC
		return fmt.Errorf("virtq %q: %d entries, queue size %d: %w", q.name, total, q.num, ErrTooManySG)
	}

	head := q.freeHead
	indirect := q.indirect && total > 1 && q.numFree > 0 // virtqueue_use_indirect
	descsUsed := uint32(total)
	if indirect {
		descsUsed = 1
	}
	if q.numFree < descsUsed {
		q.counters.NoSpace++
		if len(out) > 0 {
			q.Notify()
		}
		return ErrNoSpace
	}

	if indirect {
		t := q.indirTable(head, total)
		for j, sg := range out {
			t[j] = Desc{Addr: sg.Addr, Len: sg.Len, Flags: DescFNext, Next: uint16(j + 1)}
		}
		for j, sg := range in {
			k := len(out) + j
			t[k] = Desc{Addr: sg.Addr, Len: sg.Len, Flags: DescFNext | DescFWrite, Next: uint16(k + 1)}
		}
		t[total-1].Flags &^= DescFNext
		q.freeHead = q.addDesc(head, indirectAddr(head), uint32(total)*DescSize, DescFIndirect)
	} else {
		i, prev := head, head
		for _, sg := range out {
			prev = i
			i = q.addDesc(i, sg.Addr, sg.Len, DescFNext)
		}
		for _, sg := range in {
			prev = i
			i = q.addDesc(i, sg.Addr, sg.Len, DescFNext|DescFWrite)
		}
		// Last one doesn't continue.
		q.desc[prev].Flags &^= DescFNext
		q.extra[prev].flags &^= DescFNext
		q.freeHead = i
	}
	q.numFree -= descsUsed

	q.state[head] = descState{data: token, ctx: ctx, indir: indirect}
	q.publish(head)
	return nil
}

// publish is virtqueue_add_split's tail: head goes into the next avail
// slot, avail->idx makes it visible, and num_added counts it; when
// num_added would wrap, it kicks ("This is very unlikely, but
// theoretically possible. Kick just in case.").
func (q *Queue) publish(head uint16) {
	q.avail.ring[q.availIdxShadow&q.mask] = head
	q.availIdxShadow++
	q.avail.idx = q.availIdxShadow
	q.numAdded++
	if q.numAdded == 1<<16-1 {
		q.counters.ForcedKicks++
		q.Kick()
	}
}

// addDesc is virtqueue_add_desc_split for the main table: it fills desc[i]
// and its private copy desc_extra[i] and returns the next free descriptor.
func (q *Queue) addDesc(i uint16, addr uint64, l uint32, flags uint16) uint16 {
	e := &q.extra[i]
	e.addr, e.len, e.flags = addr, l, flags
	q.desc[i] = Desc{Addr: addr, Len: l, Flags: flags, Next: e.next}
	q.slots[i] = SlotAvail
	return e.next
}

// indirTable stands for alloc_indirect_split, but reuses the head's table.
func (q *Queue) indirTable(head uint16, n int) []Desc {
	t := q.indir[head]
	if cap(t) < n {
		c := min(max(n, 2*cap(t), minIndirect), int(q.num))
		t = make([]Desc, c)
		q.counters.IndirectAllocs++
	}
	t = t[:n]
	q.indir[head] = t
	return t
}

// KickPrepare is virtqueue_kick_prepare_split: should the driver notify the
// device about the buffers added since the last call? With EVENT_IDX it asks
// vring_need_event(avail_event, new, old), otherwise it obeys
// used.flags & NO_NOTIFY. It resets num_added.
func (q *Queue) KickPrepare() bool {
	old := q.availIdxShadow - uint16(q.numAdded)
	new := q.availIdxShadow
	q.numAdded = 0
	if q.event {
		return NeedEvent(q.used.availEvent, new, old)
	}
	return q.used.flags&UsedFNoNotify == 0
}

// Notify is virtqueue_notify: it counts one kick, unless the queue is broken.
// It reports whether the notification was sent.
func (q *Queue) Notify() bool {
	if q.broken {
		return false
	}
	q.counters.Kicks++
	return true
}

// Kick is virtqueue_kick: KickPrepare, then Notify if needed. Unlike the
// kernel's return value ("false only if broken") it reports whether the
// device was notified.
func (q *Queue) Kick() bool {
	if !q.KickPrepare() {
		return false
	}
	return q.Notify()
}

// GetBuf is virtqueue_get_buf_ctx_split: it takes the next used buffer and
// returns its token, the length the device wrote and its ctx. ok is false
// when nothing is used yet or the queue is broken.
//
// It checks what the kernel checks of the used entry, the id: one out of
// range (id >= num) or not the head of a posted buffer
// (!desc_state[id].data) marks the queue broken (BAD_RING) and returns
// nothing. Like the kernel it does not check the length (a check against
// the buffer's writable bytes, 939779f5152d "virtio_ring: validate used
// buffer length", was reverted before 5.16): the length is returned as
// the device wrote it, and the driver checks it against what it posted
// (receive_small, receive_mergeable: rx_length_errors). Nor does it check
// used.idx against the buffers outstanding: an index the device moved too
// far yields entries whose ids fail the checks above once the posted heads
// are taken.
//
// After a good get the chain returns to the free list (LIFO) and, while
// callbacks are enabled, used_event is set to the new last_used_idx.
// Cost: O(chain length), no allocation.
func (q *Queue) GetBuf() (token Token, length uint32, ctx uint64, ok bool) {
	if q.broken || q.lastUsedIdx == q.used.idx { // more_used_split
		return 0, 0, 0, false
	}
	e := q.used.ring[q.lastUsedIdx&q.mask]
	if e.ID >= q.num {
		q.badRing("id %d out of range", e.ID)
		return 0, 0, 0, false
	}
	st := &q.state[e.ID]
	if st.data == 0 {
		q.badRing("id %d is not a head!", e.ID)
		return 0, 0, 0, false
	}
	token, ctx = st.data, st.ctx
	if h := uint16(e.ID); q.extra[h].flags&DescFNext == 0 {
		// detachBufSplit of a one-descriptor chain (every receive
		// buffer but big mode's), without the call.
		*st = descState{}
		q.slots[h] = SlotFree
		q.extra[h].next = q.freeHead
		q.freeHead = h
		q.numFree++
	} else {
		q.detachBufSplit(h)
	}
	q.lastUsedIdx++
	// "If we expect an interrupt for the next entry, tell host by writing
	// event index."
	if q.availFlagsShadow&AvailFNoInterrupt == 0 {
		q.avail.usedEvent = q.lastUsedIdx
	}
	return token, e.Len, ctx, true
}

// detachBufSplit is detach_buf_split: it walks the posted chain at head by
// desc_extra (driver-private, so the device cannot make it loop), returns
// every descriptor to the free list with the tail linked to the old
// free_head, and makes head the new free_head. The free list is LIFO.
func (q *Queue) detachBufSplit(head uint16) {
	q.state[head] = descState{}
	i := head
	n := uint32(1)
	for q.extra[i].flags&DescFNext != 0 {
		q.slots[i] = SlotFree
		i = q.extra[i].next
		n++
		if n > q.num {
			panic(fmt.Sprintf("virtq %q: internal chain from head %d longer than num %d", q.name, head, q.num))
		}
	}
	q.slots[i] = SlotFree
	q.extra[i].next = q.freeHead
	q.freeHead = head
	q.numFree += n
}

// DisableCB is virtqueue_disable_cb_split: ask the device not to interrupt.
// Without EVENT_IDX it sets avail.flags NO_INTERRUPT; with EVENT_IDX it
// leaves avail.flags at 0 and writes used_event = 0 (the kernel's "hack"),
// unless an interrupt already arrived since callbacks were enabled
// (event_triggered), in which case the device will not send another one and
// nothing is written. Either way only a hint: the device may still interrupt.
func (q *Queue) DisableCB() {
	if q.availFlagsShadow&AvailFNoInterrupt != 0 {
		return
	}
	q.availFlagsShadow |= AvailFNoInterrupt
	if q.eventTriggered {
		return
	}
	if q.event {
		q.avail.usedEvent = 0
	} else {
		q.avail.flags = q.availFlagsShadow
	}
}

// EnableCBPrepare is virtqueue_enable_cb_prepare(_split): turn callbacks
// back on optimistically (clear NO_INTERRUPT; without EVENT_IDX also in
// avail.flags), point used_event at last_used_idx, and return that index as
// an opaque value for Poll.
func (q *Queue) EnableCBPrepare() uint16 {
	q.eventTriggered = false
	q.enableFlags()
	q.avail.usedEvent = q.lastUsedIdx
	return q.lastUsedIdx
}

func (q *Queue) enableFlags() {
	if q.availFlagsShadow&AvailFNoInterrupt != 0 {
		q.availFlagsShadow &^= AvailFNoInterrupt
		if !q.event {
			q.avail.flags = q.availFlagsShadow
		}
	}
}

// Poll is virtqueue_poll(_split): has the device used buffers beyond the
// index EnableCBPrepare returned? False on a broken queue.
func (q *Queue) Poll(last uint16) bool {
	if q.broken {
		return false
	}
	return last != q.used.idx
}

// EnableCB is virtqueue_enable_cb: re-enable callbacks and report true if
// there is nothing pending (false means: poll again, a buffer raced in).
func (q *Queue) EnableCB() bool {
	return !q.Poll(q.EnableCBPrepare())
}

// EnableCBDelayed is virtqueue_enable_cb_delayed_split: like EnableCB but
// asks for the interrupt only after 3/4 of the outstanding buffers are used:
// used_event = last_used + (avail_idx_shadow - last_used)*3/4. It returns
// false if the device has already used more than that many.
func (q *Queue) EnableCBDelayed() bool {
	q.eventTriggered = false
	q.enableFlags()
	// (u16)(shadow - last_used) * 3 / 4 is computed in int in C: no wrap.
	bufs := uint16(uint32(q.availIdxShadow-q.lastUsedIdx) * 3 / 4)
	q.avail.usedEvent = q.lastUsedIdx + bufs
	return q.used.idx-q.lastUsedIdx <= bufs
}

// DetachUnusedBuf is virtqueue_detach_unused_buf_split: it detaches the
// posted buffer with the lowest head, rolls avail idx back by one, and
// returns its token; ok is false once every descriptor is free. Only valid
// once the device is stopped (after a reset), as in the kernel. Cost: O(num)
// per call.
func (q *Queue) DetachUnusedBuf() (Token, bool) {
	for i := range q.state {
		tok := q.state[i].data
		if tok == 0 {
			continue
		}
		q.detachBufSplit(uint16(i))
		q.availIdxShadow--
		q.avail.idx = q.availIdxShadow
		return tok, true
	}
	if q.numFree != q.num { // BUG_ON: "That should have freed everything."
		panic(fmt.Sprintf("virtq %q: no posted heads but num_free %d != num %d", q.name, q.numFree, q.num))
	}
	return 0, false
}

// Interrupt is vring_interrupt, run when the device's notification arrives:
// it reports whether the driver's callback should run. With nothing used it
// counts a spurious interrupt (IRQ_NONE); on a broken queue it does nothing.
// With EVENT_IDX it records event_triggered, which DisableCB consults.
func (q *Queue) Interrupt() bool {
	if q.lastUsedIdx == q.used.idx {
		q.counters.SpuriousIRQs++
		return false
	}
	if q.broken {
		return false
	}
	if q.event {
		q.eventTriggered = true
	}
	return true
}
