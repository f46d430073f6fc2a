// Package metrics defines the Source interface every metric backend (the
// simulation, a host interface, the lab, a twin) implements, with its one
// concurrency rule (one goroutine at a time; sharing goes through
// Serialized), and a registry that opens sources by name. A sample's
// counters may also come per CPU (Sample.CPUs). A Pool keeps one open
// source per spec, shared by the clients and closed DefaultLinger after
// the last gives it back; the specs the server pins at its start (a lab)
// are opened by the server only.
package metrics

import (
	"errors"
	"time"
)

// Source is one backend of numbers, each under its engine/vocab name:
// counters, which only grow, and gauges (vocab.Kind says which). The
// server samples it periodically and computes rates from successive
// samples itself.
//
// Concurrency, the one rule: a Source is used by one goroutine at a time.
// Whoever shares one between goroutines wraps it with Serialized, the only
// place that locks for it (serve shares its source between the hub and
// /metrics through one Serialized; the hub wraps every source it opens).
// An implementation locks only what goroutines of its own share with its
// methods, and says so.
type Source interface {
	// Info describes the source. It does not change while the source is open.
	Info() SourceInfo
	// Sample reads the counters now. An error means this sample is missing
	// (the interface vanished, the source is closed); the caller may try
	// again later.
	Sample() (Sample, error)
	// Close releases what the source holds (an engine, a netlink socket,
	// namespaces). Sample after Close returns ErrClosed.
	Close() error
}

// SourceInfo describes a Source.
type SourceInfo struct {
	// Name identifies the source as a user would select it: "sim",
	// "host:eth0", "lab".
	Name string `json:"name"`
	// Description is one human sentence about what the counters come from.
	Description string `json:"description"`
	// Counters lists, in a stable order, the names a Sample may carry
	// (engine/vocab names: ethtool's and netlink's where the kernel has
	// one, for instance "rx_kicks", "rx_pp_recycle_cached").
	Counters []string `json:"counters"`
	// Notes are caveats worth showing next to the numbers, for instance
	// "page_pool stats need CONFIG_PAGE_POOL_STATS".
	Notes []string `json:"notes,omitempty"`
	// Labels says what the numbers are of, in words that stay the same
	// while the source's options change (a lab's rate is in its Name, not
	// here): the labels of /metrics and what the page's header says.
	Labels Labels `json:"labels"`
}

// Labels identify a source by what it reads. Kind is always set; the
// others where they apply.
type Labels struct {
	// Kind is the source's kind: "sim", "host", "lab", "twin", "demo".
	Kind string `json:"kind"`
	// Device is the interface read: "eth0", the lab's "lab-b"; the real
	// source's for a twin.
	Device string `json:"device,omitempty"`
	// Program is the XDP program running: the lab's, or the simulated
	// world's.
	Program string `json:"program,omitempty"`
	// Preset is the preset the sim source runs.
	Preset string `json:"preset,omitempty"`
	// Follows is the kind of the real source a twin follows ("host",
	// "lab").
	Follows string `json:"follows,omitempty"`
}

// Sample is what a source read at one moment.
type Sample struct {
	// Time is when the counters were read (wall time for real sources).
	// Rates are computed over the difference of successive Times.
	Time time.Time
	// Totals maps kernel counter names to their value summed over queues
	// (or the device-wide value when the kernel has no per-queue one).
	Totals map[string]uint64
	// Queues holds per-queue counters, index = queue number, with the same
	// names as Totals (rx_kicks, not rx0_kicks). Nil when the source has no
	// per-queue counters.
	Queues []map[string]uint64
	// CPUs holds per-CPU counters, index = CPU number, with the same names
	// as Totals (softnet.time_squeeze, not cpu0.softnet.time_squeeze; the
	// page's and the tutorials' flat name is vocab.CPUCounter's): each
	// name the per-CPU values of its total, which they sum to. A CPU the
	// source has no line for (offline) has an empty map. Nil when the
	// source has no per-CPU counters.
	CPUs []map[string]uint64
}

// ErrClosed is returned by Sample on a closed source.
var ErrClosed = errors.New("metrics: source closed")
