// Package engine builds a world from a scenario and runs it: the machine
// (CPUs, memory, page pools), the virtio_net driver and its device, XDP
// with its maps, and the stack that consumes packets. A world advances only
// when driven (Step, RunUntil, RunPackets); what it did is read through
// counters named as the kernel names them.
package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"

	"ringlab/engine/bpf"
	"ringlab/engine/mem"
	"ringlab/engine/pagepool"
	"ringlab/engine/scenario"
	"ringlab/engine/sim"
	"ringlab/engine/skb"
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
	Stack  *skb.Stack
	Cpumap *xdp.Cpumap
	Devmap *xdp.Devmap
	Prog   *bpf.Program
	Driver *virtionet.Driver

	napiLocal bool
	err       error
	checker   *eventChecker // CheckEveryEvent, nil when off
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
	// NAPI-local recycling of skb frees is 6.5+ (napi_pp_put_page).
	w := &World{Scenario: s, napiLocal: s.Behaviours().NAPILocalSKB}
	var err error
	if w.Sim, err = sim.New(s.CPUs, costs); err != nil {
		return nil, err
	}
	mc := mem.DefaultConfig()
	mc.Pages = s.MemoryPages
	if w.Mem, err = mem.New(w.Sim, mc); err != nil {
		return nil, fmt.Errorf("engine: memory: %w", err)
	}
	w.DMA = w.Mem.NewDMA(s.Driver.IOMMU)
	if w.Pools, err = pagepool.NewRegistry(w.Mem); err != nil {
		return nil, err
	}
	inflight := s.Queues*(s.RingSize+s.TxRingSize) + skb.SocketQueueLimit*s.CPUs + 4096
	w.SKBs = skb.NewPool(inflight)
	w.Frames = xdp.NewFramePool(inflight + 16384*s.CPUs)
	w.Stack = skb.NewStack(w.Sim, w.SKBs, w, s.Consumer.CPU, s.Consumer.Context == scenario.FreeProcess, sim.Duration(s.Consumer.CostNs))
	w.Stack.SetSocket(s.Traffic.Proto == "tcp", s.Driver.CloneSKBs)
	if s.XDP != nil {
		if err := w.buildXDP(spec, progName); err != nil {
			return nil, err
		}
	}
	env := &virtionet.Env{
		Sim: w.Sim, Mem: w.Mem, DMA: w.DMA, Pools: w.Pools, SKBs: w.SKBs, Frames: w.Frames,
		Stack: w.Stack, Releaser: w, Cpumap: w.Cpumap, Devmap: w.Devmap, Prog: w.Prog,
		Clock: bpf.ClockFunc(func() uint64 { return uint64(w.Sim.Now()) }),
	}
	if w.Driver, err = virtionet.New(env, &w.Scenario); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return w, nil
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
			w.Cpumap = xdp.NewCpumap(w.Sim, w.Frames, w.SKBs, w.Stack, w, targets, qsize)
		case bpf.DevMap:
			n := w.Scenario.Next
			if n == nil {
				return &scenario.FieldError{Field: "next_device", Reason: fmt.Sprintf("program %q redirects through a devmap: describe the device it sends to", x.Program)}
			}
			w.Devmap = xdp.NewDevmap(w.Sim, w.Frames, w, n.MaxPPS, n.RingSize, n.CompletionCPU)
		}
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

// Release implements skb.Releaser: a page reference held by a buffer goes
// back to its page_pool (page_pool_put_page: direct when the caller says
// so, or when the put runs in softirq on the pool's NAPI CPU and
// NAPI-local recycling is on), or to the page allocator (put_page).
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
		if ctx.Softirq && w.napiLocal {
			pctx = pagepool.Softirq
		}
		return pool.Put(c, h, pagepool.SyncFull, ctx.Direct, pctx)
	}
	_, err := w.Mem.PutPage(c, h)
	return err
}

// Err is the internal error that stopped the world, if any.
func (w *World) Err() error {
	if w.err != nil {
		return w.err
	}
	for _, e := range []error{w.Driver.Err, w.Stack.Err, cpumapErr(w.Cpumap), devmapErr(w.Devmap)} {
		if e != nil {
			w.err = fmt.Errorf("%w: %v", ErrStopped, e)
			return w.err
		}
	}
	return nil
}

func cpumapErr(m *xdp.Cpumap) error {
	if m == nil {
		return nil
	}
	return m.Err
}

func devmapErr(m *xdp.Devmap) error {
	if m == nil {
		return nil
	}
	return m.Err
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
	if w.checker != nil {
		return w.checker.step()
	}
	return w.Sim.Queue.Step()
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
