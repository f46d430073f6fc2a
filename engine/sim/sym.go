package sim

// Sym is the kernel function a piece of simulated CPU time is charged to:
// a row of the simulated `perf top`. Every cost a CPU pays goes through
// CPU.Charge with the symbol of the function that would pay it in the
// kernel, so that per CPU the symbols' time adds up to Busy exactly.
//
// Names are what perf would show for the function (the newest kernel's
// name where it was renamed); each names a function of the kernel table
// (engine/kernel.Funcs), which a test checks, except the pseudo-rows
// marked below. Self time, not children: a function's row holds the
// costs the cost table charges where the function runs, not those of the
// functions it calls that have rows of their own.
type Sym uint8

// The symbols, in the order of the receive path.
const (
	// drivers/net/virtio_net.c.
	SymVirtnetPoll      Sym = iota // virtnet_poll: the NAPI poll's fixed cost
	SymReceiveBuf                  // receive_buf: per buffer, the length checks and dispatch
	SymReceiveSmall                // receive_small: build_skb around a small buffer
	SymReceiveMergeable            // receive_mergeable: the head skb, frags, copies
	SymReceiveBig                  // receive_big: a chain of pages into an skb
	SymPageToSKB                   // page_to_skb: the head copy and the skb of a buffer
	SymAddRecvbufBig               // add_recvbuf_big: a chain's pages mapped and its table allocated
	SymVirtnetRqAlloc              // virtnet_rq_alloc: the page_frag carve of a receive buffer
	SymBPFProgRunXDP               // bpf_prog_run_xdp: the XDP program
	// drivers/virtio/virtio_ring.c.
	SymVirtqueueAdd    // virtqueue_add_split
	SymVirtqueueGetBuf // virtqueue_get_buf_ctx_split (detach_buf_split's kfree with it)
	SymVirtqueueNotify // virtqueue_notify: the kick's MMIO write and the exit it takes
	SymVringInterrupt  // vring_interrupt: the interrupt's entry and exit
	// net/core/page_pool.c.
	SymPagePoolAlloc        // page_pool_alloc_netmems: the alloc cache's fast path
	SymPagePoolAllocFrag    // page_pool_alloc_frag: a fragment's reference
	SymPagePoolRefill       // page_pool_refill_alloc_cache: the ptr_ring's consume
	SymPagePoolRecycleCache // page_pool_recycle_in_cache
	SymPagePoolRecycleRing  // page_pool_recycle_in_ring: the ptr_ring's produce
	SymPagePoolPutUnrefed   // page_pool_put_unrefed_netmem: the put's refcount
	SymPagePoolReturn       // page_pool_return_netmem: a page released by the pool
	// kernel/locking/spinlock.c: every lock's acquisition, the cache
	// line it pulls and the spinning while another CPU holds it.
	SymRawSpinLock // _raw_spin_lock
	// mm/: the page allocator and the DMA API.
	SymAllocPages    // __alloc_pages
	SymRmqueueBulk   // rmqueue_bulk: the buddy's refill of a pcp list
	SymFreePages     // __free_pages
	SymFreePCP       // free_unref_page_commit: a pcp list drained to the buddy
	SymDMAMap        // dma_map_page_attrs
	SymDMAUnmap      // dma_unmap_page_attrs
	SymDMASyncCPU    // dma_sync_single_for_cpu
	SymDMASyncDevice // dma_sync_single_for_device
	SymPageRef       // pseudo-row: get_page/put_page's atomics, inlined into their callers
	// net/: the stack, the sockets, XDP maps.
	SymNAPIGROReceive      // napi_gro_receive: the stack's per-packet receive in softirq
	SymSKBTryCoalesce      // skb_try_coalesce
	SymSKBChecksum         // __skb_checksum_complete
	SymUDPRecvmsg          // udp_recvmsg: the per-packet cost charged in process context
	SymTCPRecvmsg          // tcp_recvmsg: the same, on a TCP socket
	SymCopyToUser          // skb_copy_datagram_iter: recvmsg's copy to the application
	SymSKBAttemptDeferFree // skb_attempt_defer_free: the IPI it sends
	SymSKBDeferFreeFlush   // skb_defer_free_flush: the IPI's receipt
	SymPacketRcv           // packet_rcv: a packet socket's clone
	SymBQEnqueue           // bq_enqueue: a cpumap bulk queue flushed into the ptr_ring
	SymCPUMapKthread       // cpu_map_kthread_run
	SymBQXmitAll           // bq_xmit_all: a devmap bulk queue sent to ndo_xdp_xmit
	SymNetRxAction         // net_rx_action: a NET_RX round's bookkeeping
	SymTCPV4Rcv            // tcp_v4_rcv: the protocol's receive of an skb, ip_rcv to tcp_data_queue
	SymTCPSendAck          // tcp_send_ack: an ACK built and passed down to the driver
	SymStartXmit           // start_xmit: virtio_net's transmit of an skb
	// kernel/sched/core.c.
	SymTryToWakeUp // try_to_wake_up: the waker's side of a wake-up
	SymSchedule    // __schedule: a context switch
	// SymNextIRQ is a pseudo-row: the next device's TX-completion
	// interrupt (a devmap's target, another driver: ixgbe's
	// ixgbe_msix_clean_rings in R4), which is not virtio's
	// vring_interrupt and not a function the kernel table models.
	SymNextIRQ

	// NumSyms is the number of symbols: the length of a CPU's profile.
	NumSyms
)

var symNames = [NumSyms]string{
	SymVirtnetPoll:          "virtnet_poll",
	SymReceiveBuf:           "receive_buf",
	SymReceiveSmall:         "receive_small",
	SymReceiveMergeable:     "receive_mergeable",
	SymReceiveBig:           "receive_big",
	SymPageToSKB:            "page_to_skb",
	SymAddRecvbufBig:        "add_recvbuf_big",
	SymVirtnetRqAlloc:       "virtnet_rq_alloc",
	SymBPFProgRunXDP:        "bpf_prog_run_xdp",
	SymVirtqueueAdd:         "virtqueue_add_split",
	SymVirtqueueGetBuf:      "virtqueue_get_buf_ctx_split",
	SymVirtqueueNotify:      "virtqueue_notify",
	SymVringInterrupt:       "vring_interrupt",
	SymPagePoolAlloc:        "page_pool_alloc_netmems",
	SymPagePoolAllocFrag:    "page_pool_alloc_frag",
	SymPagePoolRefill:       "page_pool_refill_alloc_cache",
	SymPagePoolRecycleCache: "page_pool_recycle_in_cache",
	SymPagePoolRecycleRing:  "page_pool_recycle_in_ring",
	SymPagePoolPutUnrefed:   "page_pool_put_unrefed_netmem",
	SymPagePoolReturn:       "page_pool_return_netmem",
	SymRawSpinLock:          "_raw_spin_lock",
	SymAllocPages:           "__alloc_pages",
	SymRmqueueBulk:          "rmqueue_bulk",
	SymFreePages:            "__free_pages",
	SymFreePCP:              "free_unref_page_commit",
	SymDMAMap:               "dma_map_page_attrs",
	SymDMAUnmap:             "dma_unmap_page_attrs",
	SymDMASyncCPU:           "dma_sync_single_for_cpu",
	SymDMASyncDevice:        "dma_sync_single_for_device",
	SymPageRef:              "[page refcount]",
	SymNAPIGROReceive:       "napi_gro_receive",
	SymSKBTryCoalesce:       "skb_try_coalesce",
	SymSKBChecksum:          "__skb_checksum_complete",
	SymUDPRecvmsg:           "udp_recvmsg",
	SymTCPRecvmsg:           "tcp_recvmsg",
	SymCopyToUser:           "skb_copy_datagram_iter",
	SymSKBAttemptDeferFree:  "skb_attempt_defer_free",
	SymSKBDeferFreeFlush:    "skb_defer_free_flush",
	SymPacketRcv:            "packet_rcv",
	SymBQEnqueue:            "bq_enqueue",
	SymCPUMapKthread:        "cpu_map_kthread_run",
	SymBQXmitAll:            "bq_xmit_all",
	SymNetRxAction:          "net_rx_action",
	SymTCPV4Rcv:             "tcp_v4_rcv",
	SymTCPSendAck:           "tcp_send_ack",
	SymStartXmit:            "start_xmit",
	SymTryToWakeUp:          "try_to_wake_up",
	SymSchedule:             "__schedule",
	SymNextIRQ:              "[next device irq]",
}

// Pseudo-rows: names that are not one kernel function. A profile also
// has an idle row (SymIdleName), time no symbol was charged, and a steal
// row (SymStealName) when the host took the vCPU's time.
const (
	// SymIdleName is the row of a CPU's time not spent working.
	SymIdleName = "[idle]"
	// SymStealName is the row of a vCPU's time the host ran another
	// thread on its host CPU (CPU.Steal).
	SymStealName = "[steal]"
)

// String is the symbol's name as perf would show it.
func (s Sym) String() string {
	if s >= NumSyms {
		return "?"
	}
	return symNames[s]
}

// Pseudo reports whether the symbol is a pseudo-row, not a kernel
// function: time perf would show inside several callers.
func (s Sym) Pseudo() bool { return s == SymPageRef || s == SymNextIRQ }

// Profile is a CPU's charged time by symbol: Profile[s] is the busy time
// charged to s; the slots past NumSyms stay zero. Its sum is the CPU's
// Busy. Its length is a power of two so that Charge indexes it with a
// mask, without a bounds check.
type Profile [profSlots]Duration

// profSlots is the length of a Profile: at least NumSyms (the array below
// has a negative length otherwise, which does not compile).
const profSlots = 64

var _ [profSlots - NumSyms]struct{}

// Sum is the total time of the profile.
func (p *Profile) Sum() Duration {
	var d Duration
	for _, x := range p {
		d += x
	}
	return d
}

// Sub returns p - q, row by row: the charges between two snapshots.
func (p Profile) Sub(q *Profile) Profile {
	for i := range p {
		p[i] -= q[i]
	}
	return p
}
