// Package hub streams a metric source's snapshots to WebSocket clients at
// /ws/metrics: one sampler goroutine per (source, rate) shared by its
// clients, and per client a mailbox of the newest few snapshots, so a slow
// client skips snapshots instead of holding anyone up.
//
// Each connection is a wspeer (one reader and one writer, a bounded
// kernel send buffer, write deadlines the writer's progress decides),
// admitted by fairshare, its messages decoded strictly (package proto)
// and rate-limited, and the log lines of refusals throttled (package
// ratelimit). A failing source is tried again with a backoff of at most
// MaxRetryInterval, its clients told once per distinct failure.
// docs/protocol.md documents the messages.
package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"ringlab/server/fairshare"
	"ringlab/server/metrics"
	"ringlab/server/ratelimit"
	"ringlab/server/wspeer"
)

const (
	// SchemaVersion is the protocol version sent in hello; it changes when a
	// message changes incompatibly.
	SchemaVersion = 1

	// DefaultRateHz is the snapshot rate of a client that has not asked for
	// one.
	DefaultRateHz = 10
	// MinRateHz and MaxRateHz bound a subscribe's rate_hz: at 50 Hz a
	// snapshot every 20 ms is faster than a 60 Hz page can show two of.
	MinRateHz = 1
	MaxRateHz = 50

	// maxCounters bounds a subscribe's counter allowlist.
	maxCounters = 256

	// snapshotMailbox is how many snapshots wait for a client's writer: a
	// writer held up for less than that many sampling periods (a loaded
	// machine, two samples close together after a late tick) loses none; a
	// client that stays behind gets the newest and skips the older ones.
	// The snapshots are shared by the clients, so the mailbox holds only
	// references.
	snapshotMailbox = 4

	// replyQueueLen is a client's ordered queue for hello, pong and error
	// replies. The reader waits while it is full, so a client that sends
	// without reading only slows itself down.
	replyQueueLen = 16

	// msgRatePerSecond and msgBurst are each client's token bucket: a burst of
	// msgBurst messages, then msgRatePerSecond on average. A message over the
	// limit is dropped and answered with rate_limited (once per streak).
	msgRatePerSecond = 5
	msgBurst         = 10

	// maxViolations consecutive messages over the limit close the connection
	// with 1008 (policy violation).
	maxViolations = 50

	// DefaultMaxClients and DefaultMaxClientsPerAddr bound the connections
	// served at once, in all and from one remote address (a flood from one
	// address leaves room for the others). ringlab-bench's 1000 clients
	// come from one address.
	DefaultMaxClients        = 4096
	DefaultMaxClientsPerAddr = 1024

	// MaxRatesPerAddr bounds the (source, rate) pairs at a rate other
	// than DefaultRateHz one address's clients may be on at once: each is
	// a sampler of its own (a source read up to MaxRateHz times a
	// second), so a host opening a connection per pair would otherwise
	// start hundreds. At the default rate there is one sampler per source
	// whoever asks; the page never asks for another rate.
	MaxRatesPerAddr = 4

	// closeGoingAway is the reason sent with 1001 at shutdown.
	closeGoingAway = "server shutting down"
	// evictedReason is sent with 1013 to a connection whose place went to
	// an address below its share.
	evictedReason = "the server is full and your address holds more than its share: try again later"

	// refusalLogBurst refused connections are logged per refusalLogPeriod;
	// the next line says how many more were refused meanwhile.
	refusalLogBurst  = 5
	refusalLogPeriod = 10 * time.Second
)

// Options configure a Hub.
type Options struct {
	// Default is the source every client starts on, already open; its
	// Info().Name is the spec clients use for it. The caller owns it: the
	// hub never closes it. It is wrapped with metrics.Serialized.
	Default metrics.Source
	// Open opens the other sources (the registry's Open). It may be nil
	// when Sources is empty.
	Open func(spec string) (metrics.Source, error)
	// Sources lists the other specs a client may subscribe to, each opened
	// on first use and closed when no client uses it.
	Sources []string
	// Origins decides which browser origins may connect.
	Origins wspeer.OriginPolicy
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Now is the clock of the message rate limit; nil means time.Now.
	Now func() time.Time
	// Ticker starts the ticks of a sampler at period and returns them with
	// the function that stops them; nil means a time.Ticker. Tests drive
	// samplers with it instead of the wall clock.
	Ticker func(period time.Duration) (ticks <-chan time.Time, stop func())
	// MaxClients and MaxClientsPerAddr bound the connections served at
	// once (0: DefaultMaxClients, DefaultMaxClientsPerAddr). Over its
	// address's maximum a connection is refused 429 before the upgrade;
	// over the total, an address holding less than its share (MaxClients
	// over the addresses holding clients) takes the place of the newest
	// client of the address holding most (closed with 1013), and one
	// holding its share is refused 503 (package fairshare).
	MaxClients, MaxClientsPerAddr int
	// Classes, when set, says how many members an address has in
	// workshop rooms in use (a class's pages, behind one NAT perhaps):
	// that many of its clients take places of the share reserved for
	// classes, half of MaxClients, outside its fair share and its
	// per-address maximum; so a few hosts holding every client leave a
	// class its live view (issue 27: five addresses filled the 4096).
	// Reserving a place evicts the newest client of the address holding
	// most when every place is taken.
	Classes func(addr string) int
	// WriteWait is each connection's write deadline (0: wspeer.WriteWait):
	// a client that takes no frame within it is disconnected.
	WriteWait time.Duration
}

// Hub serves /ws/metrics. Its zero value is not usable; use New.
type Hub struct {
	opts     Options
	specs    []string // what a subscribe may name, the default first
	upgrader *websocket.Upgrader
	log      *slog.Logger
	now      func() time.Time

	mu       sync.Mutex
	closed   bool
	clients  map[*client]struct{}
	samplers map[samplerKey]*sampler
	sources  map[string]*sourceRef
	shares   *fairshare.Shares             // connections being served, by remote address
	rates    map[string]map[samplerKey]int // per address, its clients on each pair at another rate than the default

	resMu   sync.Mutex
	resBy   map[string]int // clients in the classes' share, by address
	resHeld int

	conns sync.WaitGroup // one per connection being served
	loops sync.WaitGroup // one per sampler goroutine

	refusals *ratelimit.Throttle // of the refusals' log lines
}

// sourceRef is an open source shared by the samplers that read it.
type sourceRef struct {
	spec   string
	src    metrics.Source // Serialized
	info   metrics.SourceInfo
	refs   int
	pinned bool // the default source: never closed by the hub
}

// New returns a Hub serving opts.Default to new clients.
func New(opts Options) (*Hub, error) {
	if opts.Default == nil {
		return nil, errors.New("hub: no default source")
	}
	def := metrics.Serialized(opts.Default)
	info := def.Info()
	h := &Hub{
		opts:     opts,
		specs:    []string{info.Name},
		upgrader: wspeer.Upgrader(opts.Origins),
		log:      opts.Logger,
		now:      opts.Now,
		clients:  map[*client]struct{}{},
		samplers: map[samplerKey]*sampler{},
		rates:    map[string]map[samplerKey]int{},
		resBy:    map[string]int{},
		sources:  map[string]*sourceRef{info.Name: {spec: info.Name, src: def, info: info, pinned: true}},
		refusals: ratelimit.NewThrottle(refusalLogPeriod, refusalLogBurst),
	}
	for _, s := range opts.Sources {
		if !slices.Contains(h.specs, s) {
			if opts.Open == nil {
				return nil, fmt.Errorf("hub: source %q listed but no Open function", s)
			}
			h.specs = append(h.specs, s)
		}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.opts.MaxClients <= 0 {
		h.opts.MaxClients = DefaultMaxClients
	}
	if h.opts.MaxClientsPerAddr <= 0 {
		h.opts.MaxClientsPerAddr = DefaultMaxClientsPerAddr
	}
	h.shares = fairshare.New(h.opts.MaxClients, h.opts.MaxClientsPerAddr)
	return h, nil
}

// takeReserved takes a place of the classes' share for a client from
// addr when its members in rooms in use (Options.Classes) hold fewer of
// them, and the share is not all taken; the shared places shrink by it.
func (h *Hub) takeReserved(addr string) bool {
	if h.opts.Classes == nil {
		return false
	}
	members := h.opts.Classes(addr)
	h.resMu.Lock()
	defer h.resMu.Unlock()
	if h.resBy[addr] >= members || h.resHeld >= h.opts.MaxClients/2 {
		return false
	}
	h.resBy[addr]++
	h.resHeld++
	h.shares.SetTotal(h.opts.MaxClients - h.resHeld) // under resMu: in order
	return true
}

// releaseReserved gives a place of the classes' share back.
func (h *Hub) releaseReserved(addr string) {
	h.resMu.Lock()
	defer h.resMu.Unlock()
	if h.resBy[addr]--; h.resBy[addr] <= 0 {
		delete(h.resBy, addr)
	}
	h.resHeld--
	h.shares.SetTotal(h.opts.MaxClients - h.resHeld)
}

// ServeHTTP upgrades the request and serves the client until it leaves.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	addr := remoteHost(r)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	h.conns.Add(1)
	h.mu.Unlock()
	defer h.conns.Done()
	reserved := h.takeReserved(addr)
	var slot *fairshare.Slot
	verdict := fairshare.Admitted
	if !reserved {
		slot, verdict = h.shares.Admit(addr)
	}
	switch verdict {
	case fairshare.Full:
		h.logRefusal("metrics websocket refused: too many clients, and its address holds its share", "remote", r.RemoteAddr, "limit", h.opts.MaxClients)
		http.Error(w, fmt.Sprintf("too many clients (%d), and %s holds its share of them", h.opts.MaxClients, addr), http.StatusServiceUnavailable)
		return
	case fairshare.OverAddress:
		h.logRefusal("metrics websocket refused: too many connections from one address", "remote", r.RemoteAddr, "limit", h.opts.MaxClientsPerAddr)
		http.Error(w, fmt.Sprintf("too many connections from %s (%d)", addr, h.opts.MaxClientsPerAddr), http.StatusTooManyRequests)
		return
	}
	if reserved {
		defer h.releaseReserved(addr)
	} else {
		defer h.shares.Release(slot)
	}

	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.logRefusal("metrics websocket refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	c := &client{addr: addr, guard: ratelimit.NewGuard(msgRatePerSecond, msgBurst)}
	c.peer = wspeer.NewWithOptions(ws, wspeer.Options{QueueLen: replyQueueLen, MailboxLen: snapshotMailbox, WriteWait: h.opts.WriteWait, Ping: func() bool { return h.allow(c) }})
	// An address below its share may take this connection's place when
	// every place is taken (the newest of the address holding most).
	if slot != nil {
		h.shares.SetEvict(slot, func() { c.peer.Abort(websocket.CloseTryAgainLater, evictedReason) })
	}
	if !h.register(c) {
		c.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	} else {
		def := h.specs[0]
		ref, _ := h.acquire(def) // pinned: cannot fail
		c.peer.Send(h.hello(ref, DefaultRateHz, nil))
		h.attach(c, samplerKey{def, DefaultRateHz}, nil, ref)
	}
	h.log.Debug("metrics client connected", "remote", r.RemoteAddr)
	err = c.peer.Run(func(kind int, data []byte) { h.handle(c, kind, data) })
	h.detach(c)
	h.unregister(c)
	h.log.Debug("metrics client left", "remote", r.RemoteAddr, "err", err, "sent", c.peer.Sent(), "skipped", c.peer.Skipped())
}

// logRefusal logs a refused connection, at most refusalLogBurst lines per
// refusalLogPeriod: a flood of refusals must not become a flood of lines.
func (h *Hub) logRefusal(msg string, args ...any) {
	if ok, more := h.refusals.Allow(time.Now()); ok {
		if more > 0 {
			args = append(args, "refused_since_last_line", more)
		}
		h.log.Info(msg, args...)
	}
}

// remoteHost is the address part of the request's remote address (the
// connection's, not a header's: headers are the client's to choose).
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (h *Hub) register(c *client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.clients[c] = struct{}{}
	return true
}

func (h *Hub) unregister(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
}

// Close sends every client a 1001 close frame, waits for the connections
// to end (dropping those still open when ctx is done), stops the samplers
// and closes the sources the hub opened. New connections get 503.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for c := range h.clients {
		c.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	}
	h.mu.Unlock()

	var err error
	if !waitCtx(ctx, &h.conns) {
		err = fmt.Errorf("hub: closing connections: %w", ctx.Err())
		h.mu.Lock()
		for c := range h.clients {
			c.peer.Kill()
		}
		h.mu.Unlock()
		h.conns.Wait()
	}
	// Every client has detached, so every sampler is cancelled.
	h.loops.Wait()
	return err
}

// waitCtx waits for wg or ctx and reports whether wg finished. The helper
// goroutine ends when wg does.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// ClientStats describes one connected client.
type ClientStats struct {
	Remote  string
	Source  string
	RateHz  int
	Sent    uint64 // messages written
	Skipped uint64 // snapshots replaced in the mailbox before they could be written
}

// Stats returns the connected clients, in no particular order.
func (h *Hub) Stats() []ClientStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ClientStats, 0, len(h.clients))
	for c := range h.clients {
		out = append(out, ClientStats{Remote: c.peer.RemoteAddr().String(), Source: c.key.spec, RateHz: c.key.rateHz, Sent: c.peer.Sent(), Skipped: c.peer.Skipped()})
	}
	return out
}

// acquire returns the open source for spec, opening it if needed, and
// counts a reference that release gives back.
func (h *Hub) acquire(spec string) (*sourceRef, error) {
	h.mu.Lock()
	if ref, ok := h.sources[spec]; ok {
		ref.refs++
		h.mu.Unlock()
		return ref, nil
	}
	h.mu.Unlock()

	src, err := h.opts.Open(spec) // outside the lock: opening may be slow
	if err != nil {
		return nil, err
	}
	src = metrics.Serialized(src)
	h.mu.Lock()
	ref, ok := h.sources[spec]
	if ok { // opened meanwhile by another client: use that one
		ref.refs++
	} else {
		ref = &sourceRef{spec: spec, src: src, info: src.Info(), refs: 1}
		h.sources[spec] = ref
	}
	h.mu.Unlock()
	if ok {
		if err := src.Close(); err != nil { // outside the lock: closing may be slow too
			h.log.Warn("closing a duplicate source", "source", spec, "err", err)
		}
	}
	return ref, nil
}

// release drops a reference; the last one to a source the hub opened
// closes it.
func (h *Hub) release(ref *sourceRef) {
	h.mu.Lock()
	last := h.releaseLocked(ref)
	h.mu.Unlock()
	if last {
		h.closeSource(ref)
	}
}

// releaseLocked drops a reference and reports whether it was the last one
// to a source the hub opened; the caller then calls closeSource once it
// has unlocked (closing a lab source takes a while). Called with h.mu held.
func (h *Hub) releaseLocked(ref *sourceRef) bool {
	ref.refs--
	if ref.refs > 0 || ref.pinned {
		return false
	}
	delete(h.sources, ref.spec)
	return true
}

func (h *Hub) closeSource(ref *sourceRef) {
	if err := ref.src.Close(); err != nil {
		h.log.Warn("closing source", "source", ref.spec, "err", err)
	}
}

// attach puts c on the sampler for key, starting one if there is none; the
// sampler keeps ref (or gives it back when one exists already).
func (h *Hub) attach(c *client, key samplerKey, f *filter, ref *sourceRef) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.release(ref)
		return
	}
	defer h.mu.Unlock()
	s, ok := h.samplers[key]
	if ok {
		h.releaseLocked(ref) // not the last: s holds one
	} else {
		s = newSampler(key, ref, h.log)
		if h.opts.Ticker != nil {
			s.ticker = h.opts.Ticker
		}
		h.samplers[key] = s
		h.loops.Add(1)
		go func() {
			defer h.loops.Done()
			s.run()
			h.release(s.ref)
		}()
	}
	s.add(c, f)
	c.sampler, c.key, c.filter = s, key, f
}

// detach takes c off its sampler, stopping the sampler when c was its last
// client.
func (h *Hub) detach(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unreserveLocked(c)
	s := c.sampler
	if s == nil {
		return
	}
	c.sampler = nil
	if s.remove(c) == 0 {
		s.stop()
		delete(h.samplers, s.key)
	}
}

// reserve counts c's address on key when key is at another rate than
// the default, and reports false when the address is on MaxRatesPerAddr
// such pairs already. What c held before is given back by detach.
func (h *Hub) reserve(c *client, key samplerKey) bool {
	if key.rateHz == DefaultRateHz {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.rates[c.addr]
	if m == nil {
		m = map[samplerKey]int{}
		h.rates[c.addr] = m
	}
	if m[key] == 0 && len(m) >= MaxRatesPerAddr {
		return false
	}
	m[key]++
	return true
}

// unreserveLocked gives back what reserve counted for c's key.
func (h *Hub) unreserveLocked(c *client) {
	key := c.reserved
	c.reserved = samplerKey{}
	if key.rateHz == 0 {
		return
	}
	m := h.rates[c.addr]
	if m[key]--; m[key] <= 0 {
		delete(m, key)
	}
	if len(m) == 0 {
		delete(h.rates, c.addr)
	}
}

// hello describes a subscription.
func (h *Hub) hello(ref *sourceRef, rateHz int, f *filter) []byte {
	m := helloMsg{Type: typeHello, Schema: SchemaVersion, Source: ref.spec, Description: ref.info.Description,
		Counters: ref.info.Counters, Notes: ref.info.Notes, Labels: ref.info.Labels, RateHz: rateHz, Sources: h.specs, Limits: clientLimits}
	if f != nil {
		m.Subscribed = f.list
	}
	return mustMarshal(m)
}
