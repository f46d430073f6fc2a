package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(100, 0)
	b := New(5, 3)
	for i := range 3 {
		assert.True(t, b.Allow(t0), "burst event %d", i)
	}
	assert.False(t, b.Allow(t0), "the burst is used up")
	assert.False(t, b.Allow(t0.Add(100*time.Millisecond)), "half a token after 100 ms at 5/s")
	assert.True(t, b.Allow(t0.Add(200*time.Millisecond)), "one token after 200 ms")
	assert.False(t, b.Allow(t0.Add(200*time.Millisecond)))
	assert.False(t, b.Allow(t0), "going back in time adds nothing")

	// A long pause refills to the burst, not beyond.
	later := t0.Add(time.Hour)
	allowed := 0
	for b.Allow(later) {
		allowed++
	}
	assert.Equal(t, 3, allowed)
}

func TestZeroBucketAllowsNothing(t *testing.T) {
	var b Bucket
	assert.False(t, b.Allow(time.Now()))
}

func TestThrottle(t *testing.T) {
	t0 := time.Unix(100, 0)
	th := NewThrottle(time.Second, 2)
	for i := range 2 {
		ok, n := th.Allow(t0)
		assert.True(t, ok, "event %d", i)
		assert.Zero(t, n)
	}
	for range 5 {
		ok, _ := th.Allow(t0.Add(500 * time.Millisecond))
		assert.False(t, ok, "held back within the period")
	}
	ok, n := th.Allow(t0.Add(time.Second))
	assert.True(t, ok, "a new period")
	assert.Equal(t, uint64(5), n, "and it says how many were left out")
	ok, n = th.Allow(t0.Add(time.Second))
	assert.True(t, ok)
	assert.Zero(t, n, "counted once")
}
