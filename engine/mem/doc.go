// Package mem models the machine's memory as the Linux page allocator sees it: struct page array, a buddy zone with its lock and per-CPU lists, page_frag caches and DMA mapping.
package mem
