package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine"
)

// settle runs the session's work until it is idle.
func settle(t testing.TB, s *Session) {
	t.Helper()
	for i := 0; s.Busy(); i++ {
		s.Work(1 << 16)
		require.Less(t, i, 1<<20, "the session never settles")
	}
}

func session(t testing.TB, preset string, compare bool, log ...Step) *Session {
	t.Helper()
	st := State{A: Config{Preset: preset}, Speed: -1}
	if compare {
		b := Config{Preset: preset}
		st.B = &b
	}
	st.Log = log
	s, err := NewSession(st)
	require.NoError(t, err)
	settle(t, s)
	return s
}

// sameWorld asserts that a and b stand at the same place in the same state.
func sameWorld(t *testing.T, want, got *engine.World, msg string) {
	t.Helper()
	assert.Equal(t, want.Sim.Queue.Fired(), got.Sim.Queue.Fired(), "%s: events", msg)
	assert.Equal(t, want.Now(), got.Now(), "%s: time", msg)
	assert.Equal(t, want.Stats(), got.Stats(), "%s: counters", msg)
	assert.Equal(t, want.Summarize(), got.Summarize(), "%s: summary", msg)
}

// replayOf is a fresh session of s's configuration and log: what a link to
// s opens.
func replayOf(t *testing.T, s *Session) *Session {
	t.Helper()
	r, err := NewSession(s.State())
	require.NoError(t, err)
	settle(t, r)
	return r
}

// TestBackIsTheReplay: a step back lands where a replay of the run to that
// point stands, in every counter; the link it leaves is that replay; and
// stepping forward again is the run it left.
func TestBackIsTheReplay(t *testing.T) {
	for _, preset := range []string{"default", "cpumap", "r1-page-pool"} {
		t.Run(preset, func(t *testing.T) {
			s := session(t, preset, false, Step{UnitEvent, map[string]uint64{"cpumap": markWork / 3}[preset] + 3*markWork*map[string]uint64{"cpumap": 0, "default": 1, "r1-page-pool": 1}[preset] + 777})
			ahead, err := s.Panes[0].World.Clone()
			require.NoError(t, err)
			n := s.Position().Events
			require.NotEmpty(t, s.Marks()[0], "marks taken on the way")

			require.NoError(t, s.Back(UnitEvent, 1))
			settle(t, s)
			assert.Equal(t, n-1, s.Position().Events)
			assert.Equal(t, Log{{UnitEvent, n - 1}}, s.Log())
			sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "one event back")
			assert.Len(t, s.Panes[0].Events, EventLogSize, "the events before the position are listed")

			for range 5 {
				require.NoError(t, s.Back(UnitEvent, 1))
				settle(t, s)
			}
			assert.Equal(t, n-6, s.Position().Events)
			sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "six events back")

			s.Do(Step{UnitEvent, 6})
			settle(t, s)
			sameWorld(t, ahead, s.Panes[0].World, "forward again")
		})
	}
}

// TestBackByPacket: back one packet goes to the stop a step of one packet
// forward leaves from, so the two undo each other; back past the start
// stops at the start.
func TestBackByPacket(t *testing.T) {
	s := session(t, "default", false, Step{UnitEvent, 50_000})
	s.Do(Step{UnitPacket, 1})
	settle(t, s)
	at := s.Position()
	s.Do(Step{UnitPacket, 1})
	settle(t, s)
	require.Greater(t, s.Position().Packets, at.Packets)
	require.NoError(t, s.Back(UnitPacket, 1))
	settle(t, s)
	assert.Equal(t, at, s.Position(), "back one packet is where the step left from")
	sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "one packet back")

	require.NoError(t, s.Back(UnitPacket, 3))
	settle(t, s)
	p := s.Position()
	assert.Less(t, p.Packets, at.Packets)
	s.Do(Step{UnitPacket, 1})
	s.Do(Step{UnitPacket, 1})
	s.Do(Step{UnitPacket, 1})
	settle(t, s)
	assert.Equal(t, at, s.Position(), "three packets forward undo three back")

	short := session(t, "default", false, Step{UnitEvent, 40})
	require.NoError(t, short.Back(UnitPacket, 1000))
	settle(t, short)
	assert.Equal(t, uint64(0), short.Position().Events, "back past the start")
	assert.Empty(t, short.Log())
}

// TestGoToTime: going back in simulated time lands where a replay to that
// time stands; going forward past a mark starts from the mark.
func TestGoToTime(t *testing.T) {
	s := session(t, "default", false, Step{UnitEvent, 2*markWork + 5})
	end := s.Position()
	target := end.At / 3
	require.NoError(t, s.GoTo(UnitNs, uint64(target)))
	settle(t, s)
	assert.Equal(t, target, s.Position().At)
	assert.Equal(t, Log{{UnitNs, uint64(target)}}, s.Log())
	sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "a third of the time")

	require.NoError(t, s.GoTo(UnitEvent, end.Events))
	settle(t, s)
	assert.Equal(t, end.Events, s.Position().Events)
	sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "forward to the end")

	require.NoError(t, s.GoTo(UnitEvent, 0))
	settle(t, s)
	assert.Equal(t, Position{}, s.Position())
	assert.Error(t, s.GoTo(UnitNs, MaxSeekNs+1))
	assert.Error(t, s.Back("furlong", 1))
}

// TestBackInCompare: both panes go back; B stands where a replay of the
// comparison does.
func TestBackInCompare(t *testing.T) {
	st := State{A: Config{Preset: "default"}, Speed: -1, Log: Log{{UnitEvent, 2*markWork + 11}}}
	b := Config{Preset: "default", Set: []KV{{"ring_size", "256"}}}
	st.B = &b
	s, err := NewSession(st)
	require.NoError(t, err)
	settle(t, s)
	require.NotEmpty(t, s.Marks()[1], "B is marked too")
	require.NoError(t, s.Back(UnitEvent, markWork))
	settle(t, s)
	r := replayOf(t, s)
	sameWorld(t, r.Panes[0].World, s.Panes[0].World, "A")
	sameWorld(t, r.Panes[1].World, s.Panes[1].World, "B")
}

// TestMarksStayBounded: a long run keeps at most the marks its footprint
// allows, dense near the position.
func TestMarksStayBounded(t *testing.T) {
	s := session(t, "default", false, Step{UnitEvent, 20 * markWork})
	m := s.Marks()[0]
	assert.LessOrEqual(t, len(m), s.maxMarks(0))
	assert.GreaterOrEqual(t, len(m), MinMarks)
	last := m[len(m)-1]
	assert.Greater(t, last, s.Position().Events-markWork, "a mark within markWork of the position")
	for range 3 {
		require.NoError(t, s.Back(UnitEvent, 1))
		settle(t, s)
	}
	assert.LessOrEqual(t, len(s.Marks()[0]), s.maxMarks(0))
	assert.LessOrEqual(t, len(s.spare[0]), 2)
}

// BenchmarkStepBack is one step back on the default preset a million
// events in (the first from a regular mark, the rest from the near mark
// the first leaves), reported per step.
func BenchmarkStepBack(b *testing.B) {
	s := session(b, "default", false, Step{UnitEvent, 1_000_000})
	b.ResetTimer()
	for b.Loop() {
		if err := s.Back(UnitEvent, 1); err != nil {
			b.Fatal(err)
		}
		settle(b, s)
	}
}

// BenchmarkStepBackFar is a step back that finds no near mark: a move of
// half a mark's work, then one event, a million events in.
func BenchmarkStepBackFar(b *testing.B) {
	s := session(b, "default", false, Step{UnitEvent, 1_000_000})
	b.ResetTimer()
	for b.Loop() {
		if err := s.GoTo(UnitEvent, 1_000_000-markWork/4); err != nil {
			b.Fatal(err)
		}
		settle(b, s)
		s.Do(Step{UnitEvent, markWork / 4})
		settle(b, s)
	}
}

// TestMovesInterrupted: a move given while another runs starts from where
// the first got to, and the link stays the position (the scrubber sends a
// move on every drag).
func TestMovesInterrupted(t *testing.T) {
	s := session(t, "default", false, Step{UnitEvent, 2*markWork + 5})
	end := s.Position()
	third := uint64(end.At / 3)
	require.NoError(t, s.GoTo(UnitNs, third))
	s.Work(100) // part of the way
	require.NoError(t, s.GoTo(UnitNs, third))
	settle(t, s)
	assert.Equal(t, Log{{UnitNs, third}}, s.Log())
	sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "a move given twice")

	require.NoError(t, s.GoTo(UnitEvent, end.Events/2))
	s.Work(100)
	require.NoError(t, s.Back(UnitPacket, 2))
	s.Work(100)
	s.Do(Step{UnitEvent, 3})
	settle(t, s)
	sameWorld(t, replayOf(t, s).Panes[0].World, s.Panes[0].World, "a move, a move back by packets and a step")

	require.NoError(t, s.GoTo(UnitEvent, end.Events))
	settle(t, s)
	assert.Equal(t, end.Events, s.Position().Events)
}

// TestLimitWorlds: a session limited to n worlds besides its own keeps at
// most n marks and spares however far it runs (one more for a moment,
// the copy that replaces a mark), goes back all the same (from the start
// with none) and says how many worlds it holds.
func TestLimitWorlds(t *testing.T) {
	defer func(w uint64) { markWork = w }(markWork)
	markWork = min(markWork, 5_000) // marks enough, cheaply (no test runs in parallel)
	for _, n := range []int{0, 1, 2} {
		s := session(t, "xdp-drop", false)
		s.LimitWorlds(n)
		s.Do(Step{UnitEvent, 6 * markWork})
		for s.Busy() {
			s.Work(1 << 12)
			require.LessOrEqual(t, s.Worlds(), 1+n+1, "limit %d: worlds held while running", n)
		}
		require.LessOrEqual(t, s.Worlds(), 1+n, "limit %d", n)
		end := s.Position().Events
		require.NoError(t, s.Back(UnitEvent, 3*markWork))
		settle(t, s)
		assert.Equal(t, end-3*markWork, s.Position().Events, "limit %d: the move back lands", n)
		assert.LessOrEqual(t, s.Worlds(), 1+n, "limit %d after a move back", n)
	}
	s := session(t, "xdp-drop", false, Step{UnitEvent, 6 * markWork})
	require.Greater(t, s.Worlds(), 3, "an unlimited session keeps its marks")
	s.LimitWorlds(1)
	assert.Equal(t, 2, s.Worlds(), "LimitWorlds drops the marks past it at once")
}
