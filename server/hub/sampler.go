package hub

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"ringlab/proto"
	"ringlab/server/metrics"
)

// samplerKey identifies a sampler: clients on the same source at the same
// rate share one.
type samplerKey struct {
	spec   string
	rateHz int
}

// sampler reads one source at one rate and offers each snapshot to its
// clients' mailboxes. Its goroutine is started by Hub.attach and stopped
// by Hub.detach when its last client leaves.
type sampler struct {
	key  samplerKey
	ref  *sourceRef
	log  *slog.Logger
	quit chan struct{}
	once sync.Once
	// ticker starts the ticks run samples on (Options.Ticker).
	ticker func(period time.Duration) (<-chan time.Time, func())

	mu      sync.Mutex
	clients map[*client]*filter

	// Owned by the run goroutine.
	seq     uint64
	prev    *metrics.Sample
	lastErr string
	fails   int // samples failed in a row
	wait    int // ticks to let pass before the next try
}

// MaxRetryInterval bounds the backoff of a failing source: after a failed
// sample the sampler waits one period, then two, four ... up to this, and
// goes back to every period at the first sample that works.
const MaxRetryInterval = 5 * time.Second

func newSampler(key samplerKey, ref *sourceRef, log *slog.Logger) *sampler {
	return &sampler{key: key, ref: ref, log: log, quit: make(chan struct{}), clients: map[*client]*filter{}, ticker: wallTicker}
}

// wallTicker ticks every period of the wall clock.
func wallTicker(period time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(period)
	return t.C, t.Stop
}

func (s *sampler) run() {
	ticks, stop := s.ticker(time.Second / time.Duration(s.key.rateHz))
	defer stop()
	for {
		select {
		case <-s.quit:
			return
		case <-ticks:
			s.tick()
		}
	}
}

func (s *sampler) stop() { s.once.Do(func() { close(s.quit) }) }

func (s *sampler) add(c *client, f *filter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[c] = f
}

// remove takes c off and returns how many clients are left.
func (s *sampler) remove(c *client) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, c)
	return len(s.clients)
}

// tick takes one sample and offers it to every client, encoded once per
// distinct filter. Offering never waits, so one slow client costs the
// others nothing.
func (s *sampler) tick() {
	if s.wait > 0 {
		s.wait--
		return
	}
	sample, err := s.ref.src.Sample()
	if err != nil {
		s.fails++
		s.wait = s.backoff()
		s.reportError(err)
		return
	}
	s.lastErr, s.fails = "", 0
	s.seq++
	r := rates(s.prev, sample)
	s.prev = &sample

	s.mu.Lock()
	defer s.mu.Unlock()
	encoded := map[string][]byte{}
	for c, f := range s.clients {
		if f == pausedFilter {
			continue
		}
		b, ok := encoded[f.cacheKey()]
		if !ok {
			b, err = encodeSnapshot(s.seq, s.key.spec, sample, r, f)
			if err != nil { // a bug: snapshots are maps of numbers
				s.log.Error("encoding snapshot", "source", s.key.spec, "err", err)
				return
			}
			encoded[f.cacheKey()] = b
		}
		c.peer.Offer(b)
	}
}

// backoff is how many ticks to skip after the fails-th failure in a row:
// 0, 1, 3, 7 ... (a try after 1, 2, 4, 8 periods), at most
// MaxRetryInterval.
func (s *sampler) backoff() int {
	limit := int(MaxRetryInterval * time.Duration(s.key.rateHz) / time.Second)
	return min(1<<min(s.fails-1, 20), limit) - 1
}

// reportError tells the clients that sampling fails, once per distinct
// error; no snapshot is sent (and no seq used) until it works again.
func (s *sampler) reportError(err error) {
	if err.Error() == s.lastErr {
		return
	}
	s.lastErr = err.Error()
	s.log.Warn("sampling failed", "source", s.key.spec, "err", err)
	msg := proto.Errorf(proto.CodeUnavailable, "", "source %s: %v (retrying, at most %v apart)", s.key.spec, err, MaxRetryInterval).Encode()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		c.peer.TrySend(msg) // informational: dropped when the queue is full
	}
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("hub: encoding " + err.Error())
	}
	return b
}
