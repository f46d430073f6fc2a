package fairshare

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFourHostsGiveWay: four addresses fill the total at their
// per-address maximum; a fifth and a sixth still get in, each up to its
// share, by displacing the newest connections of those holding most; a
// class holding less than its share loses none.
func TestFourHostsGiveWay(t *testing.T) {
	s := New(2048, 512)
	evicted := map[string]int{}
	take := func(addr string, n int) (got int, v Verdict) {
		for range n {
			sl, v := s.Admit(addr)
			if v != Admitted {
				return got, v
			}
			s.SetEvict(sl, func() { evicted[addr]++ })
			got++
		}
		return got, Admitted
	}
	for i := range 4 {
		got, v := take(fmt.Sprint("attacker", i), 1000)
		assert.Equal(t, 512, got)
		assert.Equal(t, OverAddress, v)
	}
	assert.Equal(t, 2048, s.Stats().Held, "four addresses fill it")
	// A class arrives: the share of five is 409.
	got, v := take("class", 300)
	assert.Equal(t, 300, got, "the whole class gets in")
	assert.Equal(t, Admitted, v)
	// The attackers cannot take it back: they hold their share or more.
	got, v = take("attacker0", 10)
	assert.Zero(t, got)
	assert.Equal(t, Full, v)
	// Another address: the share of six is 341.
	got, v = take("newcomer", 1000)
	assert.Equal(t, 2048/6, got, "the newcomer gets its share")
	assert.Equal(t, Full, v)
	assert.Zero(t, evicted["class"], "a class under its share is never displaced")
	assert.Zero(t, evicted["newcomer"])
	assert.Equal(t, 2048, s.Stats().Held)
	for i := range 4 {
		assert.GreaterOrEqual(t, s.Held(fmt.Sprint("attacker", i)), 2048/6, "displaced down to their share, no further")
	}
	total := 0
	for _, n := range evicted {
		total += n
	}
	assert.Equal(t, uint64(total), s.Stats().Evicted, "every displaced connection was told")
}

// TestReleaseAndEvictOnce: a place is given back once, whether its
// connection ends or was displaced first; an eviction set after the fact
// runs at once.
func TestReleaseAndEvictOnce(t *testing.T) {
	s := New(2, 2)
	a1, _ := s.Admit("a")
	a2, _ := s.Admit("a")
	b1, v := s.Admit("b") // the share of two is one: a's newest goes
	require.Equal(t, Admitted, v)
	assert.True(t, s.Evicted(a2))
	assert.False(t, s.Evicted(a1))
	called := false
	s.SetEvict(a2, func() { called = true })
	assert.True(t, called, "told when it learns how")
	s.Release(a2) // its handler ends: nothing more to give back
	assert.Equal(t, 2, s.Stats().Held)
	s.Release(b1)
	s.Release(b1)
	assert.Equal(t, 1, s.Stats().Held)
	_, v = s.Admit("a")
	assert.Equal(t, Admitted, v)
	_, v = s.Admit("a")
	assert.Equal(t, OverAddress, v)
}

// TestSetTotalEvictsTheLargest: a smaller total evicts the newest
// connections of the address holding most until the rest fits.
func TestSetTotalEvictsTheLargest(t *testing.T) {
	s := New(10, 10)
	var evicted []string
	for i := range 6 {
		sl, v := s.Admit("a")
		require.Equal(t, Admitted, v)
		s.SetEvict(sl, func() { evicted = append(evicted, fmt.Sprint("a", i)) })
	}
	for range 2 {
		sl, _ := s.Admit("b")
		s.SetEvict(sl, func() { evicted = append(evicted, "b") })
	}
	s.SetTotal(5)
	assert.Equal(t, []string{"a5", "a4", "a3"}, evicted, "the newest of the address holding most")
	assert.Equal(t, 5, s.Stats().Held)
	_, v := s.Admit("c")
	assert.Equal(t, Admitted, v, "a newcomer below its share of the new total")
	assert.Equal(t, []string{"a5", "a4", "a3", "a2"}, evicted)
}
