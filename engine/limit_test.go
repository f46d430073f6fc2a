package engine

import (
	"testing"

	"ringlab/engine/scenario"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimitOf holds the rule that names what limits a run to its cases,
// one per rule and the edges between them.
func TestLimitOf(t *testing.T) {
	cpu := func(name string, busy, spin float64) Resource {
		return Resource{Kind: ResCPU, Name: name, Busy: busy, Wait: spin}
	}
	host := func(busy, wait float64) Resource {
		return Resource{Kind: ResHost, Name: "host rx0", Busy: busy, Wait: wait}
	}
	lock := func(held, wait float64) Resource {
		return Resource{Kind: ResLock, Name: "zone->lock", Busy: held, Wait: wait}
	}
	tests := []struct {
		name     string
		u        Usage
		kind     string
		resource string
	}{
		{"offered rate delivered: the wire", Usage{OfferedPPS: 1e6, DeliveredPPS: 0.99e6, CPUs: []Resource{cpu("cpu0", 0.95, 0)}}, ResWire, "the wire"},
		{"offered rate not delivered: the busy CPU", Usage{OfferedPPS: 1e6, DeliveredPPS: 0.5e6, CPUs: []Resource{cpu("cpu0", 0.99, 0)}}, ResCPU, "cpu0"},
		{"as fast as the device goes: never the wire", Usage{DeliveredPPS: 1e6, Hosts: []Resource{host(0.99, 0)}}, ResHost, "host rx0"},
		{"the busiest saturated CPU", Usage{CPUs: []Resource{cpu("cpu0", 0.92, 0), cpu("cpu1", 0.99, 0)}}, ResCPU, "cpu1"},
		{"host saturated, guest not", Usage{CPUs: []Resource{cpu("cpu0", 0.4, 0)}, Hosts: []Resource{host(1, 0)}}, ResHost, "host rx0"},
		{"guest saturated, host starved", Usage{CPUs: []Resource{cpu("cpu0", 1, 0)}, Hosts: []Resource{host(0.05, 0.95)}, RingWait: 0.95}, ResCPU, "cpu0"},
		{"a tie goes to the host", Usage{CPUs: []Resource{cpu("cpu0", 1, 0)}, Hosts: []Resource{host(1, 0)}}, ResHost, "host rx0"},
		{"next device at its rate", Usage{Next: &Resource{Kind: ResNext, Name: "next device", Busy: 0.97}, CPUs: []Resource{cpu("cpu0", 0.8, 0)}}, ResNext, "next device"},
		{"a lock its users queue for", Usage{CPUs: []Resource{cpu("cpu0", 1, 0.05), cpu("cpu1", 1, 0.22)}, Locks: []Resource{lock(0.88, 0.27)}}, ResLock, "zone->lock"},
		{"a lock held a little: the CPU", Usage{CPUs: []Resource{cpu("cpu0", 1, 0.01)}, Locks: []Resource{lock(0.3, 0.02)}}, ResCPU, "cpu0"},
		{"just below saturation: nothing", Usage{CPUs: []Resource{cpu("cpu0", 0.89, 0)}}, ResNone, "nothing"},
		{"nothing saturated, the host waits for buffers: the ring", Usage{CPUs: []Resource{cpu("cpu0", 0.5, 0)}, Hosts: []Resource{host(0.4, 0.5)}, RingWait: 0.5, RingSize: 256}, ResRing, "the ring"},
		{"nothing saturated, the ring rarely dry: nothing", Usage{CPUs: []Resource{cpu("cpu0", 0.5, 0)}, Hosts: []Resource{host(0.5, 0.05)}, RingWait: 0.05}, ResNone, "nothing"},
		{"empty", Usage{}, ResNone, "nothing"},
		{"a stream that loses frames, nothing saturated: the sender's window", Usage{CPUs: []Resource{cpu("cpu0", 0.3, 0)}, TCPLost: 40, TCPRcvWnd: 5}, ResWindow, "the sender's window"},
		{"a stream held by the socket, nothing saturated: the receiver's window", Usage{CPUs: []Resource{cpu("cpu1", 0.8, 0)}, TCPRcvWnd: 100}, ResWindow, "the receiver's window"},
		{"a stream whose reader is saturated: the CPU, not the window", Usage{CPUs: []Resource{cpu("cpu1", 1, 0)}, TCPRcvWnd: 100}, ResCPU, "cpu1"},
		{"a stream at its sender's line: the wire", Usage{OfferedPPS: 2e6, DeliveredPPS: 1.98e6, TCPLost: 3}, ResWire, "the wire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := LimitOf(tc.u)
			assert.Equal(t, tc.kind, l.Kind, l.Why)
			assert.Equal(t, tc.resource, l.Name, l.Why)
			assert.NotEmpty(t, l.Why)
		})
	}
}

func TestMechanismHolds(t *testing.T) {
	tests := []struct {
		mech           string
		limit          Limit
		holds, applies bool
	}{
		{"cpu", Limit{Kind: ResCPU, Name: "cpu3"}, true, true},
		{"cpu:cpu1", Limit{Kind: ResCPU, Name: "cpu1"}, true, true},
		{"cpu:cpu1", Limit{Kind: ResCPU, Name: "cpu0"}, false, true},
		{"lock:zone->lock", Limit{Kind: ResLock, Name: "zone->lock"}, true, true},
		{"ring", Limit{Kind: ResHost, Name: "host rx0"}, false, true},
		{"counters", Limit{Kind: ResCPU, Name: "cpu0"}, false, false},
		{"unknown", Limit{Kind: ResCPU, Name: "cpu0"}, false, false},
	}
	for _, tc := range tests {
		holds, applies := MechanismHolds(tc.mech, tc.limit)
		assert.Equal(t, tc.holds, holds, "%s against %s", tc.mech, tc.limit.Name)
		assert.Equal(t, tc.applies, applies, tc.mech)
	}
}

// TestLimitOfPresets: the rule on real runs of teaching presets names what
// each is built to show.
func TestLimitOfPresets(t *testing.T) {
	for preset, want := range map[string]string{
		"default":    ResWire, // 50,000 frames per second, all delivered
		"small-ring": ResRing, // a 16-entry ring: the host waits for kicks
		"xdp-drop":   ResCPU,  // the NAPI CPU at line rate
		"big-9000":   ResRing, // 51 big buffers in 256 entries: fewer than VHOST_NET_BATCH, so the guest sees none until the host has filled them all
	} {
		s, err := scenario.LookupPreset(preset)
		require.NoError(t, err)
		m, err := MeasureUsage(s, "delivered_gbps", ReproWarmup, ReproWindow)
		require.NoError(t, err)
		assert.Equal(t, want, m.Limit.Kind, "%s: %s", preset, m.Limit.Why)
	}
}

// TestRingNeeds: for a row whose published mechanism is the ring's
// capacity, the verdict says, by Little's law, how long each buffer may
// be away from the ring for the ring to hold the published rate, and
// what the run's NAPI polls let it carry.
func TestRingNeeds(t *testing.T) {
	r := Row{Reproduction: scenario.Reproduction{ID: "R2", Unit: "Gbit/s", Published: 8, Mechanism: ResRing},
		Usage: Usage{RingBuffers: 100, FrameBytes: 1000, PollEveryNS: 10000}, Limit: Limit{Kind: ResCPU, Name: "cpu1"}}
	// 100 buffers x 8000 bits = 800,000 bits: 100 µs at 8 Gbit/s; one
	// poll every 10 µs carries 80 Gbit/s.
	got := r.ringNeeds()
	assert.Contains(t, got, "a ring of 100 buffers")
	assert.Contains(t, got, "100 µs on average")
	assert.Contains(t, got, "one every 10.0 µs")
	assert.Contains(t, got, "about 80 Gbit/s")
	assert.Contains(t, r.limitText(nil), got, "the limit's text carries it when the ring does not limit")
	r.Usage.PollEveryNS = 0
	assert.Empty(t, r.ringNeeds(), "no polls in the window: nothing to say")
	r.Limit = Limit{Kind: ResRing, Name: "ring"}
	r.Usage.PollEveryNS = 10000
	assert.NotContains(t, r.limitText(nil), "away from the ring", "the ring limits: as published")
}
