package virtionet

import (
	"fmt"

	"ringlab/engine/device"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/virtq"
)

// New is virtnet_probe and virtnet_open: it picks the receive mode from the
// negotiated features, creates the queues (and a page_pool per receive
// queue when the scenario asks for one), and fills every receive ring.
func New(env *Env, s *scenario.Scenario) (*Driver, error) {
	d := &Driver{
		env:         env,
		s:           s,
		mode:        s.Mode(),
		numSkbFrags: s.BigPacketsNumSkbFrags(),
		xdpEnabled:  env.Prog != nil,
		budget:      s.Driver.Budget,
	}
	d.mergeable = d.mode == scenario.ModeMergeable
	d.bigPackets = d.mode == scenario.ModeBig
	switch s.Driver.BufferSource {
	case scenario.SourcePageFrag:
		d.source = srcPageFrag
	case scenario.SourcePage:
		d.source = srcPage
	case scenario.SourcePagePool:
		d.source = srcPagePool
	default:
		d.source = srcPagePoolFrag
	}
	kb := s.Behaviours()
	d.poolFrags = d.source == srcPagePoolFrag || (d.source == srcPagePool && kb.VirtioNetPagePool)
	d.refillInNAPI = kb.RefillRetryInNAPI
	d.premapped = s.Driver.DMA == scenario.DMAPremapped
	d.nic = s.Device.Kind == scenario.DeviceNIC
	// Buffers own their page in big mode, with whole pages per buffer,
	// and with XDP from order-0 pool fragments: an XDP buffer (len + room
	// = PAGE_SIZE in mergeable mode, 2176 bytes in small) leaves no room
	// for a second one in its page.
	d.wholePage = d.bigPackets || d.source == srcPage || (d.source == srcPagePool && !d.poolFrags) ||
		(d.poolFrags && d.xdpEnabled)
	d.napiKind = env.Sim.Queue.RegisterArg("napi poll", "rx", d.napiPoll)
	d.landKind = env.Sim.Queue.RegisterArg("host lands frames", "rx", d.landing)
	d.irqKind = env.Sim.Queue.RegisterArg("rx interrupt", "rx", d.interrupt)
	d.refillKind = env.Sim.Queue.RegisterArg("refill_work", "cpu", d.refillWork)
	for i := 0; i < s.Queues; i++ {
		rq, err := d.newRQ(i)
		if err != nil {
			return nil, fmt.Errorf("virtio_net: rx queue %d: %w", i, err)
		}
		d.RQ = append(d.RQ, rq)
		vq, err := virtq.New(s.TxRingSize, virtq.Config{Name: fmt.Sprintf("output.%d", i), EventIdx: s.Features.EventIdx, IndirectDesc: s.Features.IndirectDesc})
		if err != nil {
			return nil, fmt.Errorf("virtio_net: tx queue %d: %w", i, err)
		}
		d.SQ = append(d.SQ, &SQ{Index: i, VQ: vq, Dev: device.NewTX(vq, s, &env.Sim.Costs)})
	}
	for _, rq := range d.RQ {
		rq.CPU.Begin(0)
		ok := rq.tryFillRecv() // GFP_KERNEL
		end := rq.CPU.End()
		if d.Err != nil {
			return nil, d.Err
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
	s := d.s
	env := d.env
	cpu := env.Sim.CPU(i % env.Sim.NumCPU())
	vq, err := virtq.New(s.RingSize, virtq.Config{
		Name: fmt.Sprintf("input.%d", i), EventIdx: s.Features.EventIdx,
		IndirectDesc: s.Features.IndirectDesc, Ctx: true, // virtio_net rx queues always have ctx
	})
	if err != nil {
		return nil, err
	}
	rq := &RQ{d: d, Index: i, CPU: cpu, VQ: vq, pages: mem.NoPage,
		bufs: make([]rxBuf, s.RingSize), xdpBuf: make([]byte, XDPHeadroom+device.WindowSize+ShinfoSize)}
	for j := range rq.bufs {
		rq.bufs[j].next = int32(j + 1)
		rq.bufs[j].page = mem.NoPage
	}
	rq.bufs[len(rq.bufs)-1].next = -1
	rq.Dev = device.NewRX(vq, s, i, &env.Sim.Costs)
	rq.minBufLen = d.mergeableMinBufLen()
	switch s.Driver.BufferSource {
	case scenario.SourcePageFrag:
		rq.frag, err = env.Mem.NewFragCache(i)
		if err != nil {
			return nil, err
		}
	case scenario.SourcePagePool, scenario.SourcePagePoolFrag:
		p := pagepool.Params{
			PoolSize: s.Driver.PoolSize,
			NAPICPU:  cpu.ID,
			NAPIID:   uint32(i + 1),
			Ifindex:  1,
			NID:      pagepool.NoNode,
		}
		if p.PoolSize == 0 {
			p.PoolSize = s.RingSize
		}
		if s.Driver.DMA == scenario.DMAPremapped {
			p.Flags = pagepool.DMAMap | pagepool.DMASyncDev
			p.DMA = env.DMA
			p.MaxLen = mem.PageSize
		}
		rq.Pool, err = env.Pools.New(p)
		if err != nil {
			return nil, err
		}
	}
	return rq, nil
}

// mergeableMinBufLen is mergeable_min_buf_len: enough that a ring full of
// buffers holds one maximum-size packet, and never below GOOD_PACKET_LEN.
func (d *Driver) mergeableMinBufLen() uint32 {
	packetLen := d.s.MTU
	if d.s.Features.GuestGSO {
		packetLen = 65535 // IP_MAX_MTU
	}
	bufLen := HdrLen + EthHlen + 4 + packetLen
	minBuf := (bufLen + d.s.RingSize - 1) / d.s.RingSize
	if minBuf < HdrLen {
		minBuf = HdrLen
	}
	minBuf -= HdrLen
	if minBuf < GoodPacketLen {
		minBuf = GoodPacketLen
	}
	return uint32(minBuf)
}

// Mode is the receive mode the driver picked.
func (d *Driver) Mode() string { return d.mode }

// NumSkbFrags is big_packets_num_skbfrags.
func (d *Driver) NumSkbFrags() int { return d.numSkbFrags }

// fail records the first internal error.
func (d *Driver) fail(err error) {
	if err != nil && d.Err == nil {
		d.Err = err
	}
}
