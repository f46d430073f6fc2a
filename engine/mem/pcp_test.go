package mem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// TestPCPRefillAndDrainAtBatchAndHigh follows one CPU's list through the
// rmqueue_bulk refills and the free_pcppages_bulk drains: batch 8, high 32.
func TestPCPRefillAndDrainAtBatchAndHigh(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	var held []mem.PageID
	alloc := func() {
		id, err := m.AllocPages(c, 0, mem.Driver, -1)
		require.NoError(t, err)
		held = append(held, id)
		verify(t, m)
	}
	free := func() {
		id := held[len(held)-1]
		held = held[:len(held)-1]
		freed, err := m.PutPage(c, id)
		require.NoError(t, err)
		require.True(t, freed)
		verify(t, m)
	}
	steps := []struct {
		name    string
		op      func()
		times   int
		pcp     int
		refills uint64
		drains  uint64
	}{
		{"first alloc refills a batch", alloc, 1, 7, 1, 0},
		{"the batch serves 7 more", alloc, 7, 0, 1, 0},
		{"the next alloc refills again", alloc, 1, 7, 2, 0},
		{"more allocs", alloc, 39, 0, 6, 0},
		{"frees fill the list below high", free, 31, 31, 6, 0},
		{"the free reaching high drains a batch", free, 1, 24, 6, 1},
		{"7 more frees stay below high", free, 7, 31, 6, 1},
		{"the next one drains again", free, 1, 24, 6, 2},
	}
	for _, st := range steps {
		for range st.times {
			st.op()
		}
		stats := m.Stats()
		assert.Equal(t, st.pcp, m.PCPCount(0), st.name)
		assert.Equal(t, st.refills, stats.PCPRefills, st.name)
		assert.Equal(t, st.drains, stats.PCPDrains, st.name)
	}
	assert.Equal(t, uint64(8), m.Stats().ZoneLock.Acquisitions, "one zone lock per refill and per drain")
}

// TestPCPHighOrder: order 1..3 have their own lists, refilled with
// max(batch>>order, 2) blocks, and count in base pages.
func TestPCPHighOrder(t *testing.T) {
	tests := []struct {
		order  int
		blocks int // refilled per rmqueue_bulk
	}{
		{1, 4}, {2, 2}, {3, 2},
	}
	for _, tt := range tests {
		t.Run("order"+string(rune('0'+tt.order)), func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			id, err := m.AllocPages(c, tt.order, mem.Driver, -1)
			require.NoError(t, err)
			verify(t, m)
			assert.Equal(t, (tt.blocks-1)<<tt.order, m.PCPCount(0))
			_, err = m.PutPage(c, id)
			require.NoError(t, err)
			verify(t, m)
			assert.Equal(t, tt.blocks<<tt.order, m.PCPCount(0))
		})
	}
}

// TestBuddySplitMergeRestoresOrders allocates blocks of several orders,
// which splits the order-10 blocks, and frees them all; merging gives the
// zone back exactly the blocks it started with.
func TestBuddySplitMergeRestoresOrders(t *testing.T) {
	tests := []struct {
		name   string
		orders []int
	}{
		{"order 0 through the pcp", []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"mixed pcp orders", []int{0, 1, 2, 3, 3, 2, 1, 0}},
		{"buddy orders", []int{4, 5, 4, 6, 9, 7}},
		{"everything", []int{10, 9, 8, 0, 4, 3, 7, 1, 2, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newMem(t, 2, small())
			before := freeBlocks(m)
			var ids []mem.PageID
			for i, o := range tt.orders {
				id, err := m.AllocPages(s.CPU(i%2), o, mem.Driver, -1)
				require.NoError(t, err)
				assert.Equal(t, o, m.Page(id).Order())
				assert.Zero(t, int(id)&(1<<o-1), "block %d of order %d is aligned", id, o)
				ids = append(ids, id)
				verify(t, m)
			}
			assert.Positive(t, m.Stats().Splits)
			for i, id := range ids {
				_, err := m.PutPage(s.CPU((i+1)%2), id)
				require.NoError(t, err)
				verify(t, m)
			}
			require.NoError(t, m.DrainPCP(s.CPU(0)))
			require.NoError(t, m.DrainPCP(s.CPU(1)))
			verify(t, m)
			assert.Equal(t, before, freeBlocks(m))
			assert.Equal(t, m.Stats().Splits, m.Stats().Merges)
			assert.Equal(t, int64(m.NumPages()), m.Count(mem.Buddy))
		})
	}
}

// TestRemoteFreeCostsMore frees a page on the CPU that allocated it and on
// another one: the remote free pulls the struct page's cache line.
func TestRemoteFreeCostsMore(t *testing.T) {
	s, m := newMem(t, 2, small())
	c0, c1 := s.CPU(0), s.CPU(1)
	// Warm both pcp lists so neither free drains and no alloc refills.
	for _, c := range []*sim.CPU{c0, c1} {
		id, err := m.AllocPages(c, 0, mem.Driver, -1)
		require.NoError(t, err)
		_, err = m.PutPage(c, id)
		require.NoError(t, err)
	}
	freeCost := func(allocCPU, freeCPU *sim.CPU) sim.Duration {
		id, err := m.AllocPages(allocCPU, 0, mem.Driver, -1)
		require.NoError(t, err)
		before := freeCPU.Busy()
		_, err = m.PutPage(freeCPU, id)
		require.NoError(t, err)
		verify(t, m)
		return freeCPU.Busy() - before
	}
	local := freeCost(c0, c0)
	transfers := c1.Transfers()
	remote := freeCost(c0, c1)
	costs := sim.DefaultCosts()
	assert.Equal(t, costs.Atomic+costs.PageFree, local)
	assert.Equal(t, local+costs.CacheLineTransfer, remote)
	assert.Equal(t, uint64(1), m.Stats().RemoteFrees)
	assert.Equal(t, transfers+1, c1.Transfers())
}

// TestZoneLockContention: CPUs allocating at the same pace refill their
// per-CPU lists (63 pages under the zone lock) at the same moments and wait
// for each other; one CPU alone never waits.
func TestZoneLockContention(t *testing.T) {
	tests := []struct {
		name      string
		cpus      int
		contended bool
	}{
		{"one CPU", 1, false},
		{"two CPUs in lockstep", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := small()
			cfg.PCPBatch, cfg.PCPHigh = 63, 378
			s, m := newMem(t, tt.cpus, cfg)
			for i := 0; i < 630; i++ {
				for cpu := 0; cpu < tt.cpus; cpu++ {
					_, err := m.AllocPages(s.CPU(cpu), 0, mem.Driver, -1)
					require.NoError(t, err)
				}
			}
			verify(t, m)
			st := m.Stats().ZoneLock
			assert.Equal(t, uint64(10*tt.cpus), st.Acquisitions)
			if tt.contended {
				assert.Positive(t, st.Contended)
				assert.Positive(t, st.Wait)
				assert.Positive(t, s.CPU(0).Spin()+s.CPU(1).Spin())
			} else {
				assert.Zero(t, st.Contended)
				assert.Zero(t, st.Wait)
			}
		})
	}
}

// TestRemoteFreesHammerZoneLock is the R1 / R4 mechanism: CPU 0 allocates,
// CPU 1 frees; CPU 1's list overflows into the zone and CPU 0's refills
// from it, so both take the zone lock and meet there.
func TestRemoteFreesHammerZoneLock(t *testing.T) {
	s, m := newMem(t, 2, small())
	c0, c1 := s.CPU(0), s.CPU(1)
	ids := make([]mem.PageID, 0, 16)
	for round := 0; round < 200; round++ {
		ids = ids[:0]
		for i := 0; i < 16; i++ {
			id, err := m.AllocPages(c0, 0, mem.Driver, -1)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		for _, id := range ids {
			_, err := m.PutPage(c1, id)
			require.NoError(t, err)
		}
	}
	verify(t, m)
	st := m.Stats()
	assert.Equal(t, uint64(3200), st.RemoteFrees)
	assert.Positive(t, st.PCPRefills)
	assert.Positive(t, st.PCPDrains)
	assert.Positive(t, st.ZoneLock.Contended)
	assert.Greater(t, c1.Busy(), c0.Busy(), "the freeing CPU pays the cache-line transfers")
}

// TestAllocPagesBulkRefillsAsNeeded: alloc_pages_bulk takes from the pcp
// list, refilling it from the zone a batch at a time.
func TestAllocPagesBulkRefillsAsNeeded(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	out := make([]mem.PageID, 100)
	n, err := m.AllocPagesBulk(c, out, mem.PoolCache, 3)
	require.NoError(t, err)
	verify(t, m)
	assert.Equal(t, 100, n)
	st := m.Stats()
	assert.Equal(t, uint64(1), st.BulkAllocs)
	assert.Equal(t, uint64(100), st.BulkPages)
	assert.Equal(t, uint64(13), st.PCPRefills, "ceil(100/8) refills of 8")
	assert.Equal(t, 4, m.PCPCount(0))
	assert.Equal(t, int64(100), m.Count(mem.PoolCache))
	seen := map[mem.PageID]bool{}
	for _, id := range out {
		assert.False(t, seen[id])
		seen[id] = true
		_, owner := m.Loc(id)
		assert.Equal(t, 3, owner)
	}
	_, err = m.AllocPagesBulk(c, out, mem.PCP, 0)
	assert.Error(t, err)
}

// TestPCPFreeHighOnAFreeOnlyCPU is FIDELITY row 8, free_unref_page_commit's
// free_high: CPU 0 allocates order-3 blocks and CPU 1 frees them all (the
// page_frag blocks of a cpumap). Before 5.19 they wait on CPU 1's list
// until high; from 5.19 (free_factor) a CPU that has drained at high
// without allocating since sends every high-order free straight to the
// buddy; from 6.7 (free_count and PCPF_PREV_FREE_HIGH_ORDER) it drains
// once free_count reaches batch (6.16: batch + high_min / 2) and keeps
// fewer than batch pages (PCPF_FREE_HIGH_BATCH).
func TestPCPFreeHighOnAFreeOnlyCPU(t *testing.T) {
	const blocks = 200
	tests := []struct {
		name      string
		rule      mem.FreeHigh
		freeHigh  bool
		firstHigh int // the free (1-based) of the first free_high drain
		maxLeft   int // CPU 1's list after the frees, at most
	}{
		{"5.18: none", mem.FreeHighNone, false, 0, 378},
		{"5.19: free_factor", mem.FreeHighFactor, true, 49, 0},
		{"6.7: free_count >= batch", mem.FreeHighCount, true, 9, 63},
		{"6.16: free_count >= batch + high_min/2", mem.FreeHighCountHighMin, true, 33, 63},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mem.Config{Pages: 1 << 14, MaxOrder: 10, PCPBatch: 63, PCPHigh: 378, FreeHigh: tt.rule}
			s, m := newMem(t, 2, cfg)
			c0, c1 := s.CPU(0), s.CPU(1)
			ids := make([]mem.PageID, 0, blocks)
			for range blocks {
				id, err := m.AllocPages(c0, 3, mem.PageFrag, 0)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			first := 0
			for i, id := range ids {
				freed, err := m.PutPage(c1, id)
				require.NoError(t, err)
				require.True(t, freed)
				if first == 0 && m.Stats().FreeHighDrains > 0 {
					first = i + 1
				}
				verify(t, m)
			}
			st := m.Stats()
			assert.Equal(t, uint64(blocks), st.RemoteFrees)
			if !tt.freeHigh {
				assert.Zero(t, st.FreeHighDrains)
				assert.GreaterOrEqual(t, m.PCPCount(1), 378-63, "the blocks wait on CPU 1's list until high")
				return
			}
			assert.Equal(t, tt.firstHigh, first, "first free_high drain")
			assert.Positive(t, st.FreeHighDrains)
			assert.LessOrEqual(t, m.PCPCount(1), tt.maxLeft)
		})
	}
}

// TestPCPFreeHighNotOnAnAllocatingCPU: a CPU that allocates between its
// high-order frees halves free_factor / free_count each time
// (rmqueue_pcplist) and never takes the free_high path.
func TestPCPFreeHighNotOnAnAllocatingCPU(t *testing.T) {
	for _, rule := range []mem.FreeHigh{mem.FreeHighFactor, mem.FreeHighCount, mem.FreeHighCountHighMin} {
		cfg := mem.Config{Pages: 1 << 14, MaxOrder: 10, PCPBatch: 63, PCPHigh: 378, FreeHigh: rule}
		s, m := newMem(t, 1, cfg)
		c := s.CPU(0)
		for range 500 {
			a, err := m.AllocPages(c, 3, mem.Driver, -1)
			require.NoError(t, err)
			b, err := m.AllocPages(c, 3, mem.Driver, -1)
			require.NoError(t, err)
			_, err = m.PutPage(c, a)
			require.NoError(t, err)
			_, err = m.PutPage(c, b)
			require.NoError(t, err)
		}
		verify(t, m)
		assert.Zero(t, m.Stats().FreeHighDrains, "rule %d", rule)
	}
}
