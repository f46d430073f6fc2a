package main

import "ringlab/server/metrics"

// sourceKinds are the metric backends `ringlab serve --source` can open.
// A new backend registers here: "sim" (the engine in real time), "host"
// (server/hostsrc) and "lab" are added as they land.
func sourceKinds() metrics.Registry {
	return metrics.Registry{
		// A stand-in with synthetic counters, until "sim" exists.
		metrics.DemoKind: metrics.OpenDemo,
	}
}

// simKind is the source serve prefers: the engine itself.
const simKind = "sim"

// defaultSource is the source serve uses without --source: "sim" when it
// is registered, the demo stand-in until then.
func defaultSource(reg metrics.Registry) string {
	if reg.Has(simKind) {
		return simKind
	}
	return metrics.DemoKind
}
