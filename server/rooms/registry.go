// Package rooms hosts workshop rooms: an instructor's commands are checked,
// numbered, logged and broadcast to every student's browser, which runs the
// engine on the same scenario and command log. What a room may hold and
// cost is bounded (rooms per address and in all, connections per address,
// in all and per room, the work every browser replays), and rooms and
// their logs outlive the process when a Store keeps them (a state
// directory, a checksummed file per room).
//
// Before a command is numbered it is applied to the server's replica of
// the room's world (replica.go), the controller every student's page
// runs (play.NewFollower), so the server knows what it costs every
// browser to replay and which world it leaves, and refuses what no
// browser could follow. The messages are proto's, named by play's registry;
// the welcome carries the protocol's version. docs/protocol.md documents
// every message and limit.
package rooms

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/skip2/go-qrcode"

	"ringlab/engine/scenario"
	"ringlab/proto"
	"ringlab/server/fairshare"
	"ringlab/server/ratelimit"
	"ringlab/server/wspeer"
)

// Default limits, sized for a class of a few hundred students behind one
// address (a school's NAT) with a few instructors. Memory is bounded by
// MaxRooms * (MaxLogBytes + MaxMembers * QueueLen * MaxCommandBytes) in
// the worst case (commands are tens of bytes in practice), plus the
// replicas' budget (MaxReplicaBytes) and, in the kernel, MaxConns *
// 2 * wspeer.SendBuffer.
const (
	// MaxRooms is how many rooms may exist at once.
	MaxRooms = 64
	// MaxRoomsPerAddr is how many of them one address may have created:
	// an instructor needs one or two, a squatter gets no more.
	MaxRoomsPerAddr = 4
	// MaxStudentsPerRoom is how many student connections a room takes.
	MaxStudentsPerRoom = 400
	// MaxInstructorsPerRoom is how many connections may join with the
	// token (the instructor's laptop and a projector, say).
	MaxInstructorsPerRoom = 4
	// MaxConns and MaxConnsPerAddr bound the room connections served at
	// once, joined or not, in all and from one remote address (a class
	// behind one NAT is one address). Over MaxConnsPerAddr the upgrade
	// is refused 429. When MaxConns are served, an address holding less
	// than its share (MaxConns over the addresses holding connections,
	// its own counted) takes the place of the newest connection of the
	// address holding most, which is closed with 1013; otherwise it is
	// refused 503 (package fairshare). A few hosts cannot keep a class
	// out: k addresses each keep MaxConns/k.
	MaxConns        = 2048
	MaxConnsPerAddr = 512
	// CommandsPerSecond is each room's command rate (and burst): enough for
	// dragging a slider, few enough that a replaying late joiner keeps up.
	CommandsPerSecond = 20
	// MaxLogEntries and MaxLogBytes bound a room's command log, which every
	// late joiner receives in its welcome.
	MaxLogEntries = 10_000
	MaxLogBytes   = 1 << 20
	// MaxCommandBytes bounds one command in canonical form.
	MaxCommandBytes = 4 << 10
	// MaxScenarioBytes bounds a room's scenario.
	MaxScenarioBytes = 32 << 10
	// IdleExpiry is how long a room lives with no instructor connected and
	// no command: students alone do not hold a room (one idle member
	// would hold it for ever).
	IdleExpiry = 30 * time.Minute
	// ClaimExpiry is how long a room nobody has commanded lives without an
	// instructor connected, counted from its creation: a room is made to
	// be used, and one made and left (sixteen addresses can make every
	// room the server allows in a fraction of a second) gives its place
	// back within minutes. After a restart such a room keeps its age; it
	// gets at most RestartGrace more for its instructor to reconnect.
	ClaimExpiry = 5 * time.Minute
	// RestartGrace is what a restored room nobody has commanded may live
	// past its ClaimExpiry: the time an instructor's page takes to come
	// back after a restart.
	RestartGrace = time.Minute
	// QuietExpiry is how long a room lives without a command even with an
	// instructor connected: an idle instructor connection does not hold
	// it for ever either.
	QuietExpiry = 6 * time.Hour
	// QueueLen is each connection's ordered queue; a client that falls this
	// many messages behind is disconnected (1008) rather than lose a command.
	QueueLen = 256
	// JoinWait is how long a new connection may take to send join.
	JoinWait = 10 * time.Second

	// The work every browser replays, in play's units of engine work
	// (ReplayCost: events, and three per packet, as an event may carry a
	// NAPI poll's 64 packets). A page replays about 18 million units a
	// second natively (its session marks the world as it goes, for going
	// back), about a third of that in WebAssembly on a 2-core machine, so
	// one command costs a browser at most a second or two and a late
	// joiner is in step within about five.
	//
	// MaxCommandWork bounds one command (a seek, a step of n events or
	// packets, a tutorial step's runs): a million packets of xdp-drop
	// are 3 million, of the default preset 6 million.
	MaxCommandWork = 8_000_000
	// MaxReplayWork bounds what a late joiner replays: the work of the
	// commands since the room's last reset (a preset, a set, a tutorial
	// step with a scenario), which discards everything before it (play's
	// replay).
	MaxReplayWork = 25_000_000
	// WorkPerSecond and its burst MaxCommandWork are each room's budget
	// of the server's own replay (it checks every command on a replica):
	// a room that spends it waits for it to refill.
	WorkPerSecond = 4_000_000
	// MaxWorldBytes is a room's world as a browser tab holds it
	// (scenario.MemoryEstimate): the default preset needs 12 MiB; the
	// largest valid scenario 3 GiB, which no tab can afford.
	MaxWorldBytes = 256 << 20
	// MaxReplicaBytes bounds the server's replicas of the rooms' worlds
	// together; the least recently used are dropped (and rebuilt from the
	// log when their room is commanded again).
	MaxReplicaBytes = 1 << 30

	// sweepPeriodMax is how often expired rooms are looked for (more often
	// when IdleExpiry is short).
	sweepPeriodMax = time.Minute
	// msgRatePerSecond and msgBurst are each connection's message token
	// bucket (a scrubbing instructor sends a command per input event).
	msgRatePerSecond = 20
	msgBurst         = 40
	// maxViolations consecutive messages over the limit close the
	// connection with 1008.
	maxViolations = 100
	// maxCreateBody bounds POST /api/rooms's body.
	maxCreateBody = MaxScenarioBytes + 1024
	// closeGoingAway is the reason sent with 1001 at shutdown.
	closeGoingAway = "server shutting down"
	// evictedReason is sent with 1013 to a connection whose place went to
	// an address below its share.
	evictedReason = "the server is full and your address holds more than its share: try again later"
	// mailboxLen is each connection's mailbox, of the messages where the
	// newest counts: presence, and an instructor's roster and predictions
	// (a shared distribution too).
	mailboxLen = 4
	// refusalLogBurst refusals are logged per refusalLogPeriod.
	refusalLogBurst  = 5
	refusalLogPeriod = 10 * time.Second
)

// Limits are a registry's limits; the zero value of a field means the
// constant of the same name.
type Limits struct {
	MaxRooms          int
	MaxRoomsPerAddr   int
	MaxStudents       int
	MaxInstructors    int
	MaxConns          int
	MaxConnsPerAddr   int
	CommandsPerSecond int
	MaxLogEntries     int
	MaxLogBytes       int
	MaxCommandBytes   int
	IdleExpiry        time.Duration
	ClaimExpiry       time.Duration
	QuietExpiry       time.Duration
	QueueLen          int
	JoinWait          time.Duration
	MaxCommandWork    uint64
	MaxReplayWork     uint64
	WorkPerSecond     uint64
	MaxWorldBytes     int64
	MaxReplicaBytes   int64
	// WriteWait is each connection's write deadline (wspeer.WriteWait).
	WriteWait time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defU := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxRooms, MaxRooms)
	def(&l.MaxRoomsPerAddr, MaxRoomsPerAddr)
	def(&l.MaxStudents, MaxStudentsPerRoom)
	def(&l.MaxInstructors, MaxInstructorsPerRoom)
	def(&l.MaxConns, MaxConns)
	def(&l.MaxConnsPerAddr, MaxConnsPerAddr)
	def(&l.CommandsPerSecond, CommandsPerSecond)
	def(&l.MaxLogEntries, MaxLogEntries)
	def(&l.MaxLogBytes, MaxLogBytes)
	def(&l.MaxCommandBytes, MaxCommandBytes)
	def(&l.QueueLen, QueueLen)
	defD(&l.IdleExpiry, IdleExpiry)
	defD(&l.ClaimExpiry, ClaimExpiry)
	defD(&l.QuietExpiry, QuietExpiry)
	defD(&l.JoinWait, JoinWait)
	defD(&l.WriteWait, wspeer.WriteWait)
	defU(&l.MaxCommandWork, MaxCommandWork)
	defU(&l.MaxReplayWork, MaxReplayWork)
	defU(&l.WorkPerSecond, WorkPerSecond)
	if l.MaxWorldBytes <= 0 {
		l.MaxWorldBytes = MaxWorldBytes
	}
	if l.MaxReplicaBytes <= 0 {
		l.MaxReplicaBytes = MaxReplicaBytes
	}
	return l
}

// Options configure a Registry.
type Options struct {
	// Validator replaces the default check of a command (DefaultValidator
	// and a replay of it on the room's replica, which bounds its work and
	// its world's memory); a custom one is the only check.
	Validator Validator
	Scenario  ScenarioValidator // nil: DefaultScenario with Limits.MaxWorldBytes
	Limits    Limits
	Origins   wspeer.OriginPolicy
	// Store keeps rooms and logs across restarts; nil keeps them in
	// memory only. The registry loads it in New and does not close it.
	Store  *Store
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // the clock of expiry and rate limits; nil: time.Now
}

// Registry holds the rooms. New starts its janitor; Close stops it.
type Registry struct {
	opts     Options
	lim      Limits
	upgrader *websocket.Upgrader
	log      *slog.Logger
	replay   bool // commands are replayed on replicas (the default check)
	replicas *replicaPool

	mu        sync.Mutex
	joinBases []string // SetJoinBases: where students reach the server
	closed    bool
	rooms     map[string]*room
	byAddr    map[string]int       // rooms per creating address
	peers     map[*member]struct{} // every connection, joined or not
	// conns are the connections being served, by remote address, each
	// its fair share of MaxConns when it is reached (fairshare).
	shares *fairshare.Shares

	conns       sync.WaitGroup
	quit        chan struct{}
	janitorDone chan struct{}
	refusals    *ratelimit.Throttle
	storeErrors *ratelimit.Throttle // of their log lines
	qr          qrCache
}

// ErrLimit is returned by Create when a room limit is reached.
var ErrLimit = errors.New("room limit reached")

// ErrClosed is returned by Create after Close.
var ErrClosed = errors.New("rooms: shutting down")

// New returns a Registry with the rooms of opts.Store, and starts its
// janitor goroutine.
func New(opts Options) (*Registry, error) {
	lim := opts.Limits.withDefaults()
	replay := opts.Validator == nil
	if opts.Validator == nil {
		opts.Validator = DefaultValidator
	}
	if opts.Scenario == nil {
		opts.Scenario = func(raw json.RawMessage) (json.RawMessage, error) { return checkScenario(raw, lim.MaxWorldBytes) }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{
		opts: opts, lim: lim, log: opts.Logger, replay: replay,
		replicas:    newReplicaPool(lim.MaxReplicaBytes),
		upgrader:    wspeer.Upgrader(opts.Origins),
		rooms:       map[string]*room{},
		byAddr:      map[string]int{},
		peers:       map[*member]struct{}{},
		shares:      fairshare.New(lim.MaxConns, lim.MaxConnsPerAddr),
		quit:        make(chan struct{}),
		janitorDone: make(chan struct{}),
		refusals:    ratelimit.NewThrottle(refusalLogPeriod, refusalLogBurst),
		storeErrors: ratelimit.NewThrottle(refusalLogPeriod, refusalLogBurst),
	}
	if opts.Store != nil {
		loaded, err := opts.Store.Load()
		if err != nil {
			return nil, err
		}
		for _, d := range loaded.SetAside {
			if d.Restored {
				r.log.Warn("room restored without the end of its file: a write a crash cut short (never acknowledged), or a truncated file",
					"room", d.Room, "commands", d.Commands, "reason", d.Reason, "file", d.File, "kept", d.Kept)
				continue
			}
			r.log.Error("room set aside: its file is damaged; the other rooms are restored",
				"room", d.Room, "reason", d.Reason, "file", d.File, "kept", d.Kept)
		}
		now := opts.Now()
		for i, s := range loaded.Rooms {
			rm := newRoom(s, r.lim, now)
			rm.clock = opts.Now
			rm.setLog(loaded.Logs[i])
			rm.restored(now)
			r.rooms[s.ID] = rm
			r.byAddr[s.Creator]++
		}
		if len(loaded.Rooms) > 0 || len(loaded.SetAside) > 0 {
			r.log.Info("rooms restored", "count", len(loaded.Rooms), "set_aside", len(loaded.SetAside), "store", opts.Store.Path())
		}
	}
	go r.janitor()
	return r, nil
}

func (r *Registry) sweepPeriod() time.Duration {
	return min(sweepPeriodMax, max(min(r.lim.IdleExpiry, r.lim.ClaimExpiry)/4, 10*time.Millisecond))
}

func (r *Registry) janitor() {
	defer close(r.janitorDone)
	t := time.NewTicker(r.sweepPeriod())
	defer t.Stop()
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
			if n := r.Sweep(); n > 0 {
				r.log.Info("rooms expired", "count", n)
			}
		}
	}
}

// Register adds the routes: POST /api/rooms and GET /ws/room/{id}.
func (r *Registry) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/rooms", r.handleCreate)
	mux.HandleFunc("GET /api/rooms/{id}", r.handleInfo)
	mux.HandleFunc("GET /api/rooms/{id}/qr.png", r.handleQR)
	mux.HandleFunc("GET /ws/room/{id}", r.handleWS)
	// Other methods of the same paths: 405 (204 for OPTIONS) with the
	// methods each takes, not the page's files' GET and HEAD.
	for path, allow := range map[string]string{
		"/api/rooms":             "OPTIONS, POST",
		"/api/rooms/{id}":        "GET, HEAD, OPTIONS",
		"/api/rooms/{id}/qr.png": "GET, HEAD, OPTIONS",
		"/ws/room/{id}":          "GET",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, req *http.Request) { methods(w, req, allow) })
	}
}

// methods answers a method a path does not take: OPTIONS with 204, any
// other with 405, both with the methods it takes.
func methods(w http.ResponseWriter, req *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	if req.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	httpError(w, http.StatusMethodNotAllowed, proto.Errorf(proto.CodeBadState, "", "%s takes %s, not %s", req.URL.Path, allow, req.Method))
}

// SetJoinBases tells the registry the base URLs students reach the server
// at ("http://192.168.1.10:8080/"), the first one preferred: serve calls
// it once it listens, with its LAN addresses when it listens on all
// interfaces. Without any, a join link is built from the request's Host.
func (r *Registry) SetJoinBases(bases []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.joinBases = append([]string(nil), bases...)
}

// joinURLs are a room's join links, the preferred first: the request's
// own host unless it is loopback (an instructor browsing on the server's
// machine), then the server's bases.
func (r *Registry) joinURLs(req *http.Request, id string) []string {
	r.mu.Lock()
	bases := append([]string(nil), r.joinBases...)
	r.mu.Unlock()
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	own := scheme + "://" + req.Host + "/"
	if len(bases) == 0 || !isLoopback(req.Host) {
		bases = append([]string{own}, slices.DeleteFunc(bases, func(b string) bool { return b == own })...)
	}
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = strings.TrimSuffix(b, "/") + "/?room=" + id
	}
	return out
}

// isLoopback reports whether a Host names this machine only.
func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// handleInfo serves GET /api/rooms/{id}: the room's join links (an
// instructor's page that reloads asks again).
func (r *Registry) handleInfo(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	if r.lookup(id) == nil {
		httpError(w, http.StatusNotFound, proto.Errorf(proto.CodeNotFound, "", "no room %q", id))
		return
	}
	urls := r.joinURLs(req, id)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(mustMarshal(roomInfo{Room: id, JoinURL: urls[0], JoinURLs: urls}))
}

// qrSize is the QR code's side in pixels: readable from the back of a
// room on a projector.
const qrSize = 512

// A QR code costs 7 to 16 ms of CPU to encode: each join link's is kept
// (the most recent qrCacheLen), and one address may have at most
// qrPerSecond encoded a second (burst qrBurst); more get 429.
const (
	qrCacheLen     = 256
	qrPerSecond    = 2
	qrBurst        = 8
	qrMaxAddrsKept = 4096 // the per-address buckets kept; past it they start again full
)

// qrCache holds the QR codes of join links and the encoding rate of
// each address.
type qrCache struct {
	mu      sync.Mutex
	png     map[string][]byte // by join link
	order   []string          // oldest first
	buckets map[string]*ratelimit.Bucket
}

// get returns the PNG of url, encoding it when it is not kept if addr may
// have one encoded now; ok false means addr is over its rate.
func (q *qrCache) get(url, addr string, now time.Time) (png []byte, ok bool, err error) {
	q.mu.Lock()
	if b, hit := q.png[url]; hit {
		q.mu.Unlock()
		return b, true, nil
	}
	if q.buckets == nil || len(q.buckets) > qrMaxAddrsKept {
		q.buckets = map[string]*ratelimit.Bucket{}
	}
	bk := q.buckets[addr]
	if bk == nil {
		bk = ratelimit.New(qrPerSecond, qrBurst)
		q.buckets[addr] = bk
	}
	allowed := bk.Allow(now)
	q.mu.Unlock()
	if !allowed {
		return nil, false, nil
	}
	png, err = qrcode.Encode(url, qrcode.Medium, qrSize) // outside the lock: the costly part
	if err != nil {
		return nil, true, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.png == nil {
		q.png = map[string][]byte{}
	}
	if _, dup := q.png[url]; !dup {
		q.png[url] = png
		q.order = append(q.order, url)
		for len(q.order) > qrCacheLen {
			delete(q.png, q.order[0])
			q.order = q.order[1:]
		}
	}
	return png, true, nil
}

// handleQR serves GET /api/rooms/{id}/qr.png[?i=N]: a QR code of the
// room's join link (the N-th of join_urls, the first by default).
func (r *Registry) handleQR(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	if r.lookup(id) == nil {
		httpError(w, http.StatusNotFound, proto.Errorf(proto.CodeNotFound, "", "no room %q", id))
		return
	}
	urls := r.joinURLs(req, id)
	i := 0
	if v := req.URL.Query().Get("i"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= len(urls) {
			httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeOutOfRange, "i", "i is a join link's index, 0 to %d", len(urls)-1))
			return
		}
		i = n
	}
	png, ok, err := r.qr.get(urls[i], remoteHost(req), r.opts.Now())
	switch {
	case !ok:
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, proto.Errorf(proto.CodeRateLimited, "", "more than %d new QR codes a second from one address", qrPerSecond))
		return
	case err != nil:
		httpError(w, http.StatusInternalServerError, proto.Errorf(proto.CodeInternal, "", "encoding the QR code: %v", err))
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}

// Create makes a room for a creator address with a scenario already
// checked and returns its id and instructor token.
func (r *Registry) Create(addr string, scenario json.RawMessage) (id, token string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", "", ErrClosed
	}
	if len(r.rooms) >= r.lim.MaxRooms {
		return "", "", fmt.Errorf("%w: %d rooms exist", ErrLimit, r.lim.MaxRooms)
	}
	if r.byAddr[addr] >= r.lim.MaxRoomsPerAddr {
		return "", "", fmt.Errorf("%w: %s has created %d rooms, the most one address may have", ErrLimit, addr, r.lim.MaxRoomsPerAddr)
	}
	id = newID()
	for r.rooms[id] != nil {
		id = newID()
	}
	token = rand.Text() // 26 base32 characters: 130 random bits
	sum := sha256.Sum256([]byte(token))
	now := r.opts.Now()
	s := StoredRoom{ID: id, TokenHash: sum[:], Scenario: scenario, Creator: addr, Created: now, Active: now}
	if r.opts.Store != nil {
		// Written before the answer: a room whose token was handed out
		// survives a restart.
		if err := r.opts.Store.Create(s); err != nil {
			return "", "", err
		}
	}
	rm := newRoom(s, r.lim, now)
	rm.clock = r.opts.Now
	r.rooms[id] = rm
	r.byAddr[addr]++
	return id, token, nil
}

// newID returns a room id: 64 random bits in hex. Ids are not secret (they
// are in the join link); the token is.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sweep removes the rooms that are idle (no instructor and no command for
// IdleExpiry), unclaimed (never commanded and no instructor, ClaimExpiry
// after they were made) or quiet (no command for QuietExpiry),
// disconnecting whoever is still in them, and returns how many it
// removed.
func (r *Registry) Sweep() int {
	now := r.opts.Now()
	r.mu.Lock()
	var gone []*room
	for id, rm := range r.rooms {
		if rm.expire(now) {
			delete(r.rooms, id)
			if r.byAddr[rm.creator]--; r.byAddr[rm.creator] <= 0 {
				delete(r.byAddr, rm.creator)
			}
			gone = append(gone, rm)
		}
	}
	r.mu.Unlock()
	for _, rm := range gone {
		r.replicas.drop(rm)
		if r.opts.Store != nil {
			if err := r.opts.Store.Delete(rm.id); err != nil {
				r.log.Warn("deleting an expired room", "room", rm.id, "err", err)
			}
		}
	}
	return len(gone)
}

// Len returns how many rooms exist.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rooms)
}

func (r *Registry) lookup(id string) *room {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rooms[id]
}

// Close stops the janitor, sends every connection a 1001 close frame and
// waits for them to end (dropping those still open when ctx is done).
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.quit)
	}
	for m := range r.peers {
		m.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	}
	r.mu.Unlock()
	<-r.janitorDone

	done := make(chan struct{})
	go func() { r.conns.Wait(); close(done) }() // ends when the connections do
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	for m := range r.peers {
		m.peer.Kill()
	}
	r.mu.Unlock()
	<-done
	return fmt.Errorf("rooms: closing connections: %w", ctx.Err())
}

// remoteHost is the address part of the request's remote address (the
// connection's, not a header's: headers are the client's to choose).
func remoteHost(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// logRefusal logs a refused request, at most refusalLogBurst lines per
// refusalLogPeriod.
func (r *Registry) logRefusal(msg string, args ...any) {
	if ok, more := r.refusals.Allow(time.Now()); ok {
		if more > 0 {
			args = append(args, "refused_since_last_line", more)
		}
		r.log.Info(msg, args...)
	}
}

// handleCreate serves POST /api/rooms: body {"scenario": {...}} or empty;
// answer 201 {"room", "join_url", "ws_path", "instructor_token"}.
func (r *Registry) handleCreate(w http.ResponseWriter, req *http.Request) {
	if !r.opts.Origins.Allow(req) {
		r.logRefusal("room creation refused", "remote", req.RemoteAddr, "origin", req.Header.Get("Origin"))
		httpError(w, http.StatusForbidden, proto.Errorf(proto.CodeForbidden, "", "origin %q may not create rooms", req.Header.Get("Origin")))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxCreateBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			httpError(w, http.StatusRequestEntityTooLarge, proto.Errorf(proto.CodeOutOfRange, "scenario", "the request body has at most %d bytes", maxCreateBody))
			return
		}
		httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeBadJSON, "", "reading the body: %v", err))
		return
	}
	var cr createRequest
	if len(body) > 0 {
		if err := proto.Strict(body, &cr); err != nil {
			httpError(w, http.StatusBadRequest, proto.AsError(err))
			return
		}
	}
	raw, field := cr.Scenario, "scenario"
	if cr.Recipe != "" {
		if len(bytes.TrimSpace(cr.Scenario)) > 0 {
			httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeBadField, "recipe", "recipe and scenario are exclusive"))
			return
		}
		rec, err := scenario.ParseRecipe(cr.Recipe)
		if err != nil {
			httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeBadField, "recipe", "%v", err))
			return
		}
		if raw, err = json.Marshal(rec); err != nil {
			httpError(w, http.StatusInternalServerError, proto.Errorf(proto.CodeInternal, "recipe", "%v", err))
			return
		}
		field = "recipe"
	}
	world, err := r.opts.Scenario(raw)
	if err != nil {
		e := proto.AsError(err).WithFieldPrefix(field)
		status := http.StatusBadRequest
		if e.Code == proto.CodeLimitExceeded {
			status = http.StatusRequestEntityTooLarge
		}
		httpError(w, status, e)
		return
	}
	if len(world) > MaxScenarioBytes {
		httpError(w, http.StatusRequestEntityTooLarge, proto.Errorf(proto.CodeOutOfRange, "scenario", "a scenario has at most %d bytes", MaxScenarioBytes))
		return
	}
	id, token, err := r.Create(remoteHost(req), world)
	switch {
	case errors.Is(err, ErrLimit):
		status := http.StatusTooManyRequests
		r.mu.Lock()
		if len(r.rooms) >= r.lim.MaxRooms {
			status = http.StatusServiceUnavailable
		}
		r.mu.Unlock()
		r.logRefusal("room creation refused", "remote", req.RemoteAddr, "err", err)
		httpError(w, status, proto.Errorf(proto.CodeLimitExceeded, "", "%v; try again when a room has expired", err))
		return
	case errors.Is(err, ErrClosed):
		httpError(w, http.StatusServiceUnavailable, proto.Errorf(proto.CodeUnavailable, "", "%v", err))
		return
	case err != nil:
		// The store's: a full disk, a directory gone read-only. The
		// server's operator has to act, not the instructor wait.
		if ok, more := r.storeErrors.Allow(time.Now()); ok {
			r.log.Error("room creation failed: the room could not be stored", "remote", req.RemoteAddr, "err", err, "failed_since_last_line", more)
		}
		httpError(w, http.StatusInsufficientStorage, proto.Errorf(proto.CodeInternal, "", "the server could not store the room (its log says why): tell whoever runs it; waiting will not help"))
		return
	}
	urls := r.joinURLs(req, id)
	r.log.Info("room created", "room", id, "remote", req.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store") // the answer holds the token
	w.WriteHeader(http.StatusCreated)
	w.Write(mustMarshal(createResponse{Room: id, JoinURL: urls[0], JoinURLs: urls,
		WebSocketPath: "/ws/room/" + id, InstructorToken: token}))
}

func httpError(w http.ResponseWriter, status int, e *proto.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(e.Encode())
}

// handleWS serves GET /ws/room/{id}.
func (r *Registry) handleWS(w http.ResponseWriter, req *http.Request) {
	rm := r.lookup(req.PathValue("id"))
	if rm == nil {
		httpError(w, http.StatusNotFound, proto.Errorf(proto.CodeNotFound, "", "no room %q (a room expires %v after its instructor left, or %v after its last command)", req.PathValue("id"), r.lim.IdleExpiry, r.lim.QuietExpiry))
		return
	}
	addr := remoteHost(req)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	r.conns.Add(1)
	r.mu.Unlock()
	defer r.conns.Done()
	slot, verdict := r.shares.Admit(addr)
	switch verdict {
	case fairshare.Full:
		r.logRefusal("room websocket refused: too many connections, and its address holds its share", "remote", req.RemoteAddr, "limit", r.lim.MaxConns)
		httpError(w, http.StatusServiceUnavailable, proto.Errorf(proto.CodeLimitExceeded, "", "too many room connections (%d), and %s holds its share of them", r.lim.MaxConns, addr))
		return
	case fairshare.OverAddress:
		r.logRefusal("room websocket refused: too many connections from one address", "remote", req.RemoteAddr, "limit", r.lim.MaxConnsPerAddr)
		httpError(w, http.StatusTooManyRequests, proto.Errorf(proto.CodeLimitExceeded, "", "too many room connections from %s (%d)", addr, r.lim.MaxConnsPerAddr))
		return
	}
	defer r.shares.Release(slot)

	ws, err := r.upgrader.Upgrade(w, req, nil)
	if err != nil {
		r.logRefusal("room websocket refused", "remote", req.RemoteAddr, "origin", req.Header.Get("Origin"), "err", err)
		return
	}
	m := &member{addr: addr, guard: ratelimit.NewGuard(msgRatePerSecond, msgBurst)}
	m.peer = wspeer.NewWithOptions(ws, wspeer.Options{QueueLen: r.lim.QueueLen, MailboxLen: mailboxLen, WriteWait: r.lim.WriteWait,
		Ping: func() bool { return r.allow(m) }})
	r.mu.Lock()
	if r.closed {
		m.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	}
	r.peers[m] = struct{}{}
	r.mu.Unlock()
	// Another address below its share may take this connection's place
	// when every place is taken (the newest of the address holding most).
	r.shares.SetEvict(slot, func() { m.peer.Abort(websocket.CloseTryAgainLater, evictedReason) })

	// The timer's goroutine only queues a close; Stop below ends its
	// ownership when the connection ends first.
	joinTimer := time.AfterFunc(r.lim.JoinWait, func() {
		if !m.joined.Load() {
			m.peer.Close(websocket.ClosePolicyViolation, "no join message in time")
		}
	})
	err = m.peer.Run(func(kind int, data []byte) {
		if r.handle(rm, m, kind, data) {
			joinTimer.Stop()
		}
	})
	joinTimer.Stop()
	rm.leave(m, r.opts.Now())
	r.mu.Lock()
	delete(r.peers, m)
	r.mu.Unlock()
	r.log.Debug("room client left", "room", rm.id, "role", m.role, "remote", req.RemoteAddr, "err", err)
}
