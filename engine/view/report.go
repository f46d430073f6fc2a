package view

import "ringlab/engine/vocab"

// KeyMetrics are the rows a compare pane shows first: figures of the
// counters table (engine.PartsTable), by their engine/vocab names.
var KeyMetrics = []string{
	"pps", "gbps", "rx_packets", "rx_drops", "host_drops", "rx_xdp_drops",
	"rx_pp_alloc_fast", "rx_pp_alloc_slow", "rx_pp_recycle_cached", "rx_pp_recycle_ring",
	"page_allocs", "page_frees", "zone_lock_contended", vocab.CPUUtil(0), vocab.CPUUtil(1), vocab.CPUUtil(2),
}
