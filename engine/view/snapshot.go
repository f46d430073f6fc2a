package view

import (
	"ringlab/engine"
	"ringlab/engine/mem"
	"ringlab/engine/sim"
	"ringlab/engine/virtq"
)

// Snapshot is what the game draws of one world at one moment. Fill reuses
// its slices, so a snapshot refreshed every tick allocates only when the
// world grows (a bigger ring, more CPUs).
type Snapshot struct {
	Name        string
	Description string
	Mode        string // small, big or mergeable
	Now         int64  // simulated ns
	Events      uint64 // events run
	Packets     uint64 // rx_packets over every queue
	Err         string // why the world stopped, "" while it runs

	NumQueues int
	Queue     QueueView // the receive queue shown (Queue.Index)
	Pages     PagesView
	CPUs      []CPUView

	slices []sim.Slice // scratch for a CPU's record (fillLane)
}

// DescView is one descriptor of the table: what the driver wrote there and
// the state of the slot.
type DescView struct {
	State virtq.SlotState
	Addr  uint64
	Len   uint32
	Flags uint16
	Next  uint16
}

// Chained reports whether the descriptor continues a posted chain at Next
// (a free descriptor's Next links the free list, not a chain).
func (d DescView) Chained() bool {
	return d.State != virtq.SlotFree && d.Flags&virtq.DescFNext != 0
}

// QueueView is a receive virtqueue: the descriptor table, the avail and
// used rings, and the indices of both sides. Indices are free-running
// 16-bit counters as in the ring; slot = idx mod Size.
type QueueView struct {
	Index   int
	Size    int
	NumFree int

	AvailIdx   uint16 // avail->idx: the driver's next avail slot
	LastAvail  uint16 // the device's next avail slot to take
	UsedIdx    uint16 // used->idx: the device's next used slot
	LastUsed   uint16 // last_used_idx: the driver's next used slot to read
	UsedEvent  uint16 // used_event: the driver wants an interrupt past this
	AvailEvent uint16 // avail_event: the device wants a kick past this

	EventIdx     bool // VIRTIO_RING_F_EVENT_IDX negotiated
	CallbacksOff bool // the driver suppressed interrupts (NAPI running)
	Starved      bool // the host sleeps until a kick: a frame waits, the ring is empty
	Broken       string

	Desc     []DescView
	Avail    []uint16         // avail->ring[slot]: descriptor heads
	Used     []virtq.UsedElem // used->ring[slot]
	Counters virtq.Counters   // kicks, interrupts, ...
	Host     HostView         // the device side
}

// HostView is the device (vhost thread or NIC) of a queue.
type HostView struct {
	Packets uint64
	Drops   uint64
	Starved uint64
	Wakeups uint64
}

// AvailLive reports whether avail slot s holds a head the device has not
// taken yet.
func (q *QueueView) AvailLive(s int) bool {
	return inWindow(uint16(s), q.LastAvail, q.AvailIdx, q.Size)
}

// UsedLive reports whether used slot s holds an element the driver has
// not read yet.
func (q *QueueView) UsedLive(s int) bool {
	return inWindow(uint16(s), q.LastUsed, q.UsedIdx, q.Size)
}

// inWindow reports whether slot s lies in [from, to) of free-running
// indices on a ring of size n.
func inWindow(s, from, to uint16, n int) bool {
	if n == 0 {
		return false
	}
	count := int(to - from)
	if count <= 0 || count > n {
		return count > n // a corrupt window covers everything
	}
	off := (int(s) - int(from)%n + n) % n
	return off < count
}

// PagesView is every page of the machine by location.
type PagesView struct {
	N      int                // base pages
	Counts [mem.NumLocs]int64 // base pages per location
	// Map holds the location of every page, indexed by page id (a
	// compound block's pages all carry the block's location).
	Map []mem.Loc
	// Working is how many pages are outside the zone's free lists (not
	// Buddy): the receive path's working set.
	Working int
	// Span is one past the highest page id outside the free lists: the
	// part of memory the receive path has touched (the allocator hands
	// out low pages first), which the page view draws tile by tile.
	Span int
}

// CPUView is one CPU's lane.
type CPUView struct {
	Busy      int64   // ns of work so far (spinning included)
	Spin      int64   // ns waiting for locks
	Util      float64 // Busy over the elapsed time, 0..1
	Working   bool    // work given to it runs past now
	Activity  string  // the last work begun ("napi poll", ...)
	Transfers uint64  // cache lines pulled from other CPUs
	Queues    []int   // receive queues whose NAPI runs here

	// LaneFrom is where the lane's window starts: Now - LaneWindowNs
	// (before 0 in the first 200 µs, where nothing ran).
	LaneFrom int64
	// Lane is who ran when over the window (lane.go), in the order the
	// CPU recorded the slices (a piece of work when it ended, a wait when
	// its task began to run), then the waits still going on. A task's
	// chunk spans the interrupt work that preempted it: draw the tasks
	// first, the interrupt work over them, the waits under them.
	Lane []LaneSlice
}

// Fill reads w into s. queue selects the receive queue shown (clamped).
func (s *Snapshot) Fill(w *engine.World, queue int) {
	sc := &w.Scenario
	s.Name, s.Description, s.Mode = sc.Name, sc.Description, w.Driver.Mode()
	s.Now = int64(w.Now())
	s.Events = w.Sim.Queue.Fired()
	s.Packets = w.Received()
	s.Err = ""
	if err := w.Err(); err != nil {
		s.Err = err.Error()
	}
	s.NumQueues = len(w.Driver.RQ)
	if queue < 0 || queue >= s.NumQueues {
		queue = 0
	}
	s.fillQueue(w, queue)
	s.Pages.fill(w.Mem)
	s.fillCPUs(w)
}

func (s *Snapshot) fillQueue(w *engine.World, i int) {
	rq := w.Driver.RQ[i]
	vq := rq.VQ
	q := &s.Queue
	n := vq.Size()
	q.Index, q.Size, q.NumFree = i, n, vq.NumFree()
	q.AvailIdx, q.LastAvail = vq.AvailIdx(), vq.DeviceLastAvail()
	q.UsedIdx, q.LastUsed = vq.UsedIdx(), vq.LastUsed()
	q.UsedEvent, q.AvailEvent = vq.UsedEvent(), vq.AvailEvent()
	q.EventIdx, q.CallbacksOff = vq.EventIdx(), vq.CallbacksDisabled()
	q.Starved = rq.Dev.Starved()
	q.Broken = ""
	if broken, why := vq.Broken(); broken {
		q.Broken = why
	}
	q.Counters = vq.Counters()
	dc := rq.Dev.Counters()
	q.Host = HostView{Packets: dc.Packets, Drops: dc.Drops, Starved: dc.Starved, Wakeups: dc.Wakeups}
	q.Desc = resize(q.Desc, n)
	q.Avail = resize(q.Avail, n)
	q.Used = resize(q.Used, n)
	for j := 0; j < n; j++ {
		d := vq.DeviceDesc(uint16(j))
		q.Desc[j] = DescView{State: vq.Slot(uint16(j)), Addr: d.Addr, Len: d.Len, Flags: d.Flags, Next: d.Next}
		q.Avail[j] = vq.AvailEntry(uint16(j))
		q.Used[j] = vq.UsedEntry(uint16(j))
	}
}

func (p *PagesView) fill(m *mem.Mem) {
	p.N = m.NumPages()
	p.Counts = m.Counts()
	p.Map = resize(p.Map, p.N)
	p.Working, p.Span = 0, 0
	// Walk block by block: a head page carries its block's order and
	// location, so the zone's large free blocks cost one step each.
	for id := 0; id < p.N; {
		loc, _ := m.Loc(mem.PageID(id))
		size := 1
		if pg := m.Page(mem.PageID(id)); pg.IsHead() {
			size = 1 << pg.Order()
		}
		if id+size > p.N {
			size = p.N - id
		}
		fill := p.Map[id : id+size]
		for k := range fill {
			fill[k] = loc
		}
		if loc != mem.Buddy {
			p.Working += size
			p.Span = id + size
		}
		id += size
	}
}

func (s *Snapshot) fillCPUs(w *engine.World) {
	n := w.Sim.NumCPU()
	s.CPUs = resize(s.CPUs, n)
	now := w.Now()
	for i := 0; i < n; i++ {
		c := w.Sim.CPU(i)
		v := &s.CPUs[i]
		v.Busy, v.Spin = int64(c.Busy()), int64(c.Spin())
		v.Util = c.Utilisation(now.Sub(0))
		v.Working = c.BusyUntil() > now
		v.Activity = c.Activity()
		v.Transfers = c.Transfers()
		v.Queues = v.Queues[:0]
		for _, rq := range w.Driver.RQ {
			if rq.CPU == c {
				v.Queues = append(v.Queues, rq.Index)
			}
		}
		s.slices = v.fillLane(w, c, now, s.slices)
	}
}

// resize returns s with length n, reusing its array when it is big enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
