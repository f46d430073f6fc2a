package view

import (
	"errors"
	"fmt"
	"strconv"

	"ringlab/engine/bpf"
	"ringlab/engine/kernel"
	"ringlab/engine/scenario"
)

// ErrParam is wrapped by every error of SetParam and of decoding a state.
var ErrParam = errors.New("view: bad parameter")

// Param describes one parameter the page offers: its key (as in URLs), a
// label, and either a closed list of options or a free number.
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

var onOff = []string{On, Off}

// Params lists the parameters in the order the page shows them. Setting them
// in this order from a preset reproduces any scenario Params can express.
func Params() []Param {
	xdp := []string{XDPNone}
	for _, p := range bpf.Library() {
		xdp = append(xdp, p.Name)
	}
	return []Param{
		{Key: "cpus", Label: "CPUs", Options: []string{"1", "2", "3", "4", "8"}},
		{Key: "queues", Label: "queue pairs", Options: []string{"1", "2", "3", "4", "8"}},
		{Key: "ring_size", Label: "ring size", Options: []string{"16", "32", "64", "128", "256", "512", "1024", "2048", "4096"}},
		{Key: "mtu", Label: "MTU", Hint: "68..65521; above 1500 without mergeable buffers gives big mode"},
		{Key: "mode", Label: "receive mode", Options: []string{scenario.ModeSmall, scenario.ModeBig, scenario.ModeMergeable}},
		{Key: "page_pool", Label: "page_pool", Options: onOff},
		{Key: "frags", Label: "page_pool fragments", Options: onOff},
		{Key: "dma_premap", Label: "DMA premapped", Options: onOff},
		{Key: "iommu", Label: "IOMMU", Options: onOff},
		{Key: "kernel", Label: "kernel", Options: kernelOptions(), Hint: "the Linux release the guest runs: every dated behaviour follows it (docs/kernel.md, Versions)"},
		{Key: "pool_size", Label: "pool size", Hint: "ptr_ring entries; 0 = ring size"},
		{Key: "xdp", Label: "XDP program", Options: xdp},
		{Key: "rate_pps", Label: "traffic rate (pps)", Hint: "0 = as fast as the device goes"},
		{Key: "size", Label: "frame size (bytes)", Hint: "Ethernet frame without FCS"},
	}
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

// ParamKeys lists the keys of Params in order.
func ParamKeys() []string {
	ps := Params()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Key
	}
	return out
}

func isPool(src string) bool {
	return src == scenario.SourcePagePool || src == scenario.SourcePagePoolFrag
}

func onOffOf(b bool) string {
	if b {
		return On
	}
	return Off
}

// GetParam returns the value of a parameter in s.
func GetParam(s *scenario.Scenario, key string) (string, error) {
	switch key {
	case "cpus":
		return strconv.Itoa(s.CPUs), nil
	case "queues":
		return strconv.Itoa(s.Queues), nil
	case "ring_size":
		return strconv.Itoa(s.RingSize), nil
	case "mtu":
		return strconv.Itoa(s.MTU), nil
	case "mode":
		return s.Mode(), nil
	case "page_pool":
		return onOffOf(isPool(s.Driver.BufferSource)), nil
	case "frags":
		return onOffOf(s.Driver.BufferSource == scenario.SourcePagePoolFrag), nil
	case "dma_premap":
		return onOffOf(s.Driver.DMA == scenario.DMAPremapped), nil
	case "iommu":
		return onOffOf(s.Driver.IOMMU), nil
	case "kernel":
		return s.KernelVersion().String(), nil
	case "pool_size":
		return strconv.Itoa(s.Driver.PoolSize), nil
	case "xdp":
		switch {
		case s.XDP == nil:
			return XDPNone, nil
		case s.XDP.Object != "":
			return "object:" + s.XDP.Object, nil
		}
		return s.XDP.Program, nil
	case "rate_pps":
		return strconv.FormatFloat(s.Traffic.RatePPS, 'g', -1, 64), nil
	case "size":
		return strconv.Itoa(s.Traffic.Size), nil
	}
	return "", fmt.Errorf("%w: unknown parameter %q", ErrParam, key)
}

// SetParam sets one parameter of s, with the consequences the kernel
// forces (page_pool off means ring-mapped DMA; big mode never uses
// page_pool; more queues than flows leaves queues idle, so flows follow).
// It checks the value's form; whether the whole scenario holds together is
// s.Validate's job.
func SetParam(s *scenario.Scenario, key, value string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s=%q: %s", ErrParam, key, value, fmt.Sprintf(format, args...))
	}
	num := func(lo, hi int) (int, error) {
		n, err := strconv.Atoi(value)
		if err != nil {
			return 0, bad("not a whole number")
		}
		if n < lo || n > hi {
			return 0, bad("want %d..%d", lo, hi)
		}
		return n, nil
	}
	sw := func() (bool, error) {
		switch value {
		case On:
			return true, nil
		case Off:
			return false, nil
		}
		return false, bad("want on or off")
	}
	switch key {
	case "cpus":
		n, err := num(1, scenario.MaxCPUs)
		if err != nil {
			return err
		}
		s.CPUs = n
		fitCPUs(s)
	case "queues":
		n, err := num(1, scenario.MaxQueues)
		if err != nil {
			return err
		}
		s.Queues = n
		if s.Traffic.Flows < n {
			s.Traffic.Flows = n
		}
	case "ring_size":
		n, err := num(2, scenario.MaxRingSize)
		if err != nil {
			return err
		}
		if n&(n-1) != 0 {
			return bad("want a power of two")
		}
		s.RingSize = n
	case "mtu":
		n, err := num(scenario.MinMTU, scenario.MaxMTU)
		if err != nil {
			return err
		}
		s.MTU = n
	case "mode":
		switch value {
		case scenario.ModeMergeable:
			s.Features.MrgRxbuf = true
		case scenario.ModeBig:
			s.Features.MrgRxbuf = false
			if !s.BigPackets() { // no guest GSO, no device MTU above 1500
				s.Features.GuestGSO = true
			}
			if isPool(s.Driver.BufferSource) || s.Driver.BufferSource == scenario.SourcePageFrag {
				s.Driver.BufferSource = scenario.SourcePage
			}
			s.Driver.DMA = scenario.DMARing
		case scenario.ModeSmall:
			if s.MTU > 1500 {
				return bad("small buffers need an MTU of at most 1500 (the MTU is %d)", s.MTU)
			}
			s.Features.MrgRxbuf = false
			s.Features.GuestGSO = false
			s.Traffic.GSOSize = 0
		default:
			return bad("want small, big or mergeable")
		}
	case "page_pool":
		on, err := sw()
		if err != nil {
			return err
		}
		switch {
		case on && !isPool(s.Driver.BufferSource):
			s.Driver.BufferSource = scenario.SourcePagePool
		case !on:
			if s.Mode() == scenario.ModeBig {
				s.Driver.BufferSource = scenario.SourcePage
			} else {
				s.Driver.BufferSource = scenario.SourcePageFrag
			}
			s.Driver.DMA = scenario.DMARing
		}
	case "frags":
		on, err := sw()
		if err != nil {
			return err
		}
		if !isPool(s.Driver.BufferSource) {
			if on {
				return bad("fragments are page_pool fragments: turn page_pool on first")
			}
			return nil
		}
		if on {
			s.Driver.BufferSource = scenario.SourcePagePoolFrag
		} else {
			s.Driver.BufferSource = scenario.SourcePagePool
		}
	case "dma_premap":
		on, err := sw()
		if err != nil {
			return err
		}
		if on && !isPool(s.Driver.BufferSource) {
			return bad("premapped DMA is page_pool's (PP_FLAG_DMA_MAP): turn page_pool on first")
		}
		s.Driver.DMA = scenario.DMARing
		if on {
			s.Driver.DMA = scenario.DMAPremapped
		}
	case "iommu":
		on, err := sw()
		if err != nil {
			return err
		}
		s.Driver.IOMMU = on
	case "kernel":
		v, err := kernel.Parse(value)
		if err != nil {
			return bad("%v", err)
		}
		s.Kernel = v.String()
	case "pool_size":
		n, err := num(0, scenario.MaxPoolSize)
		if err != nil {
			return err
		}
		s.Driver.PoolSize = n
	case "xdp":
		if value == XDPNone {
			s.XDP = nil
			s.Next = nil
			return nil
		}
		known := false
		for _, p := range bpf.Library() {
			known = known || p.Name == value
		}
		if !known {
			return bad("not a library program (load an object file instead)")
		}
		s.XDP = &scenario.XDP{Program: value}
		switch value {
		case bpf.NameRedirectCPU:
			s.XDP.CpumapCPUs = []int{s.CPUs - 1}
		case bpf.NameRedirectDev:
			if s.Next == nil {
				s.Next = &scenario.Next{MaxPPS: 13e6, RingSize: 512, CompletionCPU: -1}
			}
		}
	case "rate_pps":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f != f {
			return bad("not a number")
		}
		if f < 0 || f > 1e9 {
			return bad("want 0..1e9")
		}
		s.Traffic.RatePPS = f
	case "size":
		n, err := num(scenario.MinFrame, scenario.MaxFrame)
		if err != nil {
			return err
		}
		s.Traffic.Size = n
		s.Traffic.Sizes = nil
	default:
		return fmt.Errorf("%w: unknown parameter %q (known: %v)", ErrParam, key, ParamKeys())
	}
	return nil
}

// fitCPUs moves CPU references that a smaller CPU count left dangling to
// a CPU that exists.
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
