package mem_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

func TestNewRejectsBadConfig(t *testing.T) {
	s, err := sim.New(2, sim.DefaultCosts())
	require.NoError(t, err)
	tests := []struct {
		name  string
		cfg   mem.Config
		field string
	}{
		{"no pages", mem.Config{}, "Pages"},
		{"negative pages", mem.Config{Pages: -1}, "Pages"},
		{"order too high", mem.Config{Pages: 64, MaxOrder: 11}, "MaxOrder"},
		{"order below costly", mem.Config{Pages: 64, MaxOrder: 2}, "MaxOrder"},
		{"negative batch", mem.Config{Pages: 64, PCPBatch: -1}, "PCPBatch"},
		{"high below batch", mem.Config{Pages: 64, PCPBatch: 8, PCPHigh: 4}, "PCPHigh"},
		{"too many nodes", mem.Config{Pages: 64, Nodes: 65}, "Nodes"},
		{"cpu node count", mem.Config{Pages: 64, CPUNode: []int{0}}, "CPUNode"},
		{"cpu node range", mem.Config{Pages: 64, Nodes: 2, CPUNode: []int{0, 2}}, "CPUNode"},
		{"dma mappings", mem.Config{Pages: 64, MaxDMAMappings: -3}, "MaxDMAMappings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mem.New(s, tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.field)
		})
	}
	_, err = mem.New(nil, mem.Config{Pages: 64})
	assert.Error(t, err)
}

func TestInitialBlocksAreLargestAligned(t *testing.T) {
	tests := []struct {
		name  string
		cfg   mem.Config
		free  map[int]int
		nodes []int // NUMA node of pages 0 and Pages-1
	}{
		{"4096 pages in order-10 blocks", mem.Config{Pages: 4096}, map[int]int{10: 4}, []int{0, 0}},
		{"1000 pages", mem.Config{Pages: 1000}, map[int]int{9: 1, 8: 1, 7: 1, 6: 1, 5: 1, 3: 1}, []int{0, 0}},
		{"max order 3", mem.Config{Pages: 100, MaxOrder: 3}, map[int]int{3: 12, 2: 1}, []int{0, 0}},
		{"two nodes", mem.Config{Pages: 2048, Nodes: 2}, map[int]int{10: 2}, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := newMem(t, 1, tt.cfg)
			for k := 0; k <= m.MaxOrder(); k++ {
				assert.Equal(t, tt.free[k], m.FreeBlocks(k), "order %d", k)
			}
			assert.Equal(t, int64(tt.cfg.Pages), m.Count(mem.Buddy))
			assert.Equal(t, tt.nodes[0], m.Page(0).NID())
			assert.Equal(t, tt.nodes[1], m.Page(mem.PageID(tt.cfg.Pages-1)).NID())
		})
	}
}

func TestAllocPlacesAndCounts(t *testing.T) {
	s, m := newMem(t, 2, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 0, mem.Driver, 5)
	require.NoError(t, err)
	verify(t, m)
	loc, owner := m.Loc(id)
	assert.Equal(t, mem.Driver, loc)
	assert.Equal(t, 5, owner)
	assert.Equal(t, int32(1), m.Page(id).RefCount())
	assert.Equal(t, 0, m.Page(id).LastCPU())
	// The first order-0 allocation refilled the pcp with a batch of 8.
	assert.Equal(t, int64(7), m.Count(mem.PCP))
	assert.Equal(t, int64(1), m.Count(mem.Driver))

	big, err := m.AllocPages(c, 3, mem.SKB, -1)
	require.NoError(t, err)
	verify(t, m)
	assert.Equal(t, int64(8), m.Count(mem.SKB), "an order-3 page counts 8 base pages")
	for i := mem.PageID(0); i < 8; i++ {
		assert.Equal(t, big, m.Head(big+i))
		l, _ := m.Loc(big + i)
		assert.Equal(t, mem.SKB, l)
	}
	var sum int64
	for _, n := range m.Counts() {
		sum += n
	}
	assert.Equal(t, int64(m.NumPages()), sum)
}

func TestMoveRecordsHistory(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 0, mem.Driver, 0)
	require.NoError(t, err)
	for _, to := range []mem.Loc{mem.Virtqueue, mem.SKB, mem.XDPFrame, mem.CpumapRing} {
		require.NoError(t, m.Move(id, to, 1))
		verify(t, m)
	}
	h := m.History(id, nil)
	require.Len(t, h, mem.HistoryLen)
	assert.Equal(t, mem.Move{From: mem.Driver, To: mem.Virtqueue, Owner: 1}, h[0])
	assert.Equal(t, mem.Move{From: mem.XDPFrame, To: mem.CpumapRing, Owner: 1}, h[3])

	tests := []struct {
		name string
		id   mem.PageID
		to   mem.Loc
	}{
		{"into buddy", id, mem.Buddy},
		{"into pcp", id, mem.PCP},
		{"undefined location", id, mem.NumLocs},
		{"out of range", -5, mem.SKB},
		{"past the end", mem.PageID(m.NumPages()), mem.SKB},
		{"free page", id + 1, mem.SKB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, m.Move(tt.id, tt.to, 0))
			verify(t, m)
		})
	}

	// Among other blocks' moves in the log, a block's own are found,
	// the newest last; after MovesKept moves of others, none are.
	other, err := m.AllocPages(c, 0, mem.Driver, 0)
	require.NoError(t, err)
	require.NoError(t, m.Move(id, mem.SKB, 2))
	for i := 0; i < 10; i++ {
		require.NoError(t, m.Move(other, []mem.Loc{mem.Virtqueue, mem.SKB}[i%2], 0))
	}
	h = m.History(id, h[:0])
	require.Len(t, h, mem.HistoryLen)
	assert.Equal(t, mem.Move{From: mem.CpumapRing, To: mem.SKB, Owner: 2}, h[3], "the newest last")
	assert.Equal(t, mem.Move{From: mem.Virtqueue, To: mem.SKB, Owner: 1}, h[0])
	for i := 0; i < m.MovesKept(); i++ {
		require.NoError(t, m.Move(other, []mem.Loc{mem.Virtqueue, mem.SKB}[i%2], 0))
	}
	assert.Empty(t, m.History(id, nil), "moves older than the last MovesKept are forgotten")
	assert.Len(t, m.History(other, nil), mem.HistoryLen)
}

func TestRefcountGetPut(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 2, mem.SKB, -1)
	require.NoError(t, err)
	require.NoError(t, m.GetPage(c, id+3), "get_page on a tail takes the head's reference")
	assert.Equal(t, int32(2), m.Page(id).RefCount())
	freed, err := m.PutPage(c, id+1)
	require.NoError(t, err)
	assert.False(t, freed)
	verify(t, m)
	freed, err = m.PutPage(c, id)
	require.NoError(t, err)
	assert.True(t, freed)
	verify(t, m)
	l, owner := m.Loc(id)
	assert.Equal(t, mem.PCP, l)
	assert.Equal(t, 0, owner)

	_, err = m.PutPage(c, id)
	assert.ErrorIs(t, err, mem.ErrBadPage, "put_page on a free page")
	assert.ErrorIs(t, m.GetPage(c, id), mem.ErrBadPage)
	verify(t, m)
}

func TestPutRefusesPagePoolPage(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	p := m.Page(id)
	p.PP, p.PPMagic = 1, 0xdead000000000040
	_, err = m.PutPage(c, id)
	assert.ErrorIs(t, err, mem.ErrBadPage)
	assert.Equal(t, int32(1), p.RefCount(), "a refused put changes nothing")
	p.PP, p.PPMagic = -1, 0
	_, err = m.PutPage(c, id)
	assert.NoError(t, err)
	verify(t, m)
}

func TestAllocFailureIsCounted(t *testing.T) {
	s, m := newMem(t, 1, mem.Config{Pages: 64, MaxOrder: 4, PCPBatch: 4, PCPHigh: 8})
	c := s.CPU(0)
	var got []mem.PageID
	for {
		id, err := m.AllocPages(c, 0, mem.Driver, -1)
		if err != nil {
			require.ErrorIs(t, err, mem.ErrNoMemory)
			break
		}
		got = append(got, id)
		verify(t, m)
	}
	assert.Len(t, got, 64)
	_, err := m.AllocPages(c, 3, mem.Driver, -1)
	assert.ErrorIs(t, err, mem.ErrNoMemory)
	out := make([]mem.PageID, 8)
	n, err := m.AllocPagesBulk(c, out, mem.Driver, -1)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, uint64(3), m.Stats().AllocFail)
	for _, id := range got {
		_, err := m.PutPage(c, id)
		require.NoError(t, err)
	}
	verify(t, m)
	_, err = m.AllocPages(c, 11, mem.Driver, -1)
	assert.Error(t, err)
	assert.NotErrorIs(t, err, mem.ErrNoMemory, "a bad order is a caller error")
	_, err = m.AllocPages(c, 0, mem.Buddy, -1)
	assert.Error(t, err)
}

func TestLocNamesRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for l := mem.Loc(0); l < mem.NumLocs; l++ {
		b, err := json.Marshal(l)
		require.NoError(t, err)
		var back mem.Loc
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, l, back)
		assert.False(t, seen[l.String()], "duplicate name %s", l)
		seen[l.String()] = true
	}
	assert.Equal(t, "pool_ring", mem.PoolRing.String())
	_, err := json.Marshal(mem.NumLocs)
	assert.Error(t, err)
	_, err = mem.ParseLoc("nowhere")
	assert.Error(t, err)
}

func TestCheckFindsCorruption(t *testing.T) {
	s, m := newMem(t, 1, small())
	id, err := m.AllocPages(s.CPU(0), 0, mem.Driver, -1)
	require.NoError(t, err)
	free := id + 1 // on the pcp list
	m.Page(free).PP = 3
	m.Page(free).PPMagic = 1
	err = m.Check()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "page_pool")
}

// TestMoveFastPathKeepsTheRules guards Move's fast path (an allocated head
// to an allocated location): owners out of range are refused, a tail
// moves its block, a move to the same location only changes the owner.
func TestMoveFastPathKeepsTheRules(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 2, mem.Driver, 0)
	require.NoError(t, err)
	assert.Error(t, m.Move(id, mem.SKB, -2), "owner below -1")
	assert.Error(t, m.Move(id, mem.SKB, 1<<15), "owner past int16")
	assert.Error(t, m.Move(id, mem.Loc(255), 0), "the tail marker is not a location")
	require.NoError(t, m.Move(id, mem.SKB, -1))
	require.NoError(t, m.Move(id+3, mem.XDPFrame, 1<<15-1), "a tail moves its block")
	loc, owner := m.Loc(id)
	assert.Equal(t, mem.XDPFrame, loc)
	assert.Equal(t, 1<<15-1, owner)
	require.NoError(t, m.Move(id, mem.XDPFrame, 2), "same location: owner only")
	loc, owner = m.Loc(id)
	assert.Equal(t, mem.XDPFrame, loc)
	assert.Equal(t, 2, owner)
	h := m.History(id, nil)
	require.GreaterOrEqual(t, len(h), 2)
	h = h[len(h)-2:] // after the allocation's moves
	assert.Equal(t, mem.Move{From: mem.Driver, To: mem.SKB, Owner: -1}, h[0])
	assert.Equal(t, mem.Move{From: mem.SKB, To: mem.XDPFrame, Owner: 1<<15 - 1}, h[1])
	assert.Equal(t, int64(4), m.Count(mem.XDPFrame))
	verify(t, m)
}

// TestMoveFromMovesOnlyFromThere: MoveFrom moves a block (by its head or
// a tail) only when it is in from, as Loc then Move would.
func TestMoveFromMovesOnlyFromThere(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	id, err := m.AllocPages(c, 2, mem.Driver, 0)
	require.NoError(t, err)
	require.NoError(t, m.MoveFrom(id, mem.CpumapRing, mem.SKB, 1))
	loc, owner := m.Loc(id)
	assert.Equal(t, mem.Driver, loc, "not in the cpumap ring: not moved")
	assert.Equal(t, 0, owner)
	require.NoError(t, m.Move(id, mem.CpumapRing, 0))
	require.NoError(t, m.MoveFrom(id+1, mem.CpumapRing, mem.SKB, 1))
	loc, owner = m.Loc(id)
	assert.Equal(t, mem.SKB, loc, "a tail moves its block")
	assert.Equal(t, 1, owner)
	assert.Error(t, m.MoveFrom(id, mem.SKB, mem.SKB, -2), "Move's rules: owner below -1")
	assert.NoError(t, m.MoveFrom(mem.PageID(1<<30), mem.SKB, mem.Driver, 0), "no such page: not in from")
	verify(t, m)
}
