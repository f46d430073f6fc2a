package mem

import (
	"errors"
	"fmt"

	"ringlab/engine/sim"
)

// IOVA layout with an IOMMU. Each mapping gets its own IOVA range, handed
// out top-down from iovaTop in slots of iovaStride bytes (enough for the
// largest block), and a freed range is reused first by the next mapping
// (LIFO, as the IOVA rcache does). Without an IOMMU the DMA address is the
// physical address, PFN << PAGE_SHIFT plus the offset.
const (
	iovaTop    = uint64(1) << 48
	iovaStride = uint64(PageSize) << MaxPageOrder
)

// ErrMappingFailed is dma_mapping_error: the device's mappings are
// exhausted. It is a simulated event, counted in DMAStats.MapFailures.
var ErrMappingFailed = errors.New("mem: DMA mapping failed")

// ErrNotMapped is returned for an unmap or sync of an address that is not
// mapped (what CONFIG_DMA_API_DEBUG reports); it is counted, the engine
// carries on.
var ErrNotMapped = errors.New("mem: DMA address not mapped")

// DMA is one device's DMA mapping state (dma_map_page_attrs,
// dma_unmap_page_attrs, dma_sync_single_for_cpu/device) over the machine's
// memory, direct or through an IOMMU. Map and unmap cost DMAMapDirect /
// DMAUnmapDirect, or DMAMapIOMMU / DMAUnmapIOMMU with an IOMMU (the IOTLB
// flush is in the unmap cost); a sync costs DMASync.
type DMA struct {
	iommu bool
	// viommu: the IOMMU is QEMU's emulated intel-iommu (SetEmulated).
	viommu EmulatedIOMMU
	// fqUnmaps counts lazy unmaps toward the next flush-queue flush.
	fqUnmaps int
	// physical: the device is reached without the DMA API (SetPhysical):
	// nothing is charged, the bookkeeping stays.
	physical bool
	m        *Mem
	slots    []dmaSlot
	free     int32 // first free slot, -1 none (LIFO)
	// The first live mapping of each block head, -1 none: in struct page
	// (Page.dmaFirst) for the memory's first device, so that its lookups
	// read the cache line the caller holds rather than another; in byPage
	// for the others.
	inPage bool
	byPage []int32
	stats  DMAStats
}

type dmaSlot struct {
	addr uint64
	page PageID
	size uint32
	next int32 // next live mapping of the same page, or next free slot
	live bool
	// hostSeen: the host translated this mapping since it was made (it is
	// in vhost's IOTLB).
	hostSeen bool
}

// DMAStats are a device's DMA counters.
type DMAStats struct {
	Maps        uint64 // successful maps
	Unmaps      uint64 // successful unmaps
	MapFailures uint64 // maps refused: mappings exhausted
	BadUnmaps   uint64 // unmaps of an address that was not mapped
	// Invalidations counts the IOTLB invalidations submitted to an
	// emulated IOMMU, each an exit to the VMM.
	Invalidations uint64
	// HostMisses counts the mappings the host's IOTLB had to ask the VMM
	// for (VHOST_IOTLB_MISS).
	HostMisses     uint64
	SyncsForCPU    uint64 // dma_sync_single_for_cpu
	SyncsForDevice uint64 // dma_sync_single_for_device
	BadSyncs       uint64 // syncs of an address that was not mapped
	Live           int    // mappings now
}

// SetPhysical says the device is given guest-physical addresses with no
// DMA API at all: virtio's vring_use_dma_api() is false without
// VIRTIO_F_ACCESS_PLATFORM, so the ring passes sg_phys() and never maps,
// unmaps or syncs. Map, Unmap and the syncs then cost nothing; the engine
// keeps their bookkeeping, so the checks (no free page mapped) hold as
// for any device.
func (d *DMA) SetPhysical() { d.physical = true }

// Physical reports whether the device is reached without the DMA API.
func (d *DMA) Physical() bool { return d.physical }

// EmulatedIOMMU is a guest's IOMMU as QEMU emulates it (intel-iommu): the
// guest's page-table work is the IOMMU's own, but every IOTLB
// invalidation it submits (qi_submit_sync's tail write) exits to QEMU
// (VIOMMUExit).
type EmulatedIOMMU struct {
	On bool
	// CachingMode is QEMU's caching-mode=on: a new mapping is flushed
	// too (__mapping_notify_one: iommu_flush_iotlb_psi).
	CachingMode bool
	// Strict: every unmap flushes its range (iommu.strict=1, and from
	// 5.11 forced by caching mode: 29b32839725f). Otherwise unmaps go to
	// the flush queue, flushed in one domain-wide invalidation when it
	// fills (queue_iova, IOVA_FQ_SIZE 256) or after IOVA_FQ_TIMEOUT
	// (10 ms); the engine flushes per FQFlushUnmaps unmaps and leaves the
	// timer and the queue's per-CPU split out.
	Strict bool
}

// FQFlushUnmaps is how many lazy unmaps one flush of dma-iommu's flush
// queue covers: it flushes when a queue of IOVA_FQ_SIZE (256) entries is
// full, 255 of them in use (fq_full).
const FQFlushUnmaps = 255

// SetEmulated says the device's IOMMU is an emulated one (e.On), with
// e's modes. It needs an IOMMU (NewDMA(true)).
func (d *DMA) SetEmulated(e EmulatedIOMMU) {
	if d.iommu {
		d.viommu = e
	}
}

// HostTranslate is the host side of an emulated IOMMU: vhost translating
// a descriptor's IOVA through its own IOTLB (translate_desc,
// vhost_iotlb_itree_first). It reports whether the mapping holding addr
// is one the host has not translated since the guest made it: vhost's
// IOTLB lacks it (a new IOVA, or one the guest's unmap invalidated) and
// asks QEMU (vhost_iotlb_miss). With fill, the translation is recorded
// (VHOST_IOTLB_UPDATE) and the miss counted; without, nothing changes.
// An address no mapping holds is not a miss (the device finds the error
// elsewhere).
func (d *DMA) HostTranslate(addr uint64, fill bool) (miss bool) {
	if !d.viommu.On {
		return false
	}
	s := d.lookup(addr, false)
	if s < 0 || d.slots[s].hostSeen {
		return false
	}
	if fill {
		d.slots[s].hostSeen = true
		d.stats.HostMisses++
	}
	return true
}

// NewDMA returns the DMA state of a new device, through an IOMMU or not.
// The memory checks its mappings (no free page may stay mapped).
func (m *Mem) NewDMA(iommu bool) *DMA {
	d := &DMA{iommu: iommu, m: m, free: -1, inPage: len(m.dmas) == 0}
	d.slots = make([]dmaSlot, 0, min(m.maxDMA, 4096))
	if d.inPage {
		for i := range m.pages {
			m.pages[i].dmaFirst = -1
		}
	} else {
		d.byPage = make([]int32, len(m.pages))
		for i := range d.byPage {
			d.byPage[i] = -1
		}
	}
	m.dmas = append(m.dmas, d)
	return d
}

// first is where the first live mapping of head h is kept.
func (d *DMA) first(h PageID) *int32 {
	if d.inPage {
		return &d.m.pages[h].dmaFirst
	}
	return &d.byPage[h]
}

// IOMMU reports whether the device maps through an IOMMU.
func (d *DMA) IOMMU() bool { return d.iommu }

// Map maps the whole block holding id (PAGE_SIZE << order bytes) and
// returns its DMA address.
func (d *DMA) Map(c *sim.CPU, id PageID) (uint64, error) {
	h, err := d.m.allocatedHead(id)
	if err != nil {
		return 0, err
	}
	return d.MapRange(c, h, 0, PageSize<<d.m.pages[h].order)
}

// MapRange is dma_map_page(dev, page, offset, size): it maps size bytes at
// offset in the block holding id (offset counts from the block's head) and
// returns the DMA address of the first byte.
func (d *DMA) MapRange(c *sim.CPU, id PageID, offset, size uint32) (uint64, error) {
	if err := d.m.checkCPU(c); err != nil {
		return 0, err
	}
	h, err := d.m.allocatedHead(id)
	if err != nil {
		return 0, err
	}
	if id != h {
		offset += uint32(id-h) << PageShift
	}
	blk := uint64(PageSize) << d.m.pages[h].order
	if size == 0 || uint64(offset)+uint64(size) > blk {
		return 0, fmt.Errorf("mem: DMA map of %d bytes at offset %d in a %d-byte block", size, offset, blk)
	}
	switch {
	case d.physical:
	case d.iommu:
		c.Charge(sim.SymDMAMap, c.Costs().DMAMapIOMMU)
		if d.viommu.CachingMode {
			d.invalidate(c, sim.SymDMAMap)
		}
	default:
		c.Charge(sim.SymDMAMap, c.Costs().DMAMapDirect)
	}
	if d.stats.Live >= d.m.maxDMA {
		d.stats.MapFailures++
		return 0, ErrMappingFailed
	}
	s := d.free
	if s >= 0 {
		d.free = d.slots[s].next
	} else {
		s = int32(len(d.slots))
		d.slots = append(d.slots, dmaSlot{})
	}
	var addr uint64
	if d.iommu {
		addr = iovaTop - uint64(s+1)*iovaStride + uint64(offset)
	} else {
		addr = uint64(h)<<PageShift + uint64(offset)
	}
	sl := &d.slots[s] // field by field: a literal of five fields is copied through the stack
	first := d.first(h)
	sl.addr, sl.page, sl.size, sl.next, sl.live, sl.hostSeen = addr, h, size, *first, true, false
	*first = s
	d.m.note(h)
	d.stats.Maps++
	d.stats.Live++
	return addr, nil
}

// Unmap is dma_unmap_page: addr must be an address Map returned and not
// yet unmapped; otherwise ErrNotMapped, counted in BadUnmaps.
func (d *DMA) Unmap(c *sim.CPU, addr uint64) error {
	if err := d.m.checkCPU(c); err != nil {
		return err
	}
	s := d.lookup(addr, true)
	if s < 0 {
		d.stats.BadUnmaps++
		return fmt.Errorf("mem: DMA unmap of %#x: %w", addr, ErrNotMapped)
	}
	switch {
	case d.physical:
	case d.viommu.On:
		// The page tables are cleared as a map sets them; the IOTLB
		// invalidation is the exit, now (strict) or for the flush
		// queue's 255 unmaps at once (lazy).
		c.Charge(sim.SymDMAUnmap, c.Costs().DMAMapIOMMU)
		if d.fqUnmaps++; d.viommu.Strict || d.fqUnmaps == FQFlushUnmaps {
			d.fqUnmaps = 0
			d.invalidate(c, sim.SymDMAUnmap)
		}
	case d.iommu:
		c.Charge(sim.SymDMAUnmap, c.Costs().DMAUnmapIOMMU)
	default:
		c.Charge(sim.SymDMAUnmap, c.Costs().DMAUnmapDirect)
	}
	sl := &d.slots[s]
	h := sl.page
	// Unlink from the page's chain.
	if first := d.first(h); *first == s {
		*first = sl.next
	} else {
		p := *first
		for d.slots[p].next != s {
			p = d.slots[p].next
		}
		d.slots[p].next = sl.next
	}
	d.m.note(h)
	sl.live = false
	sl.next = d.free
	d.free = s
	d.stats.Unmaps++
	d.stats.Live--
	return nil
}

// invalidate is one IOTLB invalidation submitted to an emulated IOMMU:
// the exit to QEMU, charged to sym.
func (d *DMA) invalidate(c *sim.CPU, sym sim.Sym) {
	c.Charge(sym, c.Costs().VIOMMUExit)
	d.stats.Invalidations++
}

// SyncForCPU is dma_sync_single_for_cpu: size bytes from addr, inside one
// live mapping, become visible to the CPU.
func (d *DMA) SyncForCPU(c *sim.CPU, addr uint64, size uint32) error {
	if err := d.sync(c, sim.SymDMASyncCPU, addr, size); err != nil {
		return err
	}
	d.stats.SyncsForCPU++
	return nil
}

// SyncForDevice is dma_sync_single_for_device: size bytes from addr,
// inside one live mapping, are handed back to the device.
func (d *DMA) SyncForDevice(c *sim.CPU, addr uint64, size uint32) error {
	if err := d.sync(c, sim.SymDMASyncDevice, addr, size); err != nil {
		return err
	}
	d.stats.SyncsForDevice++
	return nil
}

func (d *DMA) sync(c *sim.CPU, sym sim.Sym, addr uint64, size uint32) error {
	// Fast path: a CPU of this simulation, direct DMA, an address in a
	// head page whose first mapping (kept in struct page) holds all size
	// bytes: every page_pool sync. Anything else takes syncChecked, which
	// finds the same mapping or says what is wrong.
	if pfn := addr >> PageShift; d.inPage && !d.iommu && pfn < uint64(len(d.m.pages)) && c != nil && uint(c.ID) < uint(len(d.m.pcp)) {
		p := &d.m.pages[pfn]
		if f := int(p.dmaFirst); p.isHead && uint(f) < uint(len(d.slots)) { // -1, none, fails the range test
			sl := &d.slots[f]
			if end := sl.addr + uint64(sl.size); sl.live && addr >= sl.addr && addr < end && addr+uint64(size) <= end {
				if !d.physical {
					c.Charge(sym, c.Costs().DMASync)
				}
				return nil
			}
		}
	}
	return d.syncChecked(c, sym, addr, size)
}

// syncChecked is sync for any address.
func (d *DMA) syncChecked(c *sim.CPU, sym sim.Sym, addr uint64, size uint32) error {
	if err := d.m.checkCPU(c); err != nil {
		return err
	}
	s := d.lookup(addr, false)
	if s < 0 || addr+uint64(size) > d.slots[s].addr+uint64(d.slots[s].size) {
		d.stats.BadSyncs++
		return fmt.Errorf("mem: DMA sync of %d bytes at %#x: %w", size, addr, ErrNotMapped)
	}
	if !d.physical {
		c.Charge(sym, c.Costs().DMASync)
	}
	return nil
}

// lookup finds the live mapping holding addr (starting at addr when
// exact), -1 none.
func (d *DMA) lookup(addr uint64, exact bool) int32 {
	if d.iommu {
		if addr >= iovaTop {
			return -1
		}
		s := (iovaTop - 1 - addr) / iovaStride
		if s >= uint64(len(d.slots)) || !d.slots[s].holds(addr, exact) {
			return -1
		}
		return int32(s)
	}
	pfn := addr >> PageShift
	if pfn >= uint64(len(d.m.pages)) {
		return -1
	}
	h := d.m.Head(PageID(pfn))
	for s := *d.first(h); s >= 0; s = d.slots[s].next {
		if d.slots[s].holds(addr, exact) {
			return s
		}
	}
	return -1
}

// holds reports whether the slot is a live mapping starting at addr
// (exact) or containing it.
func (sl *dmaSlot) holds(addr uint64, exact bool) bool {
	if !sl.live {
		return false
	}
	if exact {
		return addr == sl.addr
	}
	return addr >= sl.addr && addr < sl.addr+uint64(sl.size)
}

// Live is the number of live mappings of the block holding id.
func (d *DMA) Live(id PageID) int {
	h := d.m.Head(id)
	if h == NoPage {
		return 0
	}
	n := 0
	for s := *d.first(h); s >= 0; s = d.slots[s].next {
		n++
	}
	return n
}

// Stats returns the device's counters.
func (d *DMA) Stats() DMAStats { return d.stats }

// dmaLive counts live mappings of head h over every device.
func (m *Mem) dmaLive(h PageID) int {
	n := 0
	for _, d := range m.dmas {
		if *d.first(h) >= 0 {
			n += d.Live(h)
		}
	}
	return n
}
