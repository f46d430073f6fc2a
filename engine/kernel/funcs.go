package kernel

import (
	"fmt"
	"sort"
)

// Func is a kernel function the engine models: an event names the ones it
// stands for (its handler's entry functions, and the function that counts
// each counter it moved), and the playground shows them beside the event
// with a link to their source at the scenario's kernel.
//
// The table holds the functions the engine's code cites (a test checks
// that each is cited in a comment of the engine, and that every handler
// and every counted counter names one here). Names are the newest
// kernel's; Was gives the name older kernels used where the function was
// renamed (page_pool's netmem conversion), and the link searches the name
// of the scenario's kernel.
type Func struct {
	Name string // as in the kernel: "virtnet_poll"
	File string // where it is defined
	Was  string // its name in older kernels, "" when it kept it
	Does string // what it does, as the engine models it
	// Also lists the other names it had at some releases, newest first,
	// when Was is not the whole story (renamed twice, or renamed after
	// the name the engine cites): scripts/funclines looks for them after
	// Name and before Was. LookupFunc does not know them.
	Also []string
	// WasIn is the file that defined it in older kernels when it moved
	// ("" when it did not); scripts/funclines looks there after File.
	WasIn string
}

// funcs is the table, by file.
var funcs = []Func{
	// drivers/net/virtio_net.c: the guest driver.
	{Name: "virtnet_poll", File: "drivers/net/virtio_net.c", Does: "NAPI poll of a receive queue: receive up to the budget, refill, re-arm the interrupt when done"},
	{Name: "virtnet_receive", File: "drivers/net/virtio_net.c", Does: "take used buffers from the receive virtqueue and hand each to receive_buf; refill when half the ring is free"},
	{Name: "receive_buf", File: "drivers/net/virtio_net.c", Does: "check a buffer's length and build an skb by the receive mode (small, big, mergeable); count drops and length errors"},
	{Name: "receive_small", File: "drivers/net/virtio_net.c", Does: "small mode: the packet in one buffer, an skb built around it (build_skb)"},
	{Name: "receive_big", File: "drivers/net/virtio_net.c", Does: "big mode: a chain of pages, turned into an skb by page_to_skb"},
	{Name: "receive_mergeable", File: "drivers/net/virtio_net.c", Does: "mergeable mode: the packet over num_buffers buffers, each added as a frag (or coalesced); frag_list past MAX_SKB_FRAGS"},
	{Name: "page_to_skb", File: "drivers/net/virtio_net.c", Does: "build an skb from a buffer: copy the first bytes into a small head or build around the page"},
	{Name: "try_fill_recv", File: "drivers/net/virtio_net.c", Does: "post empty buffers to the receive virtqueue until it is full or memory runs out, then kick the host"},
	{Name: "add_recvbuf_small", File: "drivers/net/virtio_net.c", Does: "post one small-mode buffer"},
	{Name: "add_recvbuf_big", File: "drivers/net/virtio_net.c", Does: "post one big-mode buffer: a chain of pages"},
	{Name: "add_recvbuf_mergeable", File: "drivers/net/virtio_net.c", Does: "post one mergeable buffer, its length from the packet-size average (get_mergeable_buf_len)"},
	{Name: "virtnet_rq_alloc", File: "drivers/net/virtio_net.c", Does: "carve a buffer from the queue's page_frag block, premapped for DMA (virtnet_rq_dma)"},
	{Name: "skb_recv_done", File: "drivers/net/virtio_net.c", Does: "the receive virtqueue's callback: schedule NAPI and disable further interrupts"},
	{Name: "refill_work", File: "drivers/net/virtio_net.c", Does: "the delayed refill after try_fill_recv ran out of memory: retry, and again after HZ/2 (until 6.18)"},
	{Name: "virtnet_xdp_handler", File: "drivers/net/virtio_net.c", Does: "run the XDP program on a buffer and act on its verdict (older kernels ran it inside receive_small and receive_mergeable)"},
	{Name: "virtnet_xdp_xmit", File: "drivers/net/virtio_net.c", Does: "put XDP frames on a send queue (XDP_TX, or a redirect to this device)"},
	// drivers/virtio/virtio_ring.c: the split virtqueue, driver side.
	{Name: "virtqueue_add_split", File: "drivers/virtio/virtio_ring.c", Does: "put a buffer's descriptors in the table and its head in the avail ring"},
	{Name: "virtqueue_get_buf_ctx_split", File: "drivers/virtio/virtio_ring.c", Does: "take the next used buffer the device returned (last_used_idx)"},
	{Name: "virtqueue_kick_prepare_split", File: "drivers/virtio/virtio_ring.c", Does: "decide whether the device needs a notification (vring_need_event on avail_event, or VRING_USED_F_NO_NOTIFY)"},
	{Name: "vring_interrupt", File: "drivers/virtio/virtio_ring.c", Does: "the device's interrupt: call the queue's callback if there are used buffers"},
	// drivers/vhost/net.c: the host side of a vhost-net device.
	{Name: "handle_rx", File: "drivers/vhost/net.c", Does: "the vhost-net thread: take avail descriptors, write frames into the guest's buffers, publish them used"},
	{Name: "vhost_net_signal_used", File: "drivers/vhost/net.c", Does: "publish a batch of used entries and interrupt the guest if it asked to be (vhost_add_used_and_signal_n)"},
	{Name: "vhost_iotlb_miss", File: "drivers/vhost/vhost.c", Does: "with a guest IOMMU, ask the VMM for an IOVA's translation vhost's own IOTLB lacks (VHOST_IOTLB_MISS); the worker goes on when the update comes back"},
	// net/core/page_pool.c.
	{Name: "page_pool_alloc_netmems", File: "net/core/page_pool.c", Was: "page_pool_alloc_pages", Also: []string{"page_pool_alloc_netmem"}, Does: "allocate a page: from the alloc cache (fast), else a refill from the ptr_ring, else the page allocator"},
	{Name: "page_pool_alloc_frag", File: "net/core/page_pool.c", Does: "allocate a fragment of a pool page (page_pool_alloc_frag_netmem): a page shared by several buffers"},
	{Name: "page_pool_refill_alloc_cache", File: "net/core/page_pool.c", Does: "refill the alloc cache from the ptr_ring under its consumer lock"},
	{Name: "__page_pool_alloc_netmems_slow", File: "net/core/page_pool.c", Was: "__page_pool_alloc_pages_slow", Does: "bulk-allocate order-0 pages from the page allocator (alloc_pages_bulk) and DMA-map them"},
	{Name: "page_pool_recycle_in_cache", File: "net/core/page_pool.c", Does: "direct recycling: a page freed in the pool's own NAPI context goes straight into the alloc cache"},
	{Name: "page_pool_recycle_in_ring", File: "net/core/page_pool.c", Does: "recycle a page into the ptr_ring (another context, or the cache full)"},
	{Name: "page_pool_put_unrefed_netmem", File: "net/core/page_pool.c", Was: "page_pool_put_defragged_page", Also: []string{"page_pool_put_unrefed_page", "page_pool_put_defragged_page", "page_pool_put_page"}, Does: "return a page with no reference left to the pool: cache, ring, or release"},
	{Name: "page_pool_return_netmem", File: "net/core/page_pool.c", Was: "page_pool_return_page", Does: "release a page from the pool to the page allocator (unmapping it)"},
	// net/core: skbs, XDP frames, sockets.
	{Name: "skb_try_coalesce", File: "net/core/skbuff.c", Does: "merge an skb's data into the previous one's frags instead of queueing it"},
	{Name: "skb_attempt_defer_free", File: "net/core/skbuff.c", Does: "free an skb on the CPU that allocated it: queue it on that CPU's defer list, with an IPI at half of skb_defer_max"},
	{Name: "skb_defer_free_flush", File: "net/core/dev.c", Does: "free the skbs other CPUs deferred to this one (net_rx_action, or the IPI)"},
	{Name: "napi_consume_skb", File: "net/core/skbuff.c", Does: "free an skb in softirq context, its pages recycled NAPI-locally when allowed"},
	{Name: "skb_copy_datagram_iter", File: "net/core/datagram.c", Does: "recvmsg's copy of the payload to the application"},
	{Name: "__skb_checksum_complete", File: "net/core/skbuff.c", Does: "sum the payload in software: the device did not validate the checksum"},
	{Name: "xdp_do_redirect", File: "net/core/filter.c", Does: "act on XDP_REDIRECT: queue the frame on the map's target (bq_enqueue)"},
	{Name: "xdp_return_frame", File: "net/core/xdp.c", Does: "return a transmitted XDP frame's memory to its memory model (page_pool or the page allocator)"},
	{Name: "bpf_prog_run_xdp", File: "include/net/xdp.h", WasIn: "include/linux/filter.h", Does: "run the XDP program on an xdp_buff"},
	// kernel/bpf: cpumap and devmap.
	{Name: "bq_enqueue", File: "kernel/bpf/cpumap.c", Does: "queue a redirected frame in this CPU's bulk queue for the target CPU, flushing to its ptr_ring at CPU_MAP_BULK_SIZE"},
	{Name: "cpu_map_kthread_run", File: "kernel/bpf/cpumap.c", Does: "the target CPU's kthread: take frames from the ptr_ring, build skbs, pass them up the stack"},
	{Name: "bq_xmit_all", File: "kernel/bpf/devmap.c", Does: "send a devmap bulk queue to the next device's ndo_xdp_xmit"},
	// net/ipv4: the receiving sockets.
	{Name: "udp_recvmsg", File: "net/ipv4/udp.c", Does: "the application reads a datagram: copy it out and free the skb"},
	{Name: "tcp_recvmsg", File: "net/ipv4/tcp.c", Does: "the application reads the stream: copy, free the skbs, reopen the window (tcp_cleanup_rbuf)"},
	{Name: "tcp_queue_rcv", File: "net/ipv4/tcp_input.c", Does: "queue an in-order segment on the socket, coalescing it into the tail when it can (tcp_try_coalesce)"},
	// net/packet: a packet socket's copy.
	{Name: "packet_rcv", File: "net/packet/af_packet.c", Does: "a listening packet socket takes a clone of every skb"},
	// net/core/dev.c, kernel/softirq.c: NET_RX and who runs it.
	{Name: "__napi_schedule", File: "net/core/dev.c", Does: "put a NAPI instance on this CPU's poll list (____napi_schedule) and raise NET_RX"},
	{Name: "napi_complete_done", File: "net/core/dev.c", Does: "a poll that did less than its weight takes its instance off the poll list, flushing GRO"},
	{Name: "net_rx_action", File: "net/core/dev.c", Does: "NET_RX: poll the listed NAPI instances, each up to its weight, until the list is empty, netdev_budget packets or netdev_budget_usecs are spent (time_squeeze), and raise NET_RX again for those left"},
	{Name: "handle_softirqs", File: "kernel/softirq.c", Was: "__do_softirq", Does: "run the pending softirqs, again while more are raised, for at most MAX_SOFTIRQ_RESTART passes and MAX_SOFTIRQ_TIME and while no reschedule is due; else wake ksoftirqd (__do_softirq before 6.10; 6.1's stable releases have handle_softirqs too)"},
	{Name: "wakeup_softirqd", File: "kernel/softirq.c", Does: "wake this CPU's ksoftirqd to run the softirqs __do_softirq left pending"},
	{Name: "run_ksoftirqd", File: "kernel/softirq.c", Does: "ksoftirqd/N: run __do_softirq while softirqs are pending, with cond_resched between runs"},
	// kernel/sched: the scheduler.
	{Name: "try_to_wake_up", File: "kernel/sched/core.c", Does: "wake a sleeping task: put it on its CPU's runqueue and decide whether it preempts the running one (check_preempt_curr)"},
	{Name: "__schedule", File: "kernel/sched/core.c", Does: "pick the next task (pick_next_task_fair) and switch the CPU to it (context_switch)"},
	{Name: "place_entity", File: "kernel/sched/fair.c", Does: "place a woken task: CFS gives a sleeper at most half of sched_latency of credit (GENTLE_FAIR_SLEEPERS); EEVDF keeps its lag (PLACE_LAG) and gives it a deadline a slice away"},
	{Name: "pick_eevdf", File: "kernel/sched/fair.c", Does: "EEVDF: the eligible task (vruntime at or below the average) with the earliest virtual deadline; the running one keeps the CPU until its deadline moves (RUN_TO_PARITY)"},
	// net/core/gro.c, net/ipv4: GRO and the protocol in NET_RX, the ACK.
	{Name: "dev_gro_receive", File: "net/core/gro.c", WasIn: "net/core/dev.c", Does: "GRO: find the held skb of the packet's flow and merge the packet into it, or hold it (net/core/dev.c before 5.18)"},
	{Name: "skb_gro_receive", File: "net/core/gro.c", WasIn: "net/core/skbuff.c", Does: "merge a packet into a held GRO skb: its frags, or its head as a frag, else onto the frag_list, up to gro_max_size"},
	{Name: "tcp_v4_rcv", File: "net/ipv4/tcp_ipv4.c", Does: "the protocol's receive of an skb (after ip_rcv): find the socket, and process the segment (tcp_rcv_established) or add it to the socket's backlog while the reader holds the socket"},
	{Name: "tcp_rcv_established", File: "net/ipv4/tcp_input.c", Does: "an established connection's receive: queue the data (tcp_data_queue), wake the reader (sk_data_ready), decide the ACK (tcp_ack_snd_check)"},
	{Name: "__tcp_ack_snd_check", File: "net/ipv4/tcp_input.c", Does: "ACK now when more than one full segment is unacknowledged and the window would not shrink, or in quickack mode; else arm the delayed ACK"},
	{Name: "tcp_send_ack", File: "net/ipv4/tcp_output.c", Does: "build a pure ACK and send it down: __tcp_transmit_skb, ip_queue_xmit, dev_queue_xmit to the driver's start_xmit"},
	{Name: "start_xmit", File: "drivers/net/virtio_net.c", Does: "virtio_net's ndo_start_xmit: free what the host has sent (free_old_xmit_skbs), add the skb to the send virtqueue, kick the host when it asked"},
	{Name: "sock_def_readable", File: "net/core/sock.c", Does: "sk_data_ready: wake the task waiting on the socket"},
	// mm/page_alloc.c: the page allocator.
	{Name: "rmqueue", File: "mm/page_alloc.c", Does: "allocate a block: from the CPU's per_cpu_pages list, refilled in batches from the buddy (rmqueue_bulk, zone->lock)"},
	{Name: "__free_pages", File: "mm/page_alloc.c", Does: "free a block: to the CPU's per_cpu_pages list, drained to the buddy in batches (free_pcppages_bulk)"},
	{Name: "free_unref_page_commit", File: "mm/page_alloc.c", Does: "put a freed block on the pcp list and drain it when high, or by the free_high rule (free_frozen_page_commit in newer kernels)", Also: []string{"free_frozen_page_commit"}},
	{Name: "rmqueue_bulk", File: "mm/page_alloc.c", Does: "move a batch of blocks from the buddy to a pcp list under zone->lock"},
	{Name: "page_frag_free", File: "mm/page_frag_cache.c", WasIn: "mm/page_alloc.c", Does: "drop a buffer's reference to its page_frag block; the last one frees it (mm/page_alloc.c until 6.12)"},
	// The functions only the cost accounting names: rows of the simulated
	// perf top (engine/sim.Sym) that no event handler stands for, because
	// the engine charges their cost inside the handlers that call them.
	{Name: "_raw_spin_lock", File: "kernel/locking/spinlock.c", Does: "take a spinlock (zone->lock, a ptr_ring's producer or consumer lock, a bulk queue's): the acquisition, the lock's cache line and the spinning while another CPU holds it"},
	{Name: "virtqueue_notify", File: "drivers/virtio/virtio_ring.c", Does: "kick the device: vp_notify's write to the notify register, which exits to the host"},
	{Name: "__alloc_pages", File: "mm/page_alloc.c", Also: []string{"__alloc_pages_noprof"}, Was: "__alloc_pages_nodemask", Does: "the page allocator's entry (alloc_pages, and alloc_pages_bulk's __alloc_pages_bulk): the zonelist walk and prep_new_page (__alloc_pages_noprof from 6.10, __alloc_pages_nodemask until 5.12)"},
	{Name: "dma_map_page_attrs", File: "kernel/dma/mapping.c", WasIn: "include/linux/dma-mapping.h", Does: "map a page for the device: direct (dma_direct_map_page) or through the IOMMU (iommu_dma_map_page)"},
	{Name: "dma_unmap_page_attrs", File: "kernel/dma/mapping.c", WasIn: "include/linux/dma-mapping.h", Does: "unmap a page's DMA mapping (an IOTLB invalidation behind an IOMMU)"},
	{Name: "qi_submit_sync", File: "drivers/iommu/intel/dmar.c", WasIn: "drivers/iommu/dmar.c", Does: "submit invalidation descriptors to the VT-d queue and wait for them; behind QEMU's emulated intel-iommu the queue's tail write exits to QEMU"},
	{Name: "dma_sync_single_for_cpu", File: "kernel/dma/mapping.c", Also: []string{"__dma_sync_single_for_cpu"}, WasIn: "include/linux/dma-mapping.h", Does: "make the bytes the device wrote visible to the CPU (__dma_sync_single_for_cpu since 6.12)"},
	{Name: "dma_sync_single_for_device", File: "kernel/dma/mapping.c", Also: []string{"__dma_sync_single_for_device"}, WasIn: "include/linux/dma-mapping.h", Does: "hand a buffer back to the device (__dma_sync_single_for_device since 6.12)"},
	{Name: "napi_gro_receive", File: "net/core/gro.c", Also: []string{"gro_receive_skb"}, WasIn: "net/core/dev.c", Does: "pass a received skb up the stack through GRO (net/core/dev.c before 5.18; an inline wrapper of gro_receive_skb by 6.18): the stack's per-packet receive in softirq"},
}

var byName = func() map[string]int {
	m := map[string]int{}
	for i, f := range funcs {
		if _, dup := m[f.Name]; dup {
			panic("kernel: function " + f.Name + " twice in the table")
		}
		m[f.Name] = i
	}
	return m
}()

// Funcs returns the table, sorted by file then name. The slice is a copy.
func Funcs() []Func {
	out := append([]Func(nil), funcs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LookupFunc returns the table's entry for name (its newest name or the
// older one).
func LookupFunc(name string) (Func, bool) {
	if i, ok := byName[name]; ok {
		return funcs[i], true
	}
	for _, f := range funcs {
		if f.Was == name {
			return f, true
		}
	}
	return Func{}, false
}

// lineRun is where a function is defined over a run of releases, From
// to To, both included (funclines_gen.go holds them).
type lineRun struct {
	From, To Version
	File     string
	Line     int
	As       string // its name in those releases when not its newest
}

// FuncLine is the file and line of the definition of function name (its
// newest name or its older one) at kernel v: ok is false when the
// function did not exist in v, or v's source was not read (releaseTags
// lists the releases that were, and the tag each was read at).
func FuncLine(name string, v Version) (file string, line int, ok bool) {
	f, ok := LookupFunc(name)
	if !ok {
		return "", 0, false
	}
	for _, r := range funcLines[f.Name] {
		if !v.Less(r.From) && !r.To.Less(v) {
			return r.File, r.Line, true
		}
	}
	return "", 0, false
}

// NameAt is the name function name had at kernel v, as the source read
// at v spells it: page_pool_alloc_netmems is page_pool_alloc_pages up to
// 6.10. For a release not read it is the name of the releases read on
// both sides when they agree, the first read's before it, else the
// function's newest name; a name LookupFunc does not know is returned as
// it is.
func NameAt(name string, v Version) string {
	f, ok := LookupFunc(name)
	if !ok {
		return name
	}
	as := func(r lineRun) string {
		if r.As == "" {
			return f.Name
		}
		return r.As
	}
	runs := funcLines[f.Name]
	for i, r := range runs {
		if v.Less(r.From) {
			if i == 0 || as(runs[i-1]) == as(r) {
				return as(r) // before the first read, or between two that agree
			}
			return f.Name
		}
		if !r.To.Less(v) {
			return as(r)
		}
	}
	return f.Name
}

// SourceTag is the tag v's lines were read at ("v6.4", or a stable
// "v6.1.190" when the generator had no vX.Y), ok false when v was not
// read and FuncLine knows no line of it.
func SourceTag(v Version) (tag string, ok bool) {
	tag, ok = releaseTags[v]
	return tag, ok
}

// SourceURL is the function's definition at kernel v in a public source
// browser, Elixir: the line in its file at the tag v was read at
// (releaseTags: vX.Y, or the newest stable vX.Y.N the generator had; for
// Newest, which stands for net-next, the newest tag it had past the last
// release) when FuncLine knows it; else Elixir's identifier search of
// that release for the name it had there (NameAt), which lists the
// definition, and for Newest of the latest release.
func SourceURL(name string, v Version) string {
	if file, line, ok := FuncLine(name, v); ok {
		return fmt.Sprintf("https://elixir.bootlin.com/linux/%s/source/%s#L%d", releaseTags[v], file, line)
	}
	tag := "v" + v.String()
	if v == Newest {
		tag = "latest"
	}
	return fmt.Sprintf("https://elixir.bootlin.com/linux/%s/A/ident/%s", tag, NameAt(name, v))
}
