package virtq

import "fmt"

// Check returns the first broken invariant of the queue, or nil:
//   - the free list from free_head has exactly num_free distinct in-range
//     entries (no cycle), all with slot state free;
//   - each head with data owns a chain (walked by desc_extra) whose
//     descriptors are neither free nor in another chain, and the shared
//     descriptor table mirrors desc_extra for them;
//   - num_free + descriptors in chains == num, and nothing is in neither;
//   - heads with data == avail_idx_shadow - last_used_idx, avail.idx ==
//     avail_idx_shadow, num_added < 65535.
func (q *Queue) Check() error {
	num := int(q.num)
	owner := make([]int, num) // 0: nobody, -1: free list, h+1: chain of head h
	i := q.freeHead
	for n := 0; n < int(q.numFree); n++ {
		if int(i) >= num {
			return fmt.Errorf("free list entry %d: index %d out of range", n, i)
		}
		if owner[i] != 0 {
			return fmt.Errorf("free list revisits %d after %d entries (cycle)", i, n)
		}
		owner[i] = -1
		if q.slots[i] != SlotFree {
			return fmt.Errorf("free desc %d has slot state %v", i, q.slots[i])
		}
		i = q.extra[i].next
	}
	heads, inChains := 0, 0
	for h := range num {
		st := q.state[h]
		if st.data == 0 {
			continue
		}
		heads++
		j := uint16(h)
		for n := 0; ; n++ {
			if n >= num {
				return fmt.Errorf("chain of head %d longer than num", h)
			}
			if int(j) >= num {
				return fmt.Errorf("chain of head %d: index %d out of range", h, j)
			}
			switch {
			case owner[j] == -1:
				return fmt.Errorf("desc %d is both free and in the chain of head %d", j, h)
			case owner[j] != 0:
				return fmt.Errorf("desc %d is in the chains of heads %d and %d", j, owner[j]-1, h)
			}
			owner[j] = h + 1
			inChains++
			if q.slots[j] == SlotFree {
				return fmt.Errorf("desc %d in chain of head %d has slot state free", j, h)
			}
			e, d := q.extra[j], q.desc[j]
			if d.Addr != e.addr || d.Len != e.len || d.Flags != e.flags {
				return fmt.Errorf("desc %d = %+v does not mirror desc_extra %+v", j, d, e)
			}
			if st.indir {
				if e.flags != DescFIndirect {
					return fmt.Errorf("indirect head %d has flags %#x", h, e.flags)
				}
				if _, err := q.checkIndirect(uint16(h)); err != nil {
					return err
				}
				break
			}
			if e.flags&DescFIndirect != 0 {
				return fmt.Errorf("direct chain of head %d has INDIRECT desc %d", h, j)
			}
			if e.flags&DescFNext == 0 {
				break
			}
			j = e.next
		}
	}
	if int(q.numFree)+inChains != num {
		return fmt.Errorf("num_free %d + in chains %d != num %d", q.numFree, inChains, num)
	}
	for k, o := range owner {
		if o == 0 {
			return fmt.Errorf("desc %d is neither free nor in a chain", k)
		}
	}
	if want := int(q.availIdxShadow - q.lastUsedIdx); heads != want {
		return fmt.Errorf("%d heads posted, avail_idx_shadow %d - last_used %d = %d", heads, q.availIdxShadow, q.lastUsedIdx, want)
	}
	if q.avail.idx != q.availIdxShadow {
		return fmt.Errorf("avail.idx %d != avail_idx_shadow %d", q.avail.idx, q.availIdxShadow)
	}
	if q.numAdded >= 1<<16-1 {
		return fmt.Errorf("num_added %d reached the forced-kick limit", q.numAdded)
	}
	if q.counters.BadRing > 1 {
		return fmt.Errorf("bad_ring counted %d times", q.counters.BadRing)
	}
	if q.broken && q.reason == "" {
		return fmt.Errorf("broken without a reason")
	}
	return nil
}

// It is O(num) and allocates: for tests, and for periodic checks of a
// running world. CheckCounts and CheckHead are the cheap parts, for after
// every event.

// CheckCounts checks in O(1) what every add and get keeps: with each
// posted buffer taking descPerBuf descriptors (1 for one-entry and
// indirect buffers), num_free + descPerBuf * (avail_idx_shadow -
// last_used_idx) == num (virtqueue_add_split takes descs_used off num_free,
// detach_buf_split gives the chain back); the device has not used more
// buffers than were posted; the queue is not broken.
func (q *Queue) CheckCounts(descPerBuf int) error {
	if q.broken {
		return fmt.Errorf("virtq %q: broken: %s", q.name, q.reason)
	}
	outstanding := uint32(q.availIdxShadow - q.lastUsedIdx)
	if q.numFree > q.num || uint64(q.numFree)+uint64(descPerBuf)*uint64(outstanding) != uint64(q.num) {
		return fmt.Errorf("virtq %q: num_free %d + %d buffers posted * %d descriptors != num %d",
			q.name, q.numFree, outstanding, descPerBuf, q.num)
	}
	return q.checkIndices(outstanding)
}

// checkIndices is the part of CheckCounts about the indices.
func (q *Queue) checkIndices(outstanding uint32) error {
	if q.avail.idx != q.availIdxShadow {
		return fmt.Errorf("virtq %q: avail.idx %d != avail_idx_shadow %d", q.name, q.avail.idx, q.availIdxShadow)
	}
	if used := q.used.idx - q.lastUsedIdx; uint32(used) > outstanding {
		return fmt.Errorf("virtq %q: used idx %d is %d past last_used %d with %d posted", q.name, q.used.idx, used, q.lastUsedIdx, outstanding)
	}
	return nil
}

// CheckFree is CheckCounts for a queue whose buffers differ in
// descriptor count: the caller counts the descriptors its posted buffers
// hold, and num_free plus them must be num.
func (q *Queue) CheckFree(descs int) error {
	if q.broken {
		return fmt.Errorf("virtq %q: broken: %s", q.name, q.reason)
	}
	if q.numFree > q.num || uint64(q.numFree)+uint64(descs) != uint64(q.num) {
		return fmt.Errorf("virtq %q: num_free %d + %d descriptors posted != num %d", q.name, q.numFree, descs, q.num)
	}
	return q.checkIndices(uint32(q.availIdxShadow - q.lastUsedIdx))
}

// Outstanding is avail_idx_shadow - last_used_idx: buffers posted and not
// yet taken back by GetBuf.
func (q *Queue) Outstanding() int { return int(q.availIdxShadow - q.lastUsedIdx) }

// CheckHead checks the chain posted at head: it has a token, its
// descriptors (walked by desc_extra, at most num) are not free, and the
// shared table mirrors desc_extra for each; an indirect head's table is
// well formed (checkIndirect). It returns the token and the number of
// descriptors of the main table the chain takes (1 for an indirect chain;
// IndirectLen gives its table's entries).
func (q *Queue) CheckHead(head uint16) (Token, int, error) {
	if uint32(head) >= q.num {
		return 0, 0, fmt.Errorf("virtq %q: head %d out of range", q.name, head)
	}
	st := &q.state[head]
	if st.data == 0 {
		return 0, 0, fmt.Errorf("virtq %q: avail entry %d is not the head of a posted chain", q.name, head)
	}
	j := head
	for n := 1; ; n++ {
		if n > int(q.num) || uint32(j) >= q.num {
			return 0, 0, fmt.Errorf("virtq %q: chain of head %d leaves the table or loops", q.name, head)
		}
		e, d := &q.extra[j], &q.desc[j]
		if q.slots[j] == SlotFree {
			return 0, 0, fmt.Errorf("virtq %q: desc %d in the chain of head %d is free", q.name, j, head)
		}
		if d.Addr != e.addr || d.Len != e.len || d.Flags != e.flags {
			return 0, 0, fmt.Errorf("virtq %q: desc %d = %+v does not mirror desc_extra", q.name, j, *d)
		}
		if st.indir {
			if _, err := q.checkIndirect(head); err != nil {
				return 0, 0, fmt.Errorf("virtq %q: %w", q.name, err)
			}
			return st.data, n, nil
		}
		if e.flags&DescFNext == 0 {
			return st.data, n, nil
		}
		j = e.next
	}
}

// IndirectLen is the number of entries in the indirect table of the chain
// posted at head (alloc_indirect_split's total_sg), 0 when head is not an
// indirect head.
func (q *Queue) IndirectLen(head uint16) int {
	if uint32(head) >= q.num || !q.state[head].indir {
		return 0
	}
	return int(q.extra[head].len / DescSize)
}

// checkIndirect checks the indirect table of head as virtqueue_add_split
// wrote it: the head's descriptor names the head's table (its synthetic
// address, total_sg * 16 bytes, no more than the table holds), entries
// 0..total_sg-1 chain through NEXT to entry i+1 and the last has no NEXT;
// none is INDIRECT. It returns total_sg.
func (q *Queue) checkIndirect(head uint16) (int, error) {
	e := &q.extra[head]
	if e.addr != indirectAddr(head) || e.len == 0 || e.len%DescSize != 0 {
		return 0, fmt.Errorf("indirect head %d: table addr %#x len %d", head, e.addr, e.len)
	}
	n := int(e.len / DescSize)
	if q.indir == nil || n > len(q.indir[head]) {
		return 0, fmt.Errorf("indirect head %d: %d entries, its table holds fewer", head, n)
	}
	t := q.indir[head][:n]
	for j := range t {
		last := j == n-1
		switch {
		case t[j].Flags&DescFIndirect != 0:
			return 0, fmt.Errorf("indirect head %d: entry %d is INDIRECT", head, j)
		case last && t[j].Flags&DescFNext != 0:
			return 0, fmt.Errorf("indirect head %d: last entry %d has NEXT", head, j)
		case !last && (t[j].Flags&DescFNext == 0 || int(t[j].Next) != j+1):
			return 0, fmt.Errorf("indirect head %d: entry %d does not continue at %d", head, j, j+1)
		}
	}
	return n, nil
}
