// Package scenario describes a simulation as plain data: topology,
// negotiated features, driver choices, XDP program, traffic and costs. A
// Scenario validates with errors that name the field and the reason, and
// decodes from JSON refusing unknown fields. It builds nothing: the engine
// builds a world from it. docs/scenario.md is the format.
//
// Knobs (knobs.go) is the one table of named settings, each with the
// consequences the kernel forces, which the page shows as its parameters.
// Set and Apply change a scenario by a knob's name or a field's JSON path
// (the page's parameters, the tutorials' set and `ringlab run --set`). A
// Recipe (recipe.go) is a preset or a whole scenario then changes in
// order, each spelled as --set takes it, in one text form (ParseRecipe,
// String) and a JSON form for rooms; Build names the change at fault
// (ChangeError). Links, rooms, tutorial steps and `ringlab run --set`
// all build their worlds through it. The package also holds the presets (presets.go, docs/presets.md), with the
// fields they fitted (Fitted), and the table of published results with
// each row's published mechanism (seeds.go, docs/published.md).
package scenario

import "ringlab/engine/kernel"

// Receive buffer sources, as virtio_net has had them.
const (
	SourcePageFrag     = "page_frag"      // order-3 page_frag carved into buffers (the pre-2026 default)
	SourcePage         = "page"           // one page from the page allocator per buffer
	SourcePagePool     = "page_pool"      // page_pool: fragments of len + room (7.0); one page per buffer before (the 2023 series' 2/5)
	SourcePagePoolFrag = "page_pool_frag" // page_pool fragments (the 2023 series' 3/5; on 7.0 as page_pool)
)

// DMA strategies.
const (
	DMARing      = "ring"      // the virtio core maps and unmaps every buffer
	DMAPremapped = "premapped" // page_pool maps a page once (PP_FLAG_DMA_MAP)
)

// Receive modes (derived, see Mode).
const (
	ModeSmall     = "small"
	ModeBig       = "big"
	ModeMergeable = "mergeable"
)

// Device kinds: the host side that fills the receive ring.
const (
	DeviceVhost = "vhost" // a host thread: kicks are VM exits, interrupts are injected
	DeviceNIC   = "nic"   // hardware: doorbells are MMIO writes, interrupts are MSI-X
	// DeviceVDPA is a virtqueue served by hardware (vDPA: a NIC's
	// firmware walks the guest's ring, as in R2's Mellanox setup): no host
	// thread and no host queue, frames are placed as the wire brings them
	// and a frame that finds no buffer is dropped. Doorbells and
	// interrupts as for a NIC.
	DeviceVDPA = "vdpa"
)

// When the device writes avail_event (with EVENT_IDX), device.avail_event.
const (
	// AvailEventSeen is vhost's rule: only when it finds no usable
	// buffer, with the avail index it has seen (vhost_enable_notify).
	AvailEventSeen = "seen"
	// AvailEventPop is virtqueue_split_pop's in QEMU with the queue's
	// notification on: last_avail_idx after every pop, and the seen index
	// when it runs out.
	AvailEventPop = "pop"
)

// Consumer contexts: where an skb passed up the stack is freed.
const (
	FreeSoftirq = "softirq" // in NET_RX softirq on the consuming CPU (GRO, early drop)
	FreeProcess = "process" // by an application thread (recvmsg); remote frees deferred to the allocating CPU
)

// Scenario is a complete description of a run.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Seed        uint64 `json:"seed"`
	// Kernel is the Linux release the guest runs ("6.4"): every dated
	// behaviour (engine/kernel) takes its branch from it. Empty is the
	// newest the engine models.
	Kernel string `json:"kernel,omitempty"`

	CPUs   int `json:"cpus"`   // guest CPUs
	Queues int `json:"queues"` // queue pairs; queue i runs its NAPI on CPU i mod cpus

	RingSize   int `json:"ring_size"`    // receive virtqueue entries (power of two, <= 32768)
	TxRingSize int `json:"tx_ring_size"` // send virtqueue entries
	MTU        int `json:"mtu"`

	Features Features `json:"features"`
	Driver   Driver   `json:"driver"`
	XDP      *XDP     `json:"xdp,omitempty"`
	Consumer Consumer `json:"consumer"`
	Traffic  Traffic  `json:"traffic"`
	Device   Device   `json:"device"`
	Next     *Next    `json:"next_device,omitempty"`
	Sysctl   Sysctl   `json:"sysctl"`
	Sched    Sched    `json:"sched"`
	Host     *Host    `json:"host,omitempty"`

	MemoryPages int `json:"memory_pages"` // guest memory in 4 KiB pages

	// Costs overrides entries of the cost table by name (ns).
	Costs map[string]int64 `json:"costs,omitempty"`
	// CostNotes says why this scenario overrides costs.
	CostNotes string `json:"cost_notes,omitempty"`
	// Fitted lists the fields whose values were chosen so that one
	// published result comes out (a cost override, a consumer cost, a
	// piece of setup the measured machine is not known to have had): they
	// are fitted, not sourced. `ringlab reproduce` counts them against
	// that result; a set of the field drops its entry.
	Fitted []Fit `json:"fitted,omitempty"`
}

// Sysctl is the guest's net.core sysctls that decide how long NET_RX
// runs before it stops (net_rx_action).
type Sysctl struct {
	// NetdevBudget is net.core.netdev_budget: packets one net_rx_action
	// round polls, over all its NAPI instances, before it stops
	// (time_squeeze).
	NetdevBudget int `json:"netdev_budget"`
	// NetdevBudgetUsecs is net.core.netdev_budget_usecs: a round's time
	// limit, counted in whole jiffies; 0 is the kernel's default,
	// 2 * USEC_PER_SEC / HZ (two jiffies).
	NetdevBudgetUsecs int `json:"netdev_budget_usecs,omitempty"`
}

// Sched is the guest's scheduler: its tick and the fair scheduler's
// tunables. A tunable left at 0 takes the kernel's default for the CPU
// count (its base value times 1 + ilog2(min(cpus, 8))).
type Sched struct {
	// HZ is CONFIG_HZ: 100, 250, 300 or 1000. It sets the jiffy that
	// MAX_SOFTIRQ_TIME, netdev_budget_usecs, the scheduler's slices and
	// TCP's timers count in.
	HZ int `json:"hz"`
	// CFS (until 6.5): sched_latency_ns, sched_min_granularity_ns and
	// sched_wakeup_granularity_ns (debugfs sched/ since 5.13).
	LatencyNs           int64 `json:"latency_ns,omitempty"`
	MinGranularityNs    int64 `json:"min_granularity_ns,omitempty"`
	WakeupGranularityNs int64 `json:"wakeup_granularity_ns,omitempty"`
	// BaseSliceNs is EEVDF's base_slice_ns (6.6+).
	BaseSliceNs int64 `json:"base_slice_ns,omitempty"`
}

// Host is where the guest's threads run on the host: each vCPU's thread
// and each queue's vhost worker on a host CPU. Left empty, every one has
// a host CPU of its own, so none waits for another.
type Host struct {
	// VCPUs is the host CPU of guest CPU i's vCPU thread; empty: i.
	VCPUs []int `json:"vcpus,omitempty"`
	// Vhost is the host CPU of queue i's vhost worker; empty: one no vCPU
	// uses. A worker on a vCPU's host CPU takes that CPU from the guest
	// whenever it handles a frame.
	Vhost []int `json:"vhost,omitempty"`
}

// MaxHostCPUs bounds a host CPU's number.
const MaxHostCPUs = 1024

// VCPUHostCPU is the host CPU guest CPU i's vCPU runs on.
func (s *Scenario) VCPUHostCPU(i int) int {
	if s.Host != nil && i < len(s.Host.VCPUs) {
		return s.Host.VCPUs[i]
	}
	return i
}

// VhostSharesVCPU is the guest CPU whose vCPU shares queue q's vhost
// worker's host CPU, and whether there is one.
func (s *Scenario) VhostSharesVCPU(q int) (int, bool) {
	if s.Host == nil || q >= len(s.Host.Vhost) {
		return 0, false
	}
	for i := 0; i < s.CPUs; i++ {
		if s.VCPUHostCPU(i) == s.Host.Vhost[q] {
			return i, true
		}
	}
	return 0, false
}

// TCPRcvbufStart is a TCP socket's sk_rcvbuf when the connection starts,
// and whether it is locked: tcp_rmem[1], which dynamic right-sizing
// grows toward Rcvbuf (tcp_rmem[2]); or the scenario's own buffer
// (consumer.rcvbuf_bytes, SO_RCVBUF), which nothing grows
// (SOCK_RCVBUF_LOCK).
func (s *Scenario) TCPRcvbufStart() (rcvbuf int, locked bool) {
	if n := s.Consumer.RcvbufBytes; n > 0 {
		return n, true
	}
	return min(TCPRmemDefault, s.Rcvbuf()), false
}

// UsesDMAAPI reports whether the guest maps buffers through the DMA API
// for the device: a hardware NIC's driver always does; virtio only with
// VIRTIO_F_ACCESS_PLATFORM (vring_use_dma_api).
func (s *Scenario) UsesDMAAPI() bool {
	return s.Device.Kind == DeviceNIC || s.Features.AccessPlatform
}

// RxCsumValidated reports whether the packets reaching the stack carry
// the device's checksum verdict (DATA_VALID: CHECKSUM_UNNECESSARY), so
// the stack checksums nothing in software: GUEST_CSUM negotiated, and no
// XDP program that turned it off (XDPClearsGuestCsum, from 5.0) on a
// kernel that loses the verdict under XDP (XDPKeepsDataValid, 6.10). From
// 6.10 the engine takes the host to keep setting DATA_VALID for frames it
// validated (tun's virtio_net_hdr_from_skb does, for a frame off a NIC
// that checked it) even with the offload off.
func (s *Scenario) RxCsumValidated() bool {
	if !s.Features.GuestCsum {
		return false
	}
	if s.XDP == nil || s.Device.Kind == DeviceNIC {
		return true
	}
	b := s.Behaviours()
	return !b.XDPClearsGuestCsum || b.XDPKeepsDataValid
}

// Fit declares one field of a scenario fitted on a published result.
type Fit struct {
	Field  string `json:"field"`  // the field's JSON path: costs.dma_map_iommu, consumer.cost_ns
	Result string `json:"result"` // the published result it was fitted on: R1..R4
	Row    string `json:"row"`    // the row of that result (its preset) whose figure it was fitted to
	Why    string `json:"why"`    // what the value makes come out, and what it rests on
}

// Features are the negotiated virtio feature bits that decide how the driver
// receives.
type Features struct {
	MrgRxbuf          bool `json:"mrg_rxbuf"`           // VIRTIO_NET_F_MRG_RXBUF
	GuestGSO          bool `json:"guest_gso"`           // any of GUEST_TSO4/TSO6/UFO/USO
	CtrlGuestOffloads bool `json:"ctrl_guest_offloads"` // VIRTIO_NET_F_CTRL_GUEST_OFFLOADS
	EventIdx          bool `json:"event_idx"`           // VIRTIO_RING_F_EVENT_IDX
	IndirectDesc      bool `json:"indirect_desc"`       // VIRTIO_RING_F_INDIRECT_DESC
	// GuestCsum is VIRTIO_NET_F_GUEST_CSUM: the device validated the
	// checksums (virtio_net_hdr's DATA_VALID: CHECKSUM_UNNECESSARY);
	// without it the guest's stack verifies every byte itself.
	GuestCsum bool `json:"guest_csum"`
	// AccessPlatform is VIRTIO_F_ACCESS_PLATFORM: the device goes through
	// the platform's DMA translation, so the guest's virtio core uses the
	// DMA API (vring_use_dma_api); without it (QEMU's default,
	// iommu_platform=off) the ring passes guest-physical addresses and
	// maps, unmaps and syncs nothing. vDPA hardware negotiates it; a
	// device.kind nic is a real NIC, whose driver always maps.
	AccessPlatform bool `json:"access_platform"`
	// MTU is VIRTIO_NET_F_MTU: the device reports the scenario's MTU in
	// its config space, and virtnet_probe reads it (dev->mtu = dev->max_mtu
	// = mtu; virtnet_set_big_packets(vi, mtu)). Without it virtnet_probe
	// sees no MTU (the guest sets one later with ip link): max_mtu stays
	// ETH_MAX_MTU (65535) and an MTU above 1500 does not choose big mode.
	MTU bool `json:"mtu"`
}

// Driver holds the driver's choices, and what else listens on the device.
//
// CloneSKBs: a packet socket listens (packet_rcv: no mmap ring, a filter
// that takes every packet) and clones each skb before the protocol sees
// it. The effect is on a TCP socket's receive queue, which cannot merge a
// new skb into a cloned tail (skb_try_coalesce): with a process consumer
// and TCP traffic every skb stays on its own there. The driver's own
// coalescing of buffers (skb_can_coalesce) is unaffected.
type Driver struct {
	BufferSource string `json:"buffer_source"` // page_frag, page, page_pool, page_pool_frag
	DMA          string `json:"dma"`           // ring or premapped
	IOMMU        bool   `json:"iommu"`         // DMA through an IOMMU
	PoolSize     int    `json:"pool_size"`     // ptr_ring size; 0 = ring size
	CloneSKBs    bool   `json:"clone_skbs"`    // a packet socket listens: TCP's receive queue cannot coalesce
	Budget       int    `json:"napi_budget"`   // NAPI weight, 64
	// PoolOrder is the page_pool's page order (page_pool_params.order):
	// 0, or 3 (SKB_FRAG_PAGE_ORDER, 32 KiB pages split into fragments,
	// as the 2023 series' 3/5 created its pool) with page_pool_frag.
	PoolOrder int `json:"pool_order,omitempty"`
	// GRO is NETIF_F_GRO (ethtool -K gro): NAPI merges a TCP stream's
	// frames into larger skbs before the protocol sees them.
	GRO bool `json:"gro"`
	// VIOMMU says the IOMMU is the one a guest has: QEMU's emulated
	// intel-iommu. Every IOTLB invalidation the guest submits exits to
	// QEMU (cost viommu_exit), and vhost translates each descriptor
	// through its own IOTLB, asking QEMU for a mapping it has not seen
	// (vhost_iotlb_hit, vhost_iotlb_miss). Needs iommu. Without it
	// iommu costs what a bare-metal IOMMU does.
	VIOMMU bool `json:"viommu,omitempty"`
	// IOMMUCachingMode is QEMU's intel-iommu caching-mode=on (viommu):
	// every new mapping is flushed too, and from 5.11 the guest turns
	// strict (29b32839725f).
	IOMMUCachingMode bool `json:"iommu_caching_mode,omitempty"`
	// IOMMUStrict is iommu.strict=1 (viommu): every unmap flushes;
	// otherwise (x86's default) the flush queue flushes 255 at once.
	IOMMUStrict bool `json:"iommu_strict,omitempty"`
}

// XDP is the program attached to every receive queue.
type XDP struct {
	Program string            `json:"program"`          // library name (xdp_drop, xdp_redirect_cpu, ...)
	Args    map[string]string `json:"args,omitempty"`   // program parameters (cpu, mode, port, ifindex ...)
	Frags   bool              `json:"frags,omitempty"`  // program declares multi-buffer support
	Object  string            `json:"object,omitempty"` // path of a compiled ELF object instead of Program (CLI only)

	CpumapQsize int   `json:"cpumap_qsize,omitempty"` // ptr_ring size per target CPU
	CpumapCPUs  []int `json:"cpumap_cpus,omitempty"`  // CPUs a cpumap redirects to
}

// Consumer is the application side: what happens to skbs passed up.
type Consumer struct {
	CPU     int    `json:"cpu"`     // -1: the CPU that received the packet
	Context string `json:"context"` // softirq or process
	CostNs  int64  `json:"cost_ns"` // stack + application cost per packet
	// RcvbufBytes is the receiving socket's sk_rcvbuf for the stream
	// workloads (its memory is counted in truesize, as sk_rmem_alloc is);
	// 0 takes the protocol's: TCP's receive buffer autotuned to
	// tcp_rmem[2] (6 MiB), UDP's net.core.rmem_default (212992).
	RcvbufBytes int `json:"rcvbuf_bytes,omitempty"`
}

// Traffic kinds: what sends the frames.
const (
	// TrafficOpen is an open-loop generator, as pktgen is: a rate (or a
	// line rate, or as fast as the device goes), sizes, bursts.
	TrafficOpen = "open"
	// TrafficTCPStream is an iperf3-like bulk TCP sender (engine/transport):
	// frames leave as its congestion window and the receiver's window
	// allow, clocked by the receiver's ACKs over rtt_us.
	TrafficTCPStream = "tcp_stream"
	// TrafficUDPStream is netperf's UDP_STREAM: datagrams of
	// message_bytes, open loop, into a UDP socket that drops what its
	// receive buffer cannot hold.
	TrafficUDPStream = "udp_stream"
)

// Stream defaults: iperf3's TCP write size (-l, 128 KiB) and a round trip
// between two hosts on one switch.
const (
	DefaultWriteBytes = 128 << 10
	DefaultRTTUs      = 50
	TCPRmemDefault    = 131072   // tcp_rmem[1]: a TCP socket's sk_rcvbuf before autotuning grows it
	TCPRmemMax        = 6 << 20  // tcp_rmem[2] until 6.15
	TCPRmemMax616     = 32 << 20 // tcp_rmem[2] from 6.16 (kernel.Behaviours.TCPRmem32MB)
	UDPRmemDefault    = 212992   // net.core.rmem_default
)

// Traffic is what the device receives from the outside.
type Traffic struct {
	// Kind is open (the default), tcp_stream or udp_stream.
	Kind    string  `json:"kind,omitempty"`
	RatePPS float64 `json:"rate_pps"` // 0 = as fast as the device goes
	Size    int     `json:"size"`     // Ethernet frame size in bytes (no FCS)
	Sizes   []int   `json:"sizes,omitempty"`
	Flows   int     `json:"flows"` // distinct 5-tuples; flow f goes to queue f mod queues
	Proto   string  `json:"proto"` // udp or tcp
	IPv6    bool    `json:"ipv6"`
	Burst   int     `json:"burst,omitempty"` // packets sent back to back at each arrival
	// GSOSize, when non-zero, sends TCP segments of this size as one
	// packet (host GSO with guest GSO negotiated).
	GSOSize int `json:"gso_size,omitempty"`
	DstPort int `json:"dst_port,omitempty"`
	// RandomSizes draws each frame's size from Sizes with the scenario's
	// seeded generator instead of cycling through them (repeat a size in
	// the list to weight it).
	RandomSizes bool `json:"random_sizes,omitempty"`
	// LineGbps, instead of RatePPS, sends at this line rate: frames plus
	// the 24 bytes of preamble, FCS and inter-frame gap each takes on the
	// wire, at the mean frame size.
	LineGbps float64 `json:"line_gbps,omitempty"`
	// RTTUs is tcp_stream's round trip outside the receiver, in µs: the
	// wire both ways and the sender (default 50).
	RTTUs float64 `json:"rtt_us,omitempty"`
	// WriteBytes is tcp_stream's write size (iperf3 -l; default 128 KiB).
	// Each write costs the sender tcp_sendmsg (cost tcp_sendmsg): large
	// writes outrun any window, small ones can be what limits the
	// stream, and then what the receiver gets is what Nagle and
	// autocorking make of them (engine/transport's fill): single
	// segments, or a TX completion's worth.
	WriteBytes int `json:"write_bytes,omitempty"`
	// NoDelay is tcp_stream's TCP_NODELAY on the sender (iperf3 -N): no
	// Nagle, so a short segment goes as soon as a write is pushed.
	NoDelay bool `json:"nodelay,omitempty"`
	// MessageBytes is udp_stream's datagram payload (netperf -m; default
	// the MTU less the IP and UDP headers).
	MessageBytes int `json:"message_bytes,omitempty"`
}

// Stream is the kind of a stream workload: TrafficTCPStream or
// TrafficUDPStream, or "" for open traffic.
func (t *Traffic) Stream() string {
	if t.Kind == TrafficTCPStream || t.Kind == TrafficUDPStream {
		return t.Kind
	}
	return ""
}

// TCPFrame is how a Linux sender segments a tcp_stream for this
// scenario: the MSS (the MTU less the IP and TCP headers and the 12
// bytes of timestamps option, as tcp_mss_to_mtu leaves it), the headers
// of each frame (Ethernet, IP, TCP with timestamps), and the segments one
// frame may carry: with guest GSO negotiated on a vhost device the host
// hands the guest whole TSO/GSO packets of up to 64 KiB (GSO_MAX_SIZE of
// IP packet); a NIC or a vDPA virtqueue gets them off the wire, one
// segment each.
func (s *Scenario) TCPFrame() (mss, hdr, maxSegs int) {
	ip := 20
	if s.Traffic.IPv6 {
		ip = 40
	}
	const tcpHdr = 20 + 12
	mss = s.MTU - ip - tcpHdr
	hdr = 14 + ip + tcpHdr
	maxSegs = 1
	// With XDP attached the guest's offloads are off (virtnet_xdp_set
	// refuses XDP while they are on, or clears them with
	// CTRL_GUEST_OFFLOADS): no GSO frame reaches it.
	if s.Features.GuestGSO && s.Device.Kind == DeviceVhost && s.XDP == nil {
		maxSegs = (65536 - ip - tcpHdr) / mss
	}
	return mss, hdr, maxSegs
}

// UDPFrame is udp_stream's frame: message_bytes of payload (the MTU less
// the IP and UDP headers when 0) with its Ethernet, IP and UDP headers.
func (s *Scenario) UDPFrame() (payload, frame int) {
	ip := 20
	if s.Traffic.IPv6 {
		ip = 40
	}
	payload = s.Traffic.MessageBytes
	if payload == 0 {
		payload = s.MTU - ip - 8
	}
	return payload, payload + 14 + ip + 8
}

// Rcvbuf is the receiving socket's sk_rcvbuf in bytes
// (Consumer.RcvbufBytes, or the protocol's default).
func (s *Scenario) Rcvbuf() int {
	if n := s.Consumer.RcvbufBytes; n > 0 {
		return n
	}
	if s.Traffic.Kind == TrafficUDPStream || (s.Traffic.Stream() == "" && s.Traffic.Proto == "udp") {
		return UDPRmemDefault
	}
	if s.Behaviours().TCPRmem32MB {
		return TCPRmemMax616
	}
	return TCPRmemMax
}

// WireOverhead is what an Ethernet frame costs on the wire beyond its
// bytes without FCS: preamble and SFD (8), FCS (4), inter-frame gap (12).
const WireOverhead = 24

// MeanSize is the mean frame size of the traffic.
func (t *Traffic) MeanSize() float64 {
	if len(t.Sizes) == 0 {
		return float64(t.Size)
	}
	sum := 0
	for _, n := range t.Sizes {
		sum += n
	}
	return float64(sum) / float64(len(t.Sizes))
}

// PPS is the packet rate asked for: RatePPS, or the rate LineGbps gives;
// 0 means as fast as the device goes.
func (t *Traffic) PPS() float64 {
	if t.LineGbps > 0 {
		return t.LineGbps * 1e9 / (8 * (t.MeanSize() + WireOverhead))
	}
	return t.RatePPS
}

// Device is the host side.
type Device struct {
	Kind string `json:"kind"` // vhost, nic or vdpa
	// MaxPPS caps the device's own packet rate (0: only its cost table).
	MaxPPS float64 `json:"max_pps,omitempty"`
	// Backlog is how many packets the host queues while the ring is empty
	// before it drops (tap txqueuelen, NIC FIFO). A vdpa device has none.
	Backlog int `json:"backlog"`
	// AvailEvent is when the device writes avail_event, the index past
	// which the driver kicks: "seen" (vhost) or "pop" (QEMU's
	// virtqueue_split_pop with notifications on). Without EVENT_IDX it
	// plays no part.
	AvailEvent string `json:"avail_event"`
}

// Next is the device XDP_REDIRECT sends to through a devmap.
type Next struct {
	MaxPPS        float64 `json:"max_pps"`        // its transmit rate
	RingSize      int     `json:"ring_size"`      // its TX ring
	CompletionCPU int     `json:"completion_cpu"` // -1: the redirecting CPU
}

// Mode returns the receive mode the driver picks from the features, as
// virtnet_probe does: mergeable with MRG_RXBUF, big with big packets
// (BigPackets), small otherwise.
func (s *Scenario) Mode() string {
	switch {
	case s.Features.MrgRxbuf:
		return ModeMergeable
	case s.BigPackets():
		return ModeBig
	default:
		return ModeSmall
	}
}

// ETHDataLen is ETH_DATA_LEN, the MTU above which a device's MTU asks for
// big packets.
const ETHDataLen = 1500

// DeviceMTU is the mtu virtnet_probe reads from the device's config space:
// the scenario's MTU with VIRTIO_NET_F_MTU, 0 without.
func (s *Scenario) DeviceMTU() int {
	if s.Features.MTU {
		return s.MTU
	}
	return 0
}

// BigPackets is vi->big_packets as virtnet_set_big_packets (and before 6.1
// virtnet_probe) sets it: guest GSO negotiated, or a device MTU above
// ETH_DATA_LEN. It holds with MRG_RXBUF too, where it only sizes
// mergeable_min_buf_len; the receive mode is big only without MRG_RXBUF.
func (s *Scenario) BigPackets() bool {
	return s.Features.GuestGSO || s.DeviceMTU() > ETHDataLen
}

// KernelVersion is the kernel the scenario runs: Kernel parsed, the newest
// when empty (Validate refuses one that does not parse).
func (s *Scenario) KernelVersion() kernel.Version {
	if v, err := kernel.Parse(s.Kernel); err == nil {
		return v
	}
	return kernel.Default
}

// Behaviours are the dated behaviours of the scenario's kernel.
func (s *Scenario) Behaviours() kernel.Behaviours { return s.KernelVersion().Behaviours() }

// BigPacketsNumSkbFrags is virtnet_set_big_packets: MAX_SKB_FRAGS when
// guest GSO is negotiated (virtnet_check_guest_gso: TSO4, TSO6, ECN, UFO,
// USO as negotiated; VIRTIO_NET_F_CTRL_GUEST_OFFLOADS plays no part, "if
// GSO has been negotiated then it has been enabled, even if disabled at
// runtime"), else, since 6.1 (the 9k MTU fix), enough pages for one
// MTU-sized packet, DIV_ROUND_UP(mtu, PAGE_SIZE) with the device's mtu;
// before 6.1 always MAX_SKB_FRAGS. A big buffer is this many pages plus
// the first (num_skbfrags + 1 pages, num_skbfrags + 2 descriptors).
func (s *Scenario) BigPacketsNumSkbFrags() int {
	const maxSkbFrags = 17
	if s.Features.GuestGSO || !s.Behaviours().BigPacketsSizedToMTU {
		return maxSkbFrags
	}
	return (s.DeviceMTU() + 4096 - 1) / 4096
}

// NumSizes is the number of distinct frame sizes the traffic uses.
func (t *Traffic) NumSizes() int {
	if len(t.Sizes) > 0 {
		return len(t.Sizes)
	}
	return 1
}

// SizeAt returns the frame size of packet n.
func (t *Traffic) SizeAt(n uint64) int {
	if len(t.Sizes) > 0 {
		return t.Sizes[n%uint64(len(t.Sizes))]
	}
	return t.Size
}
