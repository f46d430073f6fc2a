//go:build race

package abuse

// raceDetector is true in a test binary built with -race, where the
// suite's own side (its floods, its readers) runs several times slower.
const raceDetector = true
