package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ringlab/engine/bpf"
	"ringlab/engine/kernel"
)

// The knobs are the settings with names: what the page offers, what a
// link and a room command carry, and what `ringlab run --set` and a
// tutorial's `set` take by name (cpus=2, page_pool=off). A knob sets its
// field with the consequences the kernel forces (page_pool off means
// ring-mapped DMA; fewer CPUs move what pointed past them), where a raw
// JSON path (driver.iommu=true, .cpus=2) sets one field alone (Apply).

// ErrKnob is wrapped by every error of a knob.
var ErrKnob = errors.New("scenario: bad knob")

// KnobError is a knob refused: an unknown key, or a value the knob does
// not take, and why.
type KnobError struct {
	Key, Value string
	Unknown    bool   // no knob has this key
	Reason     string // the value's fault (not Unknown)
}

func (e *KnobError) Error() string { return e.Detail() }

// Detail is the error without its prefix: key="value": reason.
func (e *KnobError) Detail() string {
	if e.Unknown {
		return fmt.Sprintf("unknown knob %q (known: %v)", e.Key, KnobKeys())
	}
	return fmt.Sprintf("%s=%q: %s", e.Key, e.Value, e.Reason)
}

// Unwrap makes every KnobError an ErrKnob.
func (e *KnobError) Unwrap() error { return ErrKnob }

// Knob describes one knob: its key (as in links, set commands and
// --set), a label, and either a closed list of options or a free number
// with a hint.
type Knob struct {
	Key     string   `json:"key"`
	Label   string   `json:"label"`
	Options []string `json:"options,omitempty"` // closed choice; empty: a number
	Hint    string   `json:"hint,omitempty"`
}

// On and Off are the values of the switch knobs.
const (
	On  = "on"
	Off = "off"
)

// XDPNone is the xdp knob's value for no program.
const XDPNone = "none"

// ObjectPrefix marks an xdp knob's value that names a loaded object file
// (the page's upload) rather than a library program.
const ObjectPrefix = "object:"

// knob is one row of the table: what the page shows, how to read the
// value from a scenario, and how to set it, with the consequences the
// kernel forces.
type knob struct {
	Knob
	get func(s *Scenario) string
	// set sets v, already checked against Options when there are any.
	set func(s *Scenario, v string) error
}

// table is every parameter, in the order the page shows them. Setting
// them in this order from a preset reproduces any scenario they can
// express.
func knobTable() []knob {
	return []knob{
		{Knob{Key: "cpus", Label: "CPUs", Options: []string{"1", "2", "3", "4", "8"}},
			func(s *Scenario) string { return strconv.Itoa(s.CPUs) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 1, MaxCPUs)
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
		{Knob{Key: "queues", Label: "queue pairs", Options: []string{"1", "2", "3", "4", "8"}},
			func(s *Scenario) string { return strconv.Itoa(s.Queues) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 1, MaxQueues)
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
		{Knob{Key: "ring_size", Label: "ring size", Options: []string{"16", "32", "64", "128", "256", "512", "1024", "2048", "4096"}},
			func(s *Scenario) string { return strconv.Itoa(s.RingSize) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 2, MaxRingSize)
				if err == nil && n&(n-1) != 0 {
					err = errors.New("want a power of two")
				}
				if err == nil {
					s.RingSize = n
				}
				return err
			}},
		{Knob{Key: "mtu", Label: "MTU", Hint: "68..65521; above 1500 without mergeable buffers gives big mode"},
			func(s *Scenario) string { return strconv.Itoa(s.MTU) },
			func(s *Scenario, v string) error {
				n, err := whole(v, MinMTU, MaxMTU)
				if err == nil {
					s.MTU = n
				}
				return err
			}},
		{Knob{Key: "mode", Label: "receive mode", Options: []string{ModeSmall, ModeBig, ModeMergeable}},
			(*Scenario).Mode, setMode},
		{Knob{Key: "page_pool", Label: "page_pool", Options: onOff},
			func(s *Scenario) string { return onOffOf(isPool(s.Driver.BufferSource)) },
			func(s *Scenario, v string) error {
				switch {
				case v == On && !isPool(s.Driver.BufferSource):
					s.Driver.BufferSource = SourcePagePool
				case v == Off:
					// Without page_pool the ring maps the buffers; big mode
					// chains whole pages.
					s.Driver.BufferSource = SourcePageFrag
					if s.Mode() == ModeBig {
						s.Driver.BufferSource = SourcePage
					}
					s.Driver.DMA = DMARing
				}
				return nil
			}},
		{Knob{Key: "frags", Label: "page_pool fragments", Options: onOff},
			func(s *Scenario) string {
				return onOffOf(s.Driver.BufferSource == SourcePagePoolFrag)
			},
			func(s *Scenario, v string) error {
				switch {
				case !isPool(s.Driver.BufferSource) && v == On:
					return errors.New("fragments are page_pool fragments: turn page_pool on first")
				case !isPool(s.Driver.BufferSource):
				case v == On:
					s.Driver.BufferSource = SourcePagePoolFrag
				default:
					s.Driver.BufferSource = SourcePagePool
				}
				return nil
			}},
		{Knob{Key: "dma_premap", Label: "DMA premapped", Options: onOff},
			func(s *Scenario) string { return onOffOf(s.Driver.DMA == DMAPremapped) },
			func(s *Scenario, v string) error {
				if v == On && !isPool(s.Driver.BufferSource) {
					return errors.New("premapped DMA is page_pool's (PP_FLAG_DMA_MAP): turn page_pool on first")
				}
				s.Driver.DMA = DMARing
				if v == On {
					s.Driver.DMA = DMAPremapped
				}
				return nil
			}},
		{Knob{Key: "iommu", Label: "IOMMU", Options: onOff, Hint: "DMA through an IOMMU; on a virtio device it also negotiates VIRTIO_F_ACCESS_PLATFORM (QEMU's iommu_platform=on), without which the guest uses no DMA API"},
			func(s *Scenario) string { return onOffOf(s.Driver.IOMMU) },
			func(s *Scenario, v string) error {
				s.Driver.IOMMU = v == On
				if s.Driver.IOMMU {
					s.Features.AccessPlatform = true
				}
				return nil
			}},
		{Knob{Key: "access_platform", Label: "ACCESS_PLATFORM", Options: onOff, Hint: "VIRTIO_F_ACCESS_PLATFORM: the guest maps buffers through the DMA API (vring_use_dma_api); off, QEMU's default, the ring passes guest-physical addresses and maps nothing"},
			func(s *Scenario) string { return onOffOf(s.Features.AccessPlatform) },
			func(s *Scenario, v string) error {
				s.Features.AccessPlatform = v == On
				if !s.Features.AccessPlatform {
					s.Driver.IOMMU = false // no DMA API, no IOMMU in the way
				}
				return nil
			}},
		{Knob{Key: "kernel", Label: "kernel", Options: kernelOptions(), Hint: "the Linux release the guest runs: every dated behaviour follows it (docs/kernel.md, Versions)"},
			func(s *Scenario) string { return s.KernelVersion().String() },
			func(s *Scenario, v string) error {
				k, err := kernel.Parse(v)
				if err == nil {
					s.Kernel = k.String()
				}
				return err
			}},
		{Knob{Key: "gro", Label: "GRO", Options: onOff},
			func(s *Scenario) string { return onOffOf(s.Driver.GRO) },
			func(s *Scenario, v string) error { s.Driver.GRO = v == On; return nil }},
		{Knob{Key: "netdev_budget", Label: "netdev_budget", Hint: "packets a net_rx_action round polls before it stops (time_squeeze); the kernel's default is 300"},
			func(s *Scenario) string { return strconv.Itoa(s.Sysctl.NetdevBudget) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 1, 1_000_000)
				if err == nil {
					s.Sysctl.NetdevBudget = n
				}
				return err
			}},
		{Knob{Key: "netdev_budget_usecs", Label: "netdev_budget_usecs", Hint: "a net_rx_action round's time limit in us, counted in jiffies; 0 = two jiffies, the kernel's default"},
			func(s *Scenario) string { return strconv.Itoa(s.Sysctl.NetdevBudgetUsecs) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000)
				if err == nil {
					s.Sysctl.NetdevBudgetUsecs = n
				}
				return err
			}},
		{Knob{Key: "hz", Label: "HZ", Options: []string{"100", "250", "300", "1000"}, Hint: "CONFIG_HZ: the jiffy MAX_SOFTIRQ_TIME, netdev_budget_usecs, the scheduler's slices and TCP's timers count in"},
			func(s *Scenario) string { return strconv.Itoa(s.Sched.HZ) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 100, 1000)
				if err == nil {
					s.Sched.HZ = n
				}
				return err
			}},
		{Knob{Key: "sched_latency_ns", Label: "CFS sched_latency_ns", Hint: "until 6.5: the period the runnable tasks share in slices; 0 = the kernel's default, 6 ms x (1 + ilog2(CPUs))"},
			func(s *Scenario) string { return strconv.FormatInt(s.Sched.LatencyNs, 10) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000_000)
				if err == nil {
					s.Sched.LatencyNs = int64(n)
				}
				return err
			}},
		{Knob{Key: "base_slice_ns", Label: "EEVDF base_slice_ns", Hint: "from 6.6: a task's slice; 0 = the kernel's default, 0.75 ms x (1 + ilog2(CPUs))"},
			func(s *Scenario) string { return strconv.FormatInt(s.Sched.BaseSliceNs, 10) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 0, 1_000_000_000)
				if err == nil {
					s.Sched.BaseSliceNs = int64(n)
				}
				return err
			}},
		{Knob{Key: "vhost_cpu", Label: "vhost worker", Options: []string{"own", "napi"},
			Hint: "where each queue's vhost worker runs on the host: on a host CPU of its own, or on that of the vCPU running the queue's NAPI, which loses the time the worker takes (steal)"},
			vhostOf, setVhost},
		{Knob{Key: "pool_size", Label: "pool size", Hint: "ptr_ring entries; 0 = ring size"},
			func(s *Scenario) string { return strconv.Itoa(s.Driver.PoolSize) },
			func(s *Scenario, v string) error {
				n, err := whole(v, 0, MaxPoolSize)
				if err == nil {
					s.Driver.PoolSize = n
				}
				return err
			}},
		{Knob{Key: "xdp", Label: "XDP program", Options: xdpOptions()}, getXDP, setXDP},
		{Knob{Key: "rate_pps", Label: "traffic rate (pps)", Hint: "0 = as fast as the device goes"},
			func(s *Scenario) string { return strconv.FormatFloat(s.Traffic.RatePPS, 'g', -1, 64) },
			func(s *Scenario, v string) error {
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
		{Knob{Key: "size", Label: "frame size (bytes)", Hint: "Ethernet frame without FCS"},
			func(s *Scenario) string { return strconv.Itoa(s.Traffic.Size) },
			func(s *Scenario, v string) error {
				n, err := whole(v, MinFrame, MaxFrame)
				if err == nil {
					s.Traffic.Size = n
					s.Traffic.Sizes = nil
				}
				return err
			}},
	}
}

// knobs is the table, built once (the options come from the kernel
// releases and the XDP library, which do not change).
var knobs = knobTable()

// Knobs lists the knobs in the order the page shows them.
func Knobs() []Knob {
	out := make([]Knob, len(knobs))
	for i, k := range knobs {
		out[i] = k.Knob
	}
	return out
}

// KnobKeys lists the keys of Knobs in order.
func KnobKeys() []string {
	out := make([]string, len(knobs))
	for i, k := range knobs {
		out[i] = k.Key
	}
	return out
}

func lookupKnob(key string) (*knob, bool) {
	for i := range knobs {
		if knobs[i].Key == key {
			return &knobs[i], true
		}
	}
	return nil, false
}

// IsKnob reports whether key names a knob.
func IsKnob(key string) bool {
	_, ok := lookupKnob(key)
	return ok
}

// GetKnob returns the value of a knob in s.
func GetKnob(s *Scenario, key string) (string, error) {
	k, ok := lookupKnob(key)
	if !ok {
		return "", &KnobError{Key: key, Unknown: true}
	}
	return k.get(s), nil
}

// SetKnob sets one knob of s, with the consequences the kernel forces
// (page_pool off means ring-mapped DMA; big mode never uses page_pool;
// more queues than flows leaves queues idle, so flows follow). It checks
// the value's form; whether the whole scenario holds together is
// s.Validate's job.
func SetKnob(s *Scenario, key, value string) error {
	k, ok := lookupKnob(key)
	if !ok {
		return &KnobError{Key: key, Value: value, Unknown: true}
	}
	var err error
	if len(k.Options) > 0 && isOnOff(k.Options) && value != On && value != Off {
		err = errors.New("want on or off")
	} else {
		err = k.set(s, value)
	}
	if err != nil {
		return &KnobError{Key: key, Value: value, Reason: err.Error()}
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
	return src == SourcePagePool || src == SourcePagePoolFrag
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

func setMode(s *Scenario, v string) error {
	switch v {
	case ModeMergeable:
		s.Features.MrgRxbuf = true
	case ModeBig:
		s.Features.MrgRxbuf = false
		if !s.BigPackets() { // no guest GSO, no device MTU above 1500
			s.Features.GuestGSO = true
		}
		if isPool(s.Driver.BufferSource) || s.Driver.BufferSource == SourcePageFrag {
			s.Driver.BufferSource = SourcePage // big mode never uses page_pool
		}
		s.Driver.DMA = DMARing
	case ModeSmall:
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

func getXDP(s *Scenario) string {
	switch {
	case s.XDP == nil:
		return XDPNone
	case s.XDP.Object != "":
		return ObjectPrefix + s.XDP.Object
	}
	return s.XDP.Program
}

func setXDP(s *Scenario, v string) error {
	if v == XDPNone {
		s.XDP = nil
		s.Next = nil
		return nil
	}
	if name, ok := strings.CutPrefix(v, ObjectPrefix); ok {
		// A loaded object file: its bytes travel beside the scenario (the
		// page's upload, the CLI's --xdp-object), never in it.
		if name == "" {
			return errors.New("object: wants the object's name")
		}
		s.XDP = &XDP{Object: name}
		return nil
	}
	known := false
	for _, p := range bpf.Library() {
		known = known || p.Name == v
	}
	if !known {
		return errors.New("not a library program (load an object file instead)")
	}
	s.XDP = &XDP{Program: v}
	switch v {
	case bpf.NameRedirectCPU:
		s.XDP.CpumapCPUs = []int{s.CPUs - 1}
	case bpf.NameRedirectDev:
		if s.Next == nil {
			s.Next = &Next{MaxPPS: 13e6, RingSize: 512, CompletionCPU: -1}
		}
	}
	return nil
}

// fitCPUs moves CPU references that a smaller CPU count left dangling to
// a CPU that exists.
// vhostOf says where the queues' vhost workers run (scenario host.vhost):
// "own" host CPUs, on their NAPI vCPU's ("napi"), or elsewhere ("custom",
// from a scenario file).
func vhostOf(s *Scenario) string {
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
func setVhost(s *Scenario, v string) error {
	var h Host // the scenario may share its Host with a preset's copy
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

func fitCPUs(s *Scenario) {
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
