package ratelimit

import (
	"sync"
	"time"
)

// Throttle lets through at most burst events per period, for log lines
// that a flood would otherwise write one per event (refused connections).
// What it holds back it counts, so the next line it lets through can say
// how many were left out. Safe for concurrent use.
type Throttle struct {
	period time.Duration
	burst  int

	mu         sync.Mutex
	start      time.Time // of the current period
	used       int       // events let through in it
	suppressed uint64    // held back since the last one let through
}

// NewThrottle returns a Throttle of burst events per period.
func NewThrottle(period time.Duration, burst int) *Throttle {
	return &Throttle{period: period, burst: max(burst, 1)}
}

// Allow reports whether an event at now may be logged, and how many events
// were held back before it (to be said in its line).
func (t *Throttle) Allow(now time.Time) (ok bool, suppressed uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start.IsZero() || now.Sub(t.start) >= t.period {
		t.start, t.used = now, 0
	}
	if t.used >= t.burst {
		t.suppressed++
		return false, 0
	}
	t.used++
	suppressed, t.suppressed = t.suppressed, 0
	return true, suppressed
}
