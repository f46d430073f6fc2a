package play

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPerfStateRowsNeverNull: at t=0 a CPU that has done nothing yet has
// no rows, and the page reads an empty list, not null (web/perf.js
// iterates it).
func TestPerfStateRowsNeverNull(t *testing.T) {
	var st *StateOut
	for _, o := range New("preset=r3-napi-local-off&speed=0").Ready().Send {
		if s, ok := o.(StateOut); ok {
			st = &s
		}
	}
	require.NotNil(t, st)
	require.NotNil(t, st.Panes[0].Perf)
	cpus := st.Panes[0].Perf.CPUs
	require.Len(t, cpus, 2)
	assert.Equal(t, 0.0, cpus[1].Busy, "cpu1 has not run")
	b, err := MarshalOut(*st)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"rows":null`)
}

// TestPerfAndEventsNameFunctionsAtTheKernel: a function renamed since the
// scenario's kernel is shown by the name it had there (6.4's
// page_pool_alloc_pages for the engine's page_pool_alloc_netmems), in
// the perf top rows and beside the events, and found by the engine's
// name.
func TestPerfAndEventsNameFunctionsAtTheKernel(t *testing.T) {
	c := New("preset=r3-napi-local-off&speed=0")
	c.Step(Step{UnitPacket, 2000})
	settleC(t, c)
	st := c.state()
	require.NotNil(t, st.Panes[0].Perf)
	var row *PerfRowState
	for _, cpu := range st.Panes[0].Perf.CPUs {
		for i, r := range cpu.Rows {
			if r.Sym == "page_pool_alloc_netmems" {
				row = &cpu.Rows[i]
			}
			if r.Sym == "virtnet_poll" {
				assert.Empty(t, r.As, "a function that kept its name has no other")
			}
		}
	}
	require.NotNil(t, row, "the pool's allocation is in the perf top")
	assert.Equal(t, "page_pool_alloc_pages", row.As)
	assert.Contains(t, row.URL, "/v6.4")

	// Every event's function that was renamed since 6.4 says so.
	renamed := 0
	for _, e := range st.Panes[0].Events {
		for _, f := range e.Funcs {
			if f.Name == "page_pool_alloc_netmems" {
				assert.Equal(t, "page_pool_alloc_pages", f.As)
				renamed++
			}
		}
	}
	assert.Positive(t, renamed, "the last events include the pool's allocation")
}

// TestPerfStateSaysWhatLimits: once a pane has a window, its perf top
// says what limits the run over it, by the rule of ringlab reproduce:
// the NAPI CPU for xdp-drop at line rate. Before two marks there is no
// window to judge and no limit.
func TestPerfStateSaysWhatLimits(t *testing.T) {
	c := New("preset=xdp-drop&speed=0")
	st := c.state()
	require.NotNil(t, st.Panes[0].Perf)
	assert.Nil(t, st.Panes[0].Perf.Limit, "no window yet")
	for range 4 {
		c.Step(Step{UnitPacket, 5000})
		settleC(t, c)
	}
	st = c.state()
	l := st.Panes[0].Perf.Limit
	require.NotNil(t, l, "a window: a limit")
	assert.Equal(t, "cpu", l.Kind, l.Why)
	assert.Equal(t, "cpu0", l.Name)
	b, err := MarshalOut(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"limit":{"kind":"cpu"`)
}

// TestPerfXDPTimePerRun: the model's time a run of the XDP program over
// the window is the bpf_prog_run_xdp rows' time over the runs the driver
// counted in it: the cost table's per-program charge and more (the
// instructions run), the same for every run of a constant program, and
// none without a program.
func TestPerfXDPTimePerRun(t *testing.T) {
	c := New("preset=xdp-drop&speed=0")
	c.Step(Step{UnitPacket, 5000})
	settleC(t, c)
	p := c.state().Panes[0].Perf
	require.NotNil(t, p)
	costs := c.sess.Panes[0].World.Sim.Costs
	assert.GreaterOrEqual(t, p.XDPNsPerRun, float64(costs.XDPProg), "at least the dispatcher's charge a run")
	assert.Less(t, p.XDPNsPerRun, float64(costs.XDPProg)+1000, "and a few instructions more, not thousands")
	// The same world a window later: xdp_drop costs the same every run.
	first := p.XDPNsPerRun
	t.Logf("the model: %.1f ns a run of xdp_drop (the dispatcher's charge %d ns)", first, costs.XDPProg)
	c.Step(Step{UnitPacket, 5000})
	settleC(t, c)
	assert.InDelta(t, first, c.state().Panes[0].Perf.XDPNsPerRun, first*0.01)

	c = New("preset=default&speed=0")
	c.Step(Step{UnitPacket, 200})
	settleC(t, c)
	assert.Zero(t, c.state().Panes[0].Perf.XDPNsPerRun, "no program, no run")
}
