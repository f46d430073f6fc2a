// Package pagepool models the kernel's page_pool (net/core/page_pool.c): alloc cache, ptr_ring, recycling, fragments, DMA premapping, in-flight accounting and deferred shutdown, with the kernel's statistics.
package pagepool
