package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
	"ringlab/engine/sim"
)

// A vhost worker on the host CPU of the vCPU that runs the queue's NAPI
// (host.vhost): every frame the worker writes is time that vCPU does not
// run, the steal column of the guest's /proc/stat. Its interrupts and
// softirqs wait for the worker, which waits for the buffers the guest
// did not refill meanwhile: the two take turns on one CPU.
func TestVhostWorkerStealsItsVCPU(t *testing.T) {
	run := func(vhost []int) *World {
		w := preset(t, "r1-page-pool", func(s *scenario.Scenario) {
			if vhost != nil {
				s.Host = &scenario.Host{Vhost: vhost}
			}
		})
		require.NoError(t, w.CheckEveryEvent(0))
		require.NoError(t, w.RunUntil(sim.Time(5*sim.Millisecond)))
		require.NoError(t, w.Check())
		return w
	}
	own := run(nil)
	napi := own.Driver.RQ[0].CPU.ID
	shared := run([]int{napi})
	for i := 0; i < own.Sim.NumCPU(); i++ {
		assert.Zero(t, own.Sim.CPU(i).Stolen(), "a worker with a host CPU of its own steals nothing")
	}
	c := shared.Sim.CPU(napi)
	host := shared.Driver.RQ[0].Dev.Counters().Busy
	assert.GreaterOrEqual(t, c.Stolen(), host, "the worker's time on frames is stolen from vCPU %d", napi)
	for i := 0; i < shared.Sim.NumCPU(); i++ {
		if i != napi {
			assert.Zero(t, shared.Sim.CPU(i).Stolen(), "cpu%d's vCPU has its host CPU to itself", i)
		}
	}
	var steals, inside int
	sl := c.Slices(0, nil)
	for _, x := range sl {
		if x.Ctx != sim.CtxSteal {
			continue
		}
		steals++
		for _, y := range sl {
			if (y.Ctx == sim.CtxIRQ || y.Ctx == sim.CtxSoftirq) && y.Start > x.Start && y.Start < x.End {
				inside++
			}
		}
	}
	require.NotZero(t, steals)
	t.Logf("stolen %v of cpu%d (host busy %v), %d steals logged, %d interrupts began inside one", c.Stolen(), napi, host, steals, inside)
	// The host CPU's time is the vCPU's and the worker's: the guest's
	// work and the steal together never take more than the run's time.
	// (Interrupt work can begin inside a steal the engine learns of
	// after placing it, when the device is caught up later: CPU.Steal.)
	now := shared.Now()
	assert.LessOrEqual(t, c.Busy()+c.Stolen(), now.Sub(0)+sim.Duration(100*sim.Microsecond), "cpu%d busy %v + stolen %v within %v", napi, c.Busy(), c.Stolen(), now)
	var steal uint64
	for _, ct := range shared.CPUCounters(napi, nil) {
		if ct.Name == "steal_ns" {
			steal = ct.Value
		}
	}
	assert.Equal(t, uint64(c.Stolen()), steal, "cpu%d.steal_ns", napi)

	// perf top gives the stolen time its own row, not idle's.
	var ps PerfSample
	shared.SamplePerf(&ps)
	top, err := PerfTop(&PerfSample{}, &ps)
	require.NoError(t, err)
	pc := top[napi]
	assert.InDelta(t, float64(c.Stolen())/float64(ps.T), pc.Share(sim.SymStealName), 0.01)
	var sum float64
	for _, r := range pc.Rows {
		sum += r.Share
	}
	assert.InDelta(t, 1, sum, 1e-9, "busy, steal and idle make the window")
}

// The worker on the host CPU of the vCPU that limits the run (r1-page-pool:
// cpu1 runs the cpumap kthread and the application) takes that CPU's time:
// the run delivers less, and what limits it says the time was stolen.
func TestStealLimitsTheBusiestVCPU(t *testing.T) {
	run := func(host *scenario.Host) (*World, Limit) {
		w := preset(t, "r1-page-pool", func(s *scenario.Scenario) { s.Host = host })
		require.NoError(t, w.RunUntil(sim.Time(2*sim.Millisecond)))
		a := w.MarkUsage()
		require.NoError(t, w.RunUntil(sim.Time(10*sim.Millisecond)))
		return w, LimitOf(w.UsageBetween(a, w.MarkUsage()))
	}
	own, ownLimit := run(nil)
	require.Equal(t, "cpu1", ownLimit.Name, ownLimit.Why)
	shared, limit := run(&scenario.Host{Vhost: []int{1}})
	assert.Equal(t, "cpu1", limit.Name)
	assert.Contains(t, limit.Why, "stolen")
	assert.NotContains(t, ownLimit.Why, "stolen")
	assert.Less(t, counter(t, shared, "app_bytes"), counter(t, own, "app_bytes"), "cpu1 has less time for the application")
	t.Logf("own: %d app bytes, %s; shared: %d, %s", counter(t, own, "app_bytes"), ownLimit.Why, counter(t, shared, "app_bytes"), limit.Why)
}
