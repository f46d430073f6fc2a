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

// refill adds the tokens gained until now.
func (b *Bucket) refill(now time.Time) {
	if !b.last.IsZero() {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(b.burst, b.tokens+dt*b.rate)
		}
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

// Ready reports whether an event at now would be allowed, taking nothing.
func (b *Bucket) Ready(now time.Time) bool {
	b.refill(now)
	return b.tokens >= 1
}

// Full reports whether the bucket holds its burst at now (it is as a
// new one would be).
func (b *Bucket) Full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}

// Wait returns how long from now until an event would be allowed (0 if
// one is now; for ever, as an hour, when the rate is 0).
func (b *Bucket) Wait(now time.Time) time.Duration {
	b.refill(now)
	if b.tokens >= 1 {
		return 0
	}
	if b.rate <= 0 {
		return time.Hour
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// Allow reports whether an event at time now may proceed, and takes a token
// if so. Times before the previous call count as no time passing.
func (b *Bucket) Allow(now time.Time) bool {
	b.refill(now)
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
