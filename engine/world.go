package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"ringlab/engine/bpf"
	"ringlab/engine/device"
	"ringlab/engine/kernel"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
	"ringlab/engine/softnet"
	"ringlab/engine/virtionet"
	"ringlab/engine/xdp"
)

// World is one simulated machine running one scenario.
type World struct {
	Scenario scenario.Scenario

	Sim    *sim.Sim
	Mem    *mem.Mem
	DMA    *mem.DMA
	Pools  *pagepool.Registry
	SKBs   *skb.Pool
	Frames *xdp.FramePool
	Net    *softnet.Softnet
	Stack  *skb.Stack
	Cpumap *xdp.Cpumap
	Devmap *xdp.Devmap
	Prog   *bpf.Program
	Driver *virtionet.Driver

	napiLocal napiLocal
	kernel    kernel.Version // the scenario's: it names the drop reasons
	streams   *streams       // a tcp_stream's sockets and senders, nil otherwise
	err       error
	checker   *eventChecker // CheckEveryEvent, nil when off
	live      *liveness     // CheckLiveness, nil when off

	// replay is the record of a replayed capture's frames, nil when the
	// scenario's generator feeds the device.
	replay *device.ReplayLog

	// origin is what the world was built from, for Clone's twin.
	origin struct {
		s    scenario.Scenario
		spec *bpf.CollectionSpec
		rep  *device.Replay
	}
}

// ErrStopped is returned once a world met an internal error: it refuses to
// run further.
var ErrStopped = errors.New("engine: world stopped")

// New builds and starts a world. The scenario must be valid; its XDP
// program, if any, comes from the library.
func New(s scenario.Scenario) (*World, error) {
	return NewWithXDP(s, nil)
}

// NewWithXDP is New with the XDP program taken from spec (for instance an
// ELF object read with bpf.LoadELF) instead of the library; s.XDP must be
// set and its program name selects the program in spec ("" for the first).
func NewWithXDP(s scenario.Scenario, spec *bpf.CollectionSpec) (*World, error) {
	return build(s, spec, nil)
}

// NewReplay is NewWithXDP with a capture's frames feeding the device in
// place of the scenario's generator (device.Replay): they enter the host
// backend as generated frames do, each queue taking the frames its flow
// hashes to, and the world records what became of each (Replay). The
// scenario's traffic must be the open generator (a stream's sender
// decides its own frames); its rate, sizes and flows are the capture's.
// spec may be nil.
func NewReplay(s scenario.Scenario, spec *bpf.CollectionSpec, rep *device.Replay) (*World, error) {
	if rep == nil {
		return nil, fmt.Errorf("engine: replay: no capture")
	}
	if err := rep.Validate(); err != nil {
		return nil, err
	}
	if k := s.Traffic.Stream(); k != "" {
		return nil, &scenario.FieldError{Field: "traffic.kind", Reason: fmt.Sprintf("%s decides its own frames: a capture replaces the open generator only", k)}
	}
	return build(s, spec, rep)
}

// Replay is the record of every replayed frame (NewReplay), in capture
// order, nil for a world fed by its generator.
func (w *World) Replay() *device.ReplayLog { return w.replay }

func build(s scenario.Scenario, spec *bpf.CollectionSpec, rep *device.Replay) (*World, error) {
	origin := s
	progName := ""
	if spec != nil {
		if s.XDP == nil {
			return nil, &scenario.FieldError{Field: "xdp", Reason: "an XDP object was given but the scenario has no xdp section"}
		}
		x := *s.XDP
		progName = x.Program
		x.Object = ""
		if x.Program == "" {
			x.Program = "(object)" // named after the choice below
		}
		s.XDP = &x
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	costs := sim.DefaultCosts()
	for _, name := range sortedKeys(s.Costs) {
		if err := costs.Set(name, s.Costs[name]); err != nil {
			return nil, &scenario.FieldError{Field: "costs." + name, Reason: err.Error()}
		}
	}
	w := &World{Scenario: s, napiLocal: napiLocalOf(s.Behaviours()), kernel: s.KernelVersion()}
	w.origin.s, w.origin.spec, w.origin.rep = origin, spec, rep
	var err error
	if w.Sim, err = sim.New(s.CPUs, costs); err != nil {
		return nil, err
	}
	b := s.Behaviours()
	w.Sim.Sched = schedConfig(&s)
	w.Net = softnet.New(w.Sim, softnet.Config{
		Budget:        s.Sysctl.NetdevBudget,
		BudgetUsecs:   s.Sysctl.NetdevBudgetUsecs,
		KsoftirqdGate: !b.SoftirqBesideKsoftirqd,
		ActionRestart: b.NetRxActionRestart,
	})
	mc := mem.DefaultConfig()
	mc.Pages = s.MemoryPages
	mc.FreeHigh = freeHighRule(s.Behaviours())
	if w.Mem, err = mem.New(w.Sim, mc); err != nil {
		return nil, fmt.Errorf("engine: memory: %w", err)
	}
	w.DMA = w.Mem.NewDMA(s.Driver.IOMMU)
	if s.Driver.VIOMMU {
		w.DMA.SetEmulated(mem.EmulatedIOMMU{
			On:          true,
			CachingMode: s.Driver.IOMMUCachingMode,
			Strict:      s.Driver.IOMMUStrict || (s.Driver.IOMMUCachingMode && s.Behaviours().IOMMUCachingModeStrict),
		})
	}
	if !s.UsesDMAAPI() {
		w.DMA.SetPhysical() // vring_use_dma_api: no ACCESS_PLATFORM, no DMA API
	}
	if w.Pools, err = pagepool.NewRegistry(w.Mem); err != nil {
		return nil, err
	}
	w.Pools.SetKernel(pagepool.Kernel{LockedRefill: !s.Behaviours().PtrRingLocklessConsume})
	inflight := s.Queues*(s.RingSize+s.TxRingSize) + skb.SocketQueueLimit*s.CPUs + 4096
	w.SKBs = skb.NewPool(inflight)
	w.SKBs.SetCoalescePP(coalescePPRule(s.Behaviours()))
	w.Frames = xdp.NewFramePool(inflight + 16384*s.CPUs)
	if s.Traffic.Stream() != "" {
		w.Frames.TrackSeqs() // the receiver reports each frame's number
	}
	cfg := stackConfig(&s)
	if s.Traffic.Kind == scenario.TrafficTCPStream {
		w.streams = newStreams(w)
		cfg.Observer = w.streams
	}
	w.Stack = skb.NewStack(w.Sim, w.Net, w.SKBs, w, cfg)
	w.Stack.SetSocket(s.Traffic.Proto == "tcp", s.Driver.CloneSKBs)
	if s.XDP != nil {
		if err := w.buildXDP(spec, progName); err != nil {
			return nil, err
		}
	}
	env := &virtionet.Env{
		Sim: w.Sim, Mem: w.Mem, DMA: w.DMA, Pools: w.Pools, SKBs: w.SKBs, Frames: w.Frames,
		Stack: w.Stack, Softnet: w.Net, Releaser: w, Cpumap: w.Cpumap, Devmap: w.Devmap, Prog: w.Prog,
		Clock:   bpf.ClockFunc(func() uint64 { return uint64(w.Sim.Now()) }),
		Traffic: func(q int) (*device.Traffic, error) { return device.NewStreamTraffic(&w.Scenario, q, &w.Sim.Costs) },
	}
	if rep != nil {
		w.replay = device.NewReplayLog(len(rep.Frames))
		env.Replay = true
		env.Traffic = func(q int) (*device.Traffic, error) {
			return device.NewReplayTraffic(rep, w.replay, q, w.Scenario.Queues), nil
		}
		if w.Prog != nil {
			w.Prog.TracePacketAccess(true) // each frame's record says what the program read and wrote
		}
	}
	if w.Driver, err = virtionet.New(env, virtionet.ConfigOf(&w.Scenario)); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	for q, rq := range w.Driver.RQ {
		if s.Driver.VIOMMU {
			rq.Dev.SetIOTLB(w.DMA)
		}
		if cpu, ok := w.Scenario.VhostSharesVCPU(q); ok {
			rq.Dev.SetSharedVCPU(w.Sim.CPU(cpu))
			w.Driver.SQ[q].Dev.SetSharedVCPU(w.Sim.CPU(cpu))
		}
	}
	return w, nil
}

// schedConfig is the scheduler of the scenario's kernel: EEVDF from 6.6,
// CFS before, at its HZ, with the tunables it sets and the kernel's
// defaults for its CPU count otherwise.
func schedConfig(s *scenario.Scenario) sim.SchedConfig {
	c := sim.DefaultSched(s.Behaviours().EEVDF, s.CPUs, s.Sched.HZ)
	set := func(d *sim.Duration, ns int64) {
		if ns > 0 {
			*d = sim.Duration(ns)
		}
	}
	set(&c.Latency, s.Sched.LatencyNs)
	set(&c.MinGranularity, s.Sched.MinGranularityNs)
	set(&c.WakeupGranularity, s.Sched.WakeupGranularityNs)
	set(&c.BaseSlice, s.Sched.BaseSliceNs)
	return c
}

// freeHighRule is the page allocator's free_high rule of the kernel b
// belongs to (free_unref_page_commit).
func freeHighRule(b kernel.Behaviours) mem.FreeHigh {
	switch {
	case b.PCPFreeCountHighMin:
		return mem.FreeHighCountHighMin
	case b.PCPFreeCount:
		return mem.FreeHighCount
	case b.PCPFreeHigh:
		return mem.FreeHighFactor
	}
	return mem.FreeHighNone
}

// stackConfig is how the scenario's consumer frees skbs: an application
// thread's recvmsg defers a remote free to the skb's CPU
// (skb_attempt_defer_free) for TCP since 5.19 (tcp_eat_recv_skb) and for
// UDP since 6.18, at most sysctl_skb_defer_max per CPU (128 since 6.19).
func stackConfig(s *scenario.Scenario) skb.StackConfig {
	b := s.Behaviours()
	cfg := skb.StackConfig{
		CPU:      s.Consumer.CPU,
		Process:  s.Consumer.Context == scenario.FreeProcess,
		Cost:     sim.Duration(s.Consumer.CostNs),
		DeferMax: skb.DeferMax,
	}
	switch s.Traffic.Proto {
	case "tcp":
		cfg.DeferFree = b.TCPDeferFree
	case "udp":
		cfg.DeferFree = b.UDPDeferFree
	}
	if b.SKBDeferMax128 {
		cfg.DeferMax = skb.DeferMax619
	}
	streamConfig(s, &cfg)
	return cfg
}

// buildXDP prepares the scenario's program (from spec, or from the
// library) and the cpumap / devmap it redirects through.
func (w *World) buildXDP(spec *bpf.CollectionSpec, name string) error {
	x := w.Scenario.XDP
	if x.Object != "" {
		return &scenario.FieldError{Field: "xdp.object", Reason: "ELF objects are loaded by the CLI and the browser (NewWithXDP), not from a scenario"}
	}
	if spec == nil {
		var err error
		if spec, err = LibraryProgram(&w.Scenario); err != nil {
			return err
		}
	}
	coll, err := bpf.NewCollection(spec, bpf.Options{NumCPU: w.Scenario.CPUs})
	if err != nil {
		return fmt.Errorf("engine: xdp program %q: %w", x.Program, err)
	}
	names := coll.ProgramNames()
	if len(names) == 0 {
		return fmt.Errorf("engine: xdp program %q: no program in collection", x.Program)
	}
	if name == "" {
		name = names[0]
	}
	w.Prog = coll.Program(name)
	if w.Prog == nil {
		return &scenario.FieldError{Field: "xdp.program", Reason: fmt.Sprintf("%q is not in the object (programs: %v)", name, names)}
	}
	w.Scenario.XDP.Program = name
	for _, m := range w.Prog.Maps() {
		switch m.Type() {
		case bpf.CPUMap:
			if err := w.cpumapSupported(); err != nil {
				return err
			}
			var targets []int
			qsize := x.CpumapQsize
			for k := 0; k < w.Scenario.CPUs; k++ {
				if v, ok := m.CPUMapEntry(uint32(k)); ok {
					targets = append(targets, k)
					if qsize == 0 {
						qsize = int(v.QSize)
					}
				}
			}
			b := w.Scenario.Behaviours()
			w.Cpumap = xdp.NewCpumap(w.Sim, w.Frames, w.SKBs, w.Stack, w, w, targets, qsize, xdp.CpumapKernel{
				LockedConsume: !b.CpumapLocklessConsume,
				ReleaseFrames: !b.CpumapSKBRecycle,
				// cpumap's GRO works on the skbs' device, with its
				// NETIF_F_GRO (driver.gro).
				GRO:       b.CpumapGRO && w.Scenario.Driver.GRO,
				TCPStream: w.Scenario.Traffic.Kind == scenario.TrafficTCPStream,
				MaxLen:    w.Scenario.MTU + 14,
				Tick:      w.Sim.Sched.Tick,
			})
			w.Cpumap.SetMem(w.Mem)
			w.Cpumap.SetBHEnable(w.Net.BHEnable)
		case bpf.DevMap:
			n := w.Scenario.Next
			if n == nil {
				return &scenario.FieldError{Field: "next_device", Reason: fmt.Sprintf("program %q redirects through a devmap: describe the device it sends to", x.Program)}
			}
			w.Devmap = xdp.NewDevmap(w.Sim, w.Net, w.Frames, w, n.MaxPPS, n.RingSize, n.CompletionCPU)
		}
	}
	if x.Frags {
		// Shared infos for multi-buffer frames: as many as frames can be
		// in flight (send queues, cpumap, devmap), plus one being built
		// per CPU.
		n := w.Scenario.Queues*w.Scenario.TxRingSize + w.Scenario.CPUs
		if w.Cpumap != nil {
			n += w.Cpumap.Capacity()
		}
		if w.Devmap != nil {
			n += w.Devmap.Capacity()
		}
		w.Frames.ReserveFrags(n)
	}
	return nil
}

// cpumapOldest is the first release with BPF_MAP_TYPE_CPUMAP
// (kernel/bpf/cpumap.c, 4.15).
var cpumapOldest = kernel.Version{Major: 4, Minor: 15}

// cpumapSupported refuses a cpumap the scenario's kernel cannot run: none
// before 4.15, and none over page_pool fragments before 6.4, where
// xdp_release_frame takes a page out of its pool (page_pool_release_page)
// while other fragments of it are still in use, which the engine does not
// model.
func (w *World) cpumapSupported() error {
	s := &w.Scenario
	v := s.KernelVersion()
	if v.Less(cpumapOldest) {
		return &scenario.FieldError{Field: "kernel", Reason: fmt.Sprintf("%s has no cpumap (BPF_MAP_TYPE_CPUMAP is %s+): program %q redirects through one", v, cpumapOldest, s.XDP.Program)}
	}
	if s.Driver.BufferSource == scenario.SourcePagePoolFrag && !s.Behaviours().CpumapSKBRecycle {
		return &scenario.FieldError{Field: "driver.buffer_source", Reason: fmt.Sprintf("%q under a cpumap needs 6.4+: on %s xdp_release_frame takes a page out of its pool while its other fragments are in use", s.Driver.BufferSource, v)}
	}
	return nil
}

// LibraryProgram returns the library program a scenario names, configured
// from xdp.args.
func LibraryProgram(s *scenario.Scenario) (*bpf.CollectionSpec, error) {
	x := s.XDP
	arg := func(name string, def int) (int, error) {
		v, ok := x.Args[name]
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, &scenario.FieldError{Field: "xdp.args." + name, Reason: fmt.Sprintf("%q is not a number", v)}
		}
		return n, nil
	}
	for k := range x.Args {
		switch k {
		case "port", "cpu", "mode", "ifindex":
		default:
			return nil, &scenario.FieldError{Field: "xdp.args." + k, Reason: "unknown argument (known: port, cpu, mode, ifindex)"}
		}
	}
	var cfg bpf.LibraryConfig
	switch x.Program {
	case bpf.NameDropUDPPort:
		port, err := arg("port", 9)
		if err != nil {
			return nil, err
		}
		if port < 0 || port > 65535 {
			return nil, &scenario.FieldError{Field: "xdp.args.port", Reason: fmt.Sprintf("%d: want 0..65535", port)}
		}
		cfg.DropPort = uint16(port)
	case bpf.NameRedirectCPU:
		c := &cfg.RedirectCPU
		c.NumCPUs, c.QSize = uint32(s.CPUs), uint32(x.CpumapQsize)
		switch x.Args["mode"] {
		case "", "fixed":
			c.Mode = bpf.CPUFixed
			cpu := 0
			if len(x.CpumapCPUs) > 0 {
				cpu = x.CpumapCPUs[0]
			}
			n, err := arg("cpu", cpu)
			if err != nil {
				return nil, err
			}
			if n < 0 || n >= s.CPUs {
				return nil, &scenario.FieldError{Field: "xdp.args.cpu", Reason: fmt.Sprintf("%d: want 0..%d", n, s.CPUs-1)}
			}
			c.CPU = uint32(n)
		case "round_robin":
			c.Mode = bpf.CPURoundRobin
		case "hash":
			c.Mode = bpf.CPUHash
		default:
			return nil, &scenario.FieldError{Field: "xdp.args.mode", Reason: fmt.Sprintf("%q: want fixed, round_robin or hash", x.Args["mode"])}
		}
	case bpf.NameRedirectDev:
		ifx, err := arg("ifindex", 2)
		if err != nil {
			return nil, err
		}
		cfg.RedirectDev.Ifindex = uint32(ifx)
	}
	if p := bpf.LibraryProgram(x.Program, cfg); p != nil {
		return p, nil
	}
	var names []string
	for _, p := range bpf.Library() {
		names = append(names, p.Name)
	}
	return nil, &scenario.FieldError{Field: "xdp.program", Reason: fmt.Sprintf("%q is not in the library %v", x.Program, names)}
}

// napiLocal is which page_pool puts ask whether they run where the pool's
// NAPI is scheduled (page_pool_napi_local's test), by kernel.
type napiLocal uint8

const (
	// napiLocalNone: only the caller's allow_direct (until 6.4).
	napiLocalNone napiLocal = iota
	// napiLocalSKBSafe: skb frees with napi_safe
	// (page_pool_return_skb_page, 6.5).
	napiLocalSKBSafe
	// napiLocalSKB: every skb free in softirq (napi_pp_put_page's
	// napi_safe || in_softirq(), 6.6 to 6.9).
	napiLocalSKB
	// napiLocalAll: every put in softirq, xdp_frame returns included
	// (page_pool_put_unrefed_netmem, page_pool_put_netmem_bulk, 6.10+).
	napiLocalAll
)

func napiLocalOf(b kernel.Behaviours) napiLocal {
	switch {
	case b.NAPILocalAll:
		return napiLocalAll
	case b.NAPILocalSKBSoftirq:
		return napiLocalSKB
	case b.NAPILocalSKB:
		return napiLocalSKBSafe
	}
	return napiLocalNone
}

// Release implements skb.Releaser: a page reference held by a buffer goes
// back to its page_pool or to the page allocator (put_page). A pool page
// goes into the alloc cache when the caller allows direct recycling, or
// when the put is one the kernel lets ask page_pool_napi_local and it runs
// in softirq on the CPU whose poll list holds the pool's NAPI (the pool
// reads list_owner): skb frees with napi_safe from 6.5, every skb free in
// softirq from 6.6, xdp_frame returns too from 6.10.
func (w *World) Release(c *sim.CPU, page mem.PageID, ppRecycle bool, ctx skb.Context) error {
	h := w.Mem.Head(page)
	pg := w.Mem.Page(h)
	if pg == nil {
		return fmt.Errorf("engine: release of page %d: no such page", page)
	}
	if ppRecycle && pg.PP >= 0 && pg.PPMagic == pagepool.Signature {
		pool := w.Pools.Lookup(pg.PP)
		if pool == nil {
			return fmt.Errorf("engine: page %d names page_pool %d, which does not exist", h, pg.PP)
		}
		pctx := pagepool.Process
		if ctx.Softirq && !ctx.Direct {
			switch w.napiLocal {
			case napiLocalAll:
				pctx = pagepool.Softirq
			case napiLocalSKB:
				if !ctx.Frame {
					pctx = pagepool.Softirq
				}
			case napiLocalSKBSafe:
				if !ctx.Frame && ctx.NAPISafe {
					pctx = pagepool.Softirq
				}
			}
		}
		return pool.Put(c, h, pagepool.SyncFull, ctx.Direct, pctx)
	}
	_, err := w.Mem.PutPage(c, h)
	return err
}

// ReleasePoolPage implements xdp.PoolReleaser: page_pool_release_page on
// the pool page holds, for xdp_release_frame (until 6.3).
func (w *World) ReleasePoolPage(c *sim.CPU, page mem.PageID) error {
	h := w.Mem.Head(page)
	pg := w.Mem.Page(h)
	if pg == nil || pg.PP < 0 || pg.PPMagic != pagepool.Signature {
		return fmt.Errorf("engine: release of page %d from its page_pool: not a page_pool page", page)
	}
	pool := w.Pools.Lookup(pg.PP)
	if pool == nil {
		return fmt.Errorf("engine: page %d names page_pool %d, which does not exist", h, pg.PP)
	}
	return pool.ReleasePage(c, h)
}

// Err is the internal error that stopped the world, if any.
func (w *World) Err() error {
	if w.err != nil {
		return w.err
	}
	if e := w.Sim.Err(); e != nil {
		w.err = fmt.Errorf("%w: %v", ErrStopped, e)
		return w.err
	}
	return nil
}

// Now is the simulated time.
func (w *World) Now() sim.Time { return w.Sim.Now() }

// Step runs one event. It reports false when there was none or the world
// stopped. A panic in the event's handler is an engine bug (bad input is
// refused with an error before it gets that far); it stops this world with
// an *InternalError naming the event instead of taking the program, and
// every other world in it, down.
func (w *World) Step() (ok bool) {
	if w.Err() != nil {
		return false
	}
	defer w.recoverEvent(&ok)
	if w.live != nil {
		return w.stepLive()
	}
	if w.checker != nil {
		return w.checker.step()
	}
	return w.Sim.Queue.Step()
}

// stepLive is Step with CheckLiveness on.
func (w *World) stepLive() bool {
	var ok bool
	if w.checker != nil {
		ok = w.checker.step()
	} else {
		ok = w.Sim.Queue.Step()
	}
	w.live.after(w, !ok)
	return ok && w.err == nil
}

// recoverEvent is Step's deferred guard.
func (w *World) recoverEvent(ok *bool) {
	if r := recover(); r != nil {
		q := w.Sim.Queue
		w.err = &InternalError{Event: q.Fired(), At: q.Now(), Kind: q.KindName(q.Running()), Value: r, Stack: string(debug.Stack())}
		*ok = false
	}
}

// InternalError is a panic in an event handler, turned into the error that
// stops the world. Value is what was panicked with; Stack is where.
type InternalError struct {
	Event uint64
	At    sim.Time
	Kind  string
	Value any
	Stack string
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("engine: internal error in event %d (%s) at %d ns: %v (a bug: please report it with the scenario)", e.Event, e.Kind, e.At, e.Value)
}

// RunUntil runs every event up to t.
func (w *World) RunUntil(t sim.Time) error {
	for {
		if err := w.Err(); err != nil {
			return err
		}
		at, ok := w.Sim.Queue.Peek()
		if !ok || at > t {
			break
		}
		w.Step() // a stop shows in Err at the top of the loop
	}
	w.Sim.Queue.RunUntil(t) // no event is left before t: only the clock moves
	if w.live != nil {
		_, more := w.Sim.Queue.Peek()
		w.live.after(w, !more)
	}
	return w.Err()
}

// RunReplay runs a replay (NewReplay) until every frame's outcome is
// known, the world has nothing left to do, or its next event is past
// until.
func (w *World) RunReplay(until sim.Time) error {
	if w.replay == nil {
		return fmt.Errorf("engine: the world replays no capture")
	}
	for !w.replay.Done() {
		if err := w.Err(); err != nil {
			return err
		}
		at, ok := w.Sim.Queue.Peek()
		if !ok || at > until {
			break
		}
		w.Step()
	}
	return w.Err()
}

// RunPackets runs until the driver has received n more packets, or the
// world has nothing left to do.
func (w *World) RunPackets(n uint64) error {
	target := w.Received() + n
	for w.Received() < target {
		if !w.Step() {
			return w.Err()
		}
	}
	return w.Err()
}

// Received is the number of buffers the driver's receive loop handled,
// every verdict included (rx_packets).
func (w *World) Received() uint64 {
	var n uint64
	for _, rq := range w.Driver.RQ {
		n += rq.Stats.Packets
	}
	return n
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// coalescePPRule is skb_try_coalesce's page_pool rule at the kernel's
// version (skb.CoalescePP).
func coalescePPRule(b kernel.Behaviours) skb.CoalescePP {
	switch {
	case !b.CoalescePPRecycle:
		return skb.CoalescePPAny
	case b.CoalescePPFragRef:
		return skb.CoalescePPMatch
	case b.CoalesceNoClonedPP:
		return skb.CoalescePPNoClone
	case b.CoalesceClonedPPToPlain:
		return skb.CoalescePPClonedToPlain
	}
	return skb.CoalescePPMatch
}
