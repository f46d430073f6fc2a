//go:build race

package hub

// raceEnabled: the race detector's shadow memory inflates the heap the
// tests measure.
const raceEnabled = true
