package pagepool

import (
	"fmt"

	"ringlab/engine/sim"
)

// ptr_ring geometry on x86-64.
const (
	// RingBatch is SMP_CACHE_BYTES * 2 / sizeof(void *): the consumer
	// clears consumed slots in batches of this many (__ptr_ring_set_size).
	RingBatch = 64 * 2 / 8
	// slotsPerLine is how many pointer slots share a 64-byte cache line.
	slotsPerLine = 8
	// MaxPtrRing bounds the size NewPtrRing accepts.
	MaxPtrRing = 1 << 24
)

// PtrRing is struct ptr_ring (include/linux/ptr_ring.h): a fixed array of
// slots, a producer index, and a consumer head and tail. An entry is a
// non-zero int32; zero is NULL. The producer finds the ring full when the
// slot at its index is not NULL. The consumer does not clear each slot as
// it takes it: it clears the slots behind it in batches of Batch
// (__ptr_ring_discard_one), so the producer can see "full" while up to
// Batch-1 slots have already been consumed.
//
// The methods are the unlocked __ptr_ring_* operations; callers hold
// ProducerLock or ConsumerLock around them (Lock.Hold) as the kernel's
// callers do. Producing or consuming touches the slot's cache line, so a
// producer and a consumer on different CPUs pull lines from each other.
type PtrRing struct {
	ProducerLock sim.Lock
	ConsumerLock sim.Lock

	queue        []int32
	lines        []sim.CacheLine
	producer     int
	consumerHead int // next valid entry
	consumerTail int // next entry to clear
	size         int
	batch        int
	n            int // valid entries (the kernel does not keep this)
}

// NewPtrRing is ptr_ring_init: an empty ring of size slots.
func NewPtrRing(name string, size int) (*PtrRing, error) {
	if size < 1 || size > MaxPtrRing {
		return nil, fmt.Errorf("pagepool: ptr_ring %q size %d: want 1..%d", name, size, MaxPtrRing)
	}
	r := &PtrRing{}
	r.init(name, size)
	return r, nil
}

func (r *PtrRing) init(name string, size int) {
	r.ProducerLock.Name = name + " producer_lock"
	r.ConsumerLock.Name = name + " consumer_lock"
	r.queue = make([]int32, size)
	r.lines = make([]sim.CacheLine, (size+slotsPerLine-1)/slotsPerLine)
	r.size = size
	// __ptr_ring_set_size: no batching for small rings.
	r.batch = RingBatch
	if r.batch > size/2 || r.batch == 0 {
		r.batch = 1
	}
}

// Produce is __ptr_ring_produce: store v at the producer index and
// advance it. It returns false (-ENOSPC) when the slot is not NULL, or
// when v is zero.
func (r *PtrRing) Produce(c *sim.CPU, v int32) bool {
	r.lines[r.producer/slotsPerLine].Touch(c, sim.SymPagePoolRecycleRing)
	if v == 0 || r.queue[r.producer] != 0 {
		return false
	}
	r.queue[r.producer] = v
	r.producer++
	if r.producer >= r.size {
		r.producer = 0
	}
	r.n++
	return true
}

// Full is __ptr_ring_full: the slot at the producer index is not NULL.
func (r *PtrRing) Full() bool { return r.queue[r.producer] != 0 }

// Empty is __ptr_ring_empty: the slot at the consumer head is NULL.
func (r *PtrRing) Empty() bool { return r.queue[r.consumerHead] == 0 }

// Consume is __ptr_ring_consume: take the entry at the consumer head, 0
// when the ring is empty.
func (r *PtrRing) Consume(c *sim.CPU) int32 {
	v := r.queue[r.consumerHead]
	if v == 0 {
		return 0
	}
	r.lines[r.consumerHead/slotsPerLine].Touch(c, sim.SymPagePoolRefill)
	r.discardOne()
	r.n--
	return v
}

// discardOne is __ptr_ring_discard_one: advance the head; once a batch has
// been consumed, or at the end of the array, clear the consumed slots in
// reverse order.
func (r *PtrRing) discardOne() {
	head := r.consumerHead
	ch := head + 1
	if ch-r.consumerTail >= r.batch || ch >= r.size {
		for ; head >= r.consumerTail; head-- {
			r.queue[head] = 0
		}
		r.consumerTail = ch
	}
	if ch >= r.size {
		ch = 0
		r.consumerTail = 0
	}
	r.consumerHead = ch
}

// Len is the number of valid entries.
func (r *PtrRing) Len() int { return r.n }

// Size is the number of slots.
func (r *PtrRing) Size() int { return r.size }

// Batch is the consumer's clearing batch.
func (r *PtrRing) Batch() int { return r.batch }

// Producer, ConsumerHead and ConsumerTail are the ring's indices.
func (r *PtrRing) Producer() int { return r.producer }

// ConsumerHead is the index of the next valid entry.
func (r *PtrRing) ConsumerHead() int { return r.consumerHead }

// ConsumerTail is the index of the next slot to clear.
func (r *PtrRing) ConsumerTail() int { return r.consumerTail }

// At returns the i-th valid entry from the consumer head (0 <= i < Len).
func (r *PtrRing) At(i int) int32 {
	if i < 0 || i >= r.n {
		return 0
	}
	return r.queue[(r.consumerHead+i)%r.size]
}

// Stale is the number of consumed slots not yet cleared.
func (r *PtrRing) Stale() int { return r.consumerHead - r.consumerTail }

// Check verifies the ring's structure: Len valid entries from the consumer
// head up to the producer, consumed-but-uncleared slots from the tail to
// the head, and NULL everywhere else.
func (r *PtrRing) Check() error {
	if err := r.CheckIndices(); err != nil {
		return err
	}
	state := make([]byte, r.size) // 1 valid, 2 stale
	for i := 0; i < r.n; i++ {
		state[(r.consumerHead+i)%r.size] = 1
	}
	for i := r.consumerTail; i < r.consumerHead; i++ {
		if state[i] != 0 {
			return fmt.Errorf("ptr_ring: slot %d is both valid and waiting to be cleared", i)
		}
		state[i] = 2
	}
	for i, v := range r.queue {
		if (v != 0) != (state[i] != 0) {
			return fmt.Errorf("ptr_ring: slot %d holds %d but is %s", i, v, [...]string{"free", "valid", "stale"}[state[i]])
		}
	}
	return nil
}

// CheckIndices is the O(1) part of Check: the indices are in range and in
// order, Len entries from the consumer head end at the producer, fewer
// than Batch slots wait to be cleared (__ptr_ring_discard_one clears them
// once a batch is reached), and the slots at the producer's last entry and
// at the consumer head agree with Len.
func (r *PtrRing) CheckIndices() error {
	if r.consumerTail > r.consumerHead || r.consumerHead >= r.size || r.producer >= r.size || r.consumerTail < 0 {
		return fmt.Errorf("ptr_ring: indices out of order: producer %d, consumer head %d tail %d, size %d",
			r.producer, r.consumerHead, r.consumerTail, r.size)
	}
	if r.n < 0 || r.n > r.size || (r.consumerHead+r.n)%r.size != r.producer {
		return fmt.Errorf("ptr_ring: %d entries from head %d do not end at producer %d", r.n, r.consumerHead, r.producer)
	}
	if r.consumerHead-r.consumerTail >= r.batch {
		return fmt.Errorf("ptr_ring: %d uncleared slots, batch is %d", r.consumerHead-r.consumerTail, r.batch)
	}
	if r.n > 0 && r.queue[(r.producer+r.size-1)%r.size] == 0 {
		return fmt.Errorf("ptr_ring: %d entries but the last produced slot %d is NULL", r.n, (r.producer+r.size-1)%r.size)
	}
	if (r.n == 0) != (r.queue[r.consumerHead] == 0) {
		return fmt.Errorf("ptr_ring: %d entries but the slot at the consumer head holds %d", r.n, r.queue[r.consumerHead])
	}
	return nil
}
