package pagepool

import (
	"ringlab/engine/mem"
	"ringlab/engine/sim"
)

// dmaMapPage is page_pool_dma_map: map the whole page once, remember the
// address in struct page and the page in the pool's dma_mapped xarray,
// and sync max_len for the device. It fails when the mapping does.
func (p *Pool) dmaMapPage(c *sim.CPU, id mem.PageID) bool {
	addr, err := p.p.DMA.Map(c, id)
	if err != nil {
		return false
	}
	pg := p.m.Page(id)
	pg.DMAAddr = addr
	p.dmaIndex++
	if p.dmaIndex == 0 {
		p.dmaIndex = 1
	}
	pg.DMAIndex = p.dmaIndex
	p.dmaMapped++
	p.syncForDevice(c, id, p.p.MaxLen)
	return true
}

// syncForDevice is page_pool_dma_sync_for_device: with DMASyncDev (and
// until page_pool_scrub turns it off), sync min(size, MaxLen) bytes at
// Offset for the device.
func (p *Pool) syncForDevice(c *sim.CPU, id mem.PageID, size uint32) {
	if !p.dmaSync {
		return
	}
	size = min(size, p.p.MaxLen)
	// The mapping covers the page and Offset+MaxLen fits it (validated).
	_ = p.p.DMA.SyncForDevice(c, p.m.Page(id).DMAAddr+uint64(p.p.Offset), size)
}

// unmapDMA is __page_pool_unmap_netmem_dma: unmap a page still in the
// dma_mapped xarray and take it out.
func (p *Pool) unmapDMA(c *sim.CPU, pg *mem.Page) {
	if !p.dmaMap || pg.DMAIndex == 0 {
		return
	}
	if err := p.p.DMA.Unmap(c, pg.DMAAddr); err != nil {
		panic("pagepool: " + err.Error())
	}
	pg.DMAIndex = 0
	p.dmaMapped--
}

// releaseDMA is __page_pool_release_netmem_dma: unmap if still mapped and
// clear the stored address.
func (p *Pool) releaseDMA(c *sim.CPU, pg *mem.Page) {
	if !p.dmaMap {
		return
	}
	p.unmapDMA(c, pg)
	pg.DMAAddr = 0
}

// DMAAddr is page_pool_get_dma_addr: the address the pool mapped id at, 0
// without DMAMap.
func (p *Pool) DMAAddr(id mem.PageID) uint64 {
	pg := p.m.Page(id)
	if pg == nil || pg.PP != p.id {
		return 0
	}
	return pg.DMAAddr
}

// SyncForCPU is page_pool_dma_sync_for_cpu: make size bytes at offset
// (from the start of the pool's DMA area, Params.Offset) visible to the
// CPU. It needs DMAMap.
func (p *Pool) SyncForCPU(c *sim.CPU, id mem.PageID, offset, size uint32) error {
	pg := p.m.Page(id)
	if !p.dmaMap || pg == nil || pg.PP != p.id || pg.DMAIndex == 0 {
		return ErrNotPoolPage
	}
	return p.p.DMA.SyncForCPU(c, pg.DMAAddr+uint64(offset)+uint64(p.p.Offset), size)
}
