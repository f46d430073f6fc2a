//go:build !race

package engine

// soakPackets is the soak's length per preset: the million.
const soakPackets = 1_000_000
