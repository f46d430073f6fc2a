package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSim(t testing.TB, ncpu int) *Sim {
	t.Helper()
	s, err := New(ncpu, DefaultCosts())
	require.NoError(t, err)
	return s
}

func TestQueueOrdersByTimeThenInsertion(t *testing.T) {
	q := NewQueue(0)
	var got []uint64
	k := q.Register("record", func(now Time, arg uint64) { got = append(got, arg) })
	q.Schedule(30, k, 1)
	q.Schedule(10, k, 2)
	q.Schedule(20, k, 3)
	q.Schedule(10, k, 4) // same time as 2: runs after it
	q.Schedule(10, k, 5)
	for q.Step() {
	}
	assert.Equal(t, []uint64{2, 4, 5, 3, 1}, got)
	assert.Equal(t, Time(30), q.Now())
	assert.Equal(t, uint64(5), q.Fired())
}

func TestQueueNeverGoesBackwards(t *testing.T) {
	q := NewQueue(0)
	var times []Time
	var k Kind
	k = q.Register("chain", func(now Time, arg uint64) {
		times = append(times, now)
		if arg > 0 {
			q.Schedule(now-100, k, arg-1) // in the past: runs now
		}
	})
	q.Schedule(50, k, 2)
	for q.Step() {
	}
	assert.Equal(t, []Time{50, 50, 50}, times)
}

func TestRunUntil(t *testing.T) {
	q := NewQueue(0)
	n := 0
	k := q.Register("count", func(Time, uint64) { n++ })
	for i := 1; i <= 10; i++ {
		q.Schedule(Time(i*100), k, 0)
	}
	assert.Equal(t, 5, q.RunUntil(500))
	assert.Equal(t, 5, n)
	assert.Equal(t, Time(500), q.Now())
	assert.Equal(t, 0, q.RunUntil(550))
	assert.Equal(t, Time(550), q.Now(), "RunUntil moves the clock even without events")
	at, ok := q.Peek()
	require.True(t, ok)
	assert.Equal(t, Time(600), at)
}

// TestQueueHeapRandom checks the heap against a sort on random input, with
// the seed printed on failure.
func TestQueueHeapRandom(t *testing.T) {
	const seed = 42
	r := NewRand(seed)
	q := NewQueue(0)
	var last Time
	var lastSeq uint64
	ok := true
	k := q.Register("check", func(now Time, arg uint64) {
		if now < last || (now == last && arg < lastSeq) {
			ok = false
		}
		last, lastSeq = now, arg
	})
	for i := 0; i < 5000; i++ {
		q.Schedule(Time(r.IntN(1000)), k, uint64(i))
	}
	for q.Step() {
	}
	assert.True(t, ok, "events out of (time, seq) order; seed %d", seed)
}

func TestCPUTimeline(t *testing.T) {
	s := newSim(t, 1)
	c := s.CPU(0)
	assert.Equal(t, Time(100), c.Begin(100))
	c.Charge(SymVirtnetPoll, 50)
	assert.Equal(t, Time(150), c.End())
	// Work ready at 120 waits until the CPU is free at 150.
	assert.Equal(t, Time(150), c.Begin(120))
	c.Charge(SymVirtnetPoll, 30)
	assert.Equal(t, Time(180), c.End())
	assert.Equal(t, Duration(80), c.Busy())
	assert.InDelta(t, 0.4, c.Utilisation(200), 1e-9)
	assert.Equal(t, 1.0, c.Utilisation(10), "utilisation is capped at 1")
	assert.Equal(t, 0.0, c.Utilisation(0))
}

func TestCacheLineTransfer(t *testing.T) {
	s := newSim(t, 2)
	c0, c1 := s.CPU(0), s.CPU(1)
	var l CacheLine
	assert.Equal(t, -1, l.Owner())
	c0.Begin(0)
	assert.False(t, l.Touch(c0, SymPageRef), "first touch is free")
	assert.False(t, l.Touch(c0, SymPageRef), "same CPU again is free")
	c1.Begin(0)
	assert.True(t, l.Touch(c1, SymPageRef))
	assert.Equal(t, s.Costs.CacheLineTransfer, c1.Busy())
	assert.Equal(t, uint64(1), c1.Transfers())
	assert.Equal(t, Duration(0), c0.Busy())
	assert.Equal(t, 1, l.Owner())
}

func TestCacheLineTakeDoesNotCharge(t *testing.T) {
	s := newSim(t, 2)
	var l CacheLine
	c0, c1 := s.CPU(0), s.CPU(1)
	c0.Begin(0)
	c1.Begin(0)
	assert.False(t, l.Take(c0))
	assert.True(t, l.Take(c1))
	assert.Equal(t, Duration(0), c1.Busy(), "Take leaves the charge to the caller")
	assert.Equal(t, uint64(1), c1.Transfers())
	assert.Equal(t, 1, l.Owner())
}

func TestLockSerialisesHolders(t *testing.T) {
	// CPU 0 starts at 0, pays spin_lock (10) and holds for 500: [10, 510).
	// CPU 1 pays spin_lock (10) and the lock's cache line (100) first.
	tests := []struct {
		name      string
		start1    Time     // CPU 1's cursor when it asks
		wantWait  Duration // how long CPU 1 spins
		contended uint64
	}{
		{"overlap waits for the holder", 0, 510 - 110, 1},
		{"just after the holder no wait", 400, 0, 0},
		{"well after no wait", 5000, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 2)
			require.Equal(t, Duration(10), s.Costs.SpinLock)
			require.Equal(t, Duration(100), s.Costs.CacheLineTransfer)
			l := NewLock("zone")
			c0, c1 := s.CPU(0), s.CPU(1)
			c0.Begin(0)
			assert.Equal(t, Duration(0), l.Hold(c0, SymPagePoolRecycleRing, 500))
			c1.Begin(tc.start1)
			wait := l.Hold(c1, SymPagePoolRecycleRing, 50)
			assert.Equal(t, tc.wantWait, wait)
			assert.Equal(t, tc.contended, l.Stats().Contended)
			assert.Equal(t, uint64(2), l.Stats().Acquisitions)
			assert.Equal(t, wait, c1.Spin())
			assert.Equal(t, tc.wantWait, l.Stats().Wait)
			assert.Equal(t, Duration(550), l.Stats().Held, "held is the critical sections, spinning and the lock's own cost excluded")
		})
	}
}

// A CPU that ran ahead must not make a CPU that is behind wait: the second
// finds the gap before the first one's section.
func TestLockFindsGapBeforeLaterHolder(t *testing.T) {
	s := newSim(t, 2)
	s.Costs.SpinLock = 0
	s.Costs.CacheLineTransfer = 0
	l := NewLock("zone")
	c0, c1 := s.CPU(0), s.CPU(1)
	c0.Begin(5000)
	l.Hold(c0, SymPagePoolRecycleRing, 100) // [5000, 5100)
	c1.Begin(1000)
	assert.Equal(t, Duration(0), l.Hold(c1, SymPagePoolRecycleRing, 100), "[1000,1100) is free")
	c1.Begin(4950)
	assert.Equal(t, Duration(150), l.Hold(c1, SymPagePoolRecycleRing, 100), "[4950,5050) overlaps: wait until 5100")
	assert.Equal(t, Time(5200), c1.Now())
}

// Holders that each take the lock for longer than their work between
// acquisitions saturate it: total throughput is bounded by the lock, however
// many CPUs there are. This is the mechanism behind negative scaling.
func TestLockSaturates(t *testing.T) {
	s := newSim(t, 2)
	s.Costs.SpinLock = 0
	s.Costs.CacheLineTransfer = 0
	l := NewLock("zone")
	const rounds = 100
	for i := 0; i < rounds; i++ {
		for id := 0; id < 2; id++ {
			c := s.CPU(id)
			c.Begin(c.BusyUntil())
			c.Charge(SymVirtnetPoll, 10)
			l.Hold(c, SymPagePoolRecycleRing, 100)
			c.End()
		}
	}
	end := s.CPU(0).BusyUntil()
	if e1 := s.CPU(1).BusyUntil(); e1 > end {
		end = e1
	}
	// 200 sections of 100 ns cannot finish before 20 µs.
	assert.GreaterOrEqual(t, int64(end), int64(rounds*2*100))
	assert.Greater(t, l.Stats().Contended, uint64(rounds))
}

func TestLockHistoryOverflow(t *testing.T) {
	s := newSim(t, 1)
	l := NewLock("x")
	c := s.CPU(0)
	c.Begin(0)
	for i := 0; i < 3*lockHistory; i++ {
		l.Hold(c, SymPagePoolRecycleRing, 10)
	}
	require.LessOrEqual(t, l.n, lockHistory)
	for i := 1; i < l.n; i++ {
		assert.LessOrEqual(t, l.hist[i-1].end, l.hist[i].start, "sections overlap")
	}
}

func TestCostsSetGet(t *testing.T) {
	c := DefaultCosts()
	assert.Equal(t, Duration(5), c.Atomic)
	require.NoError(t, c.Set("atomic", 7))
	v, ok := c.Get("atomic")
	assert.True(t, ok)
	assert.Equal(t, Duration(7), v)
	assert.ErrorIs(t, c.Set("nope", 1), ErrUnknownCost)
	assert.Error(t, c.Set("atomic", -1))
	for _, e := range c.Table() {
		assert.NotEmpty(t, e.Source, e.Name)
		assert.Positive(t, int64(e.Value), e.Name)
	}
	atomic := c.Table()[0]
	for _, e := range c.Table() {
		if e.Name == "atomic" {
			atomic = e
		}
	}
	assert.Equal(t, Duration(7), atomic.Value, "the table shows the value in use")
	assert.Equal(t, Duration(5), atomic.Default, "and the default its source is for")
	assert.Len(t, CostNames(), len(costEntries))
}

func TestNewRejectsBadCPUCount(t *testing.T) {
	for _, n := range []int{0, -1, MaxCPUs + 1} {
		_, err := New(n, DefaultCosts())
		assert.Error(t, err, "ncpu=%d", n)
	}
}

func TestNewRandIsDeterministic(t *testing.T) {
	a, b := NewRand(7), NewRand(7)
	for i := 0; i < 100; i++ {
		require.Equal(t, a.Uint64(), b.Uint64())
	}
	assert.NotEqual(t, NewRand(7).Uint64(), NewRand(8).Uint64())
}

func TestScheduleStepDoesNotAllocate(t *testing.T) {
	q := NewQueue(64)
	var k Kind
	k = q.Register("tick", func(now Time, arg uint64) { q.Schedule(now+10, k, arg) })
	for i := 0; i < 32; i++ {
		q.Schedule(Time(i), k, uint64(i))
	}
	allocs := testing.AllocsPerRun(1000, func() { q.Step() })
	assert.Zero(t, allocs)
}

func BenchmarkScheduleStep(b *testing.B) {
	q := NewQueue(1024)
	var k Kind
	k = q.Register("tick", func(now Time, arg uint64) { q.Schedule(now+Time(arg), k, arg) })
	for i := 0; i < 256; i++ {
		q.Schedule(Time(i), k, uint64(i%64+1))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q.Step()
	}
}

func BenchmarkLockHold(b *testing.B) {
	s, _ := New(2, DefaultCosts())
	l := NewLock("zone")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c := s.CPU(i & 1)
		c.Begin(c.BusyUntil())
		l.Hold(c, SymPagePoolRecycleRing, 20)
		c.End()
	}
}

func TestQueueNamesKindsAndTheirArguments(t *testing.T) {
	q := NewQueue(4)
	plain := q.Register("tick", func(Time, uint64) {})
	poll := q.RegisterArg("napi poll", "rx", func(Time, uint64) {})
	assert.Equal(t, "tick", q.KindName(plain))
	assert.Equal(t, "napi poll", q.KindName(poll))
	assert.Equal(t, "[7]", q.ArgName(plain, 7), "an argument that names nothing")
	assert.Equal(t, "rx3", q.ArgName(poll, 3))
	assert.Equal(t, "kind(9)", q.KindName(9))
	assert.Equal(t, "[1]", q.ArgName(9, 1))
	q.Schedule(5, poll, 3)
	require.True(t, q.Step())
	assert.Equal(t, poll, q.Running())
}

// TestEveryCostSaysWhereItComesFrom: each constant is sourced, an
// estimate, or fitted on one published result, and its text says so
// (FIDELITY row 23, the issue "setups as measured").
func TestEveryCostSaysWhereItComesFrom(t *testing.T) {
	for _, e := range costEntries {
		switch e.kind {
		case Sourced:
			assert.NotContains(t, e.source, "estimate", e.name)
			assert.NotContains(t, e.source, "calibrated", e.name)
			assert.Empty(t, e.fit, e.name)
		case Estimate:
			assert.True(t, strings.HasPrefix(e.source, "estimate: "), "%s: an estimate's source starts with \"estimate: \" and says what it rests on", e.name)
			assert.Empty(t, e.fit, e.name)
		case Fitted:
			assert.Regexp(t, `^R[1-9]$`, e.fit, "%s: a fitted constant names the one result it was fitted on", e.name)
			assert.True(t, strings.HasPrefix(e.source, "fitted on "+e.fit+" ("), "%s: the source starts with \"fitted on %s (ROW\"", e.name, e.fit)
		default:
			t.Errorf("%s has no kind", e.name)
		}
	}
	fitted := map[string]string{}
	for _, e := range costEntries {
		if e.kind == Fitted {
			fitted[e.name] = e.fit
		}
	}
	assert.Equal(t, map[string]string{"buddy_per_page": "R4"}, fitted, "R1 and R2, rebuilt from their setups, fit nothing")
}

// TestIOMMUCostIsOnePage: the IOMMU costs are for one page mapped by one
// thread, not the 8-thread, 8-page run (-t 8 -g 8) that gave 1.0 and 1.3
// us (FIDELITY row 23).
func TestIOMMUCostIsOnePage(t *testing.T) {
	c := DefaultCosts()
	assert.Equal(t, Duration(100), c.DMAMapIOMMU)
	assert.Equal(t, Duration(600), c.DMAUnmapIOMMU)
	for _, e := range c.Table() {
		if strings.HasPrefix(e.Name, "dma_map_iommu") {
			assert.Contains(t, e.Source, "4K - 1 thread")
			assert.Contains(t, e.Source, "-t 8 -g 8")
		}
	}
}

// Every charge lands in one row of the CPU's profile: the rows sum to Busy,
// a lock's acquisition, cache line and spinning go to _raw_spin_lock and
// the work under it to the caller's symbol.
func TestChargeProfile(t *testing.T) {
	s := newSim(t, 2)
	l := NewLock("ring")
	c0, c1 := s.CPU(0), s.CPU(1)
	c0.Begin(0)
	c0.Charge(SymVirtnetPoll, 40)
	l.Hold(c0, SymPagePoolRecycleRing, 500)
	c0.Charge(SymReceiveBuf, -5) // ignored, as the cursor ignores it
	c1.Begin(0)
	wait := l.Hold(c1, SymPagePoolRefill, 50)
	require.Greater(t, wait, Duration(0), "c1 spins behind c0's section")
	p0, p1 := c0.Profile(), c1.Profile()
	assert.Equal(t, c0.Busy(), p0.Sum())
	assert.Equal(t, c1.Busy(), p1.Sum())
	assert.Equal(t, Duration(40), p0[SymVirtnetPoll])
	assert.Equal(t, Duration(500), p0[SymPagePoolRecycleRing])
	assert.Equal(t, s.Costs.SpinLock, p0[SymRawSpinLock], "first acquisition: no transfer")
	assert.Equal(t, Duration(50), p1[SymPagePoolRefill])
	assert.Equal(t, s.Costs.SpinLock+s.Costs.CacheLineTransfer+wait, p1[SymRawSpinLock])
	d := p1.Sub(&p0)
	assert.Equal(t, Duration(-40), d[SymVirtnetPoll])
	for sym := Sym(0); sym < NumSyms; sym++ {
		assert.NotEmpty(t, sym.String())
	}
	assert.Equal(t, "?", NumSyms.String())
}
