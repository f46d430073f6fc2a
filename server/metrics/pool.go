package metrics

import (
	"fmt"
	"sync"
	"time"
)

// DefaultLinger is how long a Pool keeps a source open after its last
// user gave it back: a client switching between sources four times a
// second reuses it instead of building and destroying one each time, and
// a spec is opened at most once per linger.
const DefaultLinger = 10 * time.Second

// Pool opens sources for a server's clients: one source per spec at a
// time, shared by everyone who asks while it is open (simultaneous asks
// wait for the one opening), closed DefaultLinger after its last user
// gave it back. Specs the server pins (Pin, at its start) stay open until
// Close and are the only ones of their kind a client reaches: a lab,
// which builds namespaces as root, is the server's to create, never a
// subscriber's (PinnedOnly). Safe for concurrent use.
type Pool struct {
	open   func(spec string) (Source, error)
	linger time.Duration
	// PinnedOnly reports the specs Open may not open itself.
	pinnedOnly func(spec string) bool

	mu      sync.Mutex
	closed  bool
	entries map[string]*poolEntry
}

type poolEntry struct {
	spec   string
	ready  chan struct{} // closed once src or err is set
	src    Source        // Serialized
	err    error
	refs   int
	pinned bool
	timer  *time.Timer // the linger's, while nobody uses it
}

// NewPool returns a pool that opens sources with open (a Registry's Open)
// and refuses to open the specs pinnedOnly reports unless pinned.
func NewPool(open func(spec string) (Source, error), linger time.Duration, pinnedOnly func(spec string) bool) *Pool {
	if pinnedOnly == nil {
		pinnedOnly = func(string) bool { return false }
	}
	return &Pool{open: open, linger: linger, pinnedOnly: pinnedOnly, entries: map[string]*poolEntry{}}
}

// Pin opens spec now and keeps it open until Close.
func (p *Pool) Pin(spec string) error {
	p.mu.Lock()
	if e, ok := p.entries[spec]; ok {
		e.pinned = true
		p.mu.Unlock()
		<-e.ready
		return e.err
	}
	e := &poolEntry{spec: spec, ready: make(chan struct{}), pinned: true}
	p.entries[spec] = e
	p.mu.Unlock()
	p.fill(e)
	if e.err != nil {
		p.mu.Lock()
		delete(p.entries, spec)
		p.mu.Unlock()
	}
	return e.err
}

func (p *Pool) fill(e *poolEntry) {
	src, err := p.open(e.spec)
	if err == nil {
		src = Serialized(src)
	}
	e.src, e.err = src, err
	close(e.ready)
}

// Open returns a handle on the source of spec, opening it when nobody
// has it open. The handle's Close gives it back.
func (p *Pool) Open(spec string) (Source, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := p.entries[spec]
	if !ok {
		if p.pinnedOnly(spec) {
			p.mu.Unlock()
			return nil, fmt.Errorf("metrics: %s is opened by the server when it starts (serve --allow-source), not by a client", spec)
		}
		e = &poolEntry{spec: spec, ready: make(chan struct{})}
		p.entries[spec] = e
		e.refs++
		p.mu.Unlock()
		p.fill(e)
		if e.err != nil {
			p.mu.Lock()
			if p.entries[spec] == e {
				delete(p.entries, spec)
			}
			p.mu.Unlock()
			return nil, e.err
		}
		return &pooled{p: p, e: e}, nil
	}
	e.refs++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	p.mu.Unlock()
	<-e.ready
	if e.err != nil {
		p.release(e)
		return nil, e.err
	}
	return &pooled{p: p, e: e}, nil
}

// release gives a reference back; the last one starts the linger.
func (p *Pool) release(e *poolEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.refs--; e.refs > 0 || e.pinned || p.closed || e.err != nil {
		if e.err != nil && e.refs == 0 && p.entries[e.spec] == e {
			delete(p.entries, e.spec)
		}
		return
	}
	e.timer = time.AfterFunc(p.linger, func() {
		p.mu.Lock()
		if e.refs > 0 || p.entries[e.spec] != e || p.closed {
			p.mu.Unlock()
			return
		}
		delete(p.entries, e.spec)
		p.mu.Unlock()
		e.src.Close()
	})
}

// Opened returns the specs open now (pinned, used or lingering).
func (p *Pool) Opened() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.entries))
	for s := range p.entries {
		out = append(out, s)
	}
	return out
}

// Close closes every source the pool has open; handles still out fail
// their samples from then on.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = map[string]*poolEntry{}
	p.mu.Unlock()
	var first error
	for _, e := range entries {
		if e.timer != nil {
			e.timer.Stop()
		}
		<-e.ready
		if e.src != nil {
			if err := e.src.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// pooled is one user's handle on a pooled source.
type pooled struct {
	p    *Pool
	e    *poolEntry
	once sync.Once
}

func (h *pooled) Info() SourceInfo        { return h.e.src.Info() }
func (h *pooled) Sample() (Sample, error) { return h.e.src.Sample() }

// Close gives the source back to the pool (once).
func (h *pooled) Close() error {
	h.once.Do(func() { h.p.release(h.e) })
	return nil
}
