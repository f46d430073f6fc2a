package sim

// CacheLine is a line of memory that several CPUs write (a refcount, a lock
// word, a ring's producer index). Touching it from a CPU other than the
// last one to touch it costs a transfer (Costs.CacheLineTransfer). The zero
// value is a line no CPU holds yet; the first touch is free.
type CacheLine struct {
	owner int32 // last CPU to touch it, plus one; 0 means none
}

// Touch charges c for pulling the line when another CPU touched it last,
// to sym (the function that touches it), and makes c its owner. It
// reports whether a transfer happened.
//
// The common case, c already owning the line, is tested here and the rest
// is out of line, so that Touch stays under the inliner's budget (Take and
// Charge written in it are not) at every struct page and skb it is called on.
func (l *CacheLine) Touch(c *CPU, sym Sym) bool {
	if l.owner == int32(c.ID)+1 {
		return false
	}
	return l.pull(c, sym)
}

// pull is Touch when c does not own the line: Take, and the transfer's
// charge when another CPU owned it.
func (l *CacheLine) pull(c *CPU, sym Sym) bool {
	moved := l.Take(c)
	if moved {
		c.Charge(sym, c.sim.Costs.CacheLineTransfer)
	}
	return moved
}

// Take makes c the line's owner like Touch, counts the transfer, but does
// not charge it: the caller adds CacheLineTransfer to a larger cost, for
// instance a critical section that touches the line while holding a lock.
func (l *CacheLine) Take(c *CPU) bool {
	id := int32(c.ID) + 1
	if l.owner == id {
		return false
	}
	moved := l.owner != 0
	l.owner = id
	if moved {
		c.transfers++
	}
	return moved
}

// Owner is the CPU that touched the line last, or -1.
func (l *CacheLine) Owner() int { return int(l.owner) - 1 }

// lockHistory is how many past critical sections a Lock remembers. CPUs run
// ahead of the event queue by at most one batch of work, so a short history
// is enough to find the gaps between holders.
const lockHistory = 32

type interval struct{ start, end Time }

// Lock is a spinlock shared between CPUs (the zone lock, a ptr_ring's
// producer lock). Hold places a critical section on the lock's timeline at
// the earliest time at or after the caller's cursor when no other holder
// has it; the caller spins until then. Each acquisition costs
// Costs.SpinLock and moves the lock's cache line.
//
// Why a timeline and not a "free at" time: CPUs advance their cursors a
// batch at a time, so one CPU may have placed a critical section at 5 µs
// while another, still at 1 µs, asks for the lock. The second CPU gets the
// free gap at 1 µs, as it would in the kernel, instead of waiting for 5 µs.
type Lock struct {
	Name string

	line    CacheLine
	hist    [lockHistory]interval // sorted by start, non-overlapping
	n       int
	floor   Time // no section may start before this (history forgotten)
	acq     uint64
	waits   uint64
	waitSum Duration
	held    Duration // total length of the critical sections
}

// NewLock returns a free lock.
func NewLock(name string) *Lock { return &Lock{Name: name} }

// Hold takes the lock on c, holds it for d of work (which the caller is
// charged, to sym: the function that does the work under the lock), and
// releases it. It returns how long c spun waiting. The acquisition, the
// lock's cache line and the spinning are charged to _raw_spin_lock
// (SymRawSpinLock), as perf shows them.
func (l *Lock) Hold(c *CPU, sym Sym, d Duration) Duration {
	if d < 0 {
		d = 0
	}
	c.Charge(SymRawSpinLock, c.sim.Costs.SpinLock)
	l.line.Touch(c, SymRawSpinLock)
	l.prune(c.sim.Queue.Now())
	want := c.cursor
	// place's common case, written out: the section starts at want,
	// after every recorded one, with room in the history (every
	// uncontended acquisition; page_pool's ring recycle takes the lock
	// once a packet on the cpumap presets). The rest is place's.
	var start Time
	if n := l.n; uint(n) < lockHistory && want >= l.floor && (n == 0 || want >= l.hist[n-1].end) {
		start = want
		if d > 0 {
			l.hist[n] = interval{want, want.Add(d)}
			l.n = n + 1
		}
	} else {
		start = l.place(want, d)
	}
	wait := start.Sub(want)
	l.acq++
	if wait > 0 {
		l.waits++
		l.waitSum += wait
		c.spin += wait
		c.Charge(SymRawSpinLock, wait)
	}
	l.held += d
	c.Charge(sym, d)
	return wait
}

// place finds the earliest start >= t of a free gap of length d and records
// the section there.
func (l *Lock) place(t Time, d Duration) Time {
	if l.n == lockHistory {
		// Forget the oldest section; nothing may be placed before it ends.
		if l.hist[0].end > l.floor {
			l.floor = l.hist[0].end
		}
		copy(l.hist[:], l.hist[1:l.n])
		l.n--
	}
	if t < l.floor {
		t = l.floor
	}
	// Most sections start after every recorded one ends: they go at the
	// end, where the walk below would put them, without the walk.
	if l.n == 0 || t >= l.hist[l.n-1].end {
		if d > 0 {
			l.hist[l.n] = interval{t, t.Add(d)}
			l.n++
		}
		return t
	}
	i := 0
	for ; i < l.n; i++ {
		iv := l.hist[i]
		if t.Add(d) <= iv.start {
			break
		}
		if t < iv.end {
			t = iv.end
		}
	}
	if d == 0 {
		return t
	}
	if i < l.n { // most sections go at the end: nothing to shift
		copy(l.hist[i+1:l.n+1], l.hist[i:l.n])
	}
	l.hist[i] = interval{t, t.Add(d)}
	l.n++
	return t
}

// prune forgets sections that ended before now: no CPU can start work
// before the current event time.
func (l *Lock) prune(now Time) {
	k := 0
	for k < l.n && l.hist[k].end <= now {
		k++
	}
	if k == 0 {
		return
	}
	if l.hist[k-1].end > l.floor {
		l.floor = l.hist[k-1].end
	}
	copy(l.hist[:], l.hist[k:l.n])
	l.n -= k
}

// LockStats are a lock's counters.
type LockStats struct {
	Acquisitions uint64   // times taken
	Contended    uint64   // times a holder had to wait
	Wait         Duration // total time spent waiting
	// Held is the total length of the critical sections: over a window,
	// the share of it the lock was taken (a lock held all the time
	// serialises its users).
	Held Duration
}

// Stats returns the lock's counters.
func (l *Lock) Stats() LockStats {
	return LockStats{Acquisitions: l.acq, Contended: l.waits, Wait: l.waitSum, Held: l.held}
}
