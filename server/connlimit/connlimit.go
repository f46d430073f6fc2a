// Package connlimit admits the TCP connections of an HTTP server: at most
// a total and a per-address number at once, and when either is reached a
// new connection takes the place of the one that has been idle longest
// (a keep-alive connection between requests, or one accepted that has not
// sent a byte yet) rather than being refused. Connections in a request and
// hijacked ones (WebSockets, which their own handlers bound) are never
// closed for a newcomer: the class that is in stays in, and a host that
// opens idle connections by the thousand only displaces its own and other
// idle ones. A newcomer finding nothing idle to displace is answered 503
// and closed. The total stays within the process's file descriptor limit
// (FDBudget).
package connlimit

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ringlab/server/ratelimit"
)

// Defaults.
const (
	// DefaultTotal bounds the connections at once. An idle HTTP
	// connection costs the server a file descriptor, a goroutine and
	// about 10 KiB of buffers; 8192 of them are about 100 MiB. The file
	// descriptor limit bounds it further (FDBudget).
	DefaultTotal = 8192
	// DefaultPerAddr bounds one remote address's connections: above the
	// metric (1024) and room (512) WebSockets one address may hold, with
	// room for its page loads (a class behind one NAT is one address).
	DefaultPerAddr = 2048
	// fdReserve is what FDBudget leaves of the file descriptor limit for
	// everything but connections (the store, the page's files, sources,
	// lab namespaces): an eighth of it, at least 64.
	fdReserveMin = 64

	// refuseWriteWait bounds writing the 503 to a refused connection.
	refuseWriteWait = 100 * time.Millisecond
	// logBurst refusals are logged per logPeriod.
	logBurst  = 5
	logPeriod = 10 * time.Second
)

// FDBudget is how many connections a process whose file descriptor limit
// is limit may hold: limit less an eighth of it (at least 64) for its
// other files.
// An unknown limit (0) leaves DefaultTotal.
func FDBudget(limit uint64) int {
	if limit == 0 {
		return DefaultTotal
	}
	reserve := max(limit/8, fdReserveMin)
	if limit <= reserve {
		return 1
	}
	return int(limit - reserve)
}

// Limits bound a Listener; a zero field takes its default.
type Limits struct {
	Total   int
	PerAddr int
}

// Stats count what a Listener did.
type Stats struct {
	Open      int    // connections held now
	Idle      int    // of which idle (displaceable)
	Evicted   uint64 // idle connections closed for a newcomer
	Refused   uint64 // newcomers refused (nothing idle to displace)
	Addresses int    // remote addresses with a connection
}

// Listener is a net.Listener admitting connections within its Limits.
// Its ConnState method must be the http.Server's ConnState: it is how the
// listener learns which connections are idle.
type Listener struct {
	tl  *net.TCPListener
	lim Limits
	log *slog.Logger

	mu     sync.Mutex
	open   int
	addrs  map[string]*addrConns
	idle   list.List // of *Conn, the longest idle first
	closed bool

	evicted, refused atomic.Uint64
	refusals         *ratelimit.Throttle
}

type addrConns struct {
	open int
	idle list.List // of *Conn, the longest idle first
}

// Conn is an admitted connection. It is a *net.TCPConn (its methods, such
// as SetLinger and SetWriteBuffer, are the TCP connection's) whose Close
// gives its place back.
type Conn struct {
	*net.TCPConn
	l    *Listener
	addr string

	// Guarded by l.mu.
	released bool
	inIdle   *list.Element // in l.idle, nil when not idle
	inAddr   *list.Element // in its address's idle list
}

// New returns a Listener admitting ln's connections within lim; log
// receives a throttled line per refusal (nil discards).
func New(ln *net.TCPListener, lim Limits, log *slog.Logger) *Listener {
	if lim.Total <= 0 {
		lim.Total = DefaultTotal
	}
	if lim.PerAddr <= 0 {
		lim.PerAddr = DefaultPerAddr
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Listener{tl: ln, lim: lim, log: log, addrs: map[string]*addrConns{}, refusals: ratelimit.NewThrottle(logPeriod, logBurst)}
}

// Limits returns the listener's limits.
func (l *Listener) Limits() Limits { return l.lim }

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.tl.Addr() }

// Close stops accepting; admitted connections stay open.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.tl.Close()
}

// Accept returns the next admitted connection. A connection over a limit
// with nothing idle to displace is answered 503 and closed here.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		tc, err := l.tl.AcceptTCP()
		if err != nil {
			return nil, err
		}
		if c := l.admit(tc); c != nil {
			return c, nil
		}
	}
}

// admit registers tc, displacing the longest idle connection (of its
// address when the address is at its limit, of any otherwise) when a
// limit is reached; nil when it was refused.
func (l *Listener) admit(tc *net.TCPConn) *Conn {
	addr := hostOf(tc.RemoteAddr())
	l.mu.Lock()
	a := l.addrs[addr]
	if a == nil {
		a = &addrConns{}
		l.addrs[addr] = a
	}
	var victim *Conn
	over := ""
	switch {
	case a.open >= l.lim.PerAddr:
		over = "per-address"
		if e := a.idle.Front(); e != nil {
			victim = e.Value.(*Conn)
		}
	case l.open >= l.lim.Total:
		over = "total"
		if e := l.idle.Front(); e != nil {
			victim = e.Value.(*Conn)
		}
	}
	if over != "" && victim == nil {
		if a.open == 0 {
			delete(l.addrs, addr)
		}
		l.mu.Unlock()
		l.refused.Add(1)
		l.refuse(tc, addr, over)
		return nil
	}
	if victim != nil {
		l.releaseLocked(victim)
	}
	c := &Conn{TCPConn: tc, l: l, addr: addr}
	l.open++
	a.open++
	l.idleLocked(c, a) // accepted, nothing read yet: displaceable
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		victim.TCPConn.SetLinger(0) // nothing of a request is lost: it had none
		victim.TCPConn.Close()
	}
	return c
}

// refusalBody is the 503's text.
const refusalBody = "too many connections to this server, none idle to make room for yours: try again in a moment\n"

// refusal is the whole answer to a refused connection.
var refusal = []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\n" +
	"Content-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody)

// refuse answers tc 503 and closes it.
func (l *Listener) refuse(tc *net.TCPConn, addr, over string) {
	tc.SetWriteDeadline(time.Now().Add(refuseWriteWait))
	tc.Write(refusal)
	tc.Close()
	if ok, more := l.refusals.Allow(time.Now()); ok {
		args := []any{"remote", addr, "limit", over, "total", l.lim.Total, "per_addr", l.lim.PerAddr}
		if more > 0 {
			args = append(args, "refused_since_last_line", more)
		}
		l.log.Warn("connection refused: every connection is busy", args...)
	}
}

// idleLocked puts c at the back of the idle lists.
func (l *Listener) idleLocked(c *Conn, a *addrConns) {
	if c.released || c.inIdle != nil {
		return
	}
	c.inIdle = l.idle.PushBack(c)
	c.inAddr = a.idle.PushBack(c)
}

// busyLocked takes c off the idle lists.
func (l *Listener) busyLocked(c *Conn) {
	if c.inIdle == nil {
		return
	}
	l.idle.Remove(c.inIdle)
	if a := l.addrs[c.addr]; a != nil {
		a.idle.Remove(c.inAddr)
	}
	c.inIdle, c.inAddr = nil, nil
}

// releaseLocked gives c's place back (once).
func (l *Listener) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	l.busyLocked(c)
	c.released = true
	l.open--
	if a := l.addrs[c.addr]; a != nil {
		if a.open--; a.open <= 0 {
			delete(l.addrs, c.addr)
		}
	}
}

// ConnState is the http.Server's ConnState hook: an idle connection
// becomes displaceable, an active or hijacked one is not.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*Conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateIdle:
		if a := l.addrs[c.addr]; a != nil {
			l.idleLocked(c, a)
		}
	case http.StateActive, http.StateHijacked:
		l.busyLocked(c)
	case http.StateClosed:
		l.releaseLocked(c)
	}
}

// Stats returns the listener's counts.
func (l *Listener) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Open: l.open, Idle: l.idle.Len(), Evicted: l.evicted.Load(), Refused: l.refused.Load(), Addresses: len(l.addrs)}
}

// Close closes the connection and gives its place back.
func (c *Conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.TCPConn.Close()
}

// ErrNotTCP is returned by Listen for a listener that is not TCP's.
var ErrNotTCP = errors.New("connlimit: not a TCP listener")

// Wrap returns a Listener over ln, which must be a *net.TCPListener.
func Wrap(ln net.Listener, lim Limits, log *slog.Logger) (*Listener, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, ErrNotTCP
	}
	return New(tl, lim, log), nil
}

func hostOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
