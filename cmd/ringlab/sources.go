package main

import (
	"ringlab/server/hostsrc"
	"ringlab/server/labsrc"
	"ringlab/server/metrics"
	"ringlab/server/simsrc"
	"ringlab/server/twinsrc"
)

// sourceKinds are the metric backends `ringlab serve --source` can open:
// "sim[:PRESET]" (the engine in real time), "host:IFNAME" (read-only
// counters of a real interface), "lab[:PROGRAM,...]" (real XDP in network
// namespaces of its own, root only), "twin:SPEC" (the engine following a
// real source) and "demo" (synthetic counters for testing the page).
func sourceKinds() metrics.Registry {
	return metrics.Registry{
		simKind:          simsrc.Open,
		"host":           hostsrc.OpenMetrics,
		"lab":            labsrc.Open,
		twinsrc.Kind:     twinsrc.OpenWith(sourceKinds),
		metrics.DemoKind: metrics.OpenDemo,
	}
}

// simKind is the source serve uses without --source: the engine itself.
const simKind = "sim"
