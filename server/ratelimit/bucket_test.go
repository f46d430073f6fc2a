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

// A guard tells of the first refusal of a run, closes at maxRun in a
// row, and an allowed message ends the run.
func TestGuardRuns(t *testing.T) {
	g := NewGuard(1, 1)
	t0 := time.Unix(100, 0)
	ok, first, closeNow := g.Take(t0, 3)
	assert.Equal(t, [3]bool{true, false, false}, [3]bool{ok, first, closeNow})
	ok, first, closeNow = g.Take(t0, 3)
	assert.Equal(t, [3]bool{false, true, false}, [3]bool{ok, first, closeNow}, "the run starts: tell")
	ok, first, closeNow = g.Take(t0, 3)
	assert.Equal(t, [3]bool{false, false, false}, [3]bool{ok, first, closeNow})
	ok, first, closeNow = g.Take(t0, 3)
	assert.Equal(t, [3]bool{false, false, true}, [3]bool{ok, first, closeNow}, "three in a row: close")
	ok, _, _ = g.Take(t0.Add(time.Second), 3)
	assert.True(t, ok)
	_, first, _ = g.Take(t0.Add(time.Second), 3)
	assert.True(t, first, "an allowed message ended the run")
}
