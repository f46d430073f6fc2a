// Package wspeer runs one WebSocket connection the way gorilla's chat
// example does: one reader and one writer goroutine, write deadlines,
// ping/pong and a read limit, with outbound messages going through a bounded
// ordered queue or a small mailbox that keeps the newest messages.
package wspeer

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

const (
	// WriteWait is the time allowed to write one control frame or short
	// message (a longer one gets MinWriteRate's time on top); a peer that
	// cannot take a frame within it is disconnected, whatever it sends:
	// the writer's progress decides, not the reader's.
	WriteWait = 10 * time.Second

	// MinWriteRate is the slowest a peer may take a long message (a
	// room's welcome with its log) before it is disconnected: 1 MiB gets
	// 4 s on top of WriteWait.
	MinWriteRate = 256 << 10 // bytes per second

	// SendBuffer bounds the kernel's send buffer of each connection
	// (SO_SNDBUF; Linux doubles it for its own bookkeeping). Without it
	// the kernel grows the buffer to tcp_wmem's maximum (4 MiB) for a
	// peer that never reads, so a write completes into kernel memory and
	// WriteWait never fires; with it a non-reading peer holds at most
	// twice this much and its next write blocks until the deadline. 64
	// KiB keeps a LAN's throughput (it is the window of a 5 ms path at
	// 100 Mbit/s) and bounds 4096 stuck connections to 512 MiB.
	SendBuffer = 64 << 10

	// PongWait is how long the reader waits for the next frame (at least the
	// pong answering our ping) before it gives the peer up.
	PongWait = 60 * time.Second

	// PingPeriod is how often the writer pings: 9/10 of PongWait (of
	// Options.PongWait when set), so that a live peer's pong arrives before
	// the read deadline.
	PingPeriod = PongWait * 9 / 10

	// MaxMessageSize is the read limit in bytes: a larger client message
	// closes that connection with 1009 (message too big).
	MaxMessageSize = 64 << 10

	// CloseGrace bounds how long a closing connection waits for the peer's
	// answering close frame (or, after an oversize message, for the peer to
	// stop sending) before the TCP connection is reset.
	CloseGrace = 2 * time.Second

	// maxCloseReason is the longest close reason: a close frame's payload
	// is at most 125 bytes, two of which are the code.
	maxCloseReason = 123
)

// outbound is one entry of the ordered queue: a text message, or, when
// closeCode is not zero, a close frame after which the writer stops.
type outbound struct {
	data      []byte
	parts     [][]byte // or a text message of these, written one after the other
	closeCode int
	closeText string
}

// Peer is one WebSocket connection. Run owns both goroutines; every other
// method may be called from any goroutine.
//
// Memory per peer is bounded: the queue holds at most its capacity of
// messages and the mailbox its own (one unless NewWithMailbox says more).
type Peer struct {
	ws        *websocket.Conn
	queue     chan outbound
	writeWait time.Duration
	pongWait  time.Duration
	grace     time.Duration // CloseGrace, or Options.CloseGrace
	ping      func() bool
	ended     func()
	stuck     atomic.Bool // a write did not complete: reset, do not linger

	mu      sync.Mutex
	mailbox [][]byte      // oldest first, at most cap(mailbox) messages
	wake    chan struct{} // capacity 1: the mailbox has a message
	skipped atomic.Uint64 // mailbox messages replaced before they were written
	sent    atomic.Uint64 // text messages written

	stopOnce  sync.Once
	stop      chan struct{} // closed by Abort
	abortCode int           // written before stop is closed
	abortText string

	writerDone chan struct{} // closed when the writer has returned
	done       chan struct{} // closed when Run has returned
}

// New returns a Peer for ws whose ordered queue holds queueLen messages and
// whose mailbox holds one: the newest message wins.
func New(ws *websocket.Conn, queueLen int) *Peer {
	return NewWithOptions(ws, Options{QueueLen: queueLen})
}

// NewWithMailbox returns a Peer whose mailbox keeps the newest mailboxLen
// messages, written oldest first: a writer that falls behind for less than
// mailboxLen offers (a scheduling hiccup) loses none, one that stays behind
// gets the newest and skips the rest.
func NewWithMailbox(ws *websocket.Conn, queueLen, mailboxLen int) *Peer {
	return NewWithOptions(ws, Options{QueueLen: queueLen, MailboxLen: mailboxLen})
}

// Options configure a Peer; zero fields take the defaults.
type Options struct {
	QueueLen   int           // the ordered queue (1)
	MailboxLen int           // the mailbox (1)
	WriteWait  time.Duration // WriteWait
	PongWait   time.Duration // PongWait (the writer pings at 9/10 of it)
	SendBuffer int           // SendBuffer
	CloseGrace time.Duration // CloseGrace
	// Ping, when set, is called on the reader goroutine for every ping
	// frame the peer sends, before it is answered: false leaves it
	// unanswered. It is where the owner counts pings against the rate
	// limit of the peer's messages (and may Abort a flood): a ping costs
	// the server a pong, as a message costs it a reply.
	Ping func() bool
	// Ended, when set, is called once by Run when the connection has
	// ended, before it is closed: what the owner counts of the peer
	// (its place in a room, its seat) is given back before the peer can
	// see its connection end, so a peer that reconnects at once is never
	// counted twice.
	Ended func()
}

// NewWithOptions returns a Peer for ws. It bounds the kernel's send buffer
// of a TCP connection to opts.SendBuffer.
func NewWithOptions(ws *websocket.Conn, opts Options) *Peer {
	if opts.WriteWait <= 0 {
		opts.WriteWait = WriteWait
	}
	if opts.PongWait <= 0 {
		opts.PongWait = PongWait
	}
	if opts.SendBuffer <= 0 {
		opts.SendBuffer = SendBuffer
	}
	if opts.CloseGrace <= 0 {
		opts.CloseGrace = CloseGrace
	}
	if tc, ok := ws.NetConn().(interface{ SetWriteBuffer(int) error }); ok { // a TCP connection
		tc.SetWriteBuffer(opts.SendBuffer) // best effort: a failure leaves the kernel's default
	}
	return &Peer{
		ws:         ws,
		writeWait:  opts.WriteWait,
		pongWait:   opts.PongWait,
		grace:      opts.CloseGrace,
		ping:       opts.Ping,
		ended:      opts.Ended,
		queue:      make(chan outbound, max(opts.QueueLen, 1)),
		mailbox:    make([][]byte, 0, max(opts.MailboxLen, 1)),
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
}

// Run serves the connection until it ends: it reads in the calling
// goroutine, calling handle for each data message (handle runs on the
// reader goroutine, so a slow handle delays only this peer), and writes in a
// goroutine it starts and waits for. It returns the error that ended the
// reading (a *websocket.CloseError when the peer closed, ErrReadLimit after
// an oversize message) and closes the connection: gracefully after a close
// handshake (the peer sent its close frame, so it reads), with a reset
// otherwise (see abort). Run is called once.
func (p *Peer) Run(handle func(messageType int, data []byte)) error {
	readerDone := make(chan struct{})
	go func() {
		defer close(p.writerDone)
		p.writeLoop(readerDone)
		select {
		case <-readerDone:
		default:
			// The writer gave up (a write failed or timed out, a close
			// frame went unanswered) while the reader still runs: reset
			// now, which ends the reader too. A read deadline of now
			// would not do: the reader moves its deadline on with every
			// frame, so a peer that sends pongs and never reads would
			// keep it, and the connection, for as long as it sends.
			abort(p.ws.NetConn())
		}
	}()
	err := p.readLoop(handle)
	close(readerDone)
	<-p.writerDone
	if p.ended != nil {
		p.ended()
	}
	if p.handshakeDone(err) {
		p.ws.Close()
	} else {
		abort(p.ws.NetConn())
	}
	close(p.done)
	return err
}

// handshakeDone reports whether the connection ended with a peer that
// reads: it sent its close frame (its own, or the answer to ours) and every
// write completed, or, after an oversize message, it closed its side
// within CloseGrace. Any other end gives up on the peer: a write that timed
// out, a close frame not answered within CloseGrace (Abort, Close), the
// read deadline, a broken connection.
func (p *Peer) handshakeDone(err error) bool {
	if p.stuck.Load() {
		return false
	}
	if errors.Is(err, websocket.ErrReadLimit) {
		// gorilla has sent the 1009 close frame; closing now, with the
		// oversize message unread, would reset the connection and could
		// lose that frame, so read and discard until the peer is done.
		return p.linger()
	}
	_, ok := errors.AsType[*websocket.CloseError](err)
	return ok
}

// abort closes c with a TCP reset (SO_LINGER 0): the kernel discards at
// once what it still holds for a peer that does not read, rather than keep
// the socket in FIN_WAIT1 behind that data (and keep trying) for minutes
// after the close.
func abort(c net.Conn) {
	if tc, ok := c.(interface{ SetLinger(int) error }); ok { // a TCP connection
		tc.SetLinger(0) // best effort: a failure leaves the graceful close
	}
	c.Close()
}

func (p *Peer) readLoop(handle func(int, []byte)) error {
	p.ws.SetReadLimit(MaxMessageSize)
	p.ws.SetReadDeadline(time.Now().Add(p.pongWait))
	p.ws.SetPongHandler(func(string) error {
		return p.ws.SetReadDeadline(time.Now().Add(p.pongWait))
	})
	if p.ping != nil {
		p.ws.SetPingHandler(func(data string) error {
			if !p.ping() {
				return nil
			}
			// As gorilla's default handler: a pong that cannot be sent
			// is the writer's to notice, not the reader's.
			err := p.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(p.writeWait))
			if _, ok := errors.AsType[net.Error](err); ok || errors.Is(err, websocket.ErrCloseSent) {
				return nil
			}
			return err
		})
	}
	closing := false
	for {
		kind, data, err := p.ws.ReadMessage()
		if err != nil {
			return err
		}
		p.ws.SetReadDeadline(time.Now().Add(p.pongWait))
		if closing {
			continue // the close frame is on its way: nothing more is handled
		}
		if kind == websocket.TextMessage && !utf8.Valid(data) {
			// RFC 6455 8.1: a text message that is not UTF-8 fails the
			// connection with 1007.
			p.Abort(websocket.CloseInvalidFramePayloadData, "a text message that is not UTF-8")
			closing = true
			continue
		}
		handle(kind, data)
	}
}

// linger reads and discards until the peer closes its side, at most
// the close grace, and reports whether it did.
func (p *Peer) linger() bool {
	c := p.ws.NetConn()
	c.SetReadDeadline(time.Now().Add(p.grace))
	_, err := io.Copy(io.Discard, c)
	return err == nil
}

// writeLoop writes until the reader is done, a write fails, or a close
// frame has been sent. Queued messages go before the mailbox.
func (p *Peer) writeLoop(readerDone <-chan struct{}) {
	ticker := time.NewTicker(p.pongWait * 9 / 10)
	defer ticker.Stop()
	for {
		// Priorities: an abort, then the ordered queue, then the rest.
		select {
		case <-p.stop:
			p.writeClose(p.abortCode, p.abortText, readerDone)
			return
		default:
		}
		select {
		case m := <-p.queue:
			if !p.writeOutbound(m, readerDone) {
				return
			}
			continue
		default:
		}
		select {
		case <-p.stop:
			p.writeClose(p.abortCode, p.abortText, readerDone)
			return
		case <-readerDone:
			return
		case m := <-p.queue:
			if !p.writeOutbound(m, readerDone) {
				return
			}
		case <-p.wake:
			if m := p.take(); m != nil && p.write(m) != nil {
				return
			}
		case <-ticker.C:
			p.ws.SetWriteDeadline(time.Now().Add(p.writeWait))
			if p.failed(p.ws.WriteMessage(websocket.PingMessage, nil)) {
				return
			}
		}
	}
}

// writeOutbound writes m and reports whether the writer goes on.
func (p *Peer) writeOutbound(m outbound, readerDone <-chan struct{}) bool {
	if m.closeCode != 0 {
		p.writeClose(m.closeCode, m.closeText, readerDone)
		return false
	}
	if m.parts != nil {
		return p.writeParts(m.parts) == nil
	}
	return p.write(m.data) == nil
}

// writeParts writes one text message of parts, which are shared (with
// other peers' queues): they are read, never kept nor changed.
func (p *Peer) writeParts(parts [][]byte) error {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	p.ws.SetWriteDeadline(time.Now().Add(p.deadline(n)))
	w, err := p.ws.NextWriter(websocket.TextMessage)
	if err == nil {
		for _, b := range parts {
			if _, err = w.Write(b); err != nil {
				break
			}
		}
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		p.failed(err)
		return err
	}
	p.sent.Add(1)
	return nil
}

func (p *Peer) write(data []byte) error {
	p.ws.SetWriteDeadline(time.Now().Add(p.deadline(len(data))))
	if err := p.ws.WriteMessage(websocket.TextMessage, data); err != nil {
		p.failed(err)
		return err
	}
	p.sent.Add(1)
	return nil
}

// deadline is the time a message of n bytes may take to write.
func (p *Peer) deadline(n int) time.Duration {
	return p.writeWait + time.Duration(n)*time.Second/MinWriteRate
}

// failed reports whether err ended the writer, and notes a write that did
// not complete in time.
func (p *Peer) failed(err error) bool {
	if err == nil {
		return false
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		p.stuck.Store(true)
	}
	return true
}

// writeClose sends a close frame and waits, at most the close grace, for
// the reader to see the peer's answer.
func (p *Peer) writeClose(code int, text string, readerDone <-chan struct{}) {
	if len(text) > maxCloseReason {
		text = text[:maxCloseReason]
	}
	p.ws.SetWriteDeadline(time.Now().Add(p.writeWait))
	if p.failed(p.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, text))) {
		return
	}
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-readerDone:
	case <-t.C:
	}
}

// take removes the mailbox's oldest message, nil when it is empty; when
// more remain the writer is woken again for them.
func (p *Peer) take() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mailbox) == 0 {
		return nil
	}
	m := p.mailbox[0]
	n := copy(p.mailbox, p.mailbox[1:])
	p.mailbox[n] = nil
	p.mailbox = p.mailbox[:n]
	if n > 0 {
		p.signal()
	}
	return m
}

// signal wakes the writer for the mailbox.
func (p *Peer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Send queues a message to be written after those queued before it,
// waiting while the queue is full. It reports false, and drops the message,
// once the connection is ending.
func (p *Peer) Send(data []byte) bool {
	select {
	case <-p.writerDone:
		return false
	default:
	}
	select {
	case p.queue <- outbound{data: data}:
		return true
	case <-p.writerDone:
		return false
	}
}

// TrySend queues a message like Send but never waits: it reports false when
// the queue is full or the connection is ending.
func (p *Peer) TrySend(data []byte) bool {
	select {
	case <-p.writerDone:
		return false
	default:
	}
	select {
	case p.queue <- outbound{data: data}:
		return true
	default:
		return false
	}
}

// TrySendParts is TrySend of one text message made of parts, written one
// after the other: a large part (a room's log) may be shared by many
// peers' queues rather than copied into each message. The parts must not
// change once queued.
func (p *Peer) TrySendParts(parts ...[]byte) bool {
	select {
	case <-p.writerDone:
		return false
	default:
	}
	select {
	case p.queue <- outbound{parts: parts}:
		return true
	default:
		return false
	}
}

// Offer puts a message in the mailbox; when it is full, the oldest message
// not written yet is dropped (and counted as skipped). It never waits. The
// writer sends the mailbox only when the ordered queue is empty.
func (p *Peer) Offer(data []byte) {
	p.mu.Lock()
	if len(p.mailbox) == cap(p.mailbox) {
		p.skipped.Add(1)
		n := copy(p.mailbox, p.mailbox[1:])
		p.mailbox = p.mailbox[:n]
	}
	p.mailbox = append(p.mailbox, data)
	p.signal()
	p.mu.Unlock()
}

// ClearMailbox drops the mailbox's messages without counting them as
// skipped (they belong to a subscription that has ended).
func (p *Peer) ClearMailbox() {
	p.mu.Lock()
	clear(p.mailbox)
	p.mailbox = p.mailbox[:0]
	p.mu.Unlock()
}

// Close queues a close frame after the messages already queued; the
// connection ends once the peer answers, or with a reset once CloseGrace
// has passed. It waits like Send.
func (p *Peer) Close(code int, reason string) {
	select {
	case p.queue <- outbound{closeCode: code, closeText: reason}:
	case <-p.writerDone:
	}
}

// Abort closes the connection now: the writer sends a close frame with code
// and reason next, dropping queued messages, and the connection ends like
// Close's. It never waits; only the first call counts.
func (p *Peer) Abort(code int, reason string) {
	p.stopOnce.Do(func() {
		p.abortCode, p.abortText = code, reason
		close(p.stop)
	})
}

// Skipped returns how many mailbox messages were dropped unwritten.
func (p *Peer) Skipped() uint64 { return p.skipped.Load() }

// Sent returns how many text messages were written.
func (p *Peer) Sent() uint64 { return p.sent.Load() }

// Done is closed when Run has returned.
func (p *Peer) Done() <-chan struct{} { return p.done }

// RemoteAddr returns the peer's address.
func (p *Peer) RemoteAddr() net.Addr { return p.ws.RemoteAddr() }

// Kill drops the TCP connection with a reset and without a close frame,
// for a shutdown whose deadline has passed. Run then returns promptly.
func (p *Peer) Kill() { abort(p.ws.NetConn()) }
