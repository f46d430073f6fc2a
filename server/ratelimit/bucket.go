// Package ratelimit provides a token bucket for limiting client messages
// (Bucket, and Guard, which tells a client once per run of refusals and
// closes it after a long run) and a Throttle for log lines, such as the
// servers' refusals.
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

// Guard is one client's message rate and the run of messages it refused
// in a row: both servers' WebSocket readers (server/hub, server/rooms)
// tell a client once per run and close it after a long run.
type Guard struct {
	bucket *Bucket
	run    int // consecutive refusals
}

// NewGuard returns a guard with a full bucket.
func NewGuard(ratePerSecond float64, burst int) *Guard {
	return &Guard{bucket: New(ratePerSecond, burst)}
}

// Take is Bucket.Allow for a message at now; a refused one reports
// whether it starts a run (first: tell the client) and whether the run
// has reached maxRun (close the connection). An allowed one ends the run.
func (g *Guard) Take(now time.Time, maxRun int) (ok, first, closeNow bool) {
	if g.bucket.Allow(now) {
		g.run = 0
		return true, false, false
	}
	g.run++
	return false, g.run == 1, g.run >= maxRun
}
