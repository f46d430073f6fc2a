//go:build race

package play

// Under the race detector, which runs the engine some ten times slower,
// the timeline's tests cross marks twenty times more often.
func init() { markWork = MarkWork / 20 }
