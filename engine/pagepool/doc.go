// Package pagepool models the kernel's page_pool (net/core/page_pool.c):
// the alloc cache, the ptr_ring with its consumer's lazy clearing
// (__ptr_ring_discard_one clears slots in batches, so a producer may see
// "full" early), direct recycling and, from 6.5, NAPI-local recycling
// (the pool's NAPI and the CPU whose poll list holds it, list_owner),
// fragments, DMA premapping, in-flight accounting and deferred shutdown
// (destroy with pages still in flight), with the kernel's 11 statistics.
//
// Check walks everything a pool owns; CheckCounts and CheckPage are the
// cheap parts the engine's every-event checker runs.
package pagepool
