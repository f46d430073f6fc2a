package mem_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

func TestDMAAddressesAndCosts(t *testing.T) {
	costs := sim.DefaultCosts()
	tests := []struct {
		name         string
		iommu        bool
		mapCost      sim.Duration
		unmapCost    sim.Duration
		physicalAddr bool
	}{
		{"direct", false, costs.DMAMapDirect, costs.DMAUnmapDirect, true},
		{"iommu", true, costs.DMAMapIOMMU, costs.DMAUnmapIOMMU, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			d := m.NewDMA(tt.iommu)
			id, err := m.AllocPages(c, 0, mem.Driver, -1)
			require.NoError(t, err)
			big, err := m.AllocPages(c, 3, mem.Driver, -1)
			require.NoError(t, err)

			before := c.Busy()
			a, err := d.Map(c, id)
			require.NoError(t, err)
			assert.Equal(t, tt.mapCost, c.Busy()-before)
			b, err := d.MapRange(c, big, 1536, 1536)
			require.NoError(t, err)
			b2, err := d.MapRange(c, big, 3072, 1536)
			require.NoError(t, err)
			verify(t, m)
			if tt.physicalAddr {
				assert.Equal(t, uint64(id)<<mem.PageShift, a)
				assert.Equal(t, uint64(big)<<mem.PageShift+1536, b)
			} else {
				assert.NotEqual(t, uint64(id)<<mem.PageShift, a)
				assert.NotEqual(t, b+1536, b2, "each IOMMU mapping gets its own IOVA")
			}
			assert.Equal(t, 2, d.Live(big))
			require.NoError(t, d.SyncForCPU(c, b+100, 1000))
			require.NoError(t, d.SyncForDevice(c, b, 1536))
			assert.ErrorIs(t, d.SyncForDevice(c, b, 4000), mem.ErrNotMapped, "past the mapping")

			_, err = m.PutPage(c, big)
			assert.ErrorIs(t, err, mem.ErrBadPage, "freeing a mapped page")

			before = c.Busy()
			require.NoError(t, d.Unmap(c, b))
			assert.Equal(t, tt.unmapCost, c.Busy()-before)
			assert.ErrorIs(t, d.Unmap(c, b), mem.ErrNotMapped, "double unmap")
			assert.ErrorIs(t, d.Unmap(c, 12345), mem.ErrNotMapped)
			require.NoError(t, d.Unmap(c, b2))
			require.NoError(t, d.Unmap(c, a))
			verify(t, m)

			// The same page mapped again gets the same address: deterministic,
			// and the IOVA freed last is reused first.
			a2, err := d.Map(c, id)
			require.NoError(t, err)
			if tt.iommu {
				assert.Equal(t, a, a2)
			}
			st := d.Stats()
			assert.Equal(t, uint64(4), st.Maps)
			assert.Equal(t, uint64(3), st.Unmaps)
			assert.Equal(t, uint64(2), st.BadUnmaps)
			assert.Equal(t, uint64(1), st.SyncsForCPU)
			assert.Equal(t, uint64(1), st.SyncsForDevice)
			assert.Equal(t, uint64(1), st.BadSyncs)
			assert.Equal(t, 1, st.Live)
			verify(t, m)
		})
	}
}

func TestDMAMappingLimit(t *testing.T) {
	cfg := small()
	cfg.MaxDMAMappings = 2
	s, m := newMem(t, 1, cfg)
	c := s.CPU(0)
	d := m.NewDMA(true)
	id, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		_, err := d.Map(c, id)
		require.NoError(t, err)
	}
	_, err = d.Map(c, id)
	assert.ErrorIs(t, err, mem.ErrMappingFailed)
	assert.Equal(t, uint64(1), d.Stats().MapFailures)
	_, err = d.MapRange(c, id, 4000, 200)
	assert.Error(t, err, "past the page")
	_, err = d.Map(c, id+1)
	assert.ErrorIs(t, err, mem.ErrBadPage, "a free page")
	verify(t, m)
}

// TestDMASyncSameOnEveryDevice: the first device keeps a page's first
// mapping in struct page and syncs through a fast path; a second device
// keeps it apart and always walks. Both accept and refuse the same syncs,
// count them alike and charge the same.
func TestDMASyncSameOnEveryDevice(t *testing.T) {
	s, m := newMem(t, 2, small())
	c := s.CPU(0)
	first, second := m.NewDMA(false), m.NewDMA(false)
	whole, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	part, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	big, err := m.AllocPages(c, 2, mem.Driver, -1)
	require.NoError(t, err)
	type addrs struct{ whole, part, lo, hi uint64 }
	var got [2]addrs
	for i, d := range []*mem.DMA{first, second} {
		a := &got[i]
		a.whole, err = d.Map(c, whole)
		require.NoError(t, err)
		a.part, err = d.MapRange(c, part, 0, 2048)
		require.NoError(t, err)
		a.lo, err = d.MapRange(c, big, 0, 2048)
		require.NoError(t, err)
		a.hi, err = d.MapRange(c, big, 4096, 1024) // the page's first mapping: mapped last
		require.NoError(t, err)
	}
	require.Equal(t, got[0], got[1], "direct DMA: physical addresses")
	a := got[0]
	for _, tc := range []struct {
		name string
		addr uint64
		size uint32
		ok   bool
	}{
		{"whole page", a.whole, mem.PageSize, true},
		{"inside", a.whole + 256, 1500, true},
		{"past the end", a.whole + 256, mem.PageSize, false},
		{"part of a page", a.part + 2000, 48, true},
		{"empty at the end of a mapping", a.part + 2048, 0, false},
		{"past a mapping inside its page", a.part + 2000, 49, false},
		{"first mapping of the block", a.hi + 10, 100, true},
		{"older mapping of the block", a.lo + 10, 100, true},
		{"between mappings", a.lo + 3000, 10, false},
		{"a tail page", a.hi + 2*mem.PageSize, 1, false},
		{"beyond memory", 1 << 40, 1, false},
	} {
		for _, dev := range []struct {
			name string
			d    *mem.DMA
		}{{"first", first}, {"second", second}} {
			t.Run(tc.name+"/"+dev.name, func(t *testing.T) {
				before, stats := c.Busy(), dev.d.Stats()
				err := dev.d.SyncForCPU(c, tc.addr, tc.size)
				after := dev.d.Stats()
				if tc.ok {
					require.NoError(t, err)
					assert.Equal(t, sim.Duration(s.Costs.DMASync), c.Busy()-before)
					assert.Equal(t, stats.SyncsForCPU+1, after.SyncsForCPU)
				} else {
					assert.ErrorIs(t, err, mem.ErrNotMapped)
					assert.Equal(t, before, c.Busy())
					assert.Equal(t, stats.BadSyncs+1, after.BadSyncs)
				}
			})
		}
	}
	assert.Equal(t, first.Stats(), second.Stats())
	require.Error(t, first.SyncForCPU(nil, a.whole, 1), "no CPU")
	verify(t, m)
}

// vring_use_dma_api() without VIRTIO_F_ACCESS_PLATFORM: the virtio core
// hands the device guest-physical addresses and calls no DMA API at all
// (FIDELITY D1): mapping, unmapping and syncing cost the CPU nothing,
// while the bookkeeping (a mapped page cannot be freed) still holds.
func TestPhysicalDMACostsNothing(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	d := m.NewDMA(false)
	d.SetPhysical()
	require.True(t, d.Physical())
	id, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	before := c.Busy()
	a, err := d.Map(c, id)
	require.NoError(t, err)
	assert.Equal(t, uint64(id)<<mem.PageShift, a, "the guest-physical address")
	require.NoError(t, d.SyncForCPU(c, a, 100))
	require.NoError(t, d.SyncForDevice(c, a, 100))
	_, err = m.PutPage(c, id)
	assert.ErrorIs(t, err, mem.ErrBadPage, "still in the device's hands")
	require.NoError(t, d.Unmap(c, a))
	assert.Zero(t, c.Busy()-before, "no DMA API, nothing to pay")
	_, err = m.PutPage(c, id)
	require.NoError(t, err)
	verify(t, m)
}

// TestEmulatedIOMMUExits is FIDELITY row D2's guest side: behind QEMU's
// emulated intel-iommu each IOTLB invalidation the guest submits exits to
// QEMU (viommu_exit). Caching mode flushes every new mapping
// (__mapping_notify_one); a strict unmap flushes its range
// (intel_iommu_tlb_sync); a lazy one waits in the flush queue, flushed
// once for 255 unmaps (queue_iova, fq_full). The page tables cost what a
// map's do.
func TestEmulatedIOMMUExits(t *testing.T) {
	for _, tc := range []struct {
		name              string
		e                 mem.EmulatedIOMMU
		mapExits, unmapEx uint64 // invalidations for 255 maps and 255 unmaps
	}{
		{"lazy", mem.EmulatedIOMMU{On: true}, 0, 1},
		{"strict", mem.EmulatedIOMMU{On: true, Strict: true}, 0, 255},
		{"caching mode, strict", mem.EmulatedIOMMU{On: true, CachingMode: true, Strict: true}, 255, 255},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, m := newMem(t, 1, small())
			c := s.CPU(0)
			d := m.NewDMA(true)
			d.SetEmulated(tc.e)
			costs := c.Costs()
			var ids []mem.PageID
			var addrs []uint64
			for i := 0; i < mem.FQFlushUnmaps; i++ {
				id, err := m.AllocPages(c, 0, mem.Driver, -1)
				require.NoError(t, err)
				ids = append(ids, id)
			}
			before := c.Busy()
			for _, id := range ids {
				a, err := d.Map(c, id)
				require.NoError(t, err)
				addrs = append(addrs, a)
			}
			assert.Equal(t, tc.mapExits, d.Stats().Invalidations)
			assert.Equal(t, sim.Duration(mem.FQFlushUnmaps)*costs.DMAMapIOMMU+sim.Duration(tc.mapExits)*costs.VIOMMUExit, c.Busy()-before)
			before = c.Busy()
			for _, a := range addrs {
				require.NoError(t, d.Unmap(c, a))
			}
			assert.Equal(t, tc.mapExits+tc.unmapEx, d.Stats().Invalidations)
			assert.Equal(t, sim.Duration(mem.FQFlushUnmaps)*costs.DMAMapIOMMU+sim.Duration(tc.unmapEx)*costs.VIOMMUExit, c.Busy()-before)
			for _, id := range ids {
				_, err := m.PutPage(c, id)
				require.NoError(t, err)
			}
			verify(t, m)
		})
	}
}

// TestHostIOTLBMissesOncePerMapping is D2's host side: vhost's IOTLB
// lacks a mapping until it has asked QEMU for it once (a new IOVA, or a
// reused one the guest's unmap invalidated); looking does not fill it.
func TestHostIOTLBMissesOncePerMapping(t *testing.T) {
	s, m := newMem(t, 1, small())
	c := s.CPU(0)
	d := m.NewDMA(true)
	id, err := m.AllocPages(c, 0, mem.Driver, -1)
	require.NoError(t, err)
	a, err := d.Map(c, id)
	require.NoError(t, err)
	assert.False(t, d.HostTranslate(a, true), "no emulated IOMMU: no host IOTLB")
	d.SetEmulated(mem.EmulatedIOMMU{On: true})
	assert.True(t, d.HostTranslate(a+100, false), "a mapping the host has not seen")
	assert.True(t, d.HostTranslate(a+100, false), "looking does not fill")
	assert.True(t, d.HostTranslate(a, true))
	assert.False(t, d.HostTranslate(a+2000, true), "then every address in it hits")
	require.NoError(t, d.Unmap(c, a))
	b, err := d.Map(c, id)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the IOVA is reused")
	assert.True(t, d.HostTranslate(b, true), "but the unmap invalidated it")
	assert.Equal(t, uint64(2), d.Stats().HostMisses)
	require.NoError(t, d.Unmap(c, b))
	_, err = m.PutPage(c, id)
	require.NoError(t, err)
}
