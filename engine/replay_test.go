package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// replayFrames is n UDP frames of flows 0..flows-1 to port, 20 µs apart,
// of sizes cycling through 64, 128 and 1514 bytes.
func replayFrames(n, flows int, port uint16) []device.Frame {
	sizes := []int{64, 128, 1514}
	out := make([]device.Frame, n)
	for i := range out {
		f := device.MakeFlow(i%flows, false, device.ProtoUDP, port)
		size := sizes[i%len(sizes)]
		b := make([]byte, size)
		f.Build(b, uint64(i), size)
		out[i] = device.Frame{At: sim.Duration(i) * 20 * sim.Microsecond, Len: size, Data: b}
	}
	return out
}

func runReplay(t *testing.T, preset string, rep *device.Replay, sets ...scenario.Change) *World {
	t.Helper()
	s, err := scenario.LookupPreset(preset)
	require.NoError(t, err)
	if len(sets) > 0 {
		s, err = scenario.Apply(s, sets...)
		require.NoError(t, err)
	}
	w, err := NewReplay(s, nil, rep)
	require.NoError(t, err)
	require.NoError(t, w.RunReplay(sim.Time(sim.Second)))
	require.True(t, w.Replay().Done(), "every frame's outcome is known: %d of %d", w.Replay().Decided(), len(rep.Frames))
	return w
}

func countFates(fates []device.Fate, o device.Outcome, act bpf.Action) int {
	n := 0
	for _, f := range fates {
		if f.Outcome == o && (o != device.OutcomeXDP || bpf.Action(f.Action) == act) {
			n++
		}
	}
	return n
}

// TestReplayVerdicts feeds known frames through the XDP presets: every
// frame gets the preset program's verdict, and the driver's counters
// agree with the frames' records.
func TestReplayVerdicts(t *testing.T) {
	rep := &device.Replay{Frames: replayFrames(300, 7, 9)}
	w := runReplay(t, "xdp-drop", rep)
	fates := w.Replay().Fates()
	assert.Equal(t, 300, countFates(fates, device.OutcomeXDP, bpf.XDPDrop))
	assert.EqualValues(t, 300, w.Driver.RQ[0].Stats.XDPDrops)
	assert.Equal(t, "xdp_drop", fates[0].Reason(w.Scenario.KernelVersion()), "a verdict: the model's name, as drops.xdp_drop")

	w = runReplay(t, "xdp-pass", rep)
	fates = w.Replay().Fates()
	assert.Equal(t, 300, countFates(fates, device.OutcomeXDP, bpf.XDPPass))
	assert.EqualValues(t, 300, w.Driver.RQ[0].Stats.XDPPackets)

	// Without a program the driver takes every frame and passes it up.
	w = runReplay(t, "default", rep)
	assert.Equal(t, 300, countFates(w.Replay().Fates(), device.OutcomeReceived, 0))
}

// TestReplayProgramReadsTheCapture runs a program that parses the frame:
// it drops the frames to its port and passes the rest, so its verdicts
// follow the captured bytes, and each record says which bytes it read.
func TestReplayProgramReadsTheCapture(t *testing.T) {
	frames := append(replayFrames(40, 3, 9), replayFrames(60, 5, 53)...)
	for i := range frames {
		frames[i].At = sim.Duration(i) * 20 * sim.Microsecond
	}
	rep := &device.Replay{Frames: frames}
	w := runReplay(t, "xdp-pass", rep,
		scenario.Change{Path: "xdp", Value: []byte(`{"program":"xdp_drop_udp_port","args":{"port":"9"}}`)})
	fates := w.Replay().Fates()
	for i, f := range fates {
		want := bpf.XDPPass
		if i < 40 {
			want = bpf.XDPDrop
		}
		require.Equal(t, device.OutcomeXDP, f.Outcome, "frame %d", i)
		assert.Equal(t, want, bpf.Action(f.Action), "frame %d", i)
		assert.Positive(t, f.Loads, "frame %d: the program reads the headers", i)
		// It reads the EtherType (bytes 12-13) and, at most, the UDP
		// destination port (bytes 36-37 of an IPv4 frame).
		assert.LessOrEqual(t, f.ReadLo, int32(12), "frame %d", i)
		assert.Equal(t, int32(38), f.ReadHi, "frame %d", i)
		assert.Zero(t, f.Stores, "frame %d", i)
	}
}

// TestReplayRateAndDeterminism: at a chosen rate the frames arrive evenly
// spaced, and two runs of one replay give the same records.
func TestReplayRateAndDeterminism(t *testing.T) {
	rep := &device.Replay{Frames: replayFrames(200, 4, 9), RatePPS: 1e6}
	a := runReplay(t, "xdp-drop", rep)
	b := runReplay(t, "xdp-drop", rep)
	assert.Equal(t, a.Replay().Fates(), b.Replay().Fates())
	last := a.Replay().Fates()[199].Taken
	assert.Less(t, last, sim.Time(400*sim.Microsecond), "200 frames at 1 Mpps are taken within 0.4 ms")
	assert.Greater(t, last, sim.Time(199*sim.Microsecond), "the last frame arrives at 199 µs")
}

// TestReplayHostDrops: a burst larger than the host's queue and the ring
// loses frames at the host, each recorded.
func TestReplayHostDrops(t *testing.T) {
	frames := replayFrames(5000, 4, 9)
	for i := range frames {
		frames[i].At = 0 // all at once
	}
	w := runReplay(t, "default", &device.Replay{Frames: frames})
	dropped := countFates(w.Replay().Fates(), device.OutcomeHostQueueFull, 0)
	assert.Positive(t, dropped)
	assert.EqualValues(t, w.Driver.RQ[0].Dev.Counters().Drops, dropped)
	assert.Equal(t, 5000, dropped+countFates(w.Replay().Fates(), device.OutcomeReceived, 0))

	// Each names its reason as the run's counters do (engine/drop): the
	// tap's full queue, SKB_DROP_REASON_FULL_RING on the preset's kernel,
	// tap_queue_full before 5.18; an XDP_DROP verdict, the model's own.
	v := w.Scenario.KernelVersion()
	names, old := map[string]int{}, map[string]int{}
	for i := range w.Replay().Fates() {
		f := &w.Replay().Fates()[i]
		names[f.Reason(v)]++
		old[f.Reason(kernel.Version{Major: 5, Minor: 15})]++
	}
	assert.Equal(t, map[string]int{"FULL_RING": dropped, "": 5000 - dropped}, names)
	assert.Equal(t, map[string]int{"tap_queue_full": dropped, "": 5000 - dropped}, old)
	assert.EqualValues(t, dropped, counter(t, w, "drops.FULL_RING"))
}

// TestReplayClone: a clone taken mid-replay ends with the same records.
func TestReplayClone(t *testing.T) {
	rep := &device.Replay{Frames: replayFrames(300, 7, 9)}
	s, err := scenario.LookupPreset("xdp-drop")
	require.NoError(t, err)
	w, err := NewReplay(s, nil, rep)
	require.NoError(t, err)
	require.NoError(t, w.RunUntil(sim.Time(3*sim.Millisecond)))
	c, err := w.Clone()
	require.NoError(t, err)
	require.NoError(t, w.RunReplay(sim.Time(sim.Second)))
	require.NoError(t, c.RunReplay(sim.Time(sim.Second)))
	assert.Equal(t, w.Replay().Fates(), c.Replay().Fates())
	assert.True(t, c.Replay().Done())
}

// TestReplayRefusesStreams: a stream's sender decides its own frames.
func TestReplayRefusesStreams(t *testing.T) {
	s, err := scenario.LookupPreset("r1-upstream")
	require.NoError(t, err)
	_, err = NewReplay(s, nil, &device.Replay{Frames: replayFrames(3, 1, 9)})
	assert.ErrorContains(t, err, "traffic.kind")
	_, err = NewReplay(s, nil, &device.Replay{})
	assert.ErrorContains(t, err, "no frames")
}

// TestReplayQueues: on two queues each frame goes to the queue its flow
// hashes to, and each queue's driver takes its own frames.
func TestReplayQueues(t *testing.T) {
	rep := &device.Replay{Frames: replayFrames(400, 16, 9)}
	w := runReplay(t, "xdp-drop", rep,
		scenario.Change{Path: "cpus", Value: []byte("2")}, scenario.Change{Path: "queues", Value: []byte("2")})
	per := [2]int{}
	for i, f := range w.Replay().Fates() {
		q := device.ReplayQueue(rep.Frames[i].Data, 2)
		require.Equal(t, int16(q), f.Queue, "frame %d", i)
		per[q]++
	}
	assert.Positive(t, per[0])
	assert.Positive(t, per[1])
	assert.EqualValues(t, per[0], w.Driver.RQ[0].Stats.XDPDrops)
	assert.EqualValues(t, per[1], w.Driver.RQ[1].Stats.XDPDrops)
}

// TestReplayOffersTheCapturesRate: what limits a replay is read against
// the rate the capture offers, not the scenario's generator's.
func TestReplayOffersTheCapturesRate(t *testing.T) {
	rep := &device.Replay{Frames: replayFrames(1000, 4, 9), RatePPS: 2e6}
	s, err := scenario.LookupPreset("xdp-drop")
	require.NoError(t, err)
	w, err := NewReplay(s, nil, rep)
	require.NoError(t, err)
	m := w.MarkUsage()
	require.NoError(t, w.RunUntil(sim.Time(300*sim.Microsecond)))
	u := w.UsageBetween(m, w.MarkUsage())
	// 2 Mpps over the 300 µs: 600 frames (the first at 0 included).
	assert.InDelta(t, 2e6, u.OfferedPPS, 0.01e6)
}
