//go:build !race

package testenv

// Race is true in a binary built with -race (race_on.go).
const Race = false
