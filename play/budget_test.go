package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWorkBudget: a third of the time between ticks, within its bounds.
func TestWorkBudget(t *testing.T) {
	c := New("")
	const tick = int64(1_000_000_000 / 60)
	assert.Equal(t, int64(minBudgetNS), c.WorkBudget(0), "the first tick")
	assert.Equal(t, tick/3, c.WorkBudget(tick), "60 ticks a second")
	assert.Equal(t, int64(maxBudgetNS), c.WorkBudget(MaxTickGapNS), "slow frames")
	assert.Equal(t, int64(benchBudgetNS), New("bench=engine").WorkBudget(tick), "the engine's benchmark")
}
