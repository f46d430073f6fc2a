// Package rooms hosts workshop rooms: an instructor's commands are checked,
// numbered, logged and broadcast to every student's browser, which runs the
// engine on the same scenario and command log.
package rooms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"ringlab/server/ratelimit"
	"ringlab/server/wsmsg"
	"ringlab/server/wspeer"
)

// Default limits. Memory is bounded by MaxRooms * (MaxLogBytes +
// (MaxStudentsPerRoom+MaxInstructorsPerRoom) * QueueLen * MaxCommandBytes)
// in the worst case; in practice commands are tens of bytes.
const (
	// MaxRooms is how many rooms may exist at once; a workshop needs one.
	MaxRooms = 64
	// MaxStudentsPerRoom is how many student connections a room takes.
	MaxStudentsPerRoom = 200
	// MaxInstructorsPerRoom is how many connections may join with the
	// token (the instructor's laptop and a projector, say).
	MaxInstructorsPerRoom = 4
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
	// IdleExpiry is how long a room stays without anyone in it before it
	// is removed (and its link stops working).
	IdleExpiry = 30 * time.Minute
	// QueueLen is each connection's ordered queue; a client that falls this
	// many messages behind is disconnected (1008) rather than lose a command.
	QueueLen = 256
	// JoinWait is how long a new connection may take to send join.
	JoinWait = 10 * time.Second

	// sweepPeriod is how often expired rooms are looked for.
	sweepPeriod = time.Minute
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
)

// Limits are a registry's limits; the zero value of a field means the
// constant of the same name.
type Limits struct {
	MaxRooms          int
	MaxStudents       int
	MaxInstructors    int
	CommandsPerSecond int
	MaxLogEntries     int
	MaxLogBytes       int
	MaxCommandBytes   int
	IdleExpiry        time.Duration
	QueueLen          int
	JoinWait          time.Duration
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxRooms, MaxRooms)
	def(&l.MaxStudents, MaxStudentsPerRoom)
	def(&l.MaxInstructors, MaxInstructorsPerRoom)
	def(&l.CommandsPerSecond, CommandsPerSecond)
	def(&l.MaxLogEntries, MaxLogEntries)
	def(&l.MaxLogBytes, MaxLogBytes)
	def(&l.MaxCommandBytes, MaxCommandBytes)
	def(&l.QueueLen, QueueLen)
	if l.IdleExpiry <= 0 {
		l.IdleExpiry = IdleExpiry
	}
	if l.JoinWait <= 0 {
		l.JoinWait = JoinWait
	}
	return l
}

// Options configure a Registry.
type Options struct {
	Validator Validator         // nil: DefaultValidator
	Scenario  ScenarioValidator // nil: DefaultScenario
	Limits    Limits
	Origins   wspeer.OriginPolicy
	Logger    *slog.Logger     // nil discards
	Now       func() time.Time // the clock of expiry and rate limits; nil: time.Now
}

// Registry holds the rooms. New starts its janitor; Close stops it.
type Registry struct {
	opts     Options
	lim      Limits
	upgrader *websocket.Upgrader
	log      *slog.Logger

	mu     sync.Mutex
	closed bool
	rooms  map[string]*room
	peers  map[*member]struct{} // every connection, joined or not

	conns       sync.WaitGroup
	quit        chan struct{}
	janitorDone chan struct{}
}

// ErrLimit is returned by Create when MaxRooms rooms exist.
var ErrLimit = errors.New("room limit reached")

// ErrClosed is returned by Create after Close.
var ErrClosed = errors.New("rooms: shutting down")

// New returns a Registry and starts its janitor goroutine.
func New(opts Options) *Registry {
	if opts.Validator == nil {
		opts.Validator = DefaultValidator
	}
	if opts.Scenario == nil {
		opts.Scenario = DefaultScenario
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Registry{
		opts: opts, lim: opts.Limits.withDefaults(), log: opts.Logger,
		upgrader:    wspeer.Upgrader(opts.Origins),
		rooms:       map[string]*room{},
		peers:       map[*member]struct{}{},
		quit:        make(chan struct{}),
		janitorDone: make(chan struct{}),
	}
	go r.janitor()
	return r
}

func (r *Registry) janitor() {
	defer close(r.janitorDone)
	t := time.NewTicker(sweepPeriod)
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
	mux.HandleFunc("GET /ws/room/{id}", r.handleWS)
}

// Create makes a room with a scenario already checked and returns its id
// and instructor token.
func (r *Registry) Create(scenario json.RawMessage) (id, token string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", "", ErrClosed
	}
	if len(r.rooms) >= r.lim.MaxRooms {
		return "", "", fmt.Errorf("%w: %d rooms exist", ErrLimit, r.lim.MaxRooms)
	}
	id = newID()
	for r.rooms[id] != nil {
		id = newID()
	}
	token = rand.Text() // 26 base32 characters: 130 random bits
	r.rooms[id] = newRoom(id, token, scenario, r.lim, r.opts.Now())
	return id, token, nil
}

// newID returns a room id: 64 random bits in hex. Ids are not secret (they
// are in the join link); the token is.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sweep removes the rooms that have been empty for IdleExpiry and returns
// how many it removed.
func (r *Registry) Sweep() int {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, rm := range r.rooms {
		if rm.expireIfIdle(now, r.lim.IdleExpiry) {
			delete(r.rooms, id)
			n++
		}
	}
	return n
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

// handleCreate serves POST /api/rooms: body {"scenario": {...}} or empty;
// answer 201 {"room", "join_url", "ws_path", "instructor_token"}.
func (r *Registry) handleCreate(w http.ResponseWriter, req *http.Request) {
	if !r.opts.Origins.Allow(req) {
		httpError(w, http.StatusForbidden, wsmsg.Errorf(wsmsg.CodeForbidden, "", "origin %q may not create rooms", req.Header.Get("Origin")))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxCreateBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			httpError(w, http.StatusRequestEntityTooLarge, wsmsg.Errorf(wsmsg.CodeOutOfRange, "scenario", "the request body has at most %d bytes", maxCreateBody))
			return
		}
		httpError(w, http.StatusBadRequest, wsmsg.Errorf(wsmsg.CodeBadJSON, "", "reading the body: %v", err))
		return
	}
	var cr createRequest
	if len(body) > 0 {
		if err := wsmsg.Strict(body, &cr); err != nil {
			httpError(w, http.StatusBadRequest, wsmsg.AsError(err))
			return
		}
	}
	scenario, err := r.opts.Scenario(cr.Scenario)
	if err != nil {
		httpError(w, http.StatusBadRequest, wsmsg.AsError(err).WithFieldPrefix("scenario"))
		return
	}
	if len(scenario) > MaxScenarioBytes {
		httpError(w, http.StatusRequestEntityTooLarge, wsmsg.Errorf(wsmsg.CodeOutOfRange, "scenario", "a scenario has at most %d bytes", MaxScenarioBytes))
		return
	}
	id, token, err := r.Create(scenario)
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, wsmsg.Errorf(wsmsg.CodeLimitExceeded, "", "%v; try again when a room has expired", err))
		return
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	r.log.Info("room created", "room", id, "remote", req.RemoteAddr)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store") // the answer holds the token
	w.WriteHeader(http.StatusCreated)
	w.Write(mustMarshal(createResponse{Room: id, JoinURL: scheme + "://" + req.Host + "/?room=" + id,
		WebSocketPath: "/ws/room/" + id, InstructorToken: token}))
}

func httpError(w http.ResponseWriter, status int, e *wsmsg.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(e.Encode())
}

// handleWS serves GET /ws/room/{id}.
func (r *Registry) handleWS(w http.ResponseWriter, req *http.Request) {
	rm := r.lookup(req.PathValue("id"))
	if rm == nil {
		httpError(w, http.StatusNotFound, wsmsg.Errorf(wsmsg.CodeNotFound, "", "no room %q (rooms expire after %v without anyone in them)", req.PathValue("id"), r.lim.IdleExpiry))
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	r.conns.Add(1)
	r.mu.Unlock()
	defer r.conns.Done()

	ws, err := r.upgrader.Upgrade(w, req, nil)
	if err != nil {
		r.log.Info("room websocket refused", "remote", req.RemoteAddr, "origin", req.Header.Get("Origin"), "err", err)
		return
	}
	m := &member{peer: wspeer.New(ws, r.lim.QueueLen), bucket: ratelimit.New(msgRatePerSecond, msgBurst)}
	r.mu.Lock()
	if r.closed {
		m.peer.Abort(websocket.CloseGoingAway, closeGoingAway)
	}
	r.peers[m] = struct{}{}
	r.mu.Unlock()

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
