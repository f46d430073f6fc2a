//go:build race

package main

// raceDetector is true in a test binary built with -race: the engine runs
// some 25 times slower there (a second of the default preset takes about
// 220 ms of a core instead of 8), so the tests that need the sim source
// to keep up with the wall clock on a loaded machine run without it
// (make test's second line).
const raceDetector = true
