//go:build race

package testenv

// Race is true in a binary built with -race.
const Race = true
