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
	"ringlab/play"
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
	// MaxStudentsPerRoom is the most students a room's class may have:
	// the cap of the class size an instructor sets.
	MaxStudentsPerRoom = 400
	// ClassSize is a room's class size unless its instructor sets one
	// (at creation, class_size, or later, a class message): a large
	// class. A room in use reserves its class size in seats.
	ClassSize = 60
	// CreatesPerMinute and CreatesPerMinutePerAddr bound room creation,
	// token buckets of that many a minute, as many at once (sixteen
	// addresses made all 64 rooms in 0.22 s, issue 27). Past them the
	// creation is refused 429 with Retry-After.
	CreatesPerMinute        = 16
	CreatesPerMinutePerAddr = 4
	// MaxInstructorsPerRoom is how many connections may join with the
	// token (the instructor's laptop and a projector, say).
	MaxInstructorsPerRoom = 4
	// MaxConns and MaxConnsPerAddr bound the room connections served at
	// once, joined or not, in all and from one remote address (a class
	// behind one NAT is one address). Each room in use reserves its
	// class size and its instructors of MaxConns (at most 7/8 of it
	// together) for the connections that carry its invitation, which
	// MaxConnsPerAddr does not count (seats.go). The rest is shared:
	// over MaxConnsPerAddr the upgrade is refused 429; when all of it
	// is taken, an address holding less than its share (the shared
	// places over the addresses holding them, its own counted) takes
	// the place of the newest connection of the address holding most,
	// which is closed with 1013; otherwise it is refused 503 (package
	// fairshare). A few hosts cannot keep a class out: not of a room in
	// use, and k addresses each keep a k-th of the rest.
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
	// MaxLessonBytes bounds a lesson command (play.Lesson: a lesson's
	// text, packed), which every page of the room keeps: play's
	// MaxRoomLesson and the command around it, within the socket's
	// message (wspeer.MaxMessageSize).
	MaxLessonBytes = play.MaxRoomLesson + 64
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
	ClassSize         int
	MaxInstructors    int
	MaxConns          int
	MaxConnsPerAddr   int
	CommandsPerSecond int
	MaxLogEntries     int
	MaxLogBytes       int
	MaxCommandBytes   int
	MaxLessonBytes    int
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
	// CreatesPerMinute and CreatesPerMinutePerAddr bound room creation
	// over HTTP (POST /api/rooms).
	CreatesPerMinute        int
	CreatesPerMinutePerAddr int
	// WriteWait is each connection's write deadline (wspeer.WriteWait).
	WriteWait time.Duration
	// CloseGrace is how long a connection the server closes waits for
	// the peer's answer before it is reset (wspeer.CloseGrace).
	CloseGrace time.Duration
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
	def(&l.ClassSize, min(ClassSize, l.MaxStudents))
	l.ClassSize = min(l.ClassSize, l.MaxStudents)
	def(&l.CreatesPerMinute, CreatesPerMinute)
	def(&l.CreatesPerMinutePerAddr, CreatesPerMinutePerAddr)
	def(&l.MaxInstructors, MaxInstructorsPerRoom)
	def(&l.MaxConns, MaxConns)
	def(&l.MaxConnsPerAddr, MaxConnsPerAddr)
	def(&l.CommandsPerSecond, CommandsPerSecond)
	def(&l.MaxLogEntries, MaxLogEntries)
	def(&l.MaxLogBytes, MaxLogBytes)
	def(&l.MaxCommandBytes, MaxCommandBytes)
	def(&l.MaxLessonBytes, MaxLessonBytes)
	def(&l.QueueLen, QueueLen)
	defD(&l.IdleExpiry, IdleExpiry)
	defD(&l.ClaimExpiry, ClaimExpiry)
	defD(&l.QuietExpiry, QuietExpiry)
	defD(&l.JoinWait, JoinWait)
	defD(&l.WriteWait, wspeer.WriteWait)
	defD(&l.CloseGrace, wspeer.CloseGrace)
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
	// seats are the connections being served: each room in use its
	// reservation, the others their address's fair share of the rest.
	seats *seats
	// creates and createsBy are room creation's token buckets, in all
	// and by address (guarded by mu).
	creates   *ratelimit.Bucket
	createsBy map[string]*ratelimit.Bucket

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
		seats:       newSeats(lim.MaxConns, lim.MaxConnsPerAddr),
		creates:     ratelimit.New(float64(lim.CreatesPerMinute)/60, lim.CreatesPerMinute),
		createsBy:   map[string]*ratelimit.Bucket{},
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
			r.seats.reserve(rm, rm.wantSeats(now))
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
// machine), then the server's bases; with invite= when invite is given.
func (r *Registry) joinURLs(req *http.Request, id, invite string) []string {
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
		if invite != "" {
			out[i] += "&invite=" + invite
		}
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
// instructor's page that reloads asks again), without the invitation,
// which only the instructors are told.
func (r *Registry) handleInfo(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	if r.lookup(id) == nil {
		httpError(w, http.StatusNotFound, proto.Errorf(proto.CodeNotFound, "", "no room %q", id))
		return
	}
	urls := r.joinURLs(req, id, "")
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

// handleQR serves GET /api/rooms/{id}/qr.png[?i=N][&invite=INVITE]: a
// QR code of the room's join link (the N-th of join_urls, the first by
// default), with the room's invitation when the request names it.
func (r *Registry) handleQR(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("id")
	rm := r.lookup(id)
	if rm == nil {
		httpError(w, http.StatusNotFound, proto.Errorf(proto.CodeNotFound, "", "no room %q", id))
		return
	}
	invite := req.URL.Query().Get("invite")
	if invite != "" && !rm.inviteIs(invite) {
		httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeBadField, "invite", "invite is not room %s's invitation (its instructor may have made a new one)", id))
		return
	}
	urls := r.joinURLs(req, id, invite)
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
// checked and the default class, and returns its id and instructor
// token.
func (r *Registry) Create(addr string, scenario json.RawMessage) (id, token string, err error) {
	c, err := r.CreateClass(addr, scenario, ClassOptions{})
	return c.ID, c.Token, err
}

// ClassOptions are a new room's class.
type ClassOptions struct {
	Size int  // students at most; 0: Limits.ClassSize; past MaxStudents: MaxStudents
	Open bool // the plain room id admits students, not only the invitation
}

// Created is a new room: its id, the instructor's token, the invitation
// of its students and its class.
type Created struct {
	ID, Token, Invite string
	ClassSize         int
	Open              bool
}

// CreateClass makes a room with a class. When MaxRooms exist, a room not
// in use (no instructor connected, nothing commanded lately) gives its
// place: one of the address holding most of them, the oldest; rooms in
// use are never evicted.
func (r *Registry) CreateClass(addr string, scenario json.RawMessage, class ClassOptions) (Created, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Created{}, ErrClosed
	}
	if r.byAddr[addr] >= r.lim.MaxRoomsPerAddr {
		r.mu.Unlock()
		return Created{}, fmt.Errorf("%w: %s has created %d rooms, the most one address may have", ErrLimit, addr, r.lim.MaxRoomsPerAddr)
	}
	now := r.opts.Now()
	var evicted *room
	if len(r.rooms) >= r.lim.MaxRooms {
		evicted = r.unusedLocked(now)
		if evicted == nil {
			r.mu.Unlock()
			return Created{}, fmt.Errorf("%w: %d rooms exist, all in use", ErrLimit, r.lim.MaxRooms)
		}
		r.removeLocked(evicted)
		evicted.close("the room gave its place to a new one: nobody used it")
	}
	id := newID()
	for r.rooms[id] != nil {
		id = newID()
	}
	c := Created{ID: id, Token: rand.Text(), Invite: rand.Text(), ClassSize: classSizeOr(class.Size, r.lim), Open: class.Open} // 130 random bits each
	sum := sha256.Sum256([]byte(c.Token))
	s := StoredRoom{ID: id, TokenHash: sum[:], Scenario: scenario, Creator: addr, Created: now, Active: now,
		ClassSize: c.ClassSize, Invite: c.Invite, Open: c.Open}
	var err error
	if r.opts.Store != nil {
		// Written before the answer: a room whose token was handed out
		// survives a restart.
		err = r.opts.Store.Create(s)
	}
	if err == nil {
		rm := newRoom(s, r.lim, now)
		rm.clock = r.opts.Now
		r.rooms[id] = rm
		r.byAddr[addr]++
	}
	r.mu.Unlock()
	if evicted != nil {
		r.forget(evicted)
		r.log.Info("room evicted: not in use, its place given to a new room", "room", evicted.id, "creator", evicted.creator)
	}
	if err != nil {
		return Created{}, err
	}
	return c, nil
}

// unusedLocked picks the room a new one takes the place of: one not in
// use, of the creator holding most such rooms, the oldest of them; nil
// when every room is in use.
func (r *Registry) unusedLocked(now time.Time) *room {
	by := map[string][]*room{}
	for _, rm := range r.rooms {
		if rm.unused(now) {
			by[rm.creator] = append(by[rm.creator], rm)
		}
	}
	var pick []*room
	for _, l := range by {
		if len(l) > len(pick) || len(l) == len(pick) && l[0].creator < pick[0].creator {
			pick = l
		}
	}
	if pick == nil {
		return nil
	}
	return slices.MinFunc(pick, func(a, b *room) int { return a.created.Compare(b.created) })
}

// removeLocked takes rm out of the registry (its creator's count too).
func (r *Registry) removeLocked(rm *room) {
	delete(r.rooms, rm.id)
	if r.byAddr[rm.creator]--; r.byAddr[rm.creator] <= 0 {
		delete(r.byAddr, rm.creator)
	}
}

// forget lets a room taken out of the registry go: its replica, its
// seats and its file.
func (r *Registry) forget(rm *room) {
	r.replicas.drop(rm)
	r.seats.reserve(rm, 0)
	if r.opts.Store != nil {
		if err := r.opts.Store.Delete(rm.id); err != nil {
			r.log.Warn("deleting a room", "room", rm.id, "err", err)
		}
	}
}

// ClassMembers returns how many members addr has in the rooms in use:
// the server's metric clients reserve that many places for it (a class's
// pages, each with its live view). A nil registry has none.
func (r *Registry) ClassMembers(addr string) int {
	if r == nil {
		return 0
	}
	now := r.opts.Now()
	r.mu.Lock()
	rms := make([]*room, 0, len(r.rooms))
	for _, rm := range r.rooms {
		rms = append(rms, rm)
	}
	r.mu.Unlock()
	n := 0
	for _, rm := range rms {
		n += rm.membersFrom(addr, now)
	}
	return n
}

// updateSeats sets rm's reservation to what it wants now (its class
// while it is in use) and returns what it got.
func (r *Registry) updateSeats(rm *room) int {
	return r.seats.reserve(rm, rm.wantSeats(r.opts.Now()))
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
	var gone, kept []*room
	for _, rm := range r.rooms {
		if rm.expire(now) {
			r.removeLocked(rm)
			gone = append(gone, rm)
		} else {
			kept = append(kept, rm)
		}
	}
	r.mu.Unlock()
	for _, rm := range gone {
		r.forget(rm)
	}
	for _, rm := range kept { // a room no longer in use gives its seats back
		r.updateSeats(rm)
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
	class := ClassOptions{}
	if cr.ClassSize != nil {
		if *cr.ClassSize < 1 || *cr.ClassSize > r.lim.MaxStudents {
			httpError(w, http.StatusBadRequest, proto.Errorf(proto.CodeOutOfRange, "class_size", "class_size is from 1 to %d students (the server's --room-students), got %d", r.lim.MaxStudents, *cr.ClassSize))
			return
		}
		class.Size = *cr.ClassSize
	}
	if cr.InvitationOnly != nil {
		class.Open = !*cr.InvitationOnly
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
	if wait, ok := r.allowCreate(remoteHost(req)); !ok {
		r.logRefusal("room creation refused: over the rate", "remote", req.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
		httpError(w, http.StatusTooManyRequests, proto.Errorf(proto.CodeRateLimited, "", "more rooms created than the server makes (%d a minute, %d from one address): try again in %v", r.lim.CreatesPerMinute, r.lim.CreatesPerMinutePerAddr, wait.Round(time.Second)))
		return
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
	created, err := r.CreateClass(remoteHost(req), world, class)
	id, token := created.ID, created.Token
	switch {
	case errors.Is(err, ErrLimit):
		status := http.StatusTooManyRequests
		r.mu.Lock()
		if len(r.rooms) >= r.lim.MaxRooms {
			status = http.StatusServiceUnavailable
		}
		r.mu.Unlock()
		r.logRefusal("room creation refused", "remote", req.RemoteAddr, "err", err)
		httpError(w, status, proto.Errorf(proto.CodeLimitExceeded, "", "%v; try again when a room is no longer in use", err))
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
	urls := r.joinURLs(req, id, created.Invite)
	r.log.Info("room created", "room", id, "remote", req.RemoteAddr, "class_size", created.ClassSize, "invitation_only", !created.Open)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store") // the answer holds the token
	w.WriteHeader(http.StatusCreated)
	w.Write(mustMarshal(createResponse{Room: id, JoinURL: urls[0], JoinURLs: urls,
		WebSocketPath: "/ws/room/" + id, InstructorToken: token,
		Invite: created.Invite, ClassSize: created.ClassSize, InvitationOnly: !created.Open}))
}

// createAddrsKept bounds the per-address creation buckets kept; past it
// the full ones go (a full bucket is what a new one would be).
const createAddrsKept = 4096

// allowCreate takes a token of room creation for addr, from its bucket
// and the server's; refused, it returns how long until one is there.
func (r *Registry) allowCreate(addr string) (time.Duration, bool) {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.createsBy[addr]
	if b == nil {
		if len(r.createsBy) >= createAddrsKept {
			for a, o := range r.createsBy {
				if o.Full(now) {
					delete(r.createsBy, a)
				}
			}
		}
		b = ratelimit.New(float64(r.lim.CreatesPerMinutePerAddr)/60, r.lim.CreatesPerMinutePerAddr)
		r.createsBy[addr] = b
	}
	if !b.Ready(now) {
		return b.Wait(now), false
	}
	if !r.creates.Allow(now) {
		return r.creates.Wait(now), false
	}
	b.Allow(now)
	return 0, true
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
	// A connection that carries the room's invitation takes one of its
	// reserved seats (while it is in use and one is free); any other
	// shares the rest.
	invited := rm.inviteOK(req.URL.Query().Get("invite"))
	st, verdict := r.seats.admit(rm, addr, invited)
	switch verdict {
	case fairshare.Full:
		r.logRefusal("room websocket refused: too many connections, and its address holds its share", "remote", req.RemoteAddr, "limit", r.lim.MaxConns)
		httpError(w, http.StatusServiceUnavailable, proto.Errorf(proto.CodeLimitExceeded, "", "too many room connections (%d, the rooms in use holding their reservations), and %s holds its share of the rest", r.lim.MaxConns, addr))
		return
	case fairshare.OverAddress:
		r.logRefusal("room websocket refused: too many connections from one address", "remote", req.RemoteAddr, "limit", r.lim.MaxConnsPerAddr)
		httpError(w, http.StatusTooManyRequests, proto.Errorf(proto.CodeLimitExceeded, "", "too many room connections from %s (%d)", addr, r.lim.MaxConnsPerAddr))
		return
	}
	defer r.seats.release(st)

	ws, err := r.upgrader.Upgrade(w, req, nil)
	if err != nil {
		r.logRefusal("room websocket refused", "remote", req.RemoteAddr, "origin", req.Header.Get("Origin"), "err", err)
		return
	}
	m := &member{addr: addr, invited: invited, guard: ratelimit.NewGuard(msgRatePerSecond, msgBurst)}
	m.peer = wspeer.NewWithOptions(ws, wspeer.Options{QueueLen: r.lim.QueueLen, MailboxLen: mailboxLen, WriteWait: r.lim.WriteWait, CloseGrace: r.lim.CloseGrace,
		Ping: func() bool { return r.allow(m) },
		// Counted out of the room before the connection closes: a page
		// that sees its connection end and joins again at once is in
		// the room once (its roster entries, its share of the seats).
		Ended: func() {
			if rm.leave(m, r.opts.Now()) {
				r.updateSeats(rm)
			}
			r.seats.release(st) // and by the defer above on every other way out
		}})
	r.mu.Lock()
	if r.closed {
		m.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	}
	r.peers[m] = struct{}{}
	r.mu.Unlock()
	// Another address below its share may take this connection's place
	// when every place is taken (the newest of the address holding most).
	r.seats.onEvict(st, func() { m.peer.Abort(websocket.CloseTryAgainLater, evictedReason) })

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
	r.mu.Lock()
	delete(r.peers, m)
	r.mu.Unlock()
	r.log.Debug("room client left", "room", rm.id, "role", m.role, "remote", req.RemoteAddr, "err", err)
}
