package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/view"
)

// TestRatesAfterAJump: after a move (go to an event, back, forward, to
// the next event that runs a function) the rates are over the stretch of
// the world's history before the new position, as long as a rate is
// averaged over; a new world (a parameter) has no rate until enough
// simulated time ran, and then says so instead of a rate over a few
// microseconds. The default preset receives 50,000 packets a second.
func TestRatesAfterAJump(t *testing.T) {
	s, err := NewSession(State{A: Config{Preset: "default"}, Speed: -1})
	require.NoError(t, err)
	s.Do(Step{UnitPacket, 3000})
	runAll(t, s, 4096)
	r := &s.Panes[0].Rates
	rxNear := func(what string) {
		t.Helper()
		require.True(t, r.Ready(), "%s: a rate (held %s, newest over %s)", what, view.FormatNs(r.Held()), view.FormatNs(r.Span(max(r.Len()-1, 0))))
		assert.GreaterOrEqual(t, r.Span(r.Len()-1), int64(view.MinRateNs), what)
		v := r.Latest()
		assert.InEpsilon(t, 50_000, v[view.RxPPS], 0.3, "%s: rx pps", what)
		assert.InEpsilon(t, 50_000, v[view.HostPPS], 0.3, "%s: host pps beside it", what)
		valid := 0
		for i := 0; i < r.Len(); i++ {
			if r.Valid(i) {
				valid++
			}
		}
		assert.GreaterOrEqual(t, valid, 5, "%s: the charts have a stretch to draw", what)
	}
	rxNear("after 3000 packets")

	end := s.Position().Events
	for _, m := range []struct {
		what string
		do   func() error
	}{
		{"go to an event back", func() error { return s.GoTo(UnitEvent, end/2) }},
		{"one event back", func() error { return s.Back(UnitEvent, 1) }},
		{"go to a time back", func() error { return s.GoTo(UnitNs, uint64(s.Position().At)/3) }},
		{"go to an event forward", func() error { return s.GoTo(UnitEvent, end-5) }},
		{"one packet back", func() error { return s.Back(UnitPacket, 1) }},
		{"until virtnet_poll", func() error { return s.Until("virtnet_poll") }},
	} {
		require.NoError(t, m.do(), m.what)
		runAll(t, s, 4096)
		rxNear(m.what)
	}

	// A new world starts at time 0: no rate, and the views say why.
	require.NoError(t, s.Set(0, "ring_size", "32"))
	s.Refresh()
	r = &s.Panes[0].Rates // the new world's
	assert.False(t, r.Ready(), "a world at time 0 has no rate")
	s.Do(Step{UnitEvent, 3})
	runAll(t, s, 4096)
	require.Less(t, int64(s.Position().At), int64(view.MinRateNs))
	assert.False(t, r.Ready(), "3 events, %s of simulated time: no rate yet", view.FormatNs(int64(s.Position().At)))
	assert.Contains(t, view.NoRateYet(r), "no rate yet")
	v, known := view.FlowLatest(r)
	assert.Equal(t, [view.NumSeries]float64{}, v, "the flow shows no rate")
	require.NotNil(t, known)
	s.Do(Step{UnitPacket, 100})
	runAll(t, s, 4096)
	rxNear("100 packets into the new world")
}
