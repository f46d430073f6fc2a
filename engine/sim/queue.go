package sim

import (
	"fmt"
	"strconv"
)

// Kind names a handler registered with Queue.Register. Events carry a Kind
// and a uint64 argument instead of a closure, so scheduling allocates
// nothing.
type Kind int32

// Handler runs an event. now is the event's time; arg is what was scheduled.
type Handler func(now Time, arg uint64)

type event struct {
	at   Time
	seq  uint64
	kind Kind
	arg  uint64
}

func (e *event) before(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// Queue is the event queue: a binary min-heap ordered by (time, sequence
// number), so events at equal times run in the order they were scheduled.
// Its zero value is not usable; call NewQueue.
//
// Schedule is O(log n) and allocates only when the heap outgrows its
// backing array; Step is O(log n).
type Queue struct {
	now       Time
	seq       uint64
	heap      []event
	handlers  []Handler
	names     []string
	argPrefix []string
	cites     [][]string // kernel functions each kind stands for (Cite)
	fired     uint64
	running   Kind // the kind of the event Step runs (or ran last)
}

// NewQueue returns an empty queue at time 0 with room for capacity events.
func NewQueue(capacity int) *Queue {
	return &Queue{heap: make([]event, 0, capacity)}
}

// Register adds a handler and returns the Kind that schedules it. name is
// used in traces and errors.
func (q *Queue) Register(name string, h Handler) Kind { return q.RegisterArg(name, "", h) }

// RegisterArg is Register for a handler whose argument names a thing: a
// trace shows the argument as argPrefix followed by its value ("rx0",
// "cpu1").
func (q *Queue) RegisterArg(name, argPrefix string, h Handler) Kind {
	q.handlers = append(q.handlers, h)
	q.names = append(q.names, name)
	q.argPrefix = append(q.argPrefix, argPrefix)
	q.cites = append(q.cites, nil)
	return Kind(len(q.handlers) - 1)
}

// Cite names the kernel functions an event of kind k stands for, its
// entry first (virtnet_poll for a NAPI poll), replacing what was cited:
// the functions a trace shows beside the event, from engine/kernel's
// table.
func (q *Queue) Cite(k Kind, funcs ...string) {
	if k >= 0 && int(k) < len(q.cites) {
		q.cites[k] = funcs
	}
}

// Cites returns the kernel functions k stands for (Cite).
func (q *Queue) Cites(k Kind) []string {
	if k < 0 || int(k) >= len(q.cites) {
		return nil
	}
	return q.cites[k]
}

// Kinds is how many kinds are registered.
func (q *Queue) Kinds() int { return len(q.handlers) }

// ArgName is arg as the thing it names for events of kind k ("rx0"), or
// in brackets when k's argument names nothing ("[5]").
func (q *Queue) ArgName(k Kind, arg uint64) string {
	if k < 0 || int(k) >= len(q.argPrefix) || q.argPrefix[k] == "" {
		return fmt.Sprintf("[%d]", arg)
	}
	return q.argPrefix[k] + strconv.FormatUint(arg, 10)
}

// KindName returns the name k was registered with.
func (q *Queue) KindName(k Kind) string {
	if k < 0 || int(k) >= len(q.names) {
		return fmt.Sprintf("kind(%d)", k)
	}
	return q.names[k]
}

// Now is the time of the event being run, or of the last one run.
func (q *Queue) Now() Time { return q.now }

// Len is the number of pending events.
func (q *Queue) Len() int { return len(q.heap) }

// Fired is the number of events run so far.
func (q *Queue) Fired() uint64 { return q.fired }

// Schedule adds an event at time at. An event in the past runs at Now: time
// never goes backwards. It panics on an unregistered kind, a programming
// error.
func (q *Queue) Schedule(at Time, k Kind, arg uint64) {
	if k < 0 || int(k) >= len(q.handlers) {
		panic(fmt.Sprintf("sim: schedule of unregistered kind %d", k))
	}
	if at < q.now {
		at = q.now
	}
	q.seq++
	q.heap = append(q.heap, event{at: at, seq: q.seq, kind: k, arg: arg})
	q.up(len(q.heap) - 1)
}

// Peek returns the time of the next event, and false when there is none.
func (q *Queue) Peek() (Time, bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.heap[0].at, true
}

// PeekKind returns the kind and argument of the next event.
func (q *Queue) PeekKind() (Kind, uint64, bool) {
	if len(q.heap) == 0 {
		return 0, 0, false
	}
	return q.heap[0].kind, q.heap[0].arg, true
}

// Step runs the next event and reports whether there was one.
func (q *Queue) Step() bool {
	if len(q.heap) == 0 {
		return false
	}
	e := q.heap[0]
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap = q.heap[:last]
	if last > 0 {
		q.down(0)
	}
	q.now = e.at
	q.fired++
	q.running = e.kind
	q.handlers[e.kind](e.at, e.arg)
	return true
}

// Running is the kind of the event Step is running, or ran last.
func (q *Queue) Running() Kind { return q.running }

// RunUntil runs every event at or before t, then sets Now to t. It returns
// the number of events run.
func (q *Queue) RunUntil(t Time) int {
	n := 0
	for len(q.heap) > 0 && q.heap[0].at <= t {
		q.Step()
		n++
	}
	if t > q.now {
		q.now = t
	}
	return n
}

func (q *Queue) up(i int) {
	h := q.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *Queue) down(i int) {
	h := q.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
