package mem

import (
	"errors"
	"fmt"
	"math"

	"ringlab/engine/sim"
)

// Config sizes the machine's memory. A zero field takes its default
// (DefaultConfig); a negative or out-of-range one is an error naming it.
type Config struct {
	Pages    int   // base pages, PFNs 0..Pages-1 (1<<18 is 1 GiB); required
	MaxOrder int   // MAX_PAGE_ORDER, CostlyOrder..MaxPageOrder; default 10
	PCPBatch int   // per_cpu_pages.batch: blocks moved per refill or drain; default 63
	PCPHigh  int   // per_cpu_pages.high, base pages: a free at or above it drains a batch; default 6*batch
	Nodes    int   // NUMA nodes; memory is split evenly by PFN; default 1
	CPUNode  []int // NUMA node of each CPU; default node 0 for all
	// MaxDMAMappings bounds the live mappings of each DMA device (the IOVA
	// space); a map beyond it fails as dma_mapping_error. Default 1<<20.
	MaxDMAMappings int
	// FreeHigh is the kernel's free_high rule for high-order frees on a
	// CPU that does not allocate; the zero value is FreeHighNone.
	FreeHigh FreeHigh
}

// Defaults.
const (
	DefaultPCPBatch = 63 // zone_batchsize() for a zone of a few GiB
	// DefaultPCPHigh is the pre-5.14 rule high = 6 * batch
	// (pageset_set_batch); modern kernels tune high between high_min and
	// high_max, which the engine does not model.
	DefaultPCPHigh        = 6 * DefaultPCPBatch
	DefaultMaxDMAMappings = 1 << 20
)

// DefaultConfig is 1 GiB in one node with the kernel's default pcp sizes.
func DefaultConfig() Config {
	return Config{Pages: 1 << 18, MaxOrder: MaxPageOrder, PCPBatch: DefaultPCPBatch,
		PCPHigh: DefaultPCPHigh, Nodes: 1, MaxDMAMappings: DefaultMaxDMAMappings}
}

// Mem is the machine's memory: the struct page array indexed by PFN, one
// zone with buddy free lists under the zone lock, and a per-CPU list (pcp)
// for each CPU of its sim.Sim. It is used from the simulation's event loop
// only.
//
// Every page block is in exactly one Loc at any time (the buddy free lists,
// a CPU's pcp list, a page_pool's cache or ring, a virtqueue, an skb...).
// Counts per Loc are kept in base pages (an order-3 block counts 8) and
// updated on every move, so that they add up to NumPages is an invariant
// Check verifies.
//
// Costs are charged to the sim.CPU passed to each operation, from
// sim.Costs: PageAlloc and PageFree for the pcp fast paths, BuddyPerPage
// for every block moved under the zone lock, the zone lock itself (a
// sim.Lock, so two CPUs refilling and draining at once wait for each
// other), an atomic for reference counts, and a cache-line transfer
// (sim.CacheLine on each struct page) when a CPU touches a page another
// CPU touched last, as a remote free does.
//
// The hot paths allocate no Go memory: pages, list links and DMA mappings
// live in arrays indexed by id.
type Mem struct {
	sim      *sim.Sim
	queue    *sim.Queue // sim.Queue, one load nearer for Move
	pages    []Page
	maxOrder int
	nodes    int
	cpuNode  []uint8
	maxDMA   int
	freeHigh FreeHigh

	zone zone
	pcp  []pcp
	// counts has a slot for every value a Loc can hold, so that indexing
	// it needs no bounds check on the hot path; only the first NumLocs
	// are ever non-zero.
	counts [1 << 8]int64
	stats  Stats
	dmas   []*DMA
	pools  int32 // page_pool ids handed out

	watching bool     // record touched blocks (Watch)
	touched  []PageID // blocks touched while watching

	// The move log: every change of location of a block, newest at
	// moves-1, in a ring of len(log) entries (a power of two). A page's
	// history is its entries still in the ring (Mem.History). Appended in
	// order, a move writes the line the previous one wrote, where a
	// history kept in each struct page would write a second line of it
	// per move, out of cache by the page's next move.
	log   []logEntry
	moves uint64 // moves recorded since New
}

// logEntry is a move of the block headed by Page.
type logEntry struct {
	At    sim.Time
	Page  PageID
	From  Loc
	To    Loc
	Owner int16
}

// Move log sizes: one entry per page, a power of two, within these.
const (
	minLogLen = 1 << 12
	maxLogLen = 1 << 18
)

// logLen is the move log's length for a memory of pages base pages.
func logLen(pages int) int {
	n := minLogLen
	for n < pages && n < maxLogLen {
		n <<= 1
	}
	return n
}

// record appends a move of the block headed by h to the log.
func (m *Mem) record(at sim.Time, h PageID, from, to Loc, owner int16) {
	e := &m.log[m.moves&uint64(len(m.log)-1)]
	e.At, e.Page, e.From, e.To, e.Owner = at, h, from, to, owner
	m.moves++
}

// ErrNoMemory is returned when the page allocator has no block to give
// (-ENOMEM). It is a simulated event, counted in Stats.AllocFail.
var ErrNoMemory = errors.New("mem: out of memory")

// ErrBadPage is wrapped by errors about a page in the wrong state for the
// operation (a put on a free page, a move of a tail, a free of a page that
// page_pool or a DMA mapping still holds).
var ErrBadPage = errors.New("mem: bad page state")

// New builds the memory for s: all pages free in the zone's buddy lists,
// in the largest aligned blocks that fit, and one empty pcp per CPU of s.
func New(s *sim.Sim, cfg Config) (*Mem, error) {
	if s == nil {
		return nil, errors.New("mem: New: nil sim")
	}
	def := DefaultConfig()
	if cfg.Pages <= 0 || cfg.Pages > math.MaxInt32/2 {
		return nil, fmt.Errorf("mem: Config.Pages %d: want 1..%d", cfg.Pages, math.MaxInt32/2)
	}
	if cfg.MaxOrder == 0 {
		cfg.MaxOrder = def.MaxOrder
	}
	if cfg.MaxOrder < CostlyOrder || cfg.MaxOrder > MaxPageOrder {
		return nil, fmt.Errorf("mem: Config.MaxOrder %d: want %d..%d", cfg.MaxOrder, CostlyOrder, MaxPageOrder)
	}
	if cfg.PCPBatch == 0 {
		cfg.PCPBatch = def.PCPBatch
	}
	if cfg.PCPHigh == 0 {
		cfg.PCPHigh = 6 * cfg.PCPBatch
	}
	if cfg.PCPBatch < 1 || cfg.PCPBatch > 1<<16 {
		return nil, fmt.Errorf("mem: Config.PCPBatch %d: want 1..%d", cfg.PCPBatch, 1<<16)
	}
	if cfg.PCPHigh < cfg.PCPBatch || cfg.PCPHigh > 1<<20 {
		return nil, fmt.Errorf("mem: Config.PCPHigh %d: want PCPBatch (%d)..%d", cfg.PCPHigh, cfg.PCPBatch, 1<<20)
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 1
	}
	if cfg.Nodes < 1 || cfg.Nodes > 64 || cfg.Nodes > cfg.Pages {
		return nil, fmt.Errorf("mem: Config.Nodes %d: want 1..64 and at most Pages", cfg.Nodes)
	}
	if cfg.CPUNode != nil && len(cfg.CPUNode) != s.NumCPU() {
		return nil, fmt.Errorf("mem: Config.CPUNode has %d entries for %d CPUs", len(cfg.CPUNode), s.NumCPU())
	}
	if cfg.MaxDMAMappings == 0 {
		cfg.MaxDMAMappings = def.MaxDMAMappings
	}
	if cfg.MaxDMAMappings < 1 || cfg.MaxDMAMappings > 1<<24 {
		return nil, fmt.Errorf("mem: Config.MaxDMAMappings %d: want 1..%d", cfg.MaxDMAMappings, 1<<24)
	}
	if cfg.FreeHigh > FreeHighCountHighMin {
		return nil, fmt.Errorf("mem: Config.FreeHigh %d: want %d..%d", cfg.FreeHigh, FreeHighNone, FreeHighCountHighMin)
	}
	m := &Mem{sim: s, queue: s.Queue, maxOrder: cfg.MaxOrder, nodes: cfg.Nodes, maxDMA: cfg.MaxDMAMappings, freeHigh: cfg.FreeHigh}
	m.cpuNode = make([]uint8, s.NumCPU())
	for i, n := range cfg.CPUNode {
		if n < 0 || n >= cfg.Nodes {
			return nil, fmt.Errorf("mem: Config.CPUNode[%d] = %d: want 0..%d", i, n, cfg.Nodes-1)
		}
		m.cpuNode[i] = uint8(n)
	}
	m.pages = make([]Page, cfg.Pages)
	m.log = make([]logEntry, logLen(cfg.Pages))
	for i := range m.pages {
		p := &m.pages[i]
		p.PP = -1
		p.Private = NoPage
		p.next, p.prev = NoPage, NoPage
		p.owner = -1
		p.loc = locTail
		p.nid = uint8(int64(i) * int64(cfg.Nodes) / int64(cfg.Pages))
	}
	m.zone.init(m)
	m.pcp = make([]pcp, s.NumCPU())
	for i := range m.pcp {
		m.pcp[i].init(cfg.PCPBatch, cfg.PCPHigh)
	}
	return m, nil
}

// NumPages is the number of base pages.
func (m *Mem) NumPages() int { return len(m.pages) }

// MaxOrder is the zone's largest order.
func (m *Mem) MaxOrder() int { return m.maxOrder }

// Nodes is the number of NUMA nodes.
func (m *Mem) Nodes() int { return m.nodes }

// CPUNode is the NUMA node of cpu (numa_mem_id on that CPU).
func (m *Mem) CPUNode(cpu int) int {
	if cpu < 0 || cpu >= len(m.cpuNode) {
		return 0
	}
	return int(m.cpuNode[cpu])
}

// Sim is the simulation the memory belongs to.
func (m *Mem) Sim() *sim.Sim { return m.sim }

// Valid reports whether id is a page of this memory.
func (m *Mem) Valid(id PageID) bool { return uint(int(id)) < uint(len(m.pages)) }

// Page returns the struct page of id, or nil when id is out of range.
func (m *Mem) Page(id PageID) *Page {
	if i := int(id); uint(i) < uint(len(m.pages)) { // Valid, in the form that spares the index its bounds check
		return &m.pages[i]
	}
	return nil
}

// Head returns the first page of the block holding id (compound_head), or
// NoPage when id is out of range. It is O(MaxOrder): blocks are aligned to
// their size, so the head is the first aligned head whose order covers id.
func (m *Mem) Head(id PageID) PageID {
	if uint(id) < uint(len(m.pages)) && m.pages[id].isHead { // every order covers k = 0: the common case, inlined
		return id
	}
	return m.headOfTail(id)
}

// headOfTail is Head for any other id: a tail, or out of range.
func (m *Mem) headOfTail(id PageID) PageID {
	if !m.Valid(id) {
		return NoPage
	}
	for k := 1; k <= m.maxOrder; k++ {
		c := id &^ PageID(1<<k-1)
		if p := &m.pages[c]; p.isHead && int(p.order) >= k {
			return c
		}
	}
	panic(fmt.Sprintf("mem: page %d is in no block", id))
}

// Loc returns where the block holding id is and its owner there (a CPU
// for PCP, a pool id for the pool locations, -1 none).
func (m *Mem) Loc(id PageID) (Loc, int) {
	h := m.Head(id)
	if h == NoPage {
		return locTail, -1
	}
	return m.pages[h].loc, int(m.pages[h].owner)
}

// Count is the number of base pages in loc.
func (m *Mem) Count(loc Loc) int64 {
	if !loc.Valid() {
		return 0
	}
	return m.counts[loc]
}

// Counts returns the base pages in every location, indexed by Loc.
func (m *Mem) Counts() (c [NumLocs]int64) {
	copy(c[:], m.counts[:NumLocs])
	return c
}

// History appends the last moves (up to HistoryLen) of the block holding
// id to buf, oldest first, and returns it. They are the block's moves
// among the memory's last MovesKept: a block that has not moved for that
// long shows fewer, or none.
func (m *Mem) History(id PageID, buf []Move) []Move {
	h := m.Head(id)
	if h == NoPage {
		return buf
	}
	var found [HistoryLen]Move
	n := 0
	mask := uint64(len(m.log) - 1)
	for i, kept := m.moves, uint64(0); i > 0 && kept < uint64(len(m.log)) && n < HistoryLen; i, kept = i-1, kept+1 {
		if e := &m.log[(i-1)&mask]; e.Page == h {
			found[n] = Move{At: e.At, From: e.From, To: e.To, Owner: e.Owner}
			n++
		}
	}
	for k := n - 1; k >= 0; k-- {
		buf = append(buf, found[k])
	}
	return buf
}

// MovesKept is how many of the memory's last moves History looks through.
func (m *Mem) MovesKept() int { return len(m.log) }

// Move records that the allocated block holding id is now in to, owned by
// owner (a CPU, queue or pool id; -1 none). Buddy and PCP are entered only
// by freeing. Moving to the current location only updates the owner.
func (m *Mem) Move(id PageID, to Loc, owner int) error {
	// Fast path: an allocated head moved to a valid location (every move
	// of a receive buffer). Anything else takes the checked path below,
	// which reports what is wrong.
	if i := int(id); uint(i) < uint(len(m.pages)) {
		// Both locations are allocated ones (not Buddy, PCP or locTail):
		// the unsigned subtraction wraps the others past NumLocs. That
		// from is one also says that id is a head, without reading
		// isHead: a tail's loc is locTail, a head's never is (Check holds
		// both), and Move runs on every buffer several times a packet.
		const first = PCP + 1
		p := &m.pages[i]
		if from := p.loc; from-first < NumLocs-first && to-first < NumLocs-first && uint(owner+1) <= math.MaxInt16+1 {
			// setLoc(id, to, owner), written out.
			if from != to {
				n := int64(1) << (p.order & 63) // order <= MaxPageOrder
				m.counts[from] -= n
				m.counts[to] += n
				m.record(m.queue.Now(), id, from, to, int16(owner))
				p.loc = to
			}
			p.owner = int16(owner)
			m.note(id)
			return nil
		}
	}
	return m.moveChecked(id, to, owner)
}

// MoveFrom is Move when the block holding id is in from, and nothing
// otherwise: Loc, then Move, in one call.
func (m *Mem) MoveFrom(id PageID, from, to Loc, owner int) error {
	if uint(id) < uint(len(m.pages)) && m.pages[id].isHead {
		// Loc of a head, without the call.
		if m.pages[id].loc != from {
			return nil
		}
	} else if loc, _ := m.Loc(id); loc != from {
		return nil
	}
	return m.Move(id, to, owner)
}

// moveChecked is Move for any page: tails resolve to their head, and a
// free page, a bad location or owner is an error.
func (m *Mem) moveChecked(id PageID, to Loc, owner int) error {
	h, err := m.allocatedHead(id)
	if err != nil {
		return err
	}
	if !to.Valid() || to.free() {
		return fmt.Errorf("mem: move of page %d to %v: %w", id, to, errBadLoc)
	}
	if owner < -1 || owner > math.MaxInt16 {
		return fmt.Errorf("mem: move of page %d: owner %d out of range", id, owner)
	}
	m.setLoc(h, to, owner)
	return nil
}

var errBadLoc = errors.New("not a location a page can be moved to")

// Touch charges c for the struct page's cache line of the block holding id
// (a transfer when another CPU touched it last) and reports whether the
// line moved. Drivers call it where the kernel reads or writes struct page,
// with the function that does (sym), which the transfer is charged to.
func (m *Mem) Touch(c *sim.CPU, sym sim.Sym, id PageID) bool {
	h := m.Head(id)
	if h == NoPage {
		return false
	}
	return m.pages[h].line.Touch(c, sym)
}

// allocatedHead resolves id to the head of an allocated block.
func (m *Mem) allocatedHead(id PageID) (PageID, error) {
	if !m.Valid(id) {
		return NoPage, fmt.Errorf("mem: page %d out of range 0..%d: %w", id, len(m.pages)-1, ErrBadPage)
	}
	h := m.Head(id)
	if m.pages[h].loc.free() {
		return NoPage, fmt.Errorf("mem: page %d is free (%v): %w", id, m.pages[h].loc, ErrBadPage)
	}
	return h, nil
}

// setLoc moves head h, keeping the counts and history.
func (m *Mem) setLoc(h PageID, to Loc, owner int) {
	m.note(h)
	p := &m.pages[h]
	if p.loc == to {
		p.owner = int16(owner)
		return
	}
	n := int64(1) << p.order
	if p.loc != locTail {
		m.counts[p.loc] -= n
	}
	m.counts[to] += n
	m.record(m.sim.Now(), h, p.loc, to, int16(owner))
	p.loc = to
	p.owner = int16(owner)
}

// checkCPU validates a CPU argument.
func (m *Mem) checkCPU(c *sim.CPU) error {
	if c == nil || c.ID < 0 || c.ID >= len(m.pcp) {
		return errors.New("mem: CPU is nil or not of this simulation")
	}
	return nil
}

// NewPoolID hands out the next page_pool id (the kernel allocates them
// from 1 in the page_pools xarray); pools store it in Page.PP.
func (m *Mem) NewPoolID() int32 {
	m.pools++
	return m.pools
}
