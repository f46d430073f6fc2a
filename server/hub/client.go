package hub

import (
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"ringlab/proto"
	"ringlab/server/ratelimit"
	"ringlab/server/wspeer"
)

// client is one /ws/metrics connection.
type client struct {
	peer *wspeer.Peer
	addr string // the remote address

	// Owned by the reader goroutine.
	guard *ratelimit.Guard // messages and ping frames, and the run over the limit

	// Guarded by Hub.mu.
	reserved samplerKey // the pair at another rate than the default it counts against its address, if any
	sampler  *sampler
	key      samplerKey
	filter   *filter
}

// handle processes one client message on the reader goroutine.
func (h *Hub) handle(c *client, kind int, data []byte) {
	if !h.allow(c) {
		return
	}
	if kind != websocket.TextMessage {
		c.reply(proto.Errorf(proto.CodeBinaryFrame, "", "binary frames are not accepted; send JSON text messages"))
		return
	}
	typ, err := proto.Type(data)
	if err != nil {
		c.reply(proto.AsError(err))
		return
	}
	switch typ {
	case typeSubscribe:
		h.subscribe(c, data)
	case typePing:
		var m pingMsg
		if err := proto.Strict(data, &m); err != nil {
			c.reply(proto.AsError(err))
			return
		}
		c.peer.Send(mustMarshal(pongMsg{Type: typePong, Time: time.Now()}))
	default:
		c.reply(proto.Errorf(proto.CodeUnknownType, "type", "unknown message type %q; /ws/metrics takes subscribe and ping", typ))
	}
}

// allow takes a token of c's message rate for a message or a ping frame
// (on c's reader goroutine); over the limit it says so once a streak and
// closes the connection after maxViolations in a row.
func (h *Hub) allow(c *client) bool {
	ok, first, closeNow := c.guard.Take(h.now(), maxViolations)
	if first {
		c.reply(proto.Errorf(proto.CodeRateLimited, "", "more than %d messages per second (burst %d, ping frames included): message dropped", msgRatePerSecond, msgBurst))
	}
	if closeNow {
		c.peer.Abort(websocket.ClosePolicyViolation, "rate limit exceeded repeatedly")
	}
	return ok
}

func (c *client) reply(e *proto.Error) { c.peer.Send(e.Encode()) }

// subscribe validates a subscribe and moves c to the sampler it asks for.
// A rejected subscribe changes nothing.
func (h *Hub) subscribe(c *client, data []byte) {
	var m subscribeMsg
	if err := proto.Strict(data, &m); err != nil {
		c.reply(proto.AsError(err))
		return
	}
	h.mu.Lock()
	key, f := c.key, c.filter
	h.mu.Unlock()

	if m.Source != nil {
		if !slices.Contains(h.specs, *m.Source) {
			c.reply(proto.Errorf(proto.CodeNotFound, "source", "unknown source %q; this server offers %s", *m.Source, strings.Join(h.specs, ", ")))
			return
		}
		if *m.Source != key.spec {
			key.spec, f = *m.Source, nil // counter names differ between sources
		}
	}
	if m.RateHz != nil {
		if *m.RateHz < MinRateHz || *m.RateHz > MaxRateHz {
			c.reply(proto.Errorf(proto.CodeOutOfRange, "rate_hz", "rate_hz must be between %d and %d, got %d", MinRateHz, MaxRateHz, *m.RateHz))
			return
		}
		key.rateHz = *m.RateHz
	}
	ref, err := h.acquire(key.spec)
	if err != nil {
		c.reply(proto.Errorf(proto.CodeUnavailable, "source", "%v", err))
		return
	}
	if m.Counters != nil {
		var e *proto.Error
		if f, e = newFilter(*m.Counters, ref.info.Counters); e != nil {
			h.release(ref)
			c.reply(e)
			return
		}
	}
	hello := h.hello(ref, key.rateHz, f)
	if s := h.refilter(c, key, ref); s != nil {
		// Same sampler: c is paused on it while the hello is queued, so no
		// snapshot of the old filter follows the new hello.
		c.peer.ClearMailbox()
		c.peer.Send(hello)
		s.add(c, f)
		h.mu.Lock()
		c.filter = f
		h.mu.Unlock()
		return
	}
	if !h.reserve(c, key) {
		h.release(ref)
		c.reply(proto.Errorf(proto.CodeLimitExceeded, "rate_hz", "this address's clients are on %d sources at rates other than %d Hz, the most one address may be (each is sampled on its own); use rate_hz %d or one of their rates", MaxRatesPerAddr, DefaultRateHz, DefaultRateHz))
		return
	}
	h.detach(c)
	if key.rateHz != DefaultRateHz {
		h.mu.Lock()
		c.reserved = key
		h.mu.Unlock()
	}
	c.peer.ClearMailbox() // a snapshot of the old subscription must not follow the new hello
	c.peer.Send(hello)
	h.attach(c, key, f, ref)
}

// refilter pauses c on its sampler and returns it when c stays on it (the
// source and rate are unchanged), giving ref back; else it returns nil.
func (h *Hub) refilter(c *client, key samplerKey, ref *sourceRef) *sampler {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := c.sampler
	if s == nil || c.key != key {
		return nil
	}
	h.releaseLocked(ref) // not the last: s holds one
	s.add(c, pausedFilter)
	return s
}

// newFilter checks an allowlist against the counters a source offers. An
// empty list means all counters.
func newFilter(names, offered []string) (*filter, *proto.Error) {
	if len(names) == 0 {
		return nil, nil
	}
	if len(names) > maxCounters {
		return nil, proto.Errorf(proto.CodeOutOfRange, "counters", "at most %d counters, got %d", maxCounters, len(names))
	}
	f := &filter{names: map[string]bool{}}
	for i, n := range names {
		if !slices.Contains(offered, n) {
			return nil, proto.Errorf(proto.CodeNotFound, "counters", "counters[%d]: the source has no counter %q (see hello.counters)", i, n)
		}
		f.names[n] = true
	}
	for n := range f.names {
		f.list = append(f.list, n)
	}
	slices.Sort(f.list)
	f.key = strings.Join(f.list, ",")
	return f, nil
}
