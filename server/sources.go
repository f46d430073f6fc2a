package main

import (
	"ringlab/server/hostsrc"
	"ringlab/server/metrics"
	"ringlab/server/simsrc"
)

// sourceKinds are the metric backends `ringlab serve --source` can open:
// "sim[:PRESET]" (the engine in real time), "host:IFNAME" (read-only
// counters of a real interface) and "demo" (synthetic counters for
// testing the page). The lab backend registers here when it lands.
func sourceKinds() metrics.Registry {
	return metrics.Registry{
		simKind:          simsrc.Open,
		"host":           hostsrc.OpenMetrics,
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
