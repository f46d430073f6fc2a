package play

// The shell's tick (wasm/main.go, at Ebitengine's 60 a second): it tells
// the controller the wall time since the last tick (Tick, at most
// MaxTickGapNS), then lets it Work in chunks of WorkChunk events until
// the tick's WorkBudget is spent. The browser tests' Go students run the
// same loop. Times are in nanoseconds of wall time, as Tick takes them
// (the controller reads no clock).
const (
	MaxTickGapNS = 250_000_000
	WorkChunk    = 256 // events between two looks at the clock

	minBudgetNS   = 4_000_000   // engine work per tick while viewing, at least
	maxBudgetNS   = 40_000_000  // and at most (when frames are slow)
	benchBudgetNS = 400_000_000 // in ?bench=engine: flat out, a few frames a second
)

// WorkBudget is how long, in nanoseconds, the controller may work in a
// tick that came gapNS after the last. The engine may use a third of the
// time between ticks: 5.5 ms at 60 ticks a second, more when slow frames
// (software WebGL) space the ticks out, so "as fast as it goes" keeps its
// meaning. A move backwards is waited for: it may take most of a frame.
func (c *Controller) WorkBudget(gapNS int64) int64 {
	switch {
	case c.Bench() == "engine":
		return benchBudgetNS
	case c.Rewinding():
		return maxBudgetNS
	}
	return min(max(minBudgetNS, gapNS/3), maxBudgetNS)
}
