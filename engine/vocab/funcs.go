package vocab

// countedIn is the kernel function that counts each counter (or, for a
// ring index, moves it): what a trace names beside an event that moved
// it (engine/kernel has each function's file and role). Counters the
// kernel does not keep (the host's, the TCP sender's) name none.
var countedIn = map[string]string{
	"rx_packets":                 "virtnet_receive",
	"rx_bytes":                   "virtnet_receive",
	"rx_drops":                   "receive_buf",
	"rx_length_errors":           "receive_buf",
	"rx_xdp_packets":             "bpf_prog_run_xdp",
	"rx_xdp_tx":                  "virtnet_xdp_xmit",
	"rx_xdp_redirects":           "xdp_do_redirect",
	"rx_xdp_drops":               "virtnet_xdp_handler",
	"xdp_aborted":                "virtnet_xdp_handler",
	"rx_kicks":                   "virtqueue_kick_prepare_split",
	"tx_xdp_tx":                  "virtnet_xdp_xmit",
	"tx_xdp_tx_drops":            "virtnet_xdp_xmit",
	"tx_kicks":                   "virtqueue_kick_prepare_split",
	"rx_pp_alloc_fast":           "page_pool_alloc_netmems",
	"rx_pp_alloc_slow":           "__page_pool_alloc_netmems_slow",
	"rx_pp_alloc_slow_ho":        "__page_pool_alloc_netmems_slow",
	"rx_pp_alloc_empty":          "page_pool_refill_alloc_cache",
	"rx_pp_alloc_refill":         "page_pool_refill_alloc_cache",
	"rx_pp_alloc_waive":          "page_pool_refill_alloc_cache",
	"rx_pp_recycle_cached":       "page_pool_recycle_in_cache",
	"rx_pp_recycle_cache_full":   "page_pool_recycle_in_cache",
	"rx_pp_recycle_ring":         "page_pool_recycle_in_ring",
	"rx_pp_recycle_ring_full":    "page_pool_return_netmem",
	"rx_pp_recycle_released_ref": "page_pool_put_unrefed_netmem",
	"napi_polls":                 "virtnet_poll",
	"interrupts":                 "skb_recv_done",
	"host_used_publishes":        "vhost_net_signal_used",
	"frag_list_skbs":             "receive_mergeable",
	"refill_work_runs":           "refill_work",
	"refill_work_retries":        "refill_work",
	"cpumap_enqueued":            "bq_enqueue",
	"cpumap_drops":               "bq_enqueue",
	"cpumap_passed":              "cpu_map_kthread_run",
	"devmap_sent":                "bq_xmit_all",
	"devmap_drops":               "bq_xmit_all",
	"devmap_completed":           "xdp_return_frame",
	"stack_deferred_frees":       "skb_attempt_defer_free",
	"stack_defer_full":           "skb_attempt_defer_free",
	"stack_defer_ipis":           "skb_attempt_defer_free",
	"app_bytes":                  "skb_copy_datagram_iter",
	"csum_bytes":                 "__skb_checksum_complete",
	"socket_queued":              "tcp_queue_rcv",
	"tcp_rcv_coalesce":           "skb_try_coalesce",
	"packet_socket_clones":       "packet_rcv",
	"page_allocs":                "rmqueue",
	"page_frees":                 "__free_pages",
	"page_remote_frees":          "__free_pages",
	"page_ref_transfers":         "page_frag_free",
	"pcp_free_high":              "free_unref_page_commit",
	"zone_lock_contended":        "rmqueue_bulk",
	"iommu_invalidations":        "qi_submit_sync",
	"vhost_iotlb_misses":         "vhost_iotlb_miss",
	"softnet.processed":          "napi_gro_receive",
	"softnet.time_squeeze":       "net_rx_action",
	"softirq_restarts":           "handle_softirqs",
	"ksoftirqd_wakeups":          "wakeup_softirqd",
	"ksoftirqd_polls":            "run_ksoftirqd",
	"gro_merged":                 "skb_gro_receive",
	"gro_skbs":                   "dev_gro_receive",
	"tcp_acks":                   "tcp_send_ack",
	"context_switches":           "__schedule",
	"task_preemptions":           "__schedule",
	"tcp_ack_drops":              "start_xmit",
	"tx_packets":                 "start_xmit",
	"rqN.avail_idx":              "virtqueue_add_split",
	"rqN.last_used":              "virtqueue_get_buf_ctx_split",
}

// CountedIn returns the kernel function that counts name (a counter of
// the table, or a pattern's instance such as rq0.avail_idx), "" when
// none does.
func CountedIn(name string) string {
	if f, ok := countedIn[name]; ok {
		return f
	}
	if d, ok := Lookup(name); ok {
		return countedIn[d.Name]
	}
	return ""
}

// Counted lists every function countedIn names, for the tests that check
// them against engine/kernel's table.
func Counted() map[string]string {
	out := make(map[string]string, len(countedIn))
	for k, v := range countedIn {
		out[k] = v
	}
	return out
}
