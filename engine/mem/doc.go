// Package mem models the machine's memory as the Linux page allocator
// sees it: the struct page array (a struct page is one 64-byte cache
// line), one zone with its buddy lists, its zone lock and per-CPU lists,
// page_frag caches, and DMA mapping with or without an IOMMU (a
// bare-metal one, or QEMU's emulated one: the guest's invalidation exits
// and the host IOTLB's misses, EmulatedIOMMU).
//
// Every page is in one location at a time, and a log of its moves feeds
// the views (History reads a page's last moves). Check walks everything
// the memory owns; for the engine's every-event checker, Watch records
// the blocks each event touches, and CheckCounts and CheckBlock are the
// cheap checks it runs on them.
package mem
