//go:build race

package engine

// soakPackets is the soak's length per preset under the race detector,
// which slows the engine about tenfold; the million runs without it.
const soakPackets = 100_000

// presetCheckEvents is TestPresetsKeepInvariants' events per preset under
// the race detector, which makes a full pass (a walk of every page) some
// thirty times slower: enough for every preset's first packet (vhost-net
// fills a batch of up to 64 frames, one landing each at a rate, before
// the guest sees any: xdp-tx takes 68 events).
const presetCheckEvents = 100

// traceCheckEvents is the traced tests' events per case under the race
// detector: a traced event reads every counter, some ten times slower
// under it; a few hundred still cross every handler of every preset.
const traceCheckEvents = 300
