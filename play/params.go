package play

import (
	"errors"
	"fmt"
	"strconv"

	"ringlab/engine/bpf"
	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
)

// ErrParam is wrapped by every error of a parameter, a state read from a
// link and a message or command the controller refuses.
var ErrParam = errors.New("play: bad parameter")

// Param describes one parameter the page offers: its key (as in links and
// set commands), a label, and either a closed list of options or a free
// number with a hint.
type Param struct {
	Key     string   `json:"key"`
	Label   string   `json:"label"`
	Options []string `json:"options,omitempty"` // closed choice; empty: a number
	Hint    string   `json:"hint,omitempty"`
}

// On and Off are the values of the switch parameters.
const (
	On  = "on"
	Off = "off"
)

// XDPNone is the xdp parameter's value for no program.
const XDPNone = "none"

// param is one row of the table: what the page shows, how to read the
// value from a scenario, and how to set it, with the consequences the
// kernel forces.
type param struct {
	Param
	get func(s *scenario.Scenario) string
	// set sets v, already checked against Options when there are any.
	set func(s *scenario.Scenario, v string) error
}

// table is every parameter, in the order the page shows them. Setting
// them in this order from a preset reproduces any scenario they can
// express.
func table() []param {
	return []param{
		{Param{Key: "cpus", Label: "CPUs", Options: []string{"1", "2", "3", "4", "8"}},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.CPUs) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 1, scenario.MaxCPUs)
				if err == nil {
					napi := vhostOf(s) == "napi"
					s.CPUs = n
					fitCPUs(s)
					if napi {
						_ = setVhost(s, "napi") // the workers follow the queues' NAPI CPUs
					}
				}
				return err
			}},
		{Param{Key: "queues", Label: "queue pairs", Options: []string{"1", "2", "3", "4", "8"}},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Queues) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 1, scenario.MaxQueues)
				if err == nil {
					napi := vhostOf(s) == "napi"
					s.Queues = n
					s.Traffic.Flows = max(s.Traffic.Flows, n) // more queues than flows leaves queues idle
					if napi {
						_ = setVhost(s, "napi") // a worker per queue
					}
				}
				return err
			}},
		{Param{Key: "ring_size", Label: "ring size", Options: []string{"16", "32", "64", "128", "256", "512", "1024", "2048", "4096"}},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.RingSize) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 2, scenario.MaxRingSize)
				if err == nil && n&(n-1) != 0 {
					err = errors.New("want a power of two")
				}
				if err == nil {
					s.RingSize = n
				}
				return err
			}},
		{Param{Key: "mtu", Label: "MTU", Hint: "68..65521; above 1500 without mergeable buffers gives big mode"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.MTU) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, scenario.MinMTU, scenario.MaxMTU)
				if err == nil {
					s.MTU = n
				}
				return err
			}},
		{Param{Key: "mode", Label: "receive mode", Options: []string{scenario.ModeSmall, scenario.ModeBig, scenario.ModeMergeable}},
			(*scenario.Scenario).Mode, setMode},
		{Param{Key: "page_pool", Label: "page_pool", Options: onOff},
			func(s *scenario.Scenario) string { return onOffOf(isPool(s.Driver.BufferSource)) },
			func(s *scenario.Scenario, v string) error {
				switch {
				case v == On && !isPool(s.Driver.BufferSource):
					s.Driver.BufferSource = scenario.SourcePagePool
				case v == Off:
					// Without page_pool the ring maps the buffers; big mode
					// chains whole pages.
					s.Driver.BufferSource = scenario.SourcePageFrag
					if s.Mode() == scenario.ModeBig {
						s.Driver.BufferSource = scenario.SourcePage
					}
					s.Driver.DMA = scenario.DMARing
				}
				return nil
			}},
		{Param{Key: "frags", Label: "page_pool fragments", Options: onOff},
			func(s *scenario.Scenario) string {
				return onOffOf(s.Driver.BufferSource == scenario.SourcePagePoolFrag)
			},
			func(s *scenario.Scenario, v string) error {
				switch {
				case !isPool(s.Driver.BufferSource) && v == On:
					return errors.New("fragments are page_pool fragments: turn page_pool on first")
				case !isPool(s.Driver.BufferSource):
				case v == On:
					s.Driver.BufferSource = scenario.SourcePagePoolFrag
				default:
					s.Driver.BufferSource = scenario.SourcePagePool
				}
				return nil
			}},
		{Param{Key: "dma_premap", Label: "DMA premapped", Options: onOff},
			func(s *scenario.Scenario) string { return onOffOf(s.Driver.DMA == scenario.DMAPremapped) },
			func(s *scenario.Scenario, v string) error {
				if v == On && !isPool(s.Driver.BufferSource) {
					return errors.New("premapped DMA is page_pool's (PP_FLAG_DMA_MAP): turn page_pool on first")
				}
				s.Driver.DMA = scenario.DMARing
				if v == On {
					s.Driver.DMA = scenario.DMAPremapped
				}
				return nil
			}},
		{Param{Key: "iommu", Label: "IOMMU", Options: onOff, Hint: "DMA through an IOMMU; on a virtio device it also negotiates VIRTIO_F_ACCESS_PLATFORM (QEMU's iommu_platform=on), without which the guest uses no DMA API"},
			func(s *scenario.Scenario) string { return onOffOf(s.Driver.IOMMU) },
			func(s *scenario.Scenario, v string) error {
				s.Driver.IOMMU = v == On
				if s.Driver.IOMMU {
					s.Features.AccessPlatform = true
				}
				return nil
			}},
		{Param{Key: "access_platform", Label: "ACCESS_PLATFORM", Options: onOff, Hint: "VIRTIO_F_ACCESS_PLATFORM: the guest maps buffers through the DMA API (vring_use_dma_api); off, QEMU's default, the ring passes guest-physical addresses and maps nothing"},
			func(s *scenario.Scenario) string { return onOffOf(s.Features.AccessPlatform) },
			func(s *scenario.Scenario, v string) error {
				s.Features.AccessPlatform = v == On
				if !s.Features.AccessPlatform {
					s.Driver.IOMMU = false // no DMA API, no IOMMU in the way
				}
				return nil
			}},
		{Param{Key: "kernel", Label: "kernel", Options: kernelOptions(), Hint: "the Linux release the guest runs: every dated behaviour follows it (docs/kernel.md, Versions)"},
			func(s *scenario.Scenario) string { return s.KernelVersion().String() },
			func(s *scenario.Scenario, v string) error {
				k, err := kernel.Parse(v)
				if err == nil {
					s.Kernel = k.String()
				}
				return err
			}},
		{Param{Key: "gro", Label: "GRO", Options: onOff},
			func(s *scenario.Scenario) string { return onOffOf(s.Driver.GRO) },
			func(s *scenario.Scenario, v string) error { s.Driver.GRO = v == On; return nil }},
		{Param{Key: "netdev_budget", Label: "netdev_budget", Hint: "packets a net_rx_action round polls before it stops (time_squeeze); the kernel's default is 300"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Sysctl.NetdevBudget) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 1, 1_000_000)
				if err == nil {
					s.Sysctl.NetdevBudget = n
				}
				return err
			}},
		{Param{Key: "netdev_budget_usecs", Label: "netdev_budget_usecs", Hint: "a net_rx_action round's time limit in us, counted in jiffies; 0 = two jiffies, the kernel's default"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Sysctl.NetdevBudgetUsecs) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000)
				if err == nil {
					s.Sysctl.NetdevBudgetUsecs = n
				}
				return err
			}},
		{Param{Key: "hz", Label: "HZ", Options: []string{"100", "250", "300", "1000"}, Hint: "CONFIG_HZ: the jiffy MAX_SOFTIRQ_TIME, netdev_budget_usecs, the scheduler's slices and TCP's timers count in"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Sched.HZ) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 100, 1000)
				if err == nil {
					s.Sched.HZ = n
				}
				return err
			}},
		{Param{Key: "sched_latency_ns", Label: "CFS sched_latency_ns", Hint: "until 6.5: the period the runnable tasks share in slices; 0 = the kernel's default, 6 ms x (1 + ilog2(CPUs))"},
			func(s *scenario.Scenario) string { return strconv.FormatInt(s.Sched.LatencyNs, 10) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000_000)
				if err == nil {
					s.Sched.LatencyNs = int64(n)
				}
				return err
			}},
		{Param{Key: "base_slice_ns", Label: "EEVDF base_slice_ns", Hint: "from 6.6: a task's slice; 0 = the kernel's default, 0.75 ms x (1 + ilog2(CPUs))"},
			func(s *scenario.Scenario) string { return strconv.FormatInt(s.Sched.BaseSliceNs, 10) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000_000)
				if err == nil {
					s.Sched.BaseSliceNs = int64(n)
				}
				return err
			}},
		{Param{Key: "vhost_cpu", Label: "vhost worker", Options: []string{"own", "napi"},
			Hint: "where each queue's vhost worker runs on the host: on a host CPU of its own, or on that of the vCPU running the queue's NAPI, which loses the time the worker takes (steal)"},
			vhostOf, setVhost},
		{Param{Key: "pool_size", Label: "pool size", Hint: "ptr_ring entries; 0 = ring size"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Driver.PoolSize) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, 0, scenario.MaxPoolSize)
				if err == nil {
					s.Driver.PoolSize = n
				}
				return err
			}},
		{Param{Key: "xdp", Label: "XDP program", Options: xdpOptions()}, getXDP, setXDP},
		{Param{Key: "rate_pps", Label: "traffic rate (pps)", Hint: "0 = as fast as the device goes"},
			func(s *scenario.Scenario) string { return strconv.FormatFloat(s.Traffic.RatePPS, 'g', -1, 64) },
			func(s *scenario.Scenario, v string) error {
				f, err := strconv.ParseFloat(v, 64)
				switch {
				case err != nil || f != f:
					return errors.New("not a number")
				case f < 0 || f > 1e9:
					return errors.New("want 0..1e9")
				}
				s.Traffic.RatePPS = f
				return nil
			}},
		{Param{Key: "size", Label: "frame size (bytes)", Hint: "Ethernet frame without FCS"},
			func(s *scenario.Scenario) string { return strconv.Itoa(s.Traffic.Size) },
			func(s *scenario.Scenario, v string) error {
				n, err := whole(v, scenario.MinFrame, scenario.MaxFrame)
				if err == nil {
					s.Traffic.Size = n
					s.Traffic.Sizes = nil
				}
				return err
			}},
	}
}

// params is the table, built once (the options come from the kernel
// releases and the XDP library, which do not change).
var params = table()

// Params lists the parameters in the order the page shows them.
func Params() []Param {
	out := make([]Param, len(params))
	for i, p := range params {
		out[i] = p.Param
	}
	return out
}

// ParamKeys lists the keys of Params in order.
func ParamKeys() []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.Key
	}
	return out
}

func lookupParam(key string) (*param, error) {
	for i := range params {
		if params[i].Key == key {
			return &params[i], nil
		}
	}
	return nil, fmt.Errorf("%w: unknown parameter %q (known: %v)", ErrParam, key, ParamKeys())
}

// GetParam returns the value of a parameter in s.
func GetParam(s *scenario.Scenario, key string) (string, error) {
	p, err := lookupParam(key)
	if err != nil {
		return "", err
	}
	return p.get(s), nil
}

// SetParam sets one parameter of s, with the consequences the kernel
// forces (page_pool off means ring-mapped DMA; big mode never uses
// page_pool; more queues than flows leaves queues idle, so flows follow).
// It checks the value's form; whether the whole scenario holds together
// is s.Validate's job.
func SetParam(s *scenario.Scenario, key, value string) error {
	p, err := lookupParam(key)
	if err != nil {
		return err
	}
	if len(p.Options) > 0 && isOnOff(p.Options) && value != On && value != Off {
		err = errors.New("want on or off")
	} else {
		err = p.set(s, value)
	}
	if err != nil {
		return fmt.Errorf("%w: %s=%q: %v", ErrParam, key, value, err)
	}
	return nil
}

var onOff = []string{On, Off}

func isOnOff(opts []string) bool { return len(opts) == 2 && opts[0] == On && opts[1] == Off }

func onOffOf(b bool) string {
	if b {
		return On
	}
	return Off
}

func isPool(src string) bool {
	return src == scenario.SourcePagePool || src == scenario.SourcePagePoolFrag
}

// whole reads a whole number from lo to hi.
func whole(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errors.New("not a whole number")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("want %d..%d", lo, hi)
	}
	return n, nil
}

// kernelOptions lists every release the engine models, newest first.
func kernelOptions() []string {
	rs := kernel.Releases()
	out := make([]string, len(rs))
	for i, v := range rs {
		out[len(rs)-1-i] = v.String()
	}
	return out
}

func xdpOptions() []string {
	out := []string{XDPNone}
	for _, p := range bpf.Library() {
		out = append(out, p.Name)
	}
	return out
}

func setMode(s *scenario.Scenario, v string) error {
	switch v {
	case scenario.ModeMergeable:
		s.Features.MrgRxbuf = true
	case scenario.ModeBig:
		s.Features.MrgRxbuf = false
		if !s.BigPackets() { // no guest GSO, no device MTU above 1500
			s.Features.GuestGSO = true
		}
		if isPool(s.Driver.BufferSource) || s.Driver.BufferSource == scenario.SourcePageFrag {
			s.Driver.BufferSource = scenario.SourcePage // big mode never uses page_pool
		}
		s.Driver.DMA = scenario.DMARing
	case scenario.ModeSmall:
		if s.MTU > 1500 {
			return fmt.Errorf("small buffers need an MTU of at most 1500 (the MTU is %d)", s.MTU)
		}
		s.Features.MrgRxbuf = false
		s.Features.GuestGSO = false
		s.Traffic.GSOSize = 0
	default:
		return errors.New("want small, big or mergeable")
	}
	return nil
}

func getXDP(s *scenario.Scenario) string {
	switch {
	case s.XDP == nil:
		return XDPNone
	case s.XDP.Object != "":
		return objectPrefix + s.XDP.Object
	}
	return s.XDP.Program
}

func setXDP(s *scenario.Scenario, v string) error {
	if v == XDPNone {
		s.XDP = nil
		s.Next = nil
		return nil
	}
	known := false
	for _, p := range bpf.Library() {
		known = known || p.Name == v
	}
	if !known {
		return errors.New("not a library program (load an object file instead)")
	}
	s.XDP = &scenario.XDP{Program: v}
	switch v {
	case bpf.NameRedirectCPU:
		s.XDP.CpumapCPUs = []int{s.CPUs - 1}
	case bpf.NameRedirectDev:
		if s.Next == nil {
			s.Next = &scenario.Next{MaxPPS: 13e6, RingSize: 512, CompletionCPU: -1}
		}
	}
	return nil
}

// fitCPUs moves CPU references that a smaller CPU count left dangling to
// a CPU that exists.
// vhostOf says where the queues' vhost workers run (scenario host.vhost):
// "own" host CPUs, on their NAPI vCPU's ("napi"), or elsewhere ("custom",
// from a scenario file).
func vhostOf(s *scenario.Scenario) string {
	if s.Host == nil || len(s.Host.Vhost) == 0 {
		return "own"
	}
	for q, c := range s.Host.Vhost {
		if c != s.VCPUHostCPU(q%s.CPUs) {
			return "custom"
		}
	}
	return "napi"
}

// setVhost places the queues' vhost workers: v is "own" or "napi" (queue
// q's worker on the host CPU of guest CPU q mod cpus, where
// virtnet_set_affinity puts its NAPI).
func setVhost(s *scenario.Scenario, v string) error {
	var h scenario.Host // the scenario may share its Host with a preset's copy
	if s.Host != nil {
		h = *s.Host
	}
	switch v {
	case "own":
		h.Vhost = nil
	case "napi":
		h.Vhost = make([]int, s.Queues)
		for q := range h.Vhost {
			h.Vhost[q] = s.VCPUHostCPU(q % s.CPUs)
		}
	default:
		return fmt.Errorf("%q: want own or napi", v)
	}
	s.Host = &h
	if len(h.Vhost) == 0 && len(h.VCPUs) == 0 {
		s.Host = nil
	}
	return nil
}

func fitCPUs(s *scenario.Scenario) {
	if s.Consumer.CPU >= s.CPUs {
		s.Consumer.CPU = -1
	}
	if s.Next != nil && s.Next.CompletionCPU >= s.CPUs {
		n := *s.Next
		n.CompletionCPU = -1
		s.Next = &n
	}
	if s.XDP != nil && len(s.XDP.CpumapCPUs) > 0 {
		x := *s.XDP // the scenario may share its XDP with a preset's copy
		x.CpumapCPUs = append([]int(nil), x.CpumapCPUs...)
		for i, c := range x.CpumapCPUs {
			if c >= s.CPUs {
				x.CpumapCPUs[i] = s.CPUs - 1
			}
		}
		s.XDP = &x
	}
}
