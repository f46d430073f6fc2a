// Package virtq models a virtio 1.x split virtqueue, driver and device side,
// as drivers/virtio/virtio_ring.c keeps it: descriptor table, avail and used
// rings as plain data plus the driver's private bookkeeping, with the
// event index (VIRTIO_RING_F_EVENT_IDX: used_event, avail_event) and
// indirect descriptors.
//
// What the device writes is checked as virtio_ring checks it, and never
// panics: a used id out of range or not the head of a posted buffer marks
// the queue broken (BAD_RING, Broken) and GetBuf returns nothing more; a
// bad used length is returned as written, for the driver to count as its
// drop (rx_length_errors). Check walks everything the queue owns;
// CheckCounts and CheckHead are the cheap parts the engine's
// every-event checker runs.
package virtq

import (
	"errors"
	"fmt"
)

// Descriptor flags (include/uapi/linux/virtio_ring.h).
const (
	DescFNext     = 1 // VRING_DESC_F_NEXT: the chain continues at Next
	DescFWrite    = 2 // VRING_DESC_F_WRITE: device writes, driver reads
	DescFIndirect = 4 // VRING_DESC_F_INDIRECT: Addr/Len name a table of descriptors
)

// Ring flags.
const (
	AvailFNoInterrupt = 1 // VRING_AVAIL_F_NO_INTERRUPT, driver -> device
	UsedFNoNotify     = 1 // VRING_USED_F_NO_NOTIFY, device -> driver
)

// Feature bits, for callers that build a feature word.
const (
	FIndirectDesc = 28 // VIRTIO_RING_F_INDIRECT_DESC
	FEventIdx     = 29 // VIRTIO_RING_F_EVENT_IDX
)

// MaxSize is the largest queue size a split ring may have.
const MaxSize = 32768

// DescSize is the size in bytes of one vring_desc; an indirect descriptor's
// Len is a multiple of it.
const DescSize = 16

// indirectAddrBase tags the synthetic guest address of a per-head indirect
// table: indirectAddr(head) = base | head<<16. Only the device side reads it.
const indirectAddrBase = 0xffff_0000_0000_0000

func indirectAddr(head uint16) uint64 { return indirectAddrBase | uint64(head)<<16 }

// Errors returned to a caller that used the queue wrongly or hit a full or
// broken ring. Match them with errors.Is.
var (
	ErrBadSize   = errors.New("queue size must be a power of two in 1..32768")
	ErrNoSpace   = errors.New("no space in ring (ENOSPC)")
	ErrBroken    = errors.New("virtqueue is broken (EIO)")
	ErrZeroToken = errors.New("token 0 is reserved for \"not in use\"")
	ErrNoSG      = errors.New("no scatter-gather entries")
	ErrTooManySG = errors.New("more scatter-gather entries than the queue size")
	ErrCtx       = errors.New("ctx given but queue was created without ctx")
	ErrBadRing   = errors.New("BAD_RING")
)

// Desc is struct vring_desc (16 bytes on the wire). Addr is a guest-physical
// address, Len a byte count.
type Desc struct {
	Addr  uint64
	Len   uint32
	Flags uint16
	Next  uint16
}

// UsedElem is struct vring_used_elem: the head of a returned chain and the
// number of bytes the device wrote into it.
type UsedElem struct {
	ID  uint32
	Len uint32
}

// SG is one scatter-gather entry: Len bytes at guest address Addr.
type SG struct {
	Addr uint64
	Len  uint32
}

// Token is the driver's opaque per-buffer cookie (the kernel's void *data).
// Zero means "not in use" and may not be added.
type Token uint64

// Config is what was negotiated and how the queue was created.
type Config struct {
	Name         string // used in BAD_RING messages
	EventIdx     bool   // VIRTIO_RING_F_EVENT_IDX negotiated
	IndirectDesc bool   // VIRTIO_RING_F_INDIRECT_DESC negotiated
	// Ctx: the queue was created with a per-buffer context (virtio_net RX).
	// Like the kernel, a ctx queue never uses indirect descriptors.
	Ctx bool
}

// Counters are monotonic event counts.
type Counters struct {
	Kicks          uint64 // notifications sent driver -> device (virtqueue_notify)
	ForcedKicks    uint64 // virtqueue_kick forced by num_added reaching 65535
	NoSpace        uint64 // adds refused with ENOSPC
	Interrupts     uint64 // notifications the device decided to send the driver
	SpuriousIRQs   uint64 // vring_interrupt with no used buffer (IRQ_NONE)
	BadRing        uint64 // times the queue was marked broken (at most 1)
	IndirectAllocs uint64 // per-head indirect tables allocated or grown
}

// SlotState is what a descriptor slot is doing, for visualisation only; the
// ring logic never reads it.
type SlotState uint8

const (
	SlotFree   SlotState = iota // on the driver's free list
	SlotAvail                   // posted on the avail ring, not yet taken by the device
	SlotDevice                  // taken by the device (DevicePop)
	SlotUsed                    // returned on the used ring, not yet reclaimed by GetBuf
)

func (s SlotState) String() string {
	switch s {
	case SlotFree:
		return "free"
	case SlotAvail:
		return "avail"
	case SlotDevice:
		return "device"
	case SlotUsed:
		return "used"
	}
	return fmt.Sprintf("SlotState(%d)", uint8(s))
}

// descState is struct vring_desc_state_split, one per head.
type descState struct {
	data  Token  // 0: this descriptor is not the head of a posted chain
	ctx   uint64 // the kernel keeps ctx in indir_desc; a ctx queue has no indirect
	indir bool   // the chain is a single INDIRECT descriptor
}

// descExtra is struct vring_desc_extra: the driver's private copy of each
// descriptor. next links the free list and, for posted chains, the chain.
type descExtra struct {
	addr  uint64
	len   uint32
	flags uint16
	next  uint16
}

// availRing is struct vring_avail plus used_event (avail->ring[num]).
// The driver writes it; the device only reads it.
type availRing struct {
	flags     uint16
	idx       uint16
	ring      []uint16
	usedEvent uint16
}

// usedRing is struct vring_used plus avail_event (used->ring[num]).
// The device writes it; the driver only reads it and must not trust it.
type usedRing struct {
	flags      uint16
	idx        uint16
	ring       []UsedElem
	availEvent uint16
}

// deviceState is the device's private view (what vhost or QEMU keeps).
type deviceState struct {
	lastAvail      uint16 // next avail index to take
	usedIdx        uint16 // next used index to write; published to used.idx
	signalledUsed  uint16 // used index at the previous interrupt decision
	signalledValid bool   // signalledUsed has been set
	popEvent       bool   // EVENT_IDX and QEMU's rule: every pop writes avail_event
}

// Queue is one split virtqueue with both ends. All indices are free-running
// uint16; slot = idx & (num-1). It is not safe for concurrent use: like the
// kernel, the caller serialises driver calls, and the simulation interleaves
// device calls deterministically.
//
// Invariants (checked by the tests after every operation):
// num_free + descriptors in posted chains == num; the free list from
// free_head has num_free distinct entries; heads with data ==
// avail_idx_shadow - last_used_idx.
type Queue struct {
	name     string
	num      uint32
	mask     uint16
	event    bool // VIRTIO_RING_F_EVENT_IDX
	indirect bool // INDIRECT_DESC negotiated and no ctx
	hasCtx   bool

	// Shared ring memory.
	desc  []Desc
	avail availRing
	used  usedRing

	// Driver-private state (struct vring_virtqueue, split part).
	freeHead         uint16
	numFree          uint32
	numAdded         uint32 // adds since the last kick_prepare
	lastUsedIdx      uint16
	availIdxShadow   uint16
	availFlagsShadow uint16
	eventTriggered   bool // vring_interrupt ran with EVENT_IDX; hint for disable_cb
	state            []descState
	extra            []descExtra
	indir            [][]Desc // per-head indirect tables, reused across adds
	broken           bool
	reason           string

	dev      deviceState
	slots    []SlotState
	counters Counters
}

// New returns an empty queue of num descriptors, all free. num must be a
// power of two in 1..MaxSize. Cost: O(num) memory, about 40 bytes per slot.
func New(num int, cfg Config) (*Queue, error) {
	if num < 1 || num > MaxSize || num&(num-1) != 0 {
		return nil, fmt.Errorf("virtq %q: size %d: %w", cfg.Name, num, ErrBadSize)
	}
	q := &Queue{
		name:     cfg.Name,
		num:      uint32(num),
		mask:     uint16(num - 1),
		event:    cfg.EventIdx,
		indirect: cfg.IndirectDesc && !cfg.Ctx, // __vring_new_virtqueue
		hasCtx:   cfg.Ctx,
		desc:     make([]Desc, num),
		avail:    availRing{ring: make([]uint16, num)},
		used:     usedRing{ring: make([]UsedElem, num)},
		numFree:  uint32(num),
		state:    make([]descState, num),
		extra:    make([]descExtra, num),
		slots:    make([]SlotState, num),
	}
	if q.indirect {
		q.indir = make([][]Desc, num)
	}
	// vring_alloc_desc_extra: the free list starts as 0 -> 1 -> ... -> num-1.
	for i := 0; i < num-1; i++ {
		q.extra[i].next = uint16(i + 1)
	}
	return q, nil
}

// badRing stands for the kernel's BAD_RING macro: it records the first
// reason, marks the queue broken and counts it once. Later calls are ignored.
func (q *Queue) badRing(format string, args ...any) {
	if q.broken {
		return
	}
	q.broken = true
	q.reason = q.name + ": " + fmt.Sprintf(format, args...)
	q.counters.BadRing++
}

// Broken reports whether the queue has been marked broken and why.
func (q *Queue) Broken() (bool, string) { return q.broken, q.reason }

// Size is num, the number of descriptors.
func (q *Queue) Size() int { return int(q.num) }

// Name is the queue's name from Config.
func (q *Queue) Name() string { return q.name }

// EventIdx reports whether VIRTIO_RING_F_EVENT_IDX is in effect.
func (q *Queue) EventIdx() bool { return q.event }

// Indirect reports whether adds may use indirect descriptors
// (negotiated and the queue has no ctx).
func (q *Queue) Indirect() bool { return q.indirect }

// NumFree is vq->num_free: descriptors on the free list.
func (q *Queue) NumFree() int { return int(q.numFree) }

// NumAdded is the number of buffers added since the last KickPrepare.
func (q *Queue) NumAdded() int { return int(q.numAdded) }

// FreeHead is the first descriptor of the free list (meaningless when
// NumFree is 0).
func (q *Queue) FreeHead() uint16 { return q.freeHead }

// AvailIdx is avail.idx as published to the device.
func (q *Queue) AvailIdx() uint16 { return q.avail.idx }

// AvailFlags is avail.flags as the device sees it.
func (q *Queue) AvailFlags() uint16 { return q.avail.flags }

// AvailEntry is avail.ring[slot & (num-1)]: a head the driver posted.
func (q *Queue) AvailEntry(slot uint16) uint16 { return q.avail.ring[slot&q.mask] }

// UsedIdx is used.idx as published by the device.
func (q *Queue) UsedIdx() uint16 { return q.used.idx }

// UsedFlags is used.flags as the driver sees it.
func (q *Queue) UsedFlags() uint16 { return q.used.flags }

// UsedEntry is used.ring[slot & (num-1)].
func (q *Queue) UsedEntry(slot uint16) UsedElem { return q.used.ring[slot&q.mask] }

// LastUsed is the driver's last_used_idx: the next used entry it will read.
func (q *Queue) LastUsed() uint16 { return q.lastUsedIdx }

// UsedEvent is vring_used_event (avail->ring[num]), written by the driver.
func (q *Queue) UsedEvent() uint16 { return q.avail.usedEvent }

// AvailEvent is vring_avail_event (used->ring[num]), written by the device.
func (q *Queue) AvailEvent() uint16 { return q.used.availEvent }

// CallbacksDisabled reports whether avail_flags_shadow has NO_INTERRUPT,
// i.e. the driver has called DisableCB and not re-enabled callbacks.
func (q *Queue) CallbacksDisabled() bool { return q.availFlagsShadow&AvailFNoInterrupt != 0 }

// Counters returns a copy of the event counters.
func (q *Queue) Counters() Counters { return q.counters }

// Slot returns what descriptor i is doing; i is taken modulo num.
func (q *Queue) Slot(i uint16) SlotState { return q.slots[i&q.mask] }

// AppendSlots appends the state of every descriptor, in index order, to dst.
// It allocates only if dst lacks capacity.
func (q *Queue) AppendSlots(dst []SlotState) []SlotState { return append(dst, q.slots...) }

// markChain sets the slot state of every descriptor of the posted chain at
// head, walking the driver's private desc_extra (which the device cannot
// touch). The walk is bounded by num.
func (q *Queue) markChain(head uint16, s SlotState) {
	i := head
	for n := uint32(0); n < q.num; n++ {
		q.slots[i] = s
		if q.extra[i].flags&DescFNext == 0 {
			return
		}
		i = q.extra[i].next & q.mask
	}
}
