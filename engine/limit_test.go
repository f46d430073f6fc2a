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
		{"a stream that loses frames for want of buffers, nothing saturated: the ring", Usage{CPUs: []Resource{cpu("cpu0", 0.3, 0)}, TCPLost: 40, RingDrops: 40, RingSize: 1024}, ResRing, "the ring"},
		{"a stream that loses frames mostly at its socket: the sender's window", Usage{CPUs: []Resource{cpu("cpu0", 0.3, 0)}, TCPLost: 40, RingDrops: 10}, ResWindow, "the sender's window"},
		{"ring drops under a saturated CPU: the CPU", Usage{CPUs: []Resource{cpu("cpu0", 0.97, 0)}, TCPLost: 40, RingDrops: 40}, ResCPU, "cpu0"},
		{"a stream held by the socket, nothing saturated: the receiver's window", Usage{CPUs: []Resource{cpu("cpu1", 0.8, 0)}, TCPRcvWnd: 100}, ResWindow, "the receiver's window"},
		{"a stream whose reader is saturated: the CPU, not the window", Usage{CPUs: []Resource{cpu("cpu1", 1, 0)}, TCPRcvWnd: 100}, ResCPU, "cpu1"},
		{"a stream at its sender's line: the wire", Usage{OfferedPPS: 2e6, DeliveredPPS: 1.98e6, TCPLost: 3}, ResWire, "the wire"},
		{"a stream read as fast as its small writes come: the application, before a busy CPU", Usage{CPUs: []Resource{cpu("cpu0", 0.97, 0)}, AppOfferedBps: 5.5e9, AppDeliveredBps: 5.4e9, WriteBytes: 256}, ResApp, "the sending application"},
		{"a stream reading less than its writes offer: not the application", Usage{CPUs: []Resource{cpu("cpu0", 0.97, 0)}, AppOfferedBps: 5.5e9, AppDeliveredBps: 4e9, WriteBytes: 256}, ResCPU, "cpu0"},
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
// capacity, the verdict says where such a ring runs dry (inside a poll
// that takes every posted buffer, when they are fewer than the budget)
// and how close the run came: the frames a poll took, the frames that
// found no buffer.
func TestRingNeeds(t *testing.T) {
	r := Row{Reproduction: scenario.Reproduction{ID: "R2", Unit: "Gbit/s", Published: 8, Mechanism: ResRing},
		Usage: Usage{RingBuffers: 53, Budget: 64, FramesPerPoll: 11.8, RingDrops: 150}, Limit: Limit{Kind: ResCPU, Name: "cpu1"}}
	got := r.ringNeeds()
	assert.Contains(t, got, "a ring of 53 buffers")
	assert.Contains(t, got, "fewer than the budget of 64")
	assert.Contains(t, got, "a poll took 11.8 frames on average")
	assert.Contains(t, got, "150 frames found no buffer")
	assert.Contains(t, r.limitText(nil), got, "the limit's text carries it when the ring does not limit")
	r.Usage.RingBuffers = 204
	assert.NotContains(t, r.ringNeeds(), "fewer than the budget", "204 buffers outlast a poll")
	r.Usage.FramesPerPoll = 0
	assert.Empty(t, r.ringNeeds(), "no polls in the window: nothing to say")
	r.Limit = Limit{Kind: ResRing, Name: "the ring"}
	r.Usage.FramesPerPoll = 11.8
	assert.NotContains(t, r.limitText(nil), "runs dry", "the ring limits: as published")
}
