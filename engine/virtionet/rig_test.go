package virtionet

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
	"ringlab/engine/xdp"
)

// The driver built with the least around it: a sim.Sim, memory, the page
// pools, the skb and frame pools, a softirq stack, a releaser standing in
// for the world's, and a device fed by a traffic generator, or none, in
// which case the test is the device and writes used entries itself.

// testConfig is a driver of one queue pair of ring entries in mode,
// taking buffers from page_frag on a vhost device: what ConfigOf gives
// for such a scenario, written out.
func testConfig(mode string, ring int) Config {
	return Config{
		Queues: 1, RingSize: ring, TxRingSize: ring,
		Mode: mode, NumSkbFrags: 17, DeviceMTU: 1500,
		EventIdx: true, Budget: 64,
		BufferSource: scenario.SourcePageFrag,
		Device:       device.Config{Kind: scenario.DeviceVhost, Backlog: 1000},
	}
}

// releaser is the world's Release without the NAPI-local rules: a pool
// page marked for recycling goes back to its page_pool (into the alloc
// cache only when the put is direct), any other page to the page
// allocator (put_page). It counts both.
type releaser struct {
	mem      *mem.Mem
	pools    *pagepool.Registry
	poolPuts int // puts into a page_pool
	direct   int // of which with allow_direct
	pagePuts int // put_page
}

func (r *releaser) Release(c *sim.CPU, page mem.PageID, pp bool, ctx skb.Context) error {
	h := r.mem.Head(page)
	pg := r.mem.Page(h)
	if pp && pg.PP >= 0 && pg.PPMagic == pagepool.Signature {
		r.poolPuts++
		if ctx.Direct {
			r.direct++
		}
		return r.pools.Lookup(pg.PP).Put(c, h, pagepool.SyncFull, ctx.Direct, pagepool.Process)
	}
	r.pagePuts++
	_, err := r.mem.PutPage(c, h)
	return err
}

func (r *releaser) ReleasePoolPage(c *sim.CPU, page mem.PageID) error {
	h := r.mem.Head(page)
	return r.pools.Lookup(r.mem.Page(h).PP).ReleasePage(c, h)
}

// rigOpts are what a rig adds to the driver's Config.
type rigOpts struct {
	cpus    int               // default 1
	pages   int               // memory, default 1<<14 pages
	traffic *scenario.Traffic // nil: no frames; the test writes used entries (use)
	prog    *bpf.CollectionSpec
	// before runs after memory is built and before the driver is.
	before func(r *rig)
}

type rig struct {
	t      *testing.T
	sim    *sim.Sim
	mem    *mem.Mem
	pools  *pagepool.Registry
	skbs   *skb.Pool
	frames *xdp.FramePool
	stack  *skb.Stack
	rel    *releaser
	cpumap *xdp.Cpumap
	d      *Driver
}

func newRig(t *testing.T, cfg Config, o rigOpts) *rig {
	t.Helper()
	if o.cpus == 0 {
		o.cpus = 1
	}
	if o.pages == 0 {
		o.pages = 1 << 14
	}
	r := &rig{t: t}
	var err error
	r.sim, err = sim.New(o.cpus, sim.DefaultCosts())
	require.NoError(t, err)
	mc := mem.DefaultConfig()
	mc.Pages = o.pages
	r.mem, err = mem.New(r.sim, mc)
	require.NoError(t, err)
	dma := r.mem.NewDMA(false)
	r.pools, err = pagepool.NewRegistry(r.mem)
	require.NoError(t, err)
	r.skbs = skb.NewPool(4096)
	r.frames = xdp.NewFramePool(4096)
	r.rel = &releaser{mem: r.mem, pools: r.pools}
	net := softnet.New(r.sim, softnet.Config{})
	r.stack = skb.NewStack(r.sim, net, r.skbs, r.rel, skb.StackConfig{CPU: -1, Cost: 100})
	env := &Env{Sim: r.sim, Mem: r.mem, DMA: dma, Pools: r.pools, SKBs: r.skbs, Frames: r.frames,
		Stack: r.stack, Softnet: net, Releaser: r.rel,
		Clock: bpf.ClockFunc(func() uint64 { return uint64(r.sim.Now()) })}
	spec := scenario.Traffic{} // no flows: the host lands nothing
	if o.traffic != nil {
		spec = *o.traffic
	}
	env.Traffic = func(q int) (*device.Traffic, error) { return device.NewTraffic(spec, q, cfg.Queues, 1), nil }
	if o.prog != nil {
		coll, err := bpf.NewCollection(o.prog, bpf.Options{NumCPU: o.cpus})
		require.NoError(t, err)
		env.Prog = coll.Program(coll.ProgramNames()[0])
		for _, m := range env.Prog.Maps() {
			if m.Type() != bpf.CPUMap {
				continue
			}
			var targets []int
			for k := 0; k < o.cpus; k++ {
				if _, ok := m.CPUMapEntry(uint32(k)); ok {
					targets = append(targets, k)
				}
			}
			r.cpumap = xdp.NewCpumap(r.sim, r.frames, r.skbs, r.stack, r.rel, r.rel, targets, 64, xdp.CpumapKernel{})
			env.Cpumap = r.cpumap
		}
	}
	if o.before != nil {
		o.before(r)
	}
	r.d, err = New(env, cfg)
	require.NoError(t, err)
	return r
}

// rq is the rig's receive queue 0.
func (r *rig) rq() *RQ { return r.d.RQ[0] }

// run runs every event up to t and fails on an internal error.
func (r *rig) run(until sim.Time) {
	r.t.Helper()
	for {
		at, ok := r.sim.Queue.Peek()
		if !ok || at > until {
			break
		}
		r.sim.Queue.Step()
	}
	require.NoError(r.t, r.sim.Err())
}

// use is the device using the next posted buffer: a used entry of length
// bytes (header included), with num_buffers in its header for a
// mergeable packet's first buffer (0 leaves the header as it is). It
// returns the buffer's head.
func (r *rig) use(length uint32, numBuffers uint16) uint16 {
	r.t.Helper()
	rq := r.rq()
	head, ok := rq.VQ.DevicePop()
	require.True(r.t, ok, "no buffer posted")
	if numBuffers > 0 {
		h := device.VirtioNetHdr{NumBuffers: numBuffers}
		h.Put(rq.Dev.Window(head))
	}
	rq.VQ.DevicePushUsed(uint32(head), length)
	return head
}

// irq is the device's interrupt reaching the guest at the current time
// (vring_interrupt, skb_recv_done): NAPI is scheduled unless it runs.
func (r *rig) irq() {
	r.sim.Queue.Schedule(r.sim.Now(), r.d.irqKind, 0)
}

// posted is the buffers posted and not yet taken back.
func (r *rig) posted() []rxBuf {
	var out []rxBuf
	for _, b := range r.rq().bufs {
		if b.page != mem.NoPage {
			out = append(out, b)
		}
	}
	return out
}
