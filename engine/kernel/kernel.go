// Package kernel names the Linux versions the engine models and the dated
// behaviours that differ between them. A scenario runs on one version; each
// part of the engine takes its branch from the Behaviours of that version,
// decided once when the world is built, so no hot path compares versions.
//
// The table is the "Versions" table of docs/kernel.md: every behaviour names
// the release it first shipped in and the kernel function that carries it.
// The releases run from Oldest (4.10, the first virtio_net with XDP) to
// Newest (7.0).
//
// The package also holds the table of the kernel functions the engine's
// code cites (funcs.go): Funcs, each with its name, file and what it does
// as the engine models it, which traced events name; FuncLine, the file
// and line of its definition at a release, from funclines_gen.go, which
// `go run ./scripts/funclines -git KERNEL_GIT_DIR` writes from a Linux git
// directory's tags; and SourceURL, that line at that release in Elixir,
// or Elixir's identifier search for a release whose source was not read.
package kernel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a mainline release, major.minor ("6.4"); the 2.6 series
// numbered its releases in the third place ("2.6.27"), kept in Sub.
type Version struct {
	Major, Minor, Sub int
}

// The range the engine models. Oldest is the first release whose
// virtio_net ran XDP programs (virtnet_xdp_set, 4.10); Newest is the
// newest the engine knows: net-next of early 2026, with virtio_net's
// page_pool support (the 2026 series, merged as its v11), named 7.0 here.
var (
	Oldest = Version{Major: 4, Minor: 10}
	Newest = Version{Major: 7}
)

// Default is the kernel of a scenario that names none: the newest.
var Default = Newest

// ErrVersion is wrapped by every error of Parse.
var ErrVersion = errors.New("kernel version")

// Parse reads "major.minor" (from 3.0 on a third component, "6.4.12", is a
// stable release: accepted and ignored, since the engine models mainline
// releases only: a fix backported to stable is on from the mainline
// release it went into, so 6.18.9 runs as 6.18 even if that stable has
// fcdef3bcbb2c, RefillRetryInNAPI of 6.19 (not in 6.18.2); before 3.0
// it is the release, "2.6.27") and refuses a version outside [Oldest,
// Newest].
func Parse(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("%w %q: want major.minor, e.g. %q", ErrVersion, s, Newest.String())
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > 255 || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("%w %q: %q is not a version number", ErrVersion, s, p)
		}
		n[i] = v
	}
	v := Version{Major: n[0], Minor: n[1]}
	if v.Major < 3 {
		v.Sub = n[2]
	}
	if v.Less(Oldest) || Newest.Less(v) {
		return Version{}, fmt.Errorf("%w %s: the engine models %s to %s", ErrVersion, v, Oldest, Newest)
	}
	if last, ok := lastMinor[v.Major]; ok && v.Minor > last {
		return Version{}, fmt.Errorf("%w %s: the %d series ended with %d.%d", ErrVersion, v, v.Major, v.Major, last)
	}
	return v, nil
}

// lastMinor is the last release of each finished series in range.
var lastMinor = map[int]int{4: 20, 5: 19, 6: 19}

// Releases lists every release from Oldest to Newest, oldest first.
func Releases() []Version {
	var out []Version
	for v := Oldest; !Newest.Less(v); {
		out = append(out, v)
		if last, ok := lastMinor[v.Major]; ok && v.Minor == last {
			v = Version{Major: v.Major + 1}
		} else {
			v.Minor++
		}
	}
	return out
}

func (v Version) String() string {
	s := strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
	if v.Major < 3 {
		s += "." + strconv.Itoa(v.Sub)
	}
	return s
}

// Less orders versions.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Sub < o.Sub
}

// AtLeast reports whether v is o or newer.
func (v Version) AtLeast(o Version) bool { return !v.Less(o) }

// Behaviours are the dated behaviours of one version, each true when the
// version has it.
type Behaviours struct {
	// XDPClearsGuestGSO: attaching XDP with guest GSO negotiated (TSO4,
	// TSO6, ECN, UFO) turns the guest's offloads off when
	// CTRL_GUEST_OFFLOADS is negotiated; before, it is refused ("can't
	// set XDP while host is implementing LRO"; 3f93522ffab2, read absent
	// at 4.10 and present at 4.15).
	XDPClearsGuestGSO bool
	// IOMMUCachingModeStrict: an emulated intel-iommu in caching mode
	// makes the guest's DMA domains strict, no flush queue
	// (29b32839725f "iommu/vt-d: Do not use flush-queue when
	// caching-mode is on", 5.11).
	IOMMUCachingModeStrict bool
	// PageToSKBBuild: page_to_skb builds the skb around the buffer
	// (build_skb) when the packet is longer than GOOD_COPY_LEN and leaves
	// room for skb_shared_info, instead of always copying the first bytes
	// into a small head (fb32856b16ad, 5.13).
	PageToSKBBuild bool
	// BigPacketsSizedToMTU: without guest GSO, big-mode buffers hold
	// DIV_ROUND_UP(mtu, PAGE_SIZE) pages, not MAX_SKB_FRAGS
	// (virtnet_set_big_packets, 6.1).
	BigPacketsSizedToMTU bool
	// CoalescePPRecycle: skb_try_coalesce refuses to merge a page_pool
	// skb with another kind (to->pp_recycle != from->pp_recycle,
	// 6a5bcd84e886, 5.14).
	CoalescePPRecycle bool
	// CoalesceClonedPPToPlain: a cloned page_pool skb may be coalesced
	// into a plain skb, not into a page_pool one (to->pp_recycle !=
	// (from->pp_recycle && !skb_cloned(from)), 1effe8ca4e34, 5.18).
	CoalesceClonedPPToPlain bool
	// CoalesceNoClonedPP: a cloned page_pool skb is never coalesced
	// (from->pp_recycle && skb_cloned(from) refuses, 0646dc31ca88, 6.3).
	CoalesceNoClonedPP bool
	// CoalescePPFragRef: a cloned page_pool skb is coalesced into a
	// page_pool one again, its frags taking page_pool references for the
	// clone (skb_pp_frag_ref, f7dc3248dcfb, 6.8).
	CoalescePPFragRef bool
	// PtrRingLocklessConsume: page_pool's refill consumes its ptr_ring
	// without the consumer lock (__ptr_ring_consume in
	// page_pool_refill_alloc_cache, 5.17).
	PtrRingLocklessConsume bool
	// TCPDeferFree: TCP hands an skb freed on another CPU back to the CPU
	// that allocated it (skb_attempt_defer_free, per-CPU lists and the
	// IPI: 68822bdf76f1, 5.19). 5.17 and 5.18 defer only to the socket
	// (f35f821935d8, sk->defer_list), which the reader frees at
	// release_sock on its own CPU: as before, for which CPU frees.
	TCPDeferFree bool
	// PCPFreeHigh: a CPU that only frees sends high-order pages to the
	// buddy under zone->lock (free_unref_page_commit's free_high, 5.19,
	// f26b3fa04611): once a free has drained the per-CPU list with no
	// allocation since (pcp->free_factor), every order 1..3 free empties it.
	PCPFreeHigh bool
	// PCPFreeCount: free_high is decided from pcp->free_count (pages freed
	// since the last allocations halved it) and PCPF_PREV_FREE_HIGH_ORDER
	// (the previous free was high-order too), and drains at most
	// batch << CONFIG_PCP_BATCH_SCALE_MAX pages (6ccdcb6d3a74, 6.7).
	PCPFreeCount bool
	// PCPFreeCountHighMin: free_high waits for free_count to reach
	// batch + high_min / 2 rather than batch (c544a952ba61, 6.16).
	PCPFreeCountHighMin bool
	// CpumapSKBRecycle: skbs the cpumap kthread builds from page_pool
	// frames are marked for recycling (skb_mark_for_recycle in
	// cpu_map_bpf_prog_run_xdp / __xdp_build_skb_from_frame, 6.4); before,
	// xdp_release_frame took the page out of its pool.
	CpumapSKBRecycle bool
	// NAPILocalSKB: an skb freed where skb_release_data knows it runs in
	// NAPI (napi_safe: napi_consume_skb with a budget, __napi_kfree_skb)
	// on the CPU whose poll list holds the pool's NAPI recycles into the
	// alloc cache (page_pool_return_skb_page with napi_safe &&
	// napi->list_owner == smp_processor_id(), 6.5; list_owner is -1 while
	// that NAPI is not scheduled).
	NAPILocalSKB bool
	// NAPILocalSKBSoftirq: any skb freed in softirq asks the same
	// question, napi_safe or not (napi_pp_put_page's napi_safe ||
	// in_softirq(), 4a36d0180c45, 6.6).
	NAPILocalSKBSoftirq bool
	// PageFragPremap: virtio_net premaps each page_frag block once for DMA
	// (virtnet_rq_alloc with struct virtnet_rq_dma at the block's head,
	// 6.6, in mergeable and small modes; off by default in 6.11, by
	// 111fc9f517cb "virtio_net: disable premapped mode by default", and on
	// again in 6.13, by 47008bb51c3e "virtio_net: enable premapped mode
	// for merge and small by default", applied to net-next on 5 November
	// 2024, after 6.12 had forked). 6.6 to 6.9 premapped only a queue that
	// uses the DMA API (virtqueue_set_dma_premapped refused one that does
	// not); the engine's ring mode always maps, so that holds there.
	PageFragPremap bool
	// NAPILocalAll: every put that the caller did not allow direct asks
	// page_pool_napi_local (in softirq, and pool->cpuid or the NAPI's
	// list_owner is this CPU): xdp_return_frame and the bulk return
	// included (page_pool_put_unrefed_netmem and
	// page_pool_put_netmem_bulk, 4a96a4e807c3 and 39806b96c89a, 6.10).
	NAPILocalAll bool
	// CpumapLocklessConsume: the cpumap kthread takes frames from its
	// ptr_ring without the consumer lock, as its single consumer
	// (cpu_map_kthread_run: __ptr_ring_consume from cpumap's first
	// release, 4.15; ptr_ring_consume_batched, which takes consumer_lock,
	// from 5.2, 77361825bb01; __ptr_ring_consume_batched again from 5.9).
	CpumapLocklessConsume bool
	// TCPScalingRatio: the receive window is the free socket memory scaled
	// by the payload-to-truesize ratio the socket measured
	// (tp->scaling_ratio, tcp_win_from_space; dfa2f0483360 "tcp: get rid
	// of sysctl_tcp_adv_win_scale", 6.6); before, half of it
	// (tcp_adv_win_scale 1).
	TCPScalingRatio bool
	// UDPDeferFree: UDP defers remote skb frees as TCP does (6.18).
	UDPDeferFree bool
	// SKBDeferMax128: sysctl_skb_defer_max defaults to 128, not 64
	// (b61785852ed0 "net: increase skb_defer_max default to 128", 6.19).
	SKBDeferMax128 bool
	// RefillRetryInNAPI: when virtnet_receive's refill fails to allocate,
	// it returns the whole budget so that NAPI is polled again at once
	// and the next poll retries (6.19, "virtio-net: don't schedule
	// delayed refill worker"); before, it scheduled refill_work, which
	// refills with GFP_KERNEL in process context and retries after HZ/2.
	RefillRetryInNAPI bool
	// VirtioNetPagePool: virtio_net allocates receive buffers from a
	// page_pool per queue in small and mergeable modes
	// (page_pool_alloc_frag(len + room), truesize len + room: the 2026
	// series, merged as its v11). Before it, a scenario with a page_pool
	// runs the 2023 series as posted: mergeable only; 2/5 takes a whole
	// page per buffer (page_pool_dev_alloc_pages) and still reports
	// truesize len + room; 3/5 (page_pool_frag) takes fragments.
	VirtioNetPagePool bool
	// NetRxActionRestart: net_rx_action, its own list done and nothing
	// to poll again, polls what was scheduled while it ran before it
	// returns (in_net_rx_action's goto start, 6.4); before, that waits
	// for __do_softirq's next pass.
	NetRxActionRestart bool
	// SoftirqBesideKsoftirqd: an interrupt's exit (invoke_softirq) and
	// local_bh_enable (do_softirq) run pending softirqs even while
	// ksoftirqd is runnable (d15121be7485, 6.5, reverting 4cd13c21b207
	// "softirq: Let ksoftirqd do its job" of 4.9); from 4.9 to 6.4 they
	// leave them to ksoftirqd (ksoftirqd_running).
	SoftirqBesideKsoftirqd bool
	// CpumapGRO: the cpumap kthread passes its skbs up through GRO
	// (gro_receive_skb; 4f8ab26a034f "bpf: cpumap: switch to GRO from
	// netif_receive_skb_list()", 6.15: not in 6.14, in 6.19); before,
	// netif_receive_skb_list, each skb alone.
	CpumapGRO bool
	// XDPClearsGuestCsum: virtnet_xdp_set refuses a program while
	// GUEST_CSUM is negotiated without CTRL_GUEST_OFFLOADS ("Can't set XDP
	// while host is implementing GRO_HW/CSUM"), and with it
	// virtnet_clear_guest_offloads turns GUEST_CSUM off too: the packets
	// a program passes reach the stack CHECKSUM_NONE, verified in
	// software (virtio-net: fail XDP set if guest csum is negotiated,
	// early 2019; read: not in 4.17, whose clear keeps GUEST_CSUM; in
	// 5.9.1).
	XDPClearsGuestCsum bool
	// XDPKeepsDataValid: receive_buf saves the header's flags before the
	// program runs, so a DATA_VALID the device still sets survives XDP
	// (6.10: not in 6.8, in 6.10).
	XDPKeepsDataValid bool
	// TCPDefaultRatioHalf: a TCP socket that has measured no packet
	// assumes half of its memory is payload (TCP_DEFAULT_SCALING_RATIO
	// 1 << (TCP_RMEM_TO_WIN_SCALE - 1): 6.10; 6.6 to 6.8 assume 1200 bytes
	// in SKB_TRUESIZE(4096), 65/256).
	TCPDefaultRatioHalf bool
	// TCPRcvbufGrow: dynamic right-sizing grows the buffer for twice what
	// was read in a round trip, plus the slow-start allowance, without the
	// 16-segment cushion (tcp_rcvbuf_grow: in 6.18.2, not in 6.14; 6.16),
	// and the receiver's RTT drops 0 ms timestamp samples, so a LAN's is
	// not held at a millisecond.
	TCPRcvbufGrow bool
	// TCPRmem32MB: tcp_rmem[2], the most TCP's receive buffer autotunes
	// to, defaults to 32 MiB (572be9bf9d0d "tcp: increase tcp_rmem[2] to
	// 32 MB", 6.16: tcp_init's max_rshare is 6 MiB in 6.14, 32 MiB in
	// 6.18); before, 6 MiB.
	TCPRmem32MB bool
	// EEVDF: the fair scheduler picks the eligible task with the earliest
	// virtual deadline (pick_eevdf, 147f3efaa241, 6.6); before, CFS ran
	// the task with the least vruntime.
	EEVDF bool
}

// Change is one row of the table: a behaviour, the release it shipped in,
// and, when it was switched off again, the release that did.
type Change struct {
	Name    string // Behaviours field
	From    Version
	Off, On Version // a window [Off, On) where it was off again (zero: none)
	// OffByDefault: in that window the code was there, switched off by
	// default; else the code itself did otherwise.
	OffByDefault bool
	What         string // one line, in the kernel's words
	Function     string // where it lives
}

// Changes is the table, oldest first.
func Changes() []Change {
	return []Change{
		{Name: "XDPClearsGuestGSO", From: Version{Major: 4, Minor: 15}, What: "attaching XDP with guest GSO negotiated turns the guest's offloads off through CTRL_GUEST_OFFLOADS instead of refusing", Function: "virtnet_xdp_set (drivers/net/virtio_net.c)"},
		{Name: "CpumapLocklessConsume", From: Version{Major: 4, Minor: 15}, Off: Version{Major: 5, Minor: 2}, On: Version{Major: 5, Minor: 9}, What: "the cpumap kthread consumes its ptr_ring without the consumer lock", Function: "cpu_map_kthread_run (kernel/bpf/cpumap.c)"},
		{Name: "XDPClearsGuestCsum", From: Version{Major: 5, Minor: 0}, What: "attaching XDP needs CTRL_GUEST_OFFLOADS when GUEST_CSUM is negotiated, and turns GUEST_CSUM off: passed packets are checksummed in software", Function: "virtnet_xdp_set (drivers/net/virtio_net.c)"},
		{Name: "IOMMUCachingModeStrict", From: Version{Major: 5, Minor: 11}, What: "an emulated intel-iommu in caching mode makes the guest's DMA unmaps strict: no flush queue", Function: "intel_iommu_init (drivers/iommu/intel/iommu.c)"},
		{Name: "PageToSKBBuild", From: Version{Major: 5, Minor: 13}, What: "page_to_skb builds the skb around the buffer when the packet leaves room for skb_shared_info", Function: "page_to_skb (drivers/net/virtio_net.c)"},
		{Name: "CoalescePPRecycle", From: Version{Major: 5, Minor: 14}, What: "skb_try_coalesce refuses to merge a page_pool skb with another kind", Function: "skb_try_coalesce (net/core/skbuff.c)"},
		{Name: "PtrRingLocklessConsume", From: Version{Major: 5, Minor: 17}, What: "page_pool's refill consumes its ptr_ring without the consumer lock", Function: "page_pool_refill_alloc_cache (net/core/page_pool.c)"},
		{Name: "CoalesceClonedPPToPlain", From: Version{Major: 5, Minor: 18}, What: "a cloned page_pool skb may be coalesced into a plain skb, not into a page_pool one", Function: "skb_try_coalesce (net/core/skbuff.c)"},
		{Name: "TCPDeferFree", From: Version{Major: 5, Minor: 19}, What: "TCP frees a remote skb on the CPU that allocated it", Function: "skb_attempt_defer_free (net/core/skbuff.c)"},
		{Name: "PCPFreeHigh", From: Version{Major: 5, Minor: 19}, What: "a free-only CPU sends high-order pages to the buddy under zone->lock", Function: "free_unref_page_commit (mm/page_alloc.c)"},
		{Name: "BigPacketsSizedToMTU", From: Version{Major: 6, Minor: 1}, What: "big-mode buffers without guest GSO hold DIV_ROUND_UP(mtu, PAGE_SIZE) pages", Function: "virtnet_set_big_packets (drivers/net/virtio_net.c)"},
		{Name: "CoalesceNoClonedPP", From: Version{Major: 6, Minor: 3}, What: "a cloned page_pool skb is never coalesced", Function: "skb_try_coalesce (net/core/skbuff.c)"},
		{Name: "CpumapSKBRecycle", From: Version{Major: 6, Minor: 4}, What: "skbs built from page_pool xdp_frames are marked for recycling", Function: "__xdp_build_skb_from_frame (net/core/xdp.c)"},
		{Name: "NetRxActionRestart", From: Version{Major: 6, Minor: 4}, What: "net_rx_action polls the instances scheduled while it ran before it returns", Function: "net_rx_action (net/core/dev.c)"},
		{Name: "NAPILocalSKB", From: Version{Major: 6, Minor: 5}, What: "skbs freed in NAPI (napi_safe) on the CPU that has the pool's NAPI scheduled recycle into the alloc cache", Function: "page_pool_return_skb_page (net/core/page_pool.c)"},
		{Name: "SoftirqBesideKsoftirqd", From: Version{Major: 6, Minor: 5}, What: "an interrupt's exit runs pending softirqs even while ksoftirqd is runnable", Function: "invoke_softirq (kernel/softirq.c)"},
		{Name: "EEVDF", From: Version{Major: 6, Minor: 6}, What: "the fair scheduler runs the eligible task with the earliest virtual deadline (EEVDF), not the least vruntime (CFS)", Function: "pick_eevdf (kernel/sched/fair.c)"},
		{Name: "NAPILocalSKBSoftirq", From: Version{Major: 6, Minor: 6}, What: "any skb freed in softirq asks whether the pool's NAPI is scheduled on this CPU, napi_safe or not", Function: "napi_pp_put_page (net/core/skbuff.c)"},
		{Name: "PageFragPremap", From: Version{Major: 6, Minor: 6}, Off: Version{Major: 6, Minor: 11}, On: Version{Major: 6, Minor: 13}, OffByDefault: true, What: "virtio_net premaps each page_frag block once for DMA", Function: "virtnet_rq_alloc (drivers/net/virtio_net.c)"},
		{Name: "TCPScalingRatio", From: Version{Major: 6, Minor: 6}, What: "the receive window is free socket memory scaled by the payload-to-truesize ratio measured, not half of it", Function: "tcp_win_from_space (include/net/tcp.h)"},
		{Name: "PCPFreeCount", From: Version{Major: 6, Minor: 7}, What: "free_high counts the pages freed since the last allocation and needs the previous free to be high-order too", Function: "free_unref_page_commit (mm/page_alloc.c)"},
		{Name: "CoalescePPFragRef", From: Version{Major: 6, Minor: 8}, What: "a cloned page_pool skb is coalesced into a page_pool one, its frags taking page_pool references", Function: "skb_pp_frag_ref (net/core/skbuff.c)"},
		{Name: "NAPILocalAll", From: Version{Major: 6, Minor: 10}, What: "every page_pool put checks NAPI locality, xdp_return_frame and bulk returns included", Function: "page_pool_napi_local (net/core/page_pool.c)"},
		{Name: "XDPKeepsDataValid", From: Version{Major: 6, Minor: 10}, What: "a device's DATA_VALID survives the XDP program: the driver saves the header's flags before it runs", Function: "receive_buf (drivers/net/virtio_net.c)"},
		{Name: "TCPDefaultRatioHalf", From: Version{Major: 6, Minor: 10}, What: "a TCP socket that has measured no packet takes half its memory as payload (TCP_DEFAULT_SCALING_RATIO), not 1200 bytes in a 4 KiB page's truesize", Function: "tcp_win_from_space (include/net/tcp.h)"},
		{Name: "CpumapGRO", From: Version{Major: 6, Minor: 15}, What: "the cpumap kthread passes its skbs up through GRO", Function: "cpu_map_kthread_run (kernel/bpf/cpumap.c)"},
		{Name: "TCPRcvbufGrow", From: Version{Major: 6, Minor: 16}, What: "receive-buffer autotuning asks for twice a round trip's reads plus the slow-start allowance, with no 16-segment cushion, and its RTT is no longer held at 1 ms", Function: "tcp_rcvbuf_grow (net/ipv4/tcp_input.c)"},
		{Name: "TCPRmem32MB", From: Version{Major: 6, Minor: 16}, What: "tcp_rmem[2], the receive buffer's autotuning limit, is 32 MiB, not 6 MiB", Function: "tcp_init (net/ipv4/tcp.c)"},
		{Name: "PCPFreeCountHighMin", From: Version{Major: 6, Minor: 16}, What: "free_high waits for batch + high_min / 2 pages freed without an allocation", Function: "free_frozen_page_commit (mm/page_alloc.c)"},
		{Name: "UDPDeferFree", From: Version{Major: 6, Minor: 18}, What: "UDP frees a remote skb on the CPU that allocated it", Function: "skb_attempt_defer_free (net/core/skbuff.c)"},
		{Name: "SKBDeferMax128", From: Version{Major: 6, Minor: 19}, What: "at most 128 skbs, not 64, wait on a CPU's defer list (sysctl_skb_defer_max)", Function: "skb_attempt_defer_free (net/core/skbuff.c)"},
		{Name: "RefillRetryInNAPI", From: Version{Major: 6, Minor: 19}, What: "a failed receive refill is retried by polling NAPI again, not by the delayed refill_work", Function: "virtnet_receive (drivers/net/virtio_net.c)"},
		{Name: "VirtioNetPagePool", From: Version{Major: 7, Minor: 0}, What: "virtio_net takes receive buffers from a page_pool per queue (page_pool_alloc_frag)", Function: "virtnet_rq_alloc (drivers/net/virtio_net.c)"},
	}
}

// Has reports whether the behaviour of c is on in v by default.
func (c Change) Has(v Version) bool {
	if v.Less(c.From) {
		return false
	}
	if c.Off != (Version{}) && v.AtLeast(c.Off) && v.Less(c.On) {
		return false
	}
	return true
}

// Behaviours returns what v does.
func (v Version) Behaviours() Behaviours {
	var b Behaviours
	for _, c := range Changes() {
		if !c.Has(v) {
			continue
		}
		switch c.Name {
		case "XDPClearsGuestGSO":
			b.XDPClearsGuestGSO = true
		case "IOMMUCachingModeStrict":
			b.IOMMUCachingModeStrict = true
		case "PageToSKBBuild":
			b.PageToSKBBuild = true
		case "BigPacketsSizedToMTU":
			b.BigPacketsSizedToMTU = true
		case "CoalescePPRecycle":
			b.CoalescePPRecycle = true
		case "CoalesceClonedPPToPlain":
			b.CoalesceClonedPPToPlain = true
		case "CoalesceNoClonedPP":
			b.CoalesceNoClonedPP = true
		case "CoalescePPFragRef":
			b.CoalescePPFragRef = true
		case "PtrRingLocklessConsume":
			b.PtrRingLocklessConsume = true
		case "TCPDeferFree":
			b.TCPDeferFree = true
		case "PCPFreeHigh":
			b.PCPFreeHigh = true
		case "PCPFreeCount":
			b.PCPFreeCount = true
		case "PCPFreeCountHighMin":
			b.PCPFreeCountHighMin = true
		case "CpumapSKBRecycle":
			b.CpumapSKBRecycle = true
		case "NAPILocalSKB":
			b.NAPILocalSKB = true
		case "NAPILocalSKBSoftirq":
			b.NAPILocalSKBSoftirq = true
		case "PageFragPremap":
			b.PageFragPremap = true
		case "NAPILocalAll":
			b.NAPILocalAll = true
		case "CpumapLocklessConsume":
			b.CpumapLocklessConsume = true
		case "TCPScalingRatio":
			b.TCPScalingRatio = true
		case "UDPDeferFree":
			b.UDPDeferFree = true
		case "SKBDeferMax128":
			b.SKBDeferMax128 = true
		case "RefillRetryInNAPI":
			b.RefillRetryInNAPI = true
		case "VirtioNetPagePool":
			b.VirtioNetPagePool = true
		case "NetRxActionRestart":
			b.NetRxActionRestart = true
		case "SoftirqBesideKsoftirqd":
			b.SoftirqBesideKsoftirqd = true
		case "EEVDF":
			b.EEVDF = true
		case "CpumapGRO":
			b.CpumapGRO = true
		case "XDPClearsGuestCsum":
			b.XDPClearsGuestCsum = true
		case "XDPKeepsDataValid":
			b.XDPKeepsDataValid = true
		case "TCPDefaultRatioHalf":
			b.TCPDefaultRatioHalf = true
		case "TCPRcvbufGrow":
			b.TCPRcvbufGrow = true
		case "TCPRmem32MB":
			b.TCPRmem32MB = true
		default:
			panic("kernel: Changes names an unknown behaviour " + c.Name)
		}
	}
	return b
}

// Between lists the changes whose default differs between a and b, in
// table order: what moving from a to b changes.
func Between(a, b Version) []Change {
	var out []Change
	for _, c := range Changes() {
		if c.Has(a) != c.Has(b) {
			out = append(out, c)
		}
	}
	return out
}
