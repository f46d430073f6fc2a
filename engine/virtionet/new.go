package virtionet

import (
	"fmt"

	"ringlab/engine/device"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
	"ringlab/engine/virtq"
)

// New is virtnet_probe and virtnet_open: it takes the receive mode from
// the negotiated features, creates the queues (and a page_pool per receive
// queue when the config asks for one), and fills every receive ring.
// env.Traffic gives each receive queue's host its frames.
func New(env *Env, cfg Config) (*Driver, error) {
	if env.Traffic == nil {
		return nil, fmt.Errorf("virtio_net: no traffic for the receive queues (Env.Traffic)")
	}
	cfg.Device.Mode = cfg.Mode // the hosts see the driver's buffers
	s := &cfg
	d := &Driver{
		env:         env,
		cfg:         cfg,
		mode:        s.Mode,
		numSkbFrags: s.NumSkbFrags,
		xdpEnabled:  env.Prog != nil,
		xdpFrags:    s.XDPFrags,
		budget:      s.Budget,
	}
	d.mergeable = d.mode == scenario.ModeMergeable
	d.bigPackets = d.mode == scenario.ModeBig
	d.skbLead = int(d.headroom()) + HdrLen
	if !d.mergeable {
		d.skbLead += RxPad
	}
	if env.Prog != nil {
		d.constAct, d.constProg = env.Prog.ConstVerdict()
	}
	if h := d.headroom(); h != 0 {
		d.mrgRoom = uint32(skbDataAlign(int(h + ShinfoSize)))
	}
	d.buildBig = s.PageToSKBBuild
	switch s.BufferSource {
	case scenario.SourcePageFrag:
		d.source = srcPageFrag
	case scenario.SourcePage:
		d.source = srcPage
	case scenario.SourcePagePool:
		d.source = srcPagePool
	default:
		d.source = srcPagePoolFrag
	}
	d.poolFrags = d.source == srcPagePoolFrag || (d.source == srcPagePool && s.VirtioNetPagePool)
	d.refillInNAPI = s.RefillRetryInNAPI
	d.stream = s.Stream
	d.replay = env.Replay
	d.tcpStream = s.TCPStream
	d.premapped = s.Premapped
	// virtnet_rq_set_premapped (6.6 to 6.10) and its successor in 6.13
	// premap in small and mergeable modes, never big.
	d.fragPremap = s.PageFragPremap && d.source == srcPageFrag && s.Mode != scenario.ModeBig
	d.nic = s.Device.Kind != scenario.DeviceVhost // nic and vdpa: MMIO doorbells, MSI-X
	// A guest's interrupts are injected by KVM from an irqfd: vhost's
	// call eventfd, and a vDPA device's too, which signals it from the
	// host's interrupt handler (mlx5_vdpa_cq_comp, vhost_vdpa_virtqueue_cb)
	// because it offers no irq bypass (mlx5_get_vq_irq is -EOPNOTSUPP in
	// 6.0, so vhost_vdpa_setup_vq_irq registers no producer). Only a NIC
	// interrupts the kernel directly.
	d.injectedIRQ = s.Device.Kind != scenario.DeviceNIC
	// Buffers own their page in big mode, with whole pages per buffer,
	// and with XDP from order-0 pool fragments: an XDP buffer (len + room
	// = PAGE_SIZE in mergeable mode, 2176 bytes in small) leaves no room
	// for a second one in its page.
	d.wholePage = d.bigPackets || d.source == srcPage || (d.source == srcPagePool && !d.poolFrags) ||
		(d.poolFrags && d.xdpEnabled && s.PoolOrder == 0)
	if env.Softnet == nil {
		return nil, fmt.Errorf("virtio_net: no NET_RX to poll the queues in (Env.Softnet)")
	}
	d.napiKind = env.Sim.Queue.RegisterArg("napi poll", "rx", func(now sim.Time, arg uint64) {
		env.Softnet.PollEvent(now, d.napiBase+softnet.NAPIID(arg))
	})
	d.landKind = env.Sim.Queue.RegisterArg("host lands frames", "rx", d.landing)
	d.irqKind = env.Sim.Queue.RegisterArg("rx interrupt", "rx", d.interrupt)
	d.refillKind = env.Sim.Queue.RegisterArg("refill_work", "cpu", d.refillWork)
	q := env.Sim.Queue
	q.Cite(d.napiKind, "net_rx_action", "virtnet_poll", "virtnet_receive")
	q.Cite(d.irqKind, "vring_interrupt", "skb_recv_done")
	q.Cite(d.refillKind, "refill_work", "try_fill_recv")
	if !d.nic {
		// A hardware device (a NIC, a vDPA virtqueue) lands frames with no
		// kernel function: the host side is vhost-net's only.
		q.Cite(d.landKind, "handle_rx")
	}
	for i := 0; i < s.Queues; i++ {
		rq, err := d.newRQ(i)
		if err != nil {
			return nil, fmt.Errorf("virtio_net: rx queue %d: %w", i, err)
		}
		d.RQ = append(d.RQ, rq)
		// netif_napi_add: the queues' instances are consecutive.
		if n := env.Softnet.AddNAPI(rq.CPU.ID, d.budget, d, d.napiKind, uint64(i)); i == 0 {
			d.napiBase = n
		}
		vq, err := virtq.New(s.TxRingSize, virtq.Config{Name: fmt.Sprintf("output.%d", i), EventIdx: s.EventIdx, IndirectDesc: s.IndirectDesc})
		if err != nil {
			return nil, fmt.Errorf("virtio_net: tx queue %d: %w", i, err)
		}
		d.SQ = append(d.SQ, &SQ{Index: i, VQ: vq, Dev: device.NewTX(vq, s.Device, &env.Sim.Costs)})
	}
	for _, rq := range d.RQ {
		rq.CPU.Begin(0)
		ok := rq.tryFillRecv() // GFP_KERNEL
		end := rq.CPU.End()
		if err := env.Sim.Err(); err != nil {
			return nil, err
		}
		if !ok && !d.refillInNAPI {
			// "Make sure we have some buffers: if oom use wq" (before
			// 6.19; since, the first poll retries).
			d.scheduleRefill(rq.CPU.ID, end, 0)
		}
		d.scheduleNAPI(rq, 0) // virtnet_napi_enable: poll once in case buffers were used
	}
	return d, nil
}

func (d *Driver) newRQ(i int) (*RQ, error) {
	s := &d.cfg
	env := d.env
	cpu := env.Sim.CPU(i % env.Sim.NumCPU())
	// virtnet_find_vqs gives the receive queues a ctx unless they post
	// big buffers (!vi->big_packets || vi->mergeable_rx_bufs): small
	// buffers carry their XDP headroom in it, mergeable ones their
	// truesize and headroom. A queue with a ctx never uses indirect
	// descriptors (__vring_new_virtqueue: vq->indirect = INDIRECT_DESC &&
	// !context), so only big mode can.
	vq, err := virtq.New(s.RingSize, virtq.Config{
		Name: fmt.Sprintf("input.%d", i), EventIdx: s.EventIdx,
		IndirectDesc: s.IndirectDesc, Ctx: !d.bigPackets,
	})
	if err != nil {
		return nil, err
	}
	// Every big buffer has num_skbfrags + 2 > 1 entries, so with a queue
	// that may go indirect each one does (virtqueue_use_indirect).
	d.indirectBig = d.bigPackets && vq.Indirect()
	rq := &RQ{d: d, Index: i, CPU: cpu, VQ: vq, pages: mem.NoPage, freeDMA: -1, lastDMA: -1, napi: pagepool.NAPI{ListOwner: -1},
		gro:  skb.NewGRO(d.env.SKBs, d.env.Stack.Deliver, s.GRO, s.MTU+EthHlen),
		bufs: make([]rxBuf, s.RingSize), bufMaps: make([]bufMap, s.RingSize), xdpBuf: make([]byte, XDPHeadroom+device.WindowSize+ShinfoSize)}
	for j := range rq.bufs {
		rq.bufs[j].next = int32(j + 1)
		rq.bufs[j].page = mem.NoPage
	}
	rq.bufs[len(rq.bufs)-1].next = -1
	tr, err := env.Traffic(i)
	if err != nil {
		return nil, err
	}
	rq.Dev = device.NewRX(vq, s.Device, tr, &env.Sim.Costs)
	rq.minBufLen = d.mergeableMinBufLen()
	switch s.BufferSource {
	case scenario.SourcePageFrag:
		rq.frag, err = env.Mem.NewFrag(i)
		if err != nil {
			return nil, err
		}
		if d.fragPremap {
			// At most one block per posted buffer plus the current one
			// holds a mapping.
			rq.rqDMA = make([]rqDMA, s.RingSize+1)
			for j := range rq.rqDMA {
				rq.rqDMA[j] = rqDMA{page: mem.NoPage, next: int32(j + 1)}
			}
			rq.rqDMA[len(rq.rqDMA)-1].next = -1
			rq.freeDMA = 0
		}
	case scenario.SourcePagePool, scenario.SourcePagePoolFrag:
		p := pagepool.Params{
			Order:    s.PoolOrder,
			PoolSize: s.PoolSize,
			CPUID:    -1, // page_pool_create
			NAPIID:   uint32(i + 1),
			Ifindex:  1,
			NID:      pagepool.NoNode,
		}
		if d.nic || s.VirtioNetPagePool {
			// pp_params.napi = &rq->napi: the 2026 series links the pool
			// to the queue's NAPI, as the NIC drivers this device stands
			// for do (bnxt and mlx5 since 6.5). The 2023 series, as
			// posted, does not: no put is ever NAPI-local.
			p.NAPI = &rq.napi
		}
		if p.PoolSize == 0 {
			p.PoolSize = s.RingSize
		}
		if s.Premapped {
			p.Flags = pagepool.DMAMap | pagepool.DMASyncDev
			p.DMA = env.DMA
			p.MaxLen = mem.PageSize << s.PoolOrder
		}
		rq.Pool, err = env.Pools.New(p)
		if err != nil {
			return nil, err
		}
	}
	return rq, nil
}

// mergeableMinBufLen is mergeable_min_buf_len: enough that a ring full of
// buffers holds one packet of the largest size the device may send, and
// never below GOOD_PACKET_LEN. The largest packet is IP_MAX_MTU when
// vi->big_packets (guest GSO, or a device MTU above 1500: the kernel sets
// big_packets with MRG_RXBUF too), else dev->max_mtu: the device's MTU
// with VIRTIO_NET_F_MTU, ETH_MAX_MTU (65535) without, whatever MTU the
// guest runs at. (Since 4.11, d85b758f72b0; the 4.10 driver used
// GOOD_PACKET_LEN, which differs only for rings of 32 entries or fewer.)
func (d *Driver) mergeableMinBufLen() uint32 {
	const ipMaxMTU, ethMaxMTU = 65535, 65535 // IP_MAX_MTU, ETH_MAX_MTU
	packetLen := ethMaxMTU
	switch {
	case d.cfg.BigPackets:
		packetLen = ipMaxMTU
	case d.cfg.DeviceMTU != 0:
		packetLen = d.cfg.DeviceMTU
	}
	bufLen := HdrLen + EthHlen + 4 + packetLen // hdr_len + ETH_HLEN + VLAN_HLEN + packet_len
	minBuf := (bufLen + d.cfg.RingSize - 1) / d.cfg.RingSize
	if minBuf < HdrLen {
		minBuf = HdrLen
	}
	minBuf -= HdrLen
	if minBuf < GoodPacketLen {
		minBuf = GoodPacketLen
	}
	return uint32(minBuf)
}

// MinBufLen is rq->min_buf_len (mergeable_min_buf_len).
func (rq *RQ) MinBufLen() uint32 { return rq.minBufLen }

// Mode is the receive mode the driver picked.
func (d *Driver) Mode() string { return d.mode }

// FragPremapped reports whether buffers are carved from a premapped
// page_frag block (virtnet_rq_alloc, virtnet_rq_dma).
func (d *Driver) FragPremapped() bool { return d.fragPremap }

// PoolFrags reports whether buffers are fragments of page_pool pages
// (page_pool_alloc_frag).
func (d *Driver) PoolFrags() bool { return d.poolFrags }

// NumSkbFrags is big_packets_num_skbfrags.
func (d *Driver) NumSkbFrags() int { return d.numSkbFrags }

// fail records an internal error in the world's one sink (sim.Fail).
func (d *Driver) fail(err error) { d.env.Sim.Fail(err) }
