package kernel

// chargeFuncs are the functions only the engine's cost accounting names:
// rows of the simulated perf top (engine/sim.Sym) that no event handler
// stands for, because the engine charges their cost inside the handlers
// that call them. They join the table when the package starts.
var chargeFuncs = []Func{
	{Name: "_raw_spin_lock", File: "kernel/locking/spinlock.c", Does: "take a spinlock (zone->lock, a ptr_ring's producer or consumer lock, a bulk queue's): the acquisition, the lock's cache line and the spinning while another CPU holds it"},
	{Name: "virtqueue_notify", File: "drivers/virtio/virtio_ring.c", Does: "kick the device: vp_notify's write to the notify register, which exits to the host"},
	{Name: "__alloc_pages", File: "mm/page_alloc.c", Does: "the page allocator's entry (alloc_pages, and alloc_pages_bulk's __alloc_pages_bulk): the zonelist walk and prep_new_page"},
	{Name: "dma_map_page_attrs", File: "kernel/dma/mapping.c", Does: "map a page for the device: direct (dma_direct_map_page) or through the IOMMU (iommu_dma_map_page)"},
	{Name: "dma_unmap_page_attrs", File: "kernel/dma/mapping.c", Does: "unmap a page's DMA mapping (an IOTLB invalidation behind an IOMMU)"},
	{Name: "dma_sync_single_for_cpu", File: "kernel/dma/mapping.c", Does: "make the bytes the device wrote visible to the CPU (__dma_sync_single_for_cpu since 6.12)"},
	{Name: "dma_sync_single_for_device", File: "kernel/dma/mapping.c", Does: "hand a buffer back to the device (__dma_sync_single_for_device since 6.12)"},
	{Name: "napi_gro_receive", File: "net/core/gro.c", Does: "pass a received skb up the stack through GRO (net/core/dev.c before 5.18): the stack's per-packet receive in softirq"},
}

func init() {
	for _, f := range chargeFuncs {
		if _, dup := byName[f.Name]; dup {
			panic("kernel: function " + f.Name + " twice in the table")
		}
		byName[f.Name] = len(funcs)
		funcs = append(funcs, f)
	}
}
