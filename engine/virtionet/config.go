package virtionet

import (
	"ringlab/engine/device"
	"ringlab/engine/scenario"
)

// Config is what the driver takes from the scenario, decoded once
// (ConfigOf): the negotiated features and the mode they select, the rings,
// the buffer source, and the dated behaviours of the kernel it stands for.
// The driver reads only its Config, never the scenario.
type Config struct {
	Queues     int // queue pairs
	RingSize   int // entries of each receive ring
	TxRingSize int // entries of each send ring (XDP_TX)

	Mode        string // the receive mode virtnet_probe picks (scenario.Mode)
	NumSkbFrags int    // big_packets_num_skbfrags (virtnet_set_big_packets)
	// BigPackets is vi->big_packets (guest GSO, or a device MTU above
	// ETH_DATA_LEN), which also sizes mergeable_min_buf_len.
	BigPackets bool
	// DeviceMTU is the mtu read from the device's config space with
	// VIRTIO_NET_F_MTU, 0 without (dev->max_mtu is then ETH_MAX_MTU).
	DeviceMTU    int
	EventIdx     bool // VIRTIO_RING_F_EVENT_IDX
	IndirectDesc bool // VIRTIO_RING_F_INDIRECT_DESC

	Budget       int    // NAPI weight
	BufferSource string // scenario.Source*: page_frag, page, page_pool, page_pool_frag
	PoolOrder    int    // page_pool_params.order
	PoolSize     int    // page_pool's ptr_ring size, 0 for the ring size
	Premapped    bool   // page_pool maps its pages (PP_FLAG_DMA_MAP) instead of the ring each buffer
	XDPFrags     bool   // the XDP program declares multi-buffer support (xdp.frags)
	Stream       bool   // a stream workload: buffers carry their frame's number to the socket
	TCPStream    bool   // a tcp_stream: its frames are what GRO merges
	GRO          bool   // NETIF_F_GRO
	MTU          int    // the interface's MTU: longer frames are GSO frames, which GRO does not merge

	// Dated behaviours (kernel.Behaviours) of the kernel the driver is.
	PageToSKBBuild    bool // page_to_skb builds big-mode skbs around the first page (5.13+)
	VirtioNetPagePool bool // the driver allocates from page_pool (7.0)
	RefillRetryInNAPI bool // a failed refill returns the budget instead of queueing refill_work (6.19+)
	PageFragPremap    bool // page_frag blocks are mapped once (virtnet_rq_alloc, 6.6+, off in 6.11 and 6.12)

	Device device.Config // the host side of every queue; New sets its Mode to Mode
}

// ConfigOf is the driver's Config in scenario s.
func ConfigOf(s *scenario.Scenario) Config {
	b := s.Behaviours()
	c := Config{
		Queues:       s.Queues,
		RingSize:     s.RingSize,
		TxRingSize:   s.TxRingSize,
		Mode:         s.Mode(),
		NumSkbFrags:  s.BigPacketsNumSkbFrags(),
		BigPackets:   s.BigPackets(),
		DeviceMTU:    s.DeviceMTU(),
		EventIdx:     s.Features.EventIdx,
		IndirectDesc: s.Features.IndirectDesc,
		Budget:       s.Driver.Budget,
		BufferSource: s.Driver.BufferSource,
		PoolOrder:    s.Driver.PoolOrder,
		PoolSize:     s.Driver.PoolSize,
		Premapped:    s.Driver.DMA == scenario.DMAPremapped,
		Stream:       s.Traffic.Stream() != "",
		TCPStream:    s.Traffic.Kind == scenario.TrafficTCPStream,
		GRO:          s.Driver.GRO,
		MTU:          s.MTU,

		PageToSKBBuild:    b.PageToSKBBuild,
		VirtioNetPagePool: b.VirtioNetPagePool,
		RefillRetryInNAPI: b.RefillRetryInNAPI,
		PageFragPremap:    b.PageFragPremap,

		Device: device.ConfigOf(s),
	}
	if s.XDP != nil {
		c.XDPFrags = s.XDP.Frags
	}
	return c
}
