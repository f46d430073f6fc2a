package engine

import (
	"errors"
	"fmt"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
)

// DefaultFullCheckEvery is how often, in events, CheckEveryEvent runs the
// full Check by default.
const DefaultFullCheckEvery = 1 << 16

// InvariantError is what stops a world whose invariants broke while
// checked after every event: the event (its number, counting from 1, its
// time and its handler) and the invariant.
type InvariantError struct {
	Event uint64
	At    sim.Time
	Kind  string // the handler of the event, as registered
	Err   error
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("invariant broken after event %d (%s) at %d ns: %v", e.Event, e.Kind, e.At, e.Err)
}

func (e *InvariantError) Unwrap() error { return e.Err }

// CheckEveryEvent is the test mode: from now on, after every event the
// world verifies what that event could have broken, and every fullEvery
// events (DefaultFullCheckEvery when 0) it runs the full Check and
// compares the checker's own accounting with a walk of every page. The
// first violation stops the world with an *InvariantError (World.Err).
// It returns the full Check's error if the world is already broken.
//
// After every event, in O(touched blocks + pools + queues + CPUs²):
//   - every block the event touched (mem.Watch) is a consistent block
//     (mem.CheckBlock), and a page_pool page is consistent for its pool
//     (Pool.CheckPage);
//   - the checker keeps, from the touched blocks alone, the pages in each
//     location, on each CPU's pcp, in each pool's cache and ring, marked
//     for each pool and tracked as mapped by it; each must equal the
//     count the memory and the pools keep (no page lost or counted twice);
//   - the memory's own counters agree (mem.CheckCounts), every pool's
//     (Pool.CheckCounts), every virtqueue's num_free (virtq.CheckCounts);
//   - every buffer the event posted is a well-formed chain naming a
//     buffer in use (virtq.CheckHead, RQ.CheckPosted);
//   - xdp_frames, skbs, DMA mappings and whole-page buffers are
//     conserved: each is where a count elsewhere says it is (conservation).
//
// Without it, a world pays one nil test per event.
func (w *World) CheckEveryEvent(fullEvery uint64) error {
	if fullEvery == 0 {
		fullEvery = DefaultFullCheckEvery
	}
	c := &eventChecker{w: w, fullEvery: fullEvery}
	if err := c.full(); err != nil {
		return err
	}
	w.checker = c
	w.Mem.Watch(true)
	return nil
}

// CheckNow runs the checker's full pass at once (the full Check, and the
// checker's accounting against a walk of every page); it is what a test
// calls at the end of a checked run. Without CheckEveryEvent it is Check.
func (w *World) CheckNow() error {
	if w.checker == nil {
		return w.Check()
	}
	return w.checker.full()
}

// eventChecker is the state of CheckEveryEvent.
type eventChecker struct {
	w         *World
	fullEvery uint64
	nextFull  uint64

	pages   []pageShadow
	epoch   uint32
	touched []mem.PageID

	// What the touched blocks say, kept up to date block by block.
	loc    [mem.NumLocs]int64 // base pages of allocated and pcp blocks per location (buddy is the rest)
	pcp    []int64            // base pages per CPU's pcp
	cache  []int              // per pool id: pages located in its alloc cache
	ring   []int              // per pool id: pages located in its ptr_ring
	marked []int64            // per pool id: pages carrying its mark
	mapped []int              // per pool id: pages it tracks as mapped
	pools  []*pagepool.Pool

	availSeen []uint16 // per rx queue: avail index up to which posted heads were checked
}

// pageShadow is what the checker last saw of a block head.
type pageShadow struct {
	pp      int32
	owner   int16
	loc     mem.Loc
	order   uint8
	counted bool // a head outside the buddy lists: counted in loc
	mapped  bool // a pool page in its pool's dma_mapped xarray
	seen    uint32
}

// step runs one event and checks after it.
func (c *eventChecker) step() bool {
	q := c.w.Sim.Queue
	k, _, ok := q.PeekKind()
	if !ok {
		return false
	}
	q.Step()
	err := c.afterEvent()
	if err == nil && q.Fired() >= c.nextFull {
		err = c.full()
	}
	if err != nil {
		c.w.err = &InvariantError{Event: q.Fired(), At: q.Now(), Kind: q.KindName(k), Err: err}
	}
	return true
}

// full is the periodic pass: the full Check, then every page against the
// checker's accounting, which it rebuilds.
func (c *eventChecker) full() error {
	w := c.w
	if err := w.Check(); err != nil {
		return err
	}
	n := w.Mem.NumPages()
	fresh := c.pages == nil
	if fresh {
		c.pages = make([]pageShadow, n)
		for i := range c.pages {
			c.pages[i].pp = -1
		}
		c.pools = w.Pools.List(nil)
		maxID := 0
		for _, p := range c.pools {
			maxID = max(maxID, int(p.ID()))
		}
		c.cache, c.ring = make([]int, maxID+1), make([]int, maxID+1)
		c.marked, c.mapped = make([]int64, maxID+1), make([]int, maxID+1)
		c.pcp = make([]int64, w.Sim.NumCPU())
		c.availSeen = make([]uint16, len(w.Driver.RQ))
		for i, rq := range w.Driver.RQ {
			c.availSeen[i] = rq.VQ.AvailIdx()
		}
	}
	w.Mem.Touched(c.touched[:0]) // the walk below sees everything
	c.epoch++
	// Block by block: a tail is never counted, and a block that became
	// a tail unseen leaves its count behind, which compare finds.
	for id := mem.PageID(0); int(id) < n; id += mem.PageID(1) << c.w.Mem.Page(id).Order() {
		old := c.pages[id]
		c.forget(id)
		c.record(id)
		if !fresh && !sameShadow(old, c.pages[id]) {
			return fmt.Errorf("page %d changed from %+v to %+v without the memory recording it", id, old, c.pages[id])
		}
	}
	c.nextFull = w.Sim.Queue.Fired() + c.fullEvery
	return c.compare()
}

func sameShadow(a, b pageShadow) bool {
	a.seen, b.seen = 0, 0
	return a == b
}

// afterEvent checks what the event touched, then the conservation laws.
func (c *eventChecker) afterEvent() error {
	w := c.w
	c.touched = w.Mem.Touched(c.touched[:0])
	c.epoch++
	for _, h := range c.touched {
		if c.pages[h].seen == c.epoch {
			continue
		}
		c.forget(h)
		c.record(h)
		if err := c.checkBlock(h); err != nil {
			return err
		}
	}
	if err := c.compare(); err != nil {
		return err
	}
	return c.checkPosted()
}

// forget takes the block's last recorded state out of the counts.
func (c *eventChecker) forget(h mem.PageID) {
	s := &c.pages[h]
	if s.counted {
		n := int64(1) << s.order
		c.loc[s.loc] -= n
		switch s.loc {
		case mem.PCP:
			c.pcp[s.owner] -= n
		case mem.PoolCache:
			c.cache[s.owner]--
		case mem.PoolRing:
			c.ring[s.owner]--
		}
	}
	if s.pp >= 0 && int(s.pp) < len(c.marked) {
		c.marked[s.pp]--
		if s.mapped {
			c.mapped[s.pp]--
		}
	}
	*s = pageShadow{pp: -1, seen: s.seen}
}

// record adds the block's state now to the counts. Blocks in the buddy
// lists and tails are not counted: buddy is what the others leave.
func (c *eventChecker) record(h mem.PageID) {
	pg := c.w.Mem.Page(h)
	s := &c.pages[h]
	s.seen = c.epoch
	if !pg.IsHead() {
		return
	}
	loc, owner := c.w.Mem.Loc(h)
	if loc != mem.Buddy && loc.Valid() {
		s.loc, s.owner, s.order = loc, int16(owner), uint8(pg.Order())
		s.counted = true
		n := int64(1) << s.order
		c.loc[loc] += n
		switch {
		case loc == mem.PCP && owner >= 0 && owner < len(c.pcp):
			c.pcp[owner] += n
		case loc == mem.PoolCache && owner >= 0 && owner < len(c.cache):
			c.cache[owner]++
		case loc == mem.PoolRing && owner >= 0 && owner < len(c.ring):
			c.ring[owner]++
		case loc == mem.PoolCache || loc == mem.PoolRing || loc == mem.PCP:
			// An owner that does not exist: checkBlock says so.
			c.loc[loc] -= n
			s.loc, s.owner, s.order, s.counted = 0, 0, 0, false
		}
	}
	if pg.PP >= 0 && int(pg.PP) < len(c.marked) {
		s.pp = pg.PP
		c.marked[pg.PP]++
		if pg.DMAIndex != 0 {
			s.mapped = true
			c.mapped[pg.PP]++
		}
	}
}

// checkBlock checks one touched block for the memory and its pool.
func (c *eventChecker) checkBlock(h mem.PageID) error {
	m := c.w.Mem
	if err := m.CheckBlock(h); err != nil {
		return err
	}
	pg := m.Page(h)
	if !pg.IsHead() {
		return nil
	}
	loc, owner := m.Loc(h)
	if pg.PP < 0 {
		if loc == mem.PoolCache || loc == mem.PoolRing {
			return fmt.Errorf("page %d is in the %v of pool %d without the pool's mark", h, loc, owner)
		}
		return nil
	}
	pool := c.w.Pools.Lookup(pg.PP)
	if pool == nil {
		return fmt.Errorf("page %d is marked for page_pool %d, which does not exist", h, pg.PP)
	}
	return pool.CheckPage(h)
}

// compare checks the counts the checker keeps against those of the memory
// and the pools, and the conservation laws.
func (c *eventChecker) compare() error {
	w := c.w
	m := w.Mem
	if err := m.CheckCounts(); err != nil {
		return err
	}
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		if l != mem.Buddy && c.loc[l] != m.Count(l) {
			return fmt.Errorf("%d pages are located in %v, its count says %d (a page lost or counted twice)", c.loc[l], l, m.Count(l))
		}
	}
	for cpu, n := range c.pcp {
		if n != int64(m.PCPCount(cpu)) {
			return fmt.Errorf("%d pages are on CPU %d's pcp, its count says %d", n, cpu, m.PCPCount(cpu))
		}
	}
	for _, p := range c.pools {
		id := p.ID()
		if err := p.CheckCounts(); err != nil {
			return err
		}
		if c.cache[id] != p.CacheLen() || c.ring[id] != p.Ring().Len() {
			return fmt.Errorf("pagepool %d: %d pages are located in its alloc cache and %d in its ptr_ring; they hold %d and %d",
				id, c.cache[id], c.ring[id], p.CacheLen(), p.Ring().Len())
		}
		if c.marked[id] != p.Inflight() {
			return fmt.Errorf("pagepool %d: %d pages carry its mark, hold_cnt %d - release_cnt %d = %d",
				id, c.marked[id], p.HoldCnt(), p.ReleaseCnt(), p.Inflight())
		}
		if c.mapped[id] != p.DMAMapped() {
			return fmt.Errorf("pagepool %d: %d of its pages are mapped, its dma_mapped count says %d", id, c.mapped[id], p.DMAMapped())
		}
	}
	return w.checkConservation()
}

// checkPosted checks the buffers posted since the last event: each avail
// entry still outstanding is a well-formed chain (an indirect one with a
// well-formed table of every entry of the buffer) naming a buffer in use.
func (c *eventChecker) checkPosted() error {
	for i, rq := range c.w.Driver.RQ {
		vq := rq.VQ
		end := vq.AvailIdx()
		from := c.availSeen[i]
		if d := end - vq.LastUsed(); end-from > d {
			from = end - d // reclaimed already, or overwritten
		}
		for idx := from; idx != end; idx++ {
			head := vq.AvailEntry(idx)
			tok, n, err := vq.CheckHead(head)
			if err != nil {
				return fmt.Errorf("rx queue %d, avail index %d: %w", rq.Index, idx, err)
			}
			if n != rq.DescPerBuf() {
				return fmt.Errorf("rx queue %d: chain at head %d has %d descriptors, want %d", rq.Index, head, n, rq.DescPerBuf())
			}
			// An indirect buffer keeps its entries in a table of its
			// own (alloc_indirect_split(total_sg)).
			if rq.Indirect() && vq.IndirectLen(head) != rq.SGPerBuf() {
				return fmt.Errorf("rx queue %d: indirect chain at head %d has a table of %d entries, want %d", rq.Index, head, vq.IndirectLen(head), rq.SGPerBuf())
			}
			if err := rq.CheckPosted(head, tok); err != nil {
				return err
			}
		}
		c.availSeen[i] = end
	}
	return nil
}

// errConservation is wrapped by every conservation law's error.
var errConservation = errors.New("conservation")

// checkConservation checks, in O(queues + CPUs²), that what is in flight
// is where the counts elsewhere say it is: every virtqueue's num_free
// matches its posted buffers (a send queue's, the descriptors its frames
// hold); every live xdp_frame is in a cpumap queue, a devmap queue or a
// send queue (xdp_convert_buff_to_frame hands it on at once;
// xdp_return_frame frees it), and so are the frags multi-buffer frames
// carry, their pages where their frames are; every live skb waits on a
// socket or a defer list, or is chained behind one through frag_list (the
// others are freed in the softirq that built them); the device's live DMA mappings are the pools' mapped pages, the
// page_frag blocks the driver premapped (virtnet_rq_alloc, 6.6+) and one
// per ring-mapped posted buffer (vring_map_one_sg at add,
// vring_unmap_one_split at get); no defer list is longer than
// sysctl_skb_defer_max (skb_attempt_defer_free); whole-page buffers'
// pages are located where their buffers are; the used entries a device
// wrote and has not published are the ones in its batch (vhost-net's
// nvq->done_idx, which vhost_net_signal_used publishes whole; none for
// hardware, which publishes per frame).
func (w *World) checkConservation() error {
	var frames, rxPosted, rxPages, ringMapped, txPosted int
	for _, rq := range w.Driver.RQ {
		if err := rq.VQ.CheckCounts(rq.DescPerBuf()); err != nil {
			return err
		}
		if n, b := rq.VQ.DeviceUnpublished(), rq.Dev.Unpublished(); n != b {
			return fmt.Errorf("%w: rx queue %d: %d used entries written and not published, the host's batch holds %d",
				errConservation, rq.Index, n, b)
		}
		out := rq.VQ.Outstanding()
		rxPosted += out
		rxPages += out * rq.PagesPerBuf()
		if rq.RingMapped() {
			ringMapped += out
		}
	}
	txFrags := 0
	for _, sq := range w.Driver.SQ {
		if err := sq.VQ.CheckFree(sq.Descs()); err != nil {
			return err
		}
		// The send queue holds xdp_frames and ACKs (which hold no frame).
		txPosted += sq.VQ.Outstanding() - sq.ACKs()
		txFrags += sq.Frags()
	}
	cpumapQueued, devmapQueued, cpumapFrags, devmapFrags := 0, 0, 0, 0
	if w.Cpumap != nil {
		cpumapQueued, cpumapFrags = w.Cpumap.Queued(), w.Cpumap.QueuedFrags()
	}
	if w.Devmap != nil {
		devmapQueued, devmapFrags = w.Devmap.InFlight(), w.Devmap.InFlightFrags()
	}
	if f := w.Frames.LiveFrags(); f != cpumapFrags+devmapFrags+txFrags {
		return fmt.Errorf("%w: live xdp_frames hold %d frags, %d in cpumap queues + %d in devmap queues + %d in send queues",
			errConservation, f, cpumapFrags, devmapFrags, txFrags)
	}
	frames = cpumapQueued + devmapQueued + txPosted
	if w.Frames.Live() != frames {
		return fmt.Errorf("%w: %d xdp_frames live, %d in cpumap queues + %d in devmap queues + %d in send queues",
			errConservation, w.Frames.Live(), cpumapQueued, devmapQueued, txPosted)
	}
	held := 0
	for _, rq := range w.Driver.RQ {
		if rq.GRO().Held() != skb.NoSKB {
			held++
		}
	}
	if w.Cpumap != nil {
		held += w.Cpumap.GROHeld()
	}
	if w.SKBs.Live() != w.Stack.Waiting()+w.SKBs.Chained()+held {
		return fmt.Errorf("%w: %d skbs live, %d wait on sockets or defer lists, %d are chained behind them, %d held by GRO",
			errConservation, w.SKBs.Live(), w.Stack.Waiting(), w.SKBs.Chained(), held)
	}
	mapped, blocks := ringMapped, 0
	for _, rq := range w.Driver.RQ {
		if rq.Pool != nil {
			mapped += rq.Pool.DMAMapped()
		}
		blocks += rq.PremappedBlocks()
	}
	mapped += blocks
	if live := w.DMA.Stats().Live; live != mapped {
		return fmt.Errorf("%w: %d DMA mappings live, pools map %d pages, the driver %d page_frag blocks, and %d posted buffers are mapped by the ring",
			errConservation, live, mapped-ringMapped-blocks, blocks, ringMapped)
	}
	if err := w.Stack.CheckDefer(); err != nil {
		return fmt.Errorf("%w: %v", errConservation, err)
	}
	m := w.Mem
	if int64(rxPages) != m.Count(mem.Virtqueue) {
		return fmt.Errorf("%w: %d pages are located in receive virtqueues, %d posted buffers hold %d",
			errConservation, m.Count(mem.Virtqueue), rxPosted, rxPages)
	}
	if w.Driver.RQ[0].PagesPerBuf() > 0 {
		if n := m.Count(mem.XDPFrame) + m.Count(mem.Driver); n != 0 {
			return fmt.Errorf("%w: %d whole pages are held by the driver or an xdp_frame between events", errConservation, n)
		}
		// A frame's pages are its head's and its frags' (a multi-buffer
		// frame's skb_shared_info travels with it).
		if int64(cpumapQueued+cpumapFrags) != m.Count(mem.CpumapRing) || int64(devmapQueued+devmapFrags+txPosted+txFrags) != m.Count(mem.TxQueue) {
			return fmt.Errorf("%w: %d pages in cpumap rings and %d in transmit queues; %d+%d and %d+%d+%d+%d frames and frags are queued there",
				errConservation, m.Count(mem.CpumapRing), m.Count(mem.TxQueue), cpumapQueued, cpumapFrags, devmapQueued, devmapFrags, txPosted, txFrags)
		}
	}
	return nil
}
