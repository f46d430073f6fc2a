//go:build race

package engine

// soakPackets is the soak's length per preset under the race detector,
// which slows the engine about tenfold; the million runs without it.
const soakPackets = 100_000
