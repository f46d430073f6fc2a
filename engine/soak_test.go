package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
)

// soakShortPackets is the soak's length per preset with -short.
const soakShortPackets = 100_000

// TestSoakPresets runs every preset for soakPackets packets (a million;
// fewer under the race detector, see soak_race_test.go; with -short the
// sweeps' three presets for soakShortPackets)
// with CheckEveryEvent: every event's effects are checked, the full Check
// runs every DefaultFullCheckEvery events and at the end; and with
// CheckLiveness: no queue goes DefaultLivenessWindow with frames waiting
// and nothing delivered, and the world never runs out of events.
func TestSoakPresets(t *testing.T) {
	packets := uint64(soakPackets)
	if testing.Short() {
		packets = min(packets, soakShortPackets)
	}
	for _, p := range scenario.Presets() {
		if testing.Short() && !shortPresets[p.Name] {
			continue // make test's second pass soaks every preset
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			s, err := scenario.LookupPreset(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			w, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.CheckEveryEvent(0); err != nil {
				t.Fatalf("preset %s: before the first event: %v", p.Name, err)
			}
			w.CheckLiveness(0)
			start := time.Now()
			if err := w.RunPackets(packets); err != nil {
				t.Fatalf("preset %s: %v", p.Name, err)
			}
			if err := w.CheckNow(); err != nil {
				t.Fatalf("preset %s: at the end (event %d, %d ns): %v", p.Name, w.Sim.Queue.Fired(), w.Now(), err)
			}
			if w.Received() < packets {
				t.Fatalf("preset %s: %d packets received, want %d", p.Name, w.Received(), packets)
			}
			t.Logf("%d packets, %d events, %d ns simulated, %v", w.Received(), w.Sim.Queue.Fired(), w.Now(), time.Since(start).Round(time.Millisecond))
		})
	}
}

// faultWorld returns a preset's world checked after every event, run
// for at least a thousand events and until a page is in loc, and that page.
func faultWorld(t *testing.T, preset string, loc mem.Loc) (*World, mem.PageID) {
	t.Helper()
	s, err := scenario.LookupPreset(preset)
	require.NoError(t, err)
	w, err := New(s)
	require.NoError(t, err)
	require.NoError(t, w.CheckEveryEvent(1<<10))
	for i := 0; i < 100_000 && w.Step(); i++ {
		if i < 1000 || w.Mem.Count(loc) == 0 {
			continue
		}
		for id := mem.PageID(0); int(id) < w.Mem.NumPages(); id++ {
			if l, _ := w.Mem.Loc(id); l == loc && w.Mem.Page(id).IsHead() {
				return w, id
			}
		}
	}
	require.NoError(t, w.Err())
	t.Fatalf("%s: no page in %v", preset, loc)
	return nil, mem.NoPage
}

// requireCaught runs the world until the checker stops it and returns the
// error; it fails when no invariant breaks within limit events.
func requireCaught(t *testing.T, w *World, limit int) *InvariantError {
	t.Helper()
	before := w.Sim.Queue.Fired()
	for i := 0; i < limit && w.Step(); i++ {
	}
	var ie *InvariantError
	require.ErrorAs(t, w.Err(), &ie, "the corruption was not caught within %d events", limit)
	assert.Greater(t, ie.Event, before)
	assert.Equal(t, w.Now(), ie.At)
	assert.NotEmpty(t, ie.Kind)
	assert.False(t, w.Step(), "a world whose invariants broke must stop")
	t.Log(ie)
	return ie
}

// TestCheckerCatchesCorruption breaks the world between two events in the
// ways the checker is there to see, and expects the next event (or the
// next full pass, for a change the memory cannot see) to name it.
func TestCheckerCatchesCorruption(t *testing.T) {
	t.Run("page dropped from the ptr_ring", func(t *testing.T) {
		w, id := faultWorld(t, "r4-page-pool-other-cpu", mem.PoolRing)
		// The page leaves for the driver while the ring still holds it.
		require.NoError(t, w.Mem.Move(id, mem.Driver, 0))
		ie := requireCaught(t, w, 1)
		assert.Contains(t, ie.Error(), "in its ptr_ring")
	})
	t.Run("posted page freed", func(t *testing.T) {
		w, id := faultWorld(t, "big-9000", mem.Virtqueue)
		// put_page of a page the device may still write: a double free
		// once the driver gives the buffer back.
		freed, err := w.Mem.PutPage(w.Sim.CPU(0), id)
		require.NoError(t, err)
		require.True(t, freed)
		ie := requireCaught(t, w, 1)
		assert.Contains(t, ie.Error(), "located in receive virtqueues")
	})
	t.Run("pool page unmapped behind the pool's back", func(t *testing.T) {
		w, id := faultWorld(t, "r4-page-pool-same-cpu", mem.Virtqueue)
		pool := w.Driver.RQ[0].Pool
		require.NoError(t, w.DMA.Unmap(w.Sim.CPU(0), pool.DMAAddr(id)))
		ie := requireCaught(t, w, 1)
		assert.Contains(t, ie.Error(), fmt.Sprintf("page %d is not mapped", id))
	})
	t.Run("pp_ref_count written without the memory", func(t *testing.T) {
		w, id := faultWorld(t, "r4-page-pool-other-cpu", mem.PoolRing)
		// Nothing records this write: the next event that touches the
		// page finds it, or else the next full pass.
		w.Mem.Page(id).PPRef = 0
		ie := requireCaught(t, w, 1<<10)
		assert.Contains(t, ie.Error(), "pp_ref_count 0")
	})
	t.Run("used entries published behind vhost-net's back", func(t *testing.T) {
		s, err := scenario.LookupPreset("small-mode")
		require.NoError(t, err)
		s.RingSize = 1024 // room for vhost-net to hold a batch
		s.Traffic.Size = 1514
		w, err := New(s)
		require.NoError(t, err)
		require.NoError(t, w.CheckEveryEvent(1<<10))
		rq := w.Driver.RQ[0]
		for i := 0; i < 100_000 && rq.Dev.Unpublished() == 0; i++ {
			require.True(t, w.Step())
		}
		require.Positive(t, rq.Dev.Unpublished(), "the host holds a batch")
		// used.idx moves while handle_rx still holds the heads in
		// vq->heads: the driver would see entries twice over. The check
		// runs at once: the next event may be one that catches the host
		// up, whose next publish would hide the fault.
		rq.VQ.DevicePublishUsed()
		err = w.CheckNow()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the host's batch holds")
	})
	t.Run("free block marked without the memory", func(t *testing.T) {
		w, _ := faultWorld(t, "r4-page-pool-same-cpu", mem.Virtqueue)
		// The last block of memory stays free in the buddy lists: no event
		// touches it, so only the full pass, every 1<<10 events, sees it.
		id := w.Mem.Head(mem.PageID(w.Mem.NumPages() - 1))
		require.Equal(t, mem.Buddy, w.Mem.Page(id).Loc())
		w.Mem.Page(id).PPMagic = pagepool.Signature
		ie := requireCaught(t, w, 1<<10)
		assert.Zero(t, ie.Event%(1<<10), "caught by the full pass")
		assert.Contains(t, ie.Error(), fmt.Sprintf("block %d has pp_magic", id))
	})
}
