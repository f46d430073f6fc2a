//go:build !race

package main

// raceDetector is false without -race (race_on_test.go).
const raceDetector = false
