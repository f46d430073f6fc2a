//go:build !race

package engine

// soakPackets is the soak's length per preset: a million packets.
const soakPackets = 1_000_000

// presetCheckEvents is how many events TestPresetsKeepInvariants runs per
// preset, each followed by a full pass.
const presetCheckEvents = 500

// traceCheckEvents is how many events the tests of traced events (what
// each says, the functions it names, FuncWatch, Clone) run per case.
const traceCheckEvents = 3000
