package virtq

import (
	"errors"
	"fmt"
)

// The device side: what the simulated host (vhost, QEMU) does to the shared
// rings. It may be buggy or hostile, so the driver side trusts none of it;
// the device methods themselves never panic on any argument. A problem the
// device detects in the driver's rings is reported as BAD_RING too, since in
// the simulation both ends share one broken flag.

// ChainInfo describes a descriptor chain as the device sees it.
type ChainInfo struct {
	Descs    int    // buffer descriptors (table entries for an indirect chain)
	Readable uint64 // bytes the device may read (out), in bytes
	Writable uint64 // bytes the device may write (in), in bytes
	Indirect bool   // the head is an INDIRECT descriptor
}

// deviceErr records a device-detected ring error as BAD_RING and returns it.
// Only on error paths, so the allocation does not matter.
func (q *Queue) deviceErr(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	q.badRing("%s", msg)
	return fmt.Errorf("virtq %q: %s: %w", q.name, msg, ErrBadRing)
}

// DevicePop takes the next available head, as vhost_get_vq_desc or QEMU's
// virtqueue_split_pop do: nothing when the device's last_avail equals
// avail.idx. It writes nothing the driver reads, as vhost does (its
// vhost_get_vq_desc assumes notifications are off, "if they aren't we
// would need to update avail_event index", and leaves it alone), unless DeviceSetAvailEventOnPop asked for QEMU's rule: with
// EVENT_IDX, avail_event = last_avail after every pop ("kick me when you
// add past what I have taken"). An avail idx more than num ahead of
// last_avail, or a head out of range, is a ring error.
// Cost: O(chain length) for the slot states, no allocation.
func (q *Queue) DevicePop() (head uint16, ok bool) {
	d := &q.dev
	idx := q.avail.idx
	if idx == d.lastAvail {
		return 0, false
	}
	if uint32(idx-d.lastAvail) > q.num {
		q.popErr()
		return 0, false
	}
	head = q.avail.ring[d.lastAvail&q.mask]
	if uint32(head) >= q.num {
		q.popErr()
		return 0, false
	}
	d.lastAvail++
	if d.popEvent {
		q.used.availEvent = d.lastAvail
	}
	if q.state[head].data != 0 {
		q.markChain(head, SlotDevice)
	}
	return head, true
}

// DeviceSetAvailEventOnPop chooses the device's rule for avail_event (with
// EVENT_IDX; without it the option does nothing). Off (the default) is
// vhost's: avail_event is written only by DeviceEnableNotify. On is
// virtqueue_split_pop's in QEMU (hw/virtio/virtio.c) and libvhost-user's
// vu_queue_pop while the queue's notification is enabled: every pop also
// writes avail_event = last_avail.
func (q *Queue) DeviceSetAvailEventOnPop(on bool) { q.dev.popEvent = on && q.event }

// DeviceEnableNotify is vhost_enable_notify (drivers/vhost/vhost.c): the
// device found no usable buffer and asks to be kicked for the next one.
// With EVENT_IDX it writes avail_event = the avail index it has seen
// (vhost_update_avail_event(vq, vq->avail_idx)), so that any buffer the
// driver adds from there kicks; without it, it clears used.flags
// NO_NOTIFY. The device reads avail.idx now: vhost re-read it when it ran
// out (vhost_get_vq_desc re-reads when last_avail_idx catches up with its
// copy), and vhost_enable_notify's second read, which returns true when
// the driver slipped a buffer in meanwhile, finds the same index in a
// simulation where the driver does not run in between.
func (q *Queue) DeviceEnableNotify() {
	if q.event {
		q.used.availEvent = q.avail.idx
		return
	}
	q.used.flags &^= UsedFNoNotify
}

// DeviceDisableNotify is vhost_disable_notify: without EVENT_IDX it sets
// used.flags NO_NOTIFY; with EVENT_IDX it writes nothing (vhost keeps
// NO_NOTIFY in its private used_flags), and the driver stops kicking
// because its avail index has moved past avail_event.
func (q *Queue) DeviceDisableNotify() {
	if !q.event {
		q.used.flags |= UsedFNoNotify
	}
}

// popErr records why DevicePop refused the next avail entry; kept out of
// line so that DevicePop stays small.
//
//go:noinline
func (q *Queue) popErr() {
	d := &q.dev
	idx := q.avail.idx
	if uint32(idx-d.lastAvail) > q.num {
		q.deviceErr("avail idx %d is %d ahead of last_avail %d, more than num %d", idx, idx-d.lastAvail, d.lastAvail, q.num)
		return
	}
	q.deviceErr("avail ring head %d out of range", q.avail.ring[d.lastAvail&q.mask])
}

// DeviceDesc reads descriptor i (modulo num) of the main table.
func (q *Queue) DeviceDesc(i uint16) Desc { return q.desc[i&q.mask] }

// DeviceIndirect reads entry j of the indirect table that descriptor head
// points to. ok is false when head is not an INDIRECT descriptor or j is
// past the table's length.
func (q *Queue) DeviceIndirect(head uint16, j int) (Desc, bool) {
	t, ok := q.indirectTable(head)
	if !ok || j < 0 || j >= len(t) {
		return Desc{}, false
	}
	return t[j], true
}

// indirectTable resolves the table an INDIRECT descriptor at i points to:
// the per-head table whose synthetic address it carries, limited to Len/16.
func (q *Queue) indirectTable(i uint16) ([]Desc, bool) {
	if uint32(i) >= q.num || q.indir == nil {
		return nil, false
	}
	d := q.desc[i]
	if d.Flags&DescFIndirect == 0 || d.Addr != indirectAddr(i) || d.Len == 0 || d.Len%DescSize != 0 {
		return nil, false
	}
	t := q.indir[i]
	n := d.Len / DescSize
	if uint64(n) > uint64(len(t)) {
		return nil, false
	}
	return t[:n], true
}

// DeviceChain walks the chain at head as a device does (vhost_get_vq_desc,
// get_indirect) and sums its readable and writable bytes. It reads only the
// shared descriptor table, so it checks everything: head or next out of
// range, a chain looping or longer than num, an indirect descriptor that is
// not alone at the head, with a bad length or address, nested indirect, a
// readable descriptor after a writable one. Any of these marks the queue
// broken and returns an error wrapping ErrBadRing. Cost: O(chain length),
// no allocation on success.
func (q *Queue) DeviceChain(head uint16) (ChainInfo, error) {
	if uint32(head) < q.num {
		// A lone descriptor (every buffer a receive queue posts but big
		// mode's): what the walk below finds, without walking.
		if d := &q.desc[head]; d.Flags&(DescFIndirect|DescFNext) == 0 {
			if d.Flags&DescFWrite != 0 {
				return ChainInfo{Descs: 1, Writable: uint64(d.Len)}, nil
			}
			return ChainInfo{Descs: 1, Readable: uint64(d.Len)}, nil
		}
	}
	return q.deviceChain(head)
}

// deviceChain is DeviceChain for any chain.
func (q *Queue) deviceChain(head uint16) (ChainInfo, error) {
	var ci ChainInfo
	if uint32(head) >= q.num {
		return ci, q.deviceErr("chain head %d out of range", head)
	}
	d := q.desc[head]
	if d.Flags&DescFIndirect != 0 {
		return q.deviceIndirectChain(head, d)
	}
	i := head
	wrote := false
	for n := uint32(1); ; n++ {
		if d.Flags&DescFIndirect != 0 {
			return ci, q.deviceErr("desc %d in chain from head %d is INDIRECT", i, head)
		}
		if err := ci.account(d, &wrote); err != nil {
			return ci, q.deviceErr("desc %d in chain from head %d: %v", i, head, err)
		}
		if d.Flags&DescFNext == 0 {
			return ci, nil
		}
		if uint32(d.Next) >= q.num {
			return ci, q.deviceErr("desc %d: next %d out of range", i, d.Next)
		}
		if n >= q.num {
			return ci, q.deviceErr("loop detected: chain from head %d longer than num %d", head, q.num)
		}
		i = d.Next
		d = q.desc[i]
	}
}

func (q *Queue) deviceIndirectChain(head uint16, d Desc) (ChainInfo, error) {
	ci := ChainInfo{Indirect: true}
	if d.Flags&DescFNext != 0 {
		return ci, q.deviceErr("indirect desc %d also has NEXT", head)
	}
	t, ok := q.indirectTable(head)
	if !ok {
		return ci, q.deviceErr("indirect desc %d: table addr %#x len %d not mapped", head, d.Addr, d.Len)
	}
	j := uint16(0)
	wrote := false
	for n := 1; ; n++ {
		e := t[j]
		if e.Flags&DescFIndirect != 0 {
			return ci, q.deviceErr("nested indirect desc %d in table of head %d", j, head)
		}
		if err := ci.account(e, &wrote); err != nil {
			return ci, q.deviceErr("indirect desc %d of head %d: %v", j, head, err)
		}
		if e.Flags&DescFNext == 0 {
			return ci, nil
		}
		if int(e.Next) >= len(t) {
			return ci, q.deviceErr("indirect desc %d of head %d: next %d out of range %d", j, head, e.Next, len(t))
		}
		if n >= len(t) {
			return ci, q.deviceErr("loop detected in indirect table of head %d", head)
		}
		j = e.Next
	}
}

var errOutAfterIn = errors.New("readable descriptor after writable")

// account adds d to the totals; wrote tracks whether a writable descriptor
// has been seen (the spec puts all readable ones first).
func (ci *ChainInfo) account(d Desc, wrote *bool) error {
	if d.Flags&DescFWrite != 0 {
		*wrote = true
		ci.Writable += uint64(d.Len)
	} else {
		if *wrote {
			return errOutAfterIn
		}
		ci.Readable += uint64(d.Len)
	}
	ci.Descs++
	return nil
}

// DeviceAddUsed writes {id, len} at used.ring[used_idx & (num-1)] and
// advances the device's used index without publishing it (vhost batches
// used entries, then updates used.idx once). len is in bytes written.
func (q *Queue) DeviceAddUsed(id, length uint32) {
	d := &q.dev
	q.used.ring[d.usedIdx&q.mask] = UsedElem{ID: id, Len: length}
	d.usedIdx++
	if id < q.num && q.state[id].data != 0 {
		q.markChain(uint16(id), SlotUsed)
	}
}

// DevicePeekLone looks at the next available chain without taking it:
// when it is one writable descriptor (no NEXT, no INDIRECT: every buffer a
// receive queue posts but big mode's) it returns the head and the
// descriptor's length, as DeviceChain would find them; ok is false for
// anything else (nothing available, an avail index DevicePop would
// refuse, a chain to walk), which the caller handles the general way.
func (q *Queue) DevicePeekLone() (head uint16, writable uint32, ok bool) {
	d := &q.dev
	if n := uint32(q.avail.idx - d.lastAvail); n == 0 || n > q.num {
		return 0, 0, false
	}
	head = q.avail.ring[d.lastAvail&q.mask]
	if uint32(head) >= q.num {
		return 0, 0, false
	}
	if desc := &q.desc[head]; desc.Flags&(DescFIndirect|DescFNext|DescFWrite) == DescFWrite {
		return head, desc.Len, true
	}
	return 0, 0, false
}

// DeviceAvailAt is the head of the avail entry k places past last_avail,
// without taking it; ok is false past avail.idx or for a head out of
// range.
func (q *Queue) DeviceAvailAt(k uint16) (head uint16, ok bool) {
	if n := uint32(q.avail.idx - q.dev.lastAvail); uint32(k) >= n || n > q.num {
		return 0, false
	}
	head = q.avail.ring[(q.dev.lastAvail+k)&q.mask]
	return head, uint32(head) < q.num
}

// DeviceLoneAt looks at the avail entry k places past last_avail without
// taking it: lone is true when it is one writable descriptor (what
// DevicePeekLone finds), with its length. The caller keeps k below
// avail.idx - last_avail. Anything else, a chain to walk or a bad head,
// is lone false: a look ahead stops there and checks nothing.
func (q *Queue) DeviceLoneAt(k uint16) (writable uint32, lone bool) {
	head := q.avail.ring[(q.dev.lastAvail+k)&q.mask]
	if uint32(head) >= q.num {
		return 0, false
	}
	if desc := &q.desc[head]; desc.Flags&(DescFIndirect|DescFNext|DescFWrite) == DescFWrite {
		return desc.Len, true
	}
	return 0, false
}

// DeviceUseLone is DevicePop, DeviceAddUsed(head, length) and
// DevicePublishUsed for the head DevicePeekLone just returned: the chain
// goes straight to used (its slots pass through SlotDevice on the way in
// the general calls; nothing can look in between).
func (q *Queue) DeviceUseLone(head uint16, length uint32) {
	q.DeviceAddUsedLone(head, length)
	q.used.idx = q.dev.usedIdx
}

// DeviceAddUsedLone is DeviceUseLone without the publish: the entry waits
// in the used ring until DevicePublishUsed, as vhost-net batches them.
func (q *Queue) DeviceAddUsedLone(head uint16, length uint32) {
	d := &q.dev
	d.lastAvail++
	if d.popEvent {
		q.used.availEvent = d.lastAvail
	}
	q.used.ring[d.usedIdx&q.mask] = UsedElem{ID: uint32(head), Len: length}
	d.usedIdx++
	if q.state[head].data != 0 {
		q.markChain(head, SlotUsed)
	}
}

// DevicePublishUsed stores the device's used index into used.idx
// (vhost_add_used_n's vhost_put_used_idx, QEMU's virtqueue_flush).
func (q *Queue) DevicePublishUsed() { q.used.idx = q.dev.usedIdx }

// DeviceUnpublished is how many used entries the device has written and
// not yet published in used.idx.
func (q *Queue) DeviceUnpublished() int { return int(q.dev.usedIdx - q.used.idx) }

// DevicePushUsed is DeviceAddUsed then DevicePublishUsed (vhost_add_used).
func (q *Queue) DevicePushUsed(id, length uint32) {
	q.DeviceAddUsed(id, length)
	q.DevicePublishUsed()
}

// DeviceNeedInterrupt decides, after pushing used entries, whether to
// notify the driver, as vhost_notify and QEMU's virtio_split_should_notify
// do: without EVENT_IDX, unless avail.flags has NO_INTERRUPT; with EVENT_IDX,
// vring_need_event(used_event, new, old) where old is the used index at the
// previous decision (always true the first time). A true answer counts one
// interrupt; deliver it with Interrupt.
func (q *Queue) DeviceNeedInterrupt() bool {
	var need bool
	if !q.event {
		need = q.avail.flags&AvailFNoInterrupt == 0
	} else {
		d := &q.dev
		old, valid := d.signalledUsed, d.signalledValid
		d.signalledUsed, d.signalledValid = d.usedIdx, true
		need = !valid || NeedEvent(q.avail.usedEvent, d.usedIdx, old)
	}
	if need {
		q.counters.Interrupts++
	}
	return need
}

// DeviceLastAvail is the device's last_avail_idx: the next avail entry it
// will take.
func (q *Queue) DeviceLastAvail() uint16 { return q.dev.lastAvail }

// DeviceUsedIdx is the device's used index, published or not.
func (q *Queue) DeviceUsedIdx() uint16 { return q.dev.usedIdx }

// DeviceSetAvailEvent writes vring_avail_event (meaningful with EVENT_IDX):
// the driver kicks when it publishes an avail idx moving past idx.
func (q *Queue) DeviceSetAvailEvent(idx uint16) { q.used.availEvent = idx }

// DeviceSetNoNotify sets or clears used.flags NO_NOTIFY (meaningful without
// EVENT_IDX, where the driver ignores used.flags).
func (q *Queue) DeviceSetNoNotify(on bool) {
	if on {
		q.used.flags |= UsedFNoNotify
	} else {
		q.used.flags &^= UsedFNoNotify
	}
}

// DeviceWriteUsedRaw writes used.ring[slot & (num-1)] = {id, len} without
// touching any index: a hostile or buggy device, for tests and fuzzing.
func (q *Queue) DeviceWriteUsedRaw(slot uint16, id, length uint32) {
	q.used.ring[slot&q.mask] = UsedElem{ID: id, Len: length}
}

// DeviceSetUsedIdx sets the device's used index and publishes it as
// used.idx, whatever the ring holds: a hostile or buggy device.
func (q *Queue) DeviceSetUsedIdx(idx uint16) {
	q.dev.usedIdx = idx
	q.used.idx = idx
}
