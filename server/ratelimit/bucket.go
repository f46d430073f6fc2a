// Package ratelimit provides a token bucket for limiting client messages.
package ratelimit

import "time"

// Bucket is a token bucket: it holds up to Burst tokens, gains Rate tokens per
// second, and each allowed event takes one. The zero value allows nothing;
// use New. A Bucket is not safe for concurrent use; each one belongs to the
// goroutine that reads one client's messages (or is guarded by its owner's
// lock).
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// New returns a full bucket.
func New(ratePerSecond float64, burst int) *Bucket {
	return &Bucket{rate: ratePerSecond, burst: float64(burst), tokens: float64(burst)}
}

// Allow reports whether an event at time now may proceed, and takes a token
// if so. Times before the previous call count as no time passing.
func (b *Bucket) Allow(now time.Time) bool {
	if !b.last.IsZero() {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(b.burst, b.tokens+dt*b.rate)
		}
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
