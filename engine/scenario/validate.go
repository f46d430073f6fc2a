package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"ringlab/engine/kernel"
	"sort"
	"strings"
)

// Limits of what a scenario may ask for. They keep a run within the memory
// and time a browser tab has; the kernel's own limits are noted.
const (
	MaxCPUs        = 64
	MaxQueues      = 64
	MaxRingSize    = 32768 // virtio split ring maximum
	MinMTU         = 68
	MaxMTU         = 65535 - 14
	MinFrame       = 60 // Ethernet minimum without FCS
	MaxFrame       = 65535
	MaxFlows       = 1 << 16
	MaxMemoryPages = 1 << 22 // 16 GiB of simulated memory
	MaxPoolSize    = 16384   // page_pool's ptr_ring cap
	MaxCpumapQsize = 16384
	MaxSizes       = 64
	MaxBudget      = 1024
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid scenario")

// FieldError names the field (a JSON path like "traffic.size") and the
// reason.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Default returns the defaults every scenario starts from: one CPU, one
// queue pair of 256 entries, MTU 1500 reported by the device
// (VIRTIO_NET_F_MTU), mergeable buffers from page_pool fragments,
// premapped (virtio_net in 2026), EVENT_IDX, UDP 64-byte frames as fast as
// the device goes.
func Default() Scenario {
	return Scenario{
		Name:       "custom",
		Seed:       1,
		Kernel:     kernel.Default.String(),
		CPUs:       1,
		Queues:     1,
		RingSize:   256,
		TxRingSize: 256,
		MTU:        1500,
		// QEMU's virtio-net offers ctrl_guest_offloads by default.
		Features: Features{MrgRxbuf: true, EventIdx: true, GuestCsum: true, CtrlGuestOffloads: true, MTU: true},
		Driver: Driver{
			BufferSource: SourcePagePool,
			DMA:          DMAPremapped,
			Budget:       64,
			GRO:          true,
		},
		Consumer:    Consumer{CPU: -1, Context: FreeSoftirq, CostNs: 200},
		Traffic:     Traffic{Size: 64, Flows: 1, Proto: "udp", DstPort: 9},
		Device:      Device{Kind: DeviceVhost, Backlog: 1000, AvailEvent: AvailEventSeen},
		Sysctl:      Sysctl{NetdevBudget: DefaultNetdevBudget},
		Sched:       Sched{HZ: 1000},
		MemoryPages: 1 << 16,
	}
}

// DefaultNetdevBudget is net.core.netdev_budget's default.
const DefaultNetdevBudget = 300

// validateHost checks where the guest's threads run on the host: a host
// CPU each, no two vCPUs on one (their sharing is not modelled), and
// vhost workers only on a vhost device, not two on one host CPU.
func (s *Scenario) validateHost() error {
	if s.Host == nil {
		return nil
	}
	h := s.Host
	if len(h.VCPUs) != 0 && len(h.VCPUs) != s.CPUs {
		return bad("host.vcpus", "%d host CPUs for %d vCPUs: give one per vCPU, or none (each its own)", len(h.VCPUs), s.CPUs)
	}
	if len(h.Vhost) != 0 && len(h.Vhost) != s.Queues {
		return bad("host.vhost", "%d host CPUs for %d queues' vhost workers: give one per queue, or none (each its own)", len(h.Vhost), s.Queues)
	}
	if len(h.Vhost) > 0 && s.Device.Kind != DeviceVhost {
		return bad("host.vhost", "a %s device has no vhost worker: only device.kind vhost has one", s.Device.Kind)
	}
	seen := map[int]string{}
	for i, c := range h.VCPUs {
		if c < 0 || c >= MaxHostCPUs {
			return bad(fmt.Sprintf("host.vcpus[%d]", i), "%d: want 0..%d", c, MaxHostCPUs-1)
		}
		if o, ok := seen[c]; ok {
			return bad(fmt.Sprintf("host.vcpus[%d]", i), "host CPU %d runs %s already: two vCPUs on one host CPU are not modelled", c, o)
		}
		seen[c] = fmt.Sprintf("vCPU %d", i)
	}
	workers := map[int]int{}
	for q, c := range h.Vhost {
		if c < 0 || c >= MaxHostCPUs {
			return bad(fmt.Sprintf("host.vhost[%d]", q), "%d: want 0..%d", c, MaxHostCPUs-1)
		}
		if o, ok := workers[c]; ok {
			return bad(fmt.Sprintf("host.vhost[%d]", q), "host CPU %d runs queue %d's worker already: two workers on one host CPU are not modelled", c, o)
		}
		workers[c] = q
	}
	return nil
}

// validateSched checks the sysctls and the scheduler's tunables.
func (s *Scenario) validateSched() error {
	if b := s.Sysctl.NetdevBudget; b < 1 || b > 1_000_000 {
		return bad("sysctl.netdev_budget", "%d: want 1..1000000 packets (the kernel's default is %d)", b, DefaultNetdevBudget)
	}
	if u := s.Sysctl.NetdevBudgetUsecs; u < 0 || u > 1_000_000 {
		return bad("sysctl.netdev_budget_usecs", "%d: want 0 (two jiffies) or 1..1000000 us", u)
	}
	switch s.Sched.HZ {
	case 100, 250, 300, 1000:
	default:
		return bad("sched.hz", "%d: want one of CONFIG_HZ's 100, 250, 300, 1000", s.Sched.HZ)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"sched.latency_ns", s.Sched.LatencyNs}, {"sched.min_granularity_ns", s.Sched.MinGranularityNs},
		{"sched.wakeup_granularity_ns", s.Sched.WakeupGranularityNs}, {"sched.base_slice_ns", s.Sched.BaseSliceNs},
	} {
		if f.v != 0 && (f.v < 100_000 || f.v > 1_000_000_000) {
			return bad(f.name, "%d: want 0 (the kernel's default for the CPU count) or 100000..1000000000 ns", f.v)
		}
	}
	return nil
}

// validateStream checks a tcp_stream or udp_stream workload: one stream
// per queue pair at most, a socket read by an application, and none of
// the open generator's shaping (the sender's window or its line paces
// it, and the stream decides its frames' sizes).
func (s *Scenario) validateStream() error {
	t := s.Traffic
	kind := t.Kind
	switch {
	case len(t.Sizes) > 0 || t.RandomSizes:
		return bad("traffic.sizes", "a %s decides its frames' sizes (traffic.size, sizes and random_sizes are the open generator's)", kind)
	case t.Burst != 0:
		return bad("traffic.burst", "a %s has no bursts of its own", kind)
	case t.GSOSize != 0:
		return bad("traffic.gso_size", "a %s builds GSO frames itself when guest GSO is negotiated on a vhost device", kind)
	case t.LineGbps < 0 || t.LineGbps > 10_000:
		return bad("traffic.line_gbps", "%g: want 0..10000", t.LineGbps)
	case t.RatePPS < 0 || t.RatePPS > 1e9:
		return bad("traffic.rate_pps", "%g: want 0..1e9", t.RatePPS)
	case t.LineGbps > 0 && t.RatePPS > 0:
		return bad("traffic.line_gbps", "rate_pps and line_gbps are exclusive")
	case t.Flows < 1 || t.Flows > s.Queues:
		return bad("traffic.flows", "%d: a %s has one stream per queue pair at most (1..%d)", t.Flows, kind, s.Queues)
	case t.DstPort < 0 || t.DstPort > 65535:
		return bad("traffic.dst_port", "%d: want 0..65535", t.DstPort)
	case s.Consumer.Context != FreeProcess:
		return bad("consumer.context", "a %s is read by an application: want %q", kind, FreeProcess)
	case s.Consumer.RcvbufBytes < 0 || s.Consumer.RcvbufBytes > 1<<30:
		return bad("consumer.rcvbuf_bytes", "%d: want 0 (the protocol's default) .. %d", s.Consumer.RcvbufBytes, 1<<30)
	}
	if kind == TrafficTCPStream {
		switch {
		case t.Proto != "tcp":
			return bad("traffic.proto", "%q: a tcp_stream sends tcp", t.Proto)
		case t.RatePPS != 0:
			return bad("traffic.rate_pps", "a tcp_stream is paced by its windows (and traffic.line_gbps, its link), not a rate")
		case t.RTTUs < 0 || t.RTTUs > 1e6:
			return bad("traffic.rtt_us", "%g: want 0 (%d) .. 1000000", t.RTTUs, DefaultRTTUs)
		case t.WriteBytes < 0 || t.WriteBytes > 64<<20:
			return bad("traffic.write_bytes", "%d: want 0 (%d) .. %d", t.WriteBytes, DefaultWriteBytes, 64<<20)
		case t.MessageBytes != 0:
			return bad("traffic.message_bytes", "is udp_stream's (a tcp_stream has write_bytes)")
		}
		mss, hdr, segs := s.TCPFrame()
		if mss < 88 {
			return bad("mtu", "%d: a TCP stream needs an MSS of at least 88 bytes", s.MTU)
		}
		if frame := mss*segs + hdr; s.Mode() == ModeMergeable && frame+12 > s.RingSize*4096 {
			return bad("ring_size", "%d mergeable buffers of at most a page cannot hold a %d-byte GSO frame", s.RingSize, frame)
		}
		return nil
	}
	switch {
	case t.Proto != "udp":
		return bad("traffic.proto", "%q: a udp_stream sends udp", t.Proto)
	case t.RTTUs != 0 || t.WriteBytes != 0 || t.NoDelay:
		return bad("traffic", "rtt_us, write_bytes and nodelay are tcp_stream's")
	}
	ip := 20
	if t.IPv6 {
		ip = 40
	}
	if most := s.MTU - ip - 8; t.MessageBytes < 0 || t.MessageBytes > most {
		return bad("traffic.message_bytes", "%d: want 0 (%d) .. %d, the MTU less the IP and UDP headers (IP fragments are not modelled)", t.MessageBytes, most, most)
	}
	return nil
}

// removedFields are fields older scenario files had, with what replaced
// them (encoding/json names a nested unknown field by its own name).
var removedFields = map[string]string{
	"napi_local_recycle": `NAPI-local recycling is dated: set "kernel" (6.5+ recycles skb frees from the NAPI CPU, 6.10+ every put)`,
	"legacy_big_packets": `the 9k MTU fix is dated: set "kernel" ("6.0" posts MAX_SKB_FRAGS pages per big buffer, 6.1+ sizes them to the MTU)`,
}

// Decode reads a scenario from JSON on top of Default, refusing unknown
// fields, trailing data and values of the wrong type, then validates it.
func Decode(r io.Reader) (Scenario, error) {
	s, err := decodeUnchecked(r)
	if err != nil {
		return Scenario{}, err
	}
	if err := s.Validate(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// decodeUnchecked is Decode without Validate: the JSON's form only.
func decodeUnchecked(r io.Reader) (Scenario, error) {
	s := Default()
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, jsonError(err)
	}
	if dec.More() {
		return Scenario{}, fmt.Errorf("%w: trailing data after the scenario object", ErrInvalid)
	}
	return s, nil
}

// DecodeBytes is Decode on a byte slice.
func DecodeBytes(b []byte) (Scenario, error) { return Decode(bytes.NewReader(b)) }

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(top level)"
		}
		return bad(field, "want %s, got JSON %s (offset %d)", te.Type, te.Value, te.Offset)
	case errors.As(err, &se):
		return fmt.Errorf("%w: JSON syntax error at offset %d: %v", ErrInvalid, se.Offset, se)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if why, ok := removedFields[name]; ok {
			return bad(name, "no longer a field: %s", why)
		}
		return bad(name, "unknown field")
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: empty input, want a JSON object", ErrInvalid)
	}
	return fmt.Errorf("%w: %v", ErrInvalid, err)
}

// Validate checks every field and returns the first problem found, naming
// the field.
func (s *Scenario) Validate() error {
	if s.Kernel != "" {
		if _, err := kernel.Parse(s.Kernel); err != nil {
			return bad("kernel", "%v", err)
		}
	}
	if s.CPUs < 1 || s.CPUs > MaxCPUs {
		return bad("cpus", "%d: want 1..%d", s.CPUs, MaxCPUs)
	}
	if s.Queues < 1 || s.Queues > MaxQueues {
		return bad("queues", "%d: want 1..%d", s.Queues, MaxQueues)
	}
	if err := ringSize("ring_size", s.RingSize); err != nil {
		return err
	}
	if err := ringSize("tx_ring_size", s.TxRingSize); err != nil {
		return err
	}
	if s.MTU < MinMTU || s.MTU > MaxMTU {
		return bad("mtu", "%d: want %d..%d", s.MTU, MinMTU, MaxMTU)
	}
	if s.MemoryPages < 1024 || s.MemoryPages > MaxMemoryPages {
		return bad("memory_pages", "%d: want 1024..%d", s.MemoryPages, MaxMemoryPages)
	}
	if err := s.validateDriver(); err != nil {
		return err
	}
	if err := s.validateSched(); err != nil {
		return err
	}
	if err := s.validateHost(); err != nil {
		return err
	}
	if err := s.validateXDP(); err != nil {
		return err
	}
	if err := s.validateTraffic(); err != nil {
		return err
	}
	c := s.Consumer
	if c.CPU < -1 || c.CPU >= s.CPUs {
		return bad("consumer.cpu", "%d: want -1 (the receiving CPU) or 0..%d", c.CPU, s.CPUs-1)
	}
	if c.Context != FreeSoftirq && c.Context != FreeProcess {
		return bad("consumer.context", "%q: want %q or %q", c.Context, FreeSoftirq, FreeProcess)
	}
	if c.CostNs < 0 || c.CostNs > 1_000_000 {
		return bad("consumer.cost_ns", "%d: want 0..1000000", c.CostNs)
	}
	d := s.Device
	if d.Kind != DeviceVhost && d.Kind != DeviceNIC && d.Kind != DeviceVDPA {
		return bad("device.kind", "%q: want %q, %q or %q", d.Kind, DeviceVhost, DeviceNIC, DeviceVDPA)
	}
	if d.Kind == DeviceVDPA && s.Traffic.PPS() == 0 {
		return bad("device.kind", "a vdpa device places frames as the wire brings them: set traffic.rate_pps or traffic.line_gbps")
	}
	if d.AvailEvent != AvailEventSeen && d.AvailEvent != AvailEventPop {
		return bad("device.avail_event", "%q: want %q (vhost: written when the device runs out, with the avail index it has seen) or %q (QEMU's virtqueue_split_pop: also last_avail_idx on every pop)",
			d.AvailEvent, AvailEventSeen, AvailEventPop)
	}
	if d.MaxPPS < 0 || d.MaxPPS > 1e9 {
		return bad("device.max_pps", "%g: want 0..1e9", d.MaxPPS)
	}
	if d.Backlog < 0 || d.Backlog > 1<<20 {
		return bad("device.backlog", "%d: want 0..%d", d.Backlog, 1<<20)
	}
	if n := s.Next; n != nil {
		if n.MaxPPS <= 0 || n.MaxPPS > 1e9 {
			return bad("next_device.max_pps", "%g: want >0 and <= 1e9", n.MaxPPS)
		}
		if err := ringSize("next_device.ring_size", n.RingSize); err != nil {
			return err
		}
		if n.CompletionCPU < -1 || n.CompletionCPU >= s.CPUs {
			return bad("next_device.completion_cpu", "%d: want -1 or 0..%d", n.CompletionCPU, s.CPUs-1)
		}
	}
	keys := make([]string, 0, len(s.Costs))
	for k := range s.Costs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if s.Costs[k] < 0 {
			return bad("costs."+k, "%d ns is negative", s.Costs[k])
		}
	}
	return s.validateFitted()
}

// validateFitted checks that each fitted field exists (a cost the scenario
// overrides, for costs) and names a row of a published result.
func (s *Scenario) validateFitted() error {
	for i, f := range s.Fitted {
		field := fmt.Sprintf("fitted[%d]", i)
		if _, ok := FieldKind(f.Field); !ok || f.Field == "fitted" || strings.HasPrefix(f.Field, "fitted.") {
			return bad(field+".field", "%q: want the JSON path of a scenario field", f.Field)
		}
		if name, ok := strings.CutPrefix(f.Field, "costs."); ok {
			if _, set := s.Costs[name]; !set {
				return bad(field+".field", "%q: the scenario does not override that cost", f.Field)
			}
		}
		if !isResultRow(f.Result, f.Row) {
			return bad(field, "result %q row %q: want a row of the published results (R1..R4, ringlab reproduce)", f.Result, f.Row)
		}
		if f.Why == "" {
			return bad(field+".why", "empty: say what the value makes come out")
		}
	}
	return nil
}

// isResultRow reports whether config is a row of published result id.
func isResultRow(id, config string) bool {
	for _, r := range Reproductions() {
		if r.ID == id && r.Config == config {
			return true
		}
	}
	return false
}

func ringSize(field string, n int) error {
	if n < 2 || n > MaxRingSize || n&(n-1) != 0 {
		return bad(field, "%d: want a power of two from 2 to %d", n, MaxRingSize)
	}
	return nil
}

func (s *Scenario) validateDriver() error {
	d := s.Driver
	switch d.BufferSource {
	case SourcePageFrag, SourcePage, SourcePagePool, SourcePagePoolFrag:
	default:
		return bad("driver.buffer_source", "%q: want one of %s, %s, %s, %s", d.BufferSource,
			SourcePageFrag, SourcePage, SourcePagePool, SourcePagePoolFrag)
	}
	switch d.DMA {
	case DMARing, DMAPremapped:
	default:
		return bad("driver.dma", "%q: want %q or %q", d.DMA, DMARing, DMAPremapped)
	}
	pool := d.BufferSource == SourcePagePool || d.BufferSource == SourcePagePoolFrag
	if d.DMA == DMAPremapped && !pool {
		return bad("driver.dma", "premapped needs a page_pool buffer source (got %q)", d.BufferSource)
	}
	if d.IOMMU && !s.UsesDMAAPI() {
		return bad("driver.iommu", "a %s device without VIRTIO_F_ACCESS_PLATFORM bypasses the IOMMU: the guest's virtio core uses no DMA API (vring_use_dma_api); set features.access_platform (QEMU's iommu_platform=on)", s.Device.Kind)
	}
	switch {
	case d.VIOMMU && !d.IOMMU:
		return bad("driver.viommu", "an emulated IOMMU is an IOMMU: set driver.iommu too")
	case d.IOMMUCachingMode && !d.VIOMMU:
		return bad("driver.iommu_caching_mode", "caching mode is QEMU's emulated intel-iommu's: set driver.viommu")
	case d.IOMMUStrict && !d.VIOMMU:
		return bad("driver.iommu_strict", "the engine models iommu.strict for an emulated IOMMU only: set driver.viommu")
	}
	if pool && s.Mode() == ModeBig {
		return bad("driver.buffer_source", "%q: virtio_net uses page_pool in small and mergeable modes, not big (features give big mode)", d.BufferSource)
	}
	if pool && s.Mode() == ModeSmall && !s.Behaviours().VirtioNetPagePool {
		first := firstWith(func(b kernel.Behaviours) bool { return b.VirtioNetPagePool })
		return bad("driver.buffer_source", "%q in small mode: on kernel %s a virtio_net page_pool is the 2023 series, which creates one for mergeable buffers only; small mode has one from %s (the 2026 driver): use page_frag, or kernel %q",
			d.BufferSource, s.KernelVersion(), first, first.String())
	}
	switch {
	case d.PoolOrder < 0 || d.PoolOrder > 3:
		return bad("driver.pool_order", "%d: want 0..3", d.PoolOrder)
	case d.PoolOrder > 0 && d.BufferSource != SourcePagePoolFrag:
		return bad("driver.pool_order", "%d: pool pages larger than a page are split into fragments: needs driver.buffer_source page_pool_frag", d.PoolOrder)
	}
	if d.PoolSize < 0 || d.PoolSize > MaxPoolSize {
		return bad("driver.pool_size", "%d: want 0 (ring size) .. %d", d.PoolSize, MaxPoolSize)
	}
	if d.Budget < 1 || d.Budget > MaxBudget {
		return bad("driver.napi_budget", "%d: want 1..%d", d.Budget, MaxBudget)
	}
	if s.Mode() == ModeBig && s.BigPacketsNumSkbFrags()+2 > s.RingSize {
		return bad("ring_size", "%d entries cannot hold one big-mode buffer of %d descriptors", s.RingSize, s.BigPacketsNumSkbFrags()+2)
	}
	return nil
}

func (s *Scenario) validateXDP() error {
	x := s.XDP
	if x == nil {
		return nil
	}
	if x.Program == "" && x.Object == "" {
		return bad("xdp.program", "empty: name a library program or give xdp.object")
	}
	if x.Program != "" && x.Object != "" {
		return bad("xdp", "program and object are exclusive")
	}
	if x.CpumapQsize < 0 || x.CpumapQsize > MaxCpumapQsize {
		return bad("xdp.cpumap_qsize", "%d: want 0 (default 2048) .. %d", x.CpumapQsize, MaxCpumapQsize)
	}
	for i, c := range x.CpumapCPUs {
		if c < 0 || c >= s.CPUs {
			return bad(fmt.Sprintf("xdp.cpumap_cpus[%d]", i), "CPU %d: want 0..%d", c, s.CPUs-1)
		}
	}
	v := s.KernelVersion()
	if x.Frags && v.Less(xdpFragsOldest) {
		return bad("xdp.frags", "virtio_net builds multi-buffer xdp_buffs from %s (fab89bafa95b); the scenario runs %s", xdpFragsOldest, v)
	}
	// virtnet_xdp_set refuses no receive mode: in big mode the program
	// is attached and never runs (receive_big builds its skbs from the
	// page chain without it). What it refuses is the host's offloads
	// and an MTU a page cannot hold.
	if s.Device.Kind != DeviceNIC {
		if s.Features.GuestGSO && !(s.Behaviours().XDPClearsGuestGSO && s.Features.CtrlGuestOffloads) {
			return bad("features.guest_gso", "virtnet_xdp_set refuses XDP on %s while the host may send GSO packets (guest TSO/UFO negotiated): \"can't set XDP while host is implementing LRO\"; from 4.15 it turns them off when CTRL_GUEST_OFFLOADS is negotiated (features.ctrl_guest_offloads)", v)
		}
		if max, frags := xdpMaxMTU(v); s.MTU > max && !(frags && x.Frags) {
			return bad("mtu", "%d: virtnet_xdp_set on %s takes XDP only up to an MTU of %d (\"MTU too large to enable XDP without frags\"), a page less the XDP headroom and skb_shared_info; from %s a program with frags support (xdp.frags) may have more", s.MTU, v, max, xdpFragsOldest)
		}
	}
	if b := s.Behaviours(); b.XDPClearsGuestCsum && s.Device.Kind != DeviceNIC && s.Features.GuestCsum && !s.Features.CtrlGuestOffloads {
		return bad("features.ctrl_guest_offloads", "virtnet_xdp_set refuses XDP on %s (EOPNOTSUPP, \"Can't set XDP while host is implementing GRO_HW/CSUM, disable GRO_HW/CSUM first\"): GUEST_CSUM is negotiated without CTRL_GUEST_OFFLOADS to turn it off; negotiate ctrl_guest_offloads (QEMU's default) or leave out guest_csum", s.KernelVersion())
	}
	if s.Traffic.GSOSize > 0 {
		// virtnet_xdp_set: without CTRL_GUEST_OFFLOADS it refuses XDP
		// while guest GSO is negotiated; with it, it clears the guest
		// offloads, and the device sends no GSO packet.
		return bad("xdp", "no GSO packet reaches a guest with XDP: virtnet_xdp_set refuses XDP while guest offloads are on, or turns them off (traffic.gso_size)")
	}
	return nil
}

// xdpMaxMTU is virtnet_xdp_set's max_sz on kernel v, and whether a
// program with frags support may pass it: PAGE_SIZE - sizeof(struct
// padded_vnet_hdr) (4080) until 6.2, PAGE_SIZE - SKB_DATA_ALIGN(
// VIRTIO_XDP_HEADROOM + sizeof(struct skb_shared_info)) - ETH_HLEN
// (4096 - 576 - 14 = 3506) from 6.3, where frags lift it.
func xdpMaxMTU(v kernel.Version) (max int, frags bool) {
	if v.Less(xdpFragsOldest) {
		return 4080, false
	}
	return 3506, true
}

// xdpFragsOldest is the first release whose virtio_net takes XDP programs
// with frags support (virtnet_build_xdp_buff_mrg).
var xdpFragsOldest = kernel.Version{Major: 6, Minor: 3}

func (s *Scenario) validateTraffic() error {
	t := s.Traffic
	switch t.Kind {
	case "", TrafficOpen:
	case TrafficTCPStream, TrafficUDPStream:
		return s.validateStream()
	default:
		return bad("traffic.kind", "%q: want %q, %q or %q", t.Kind, TrafficOpen, TrafficTCPStream, TrafficUDPStream)
	}
	if t.RTTUs != 0 || t.WriteBytes != 0 || t.MessageBytes != 0 || t.NoDelay {
		return bad("traffic", "rtt_us, write_bytes, nodelay and message_bytes belong to the stream kinds (traffic.kind tcp_stream or udp_stream)")
	}
	if t.RatePPS < 0 || t.RatePPS > 1e9 {
		return bad("traffic.rate_pps", "%g: want 0 (device speed) .. 1e9", t.RatePPS)
	}
	if t.LineGbps < 0 || t.LineGbps > 10_000 {
		return bad("traffic.line_gbps", "%g: want 0..10000", t.LineGbps)
	}
	if t.LineGbps > 0 && t.RatePPS > 0 {
		return bad("traffic.line_gbps", "rate_pps and line_gbps are exclusive")
	}
	if t.RandomSizes && len(t.Sizes) < 2 {
		return bad("traffic.random_sizes", "needs at least two sizes in traffic.sizes")
	}
	if t.Proto != "udp" && t.Proto != "tcp" {
		return bad("traffic.proto", "%q: want udp or tcp", t.Proto)
	}
	if t.Flows < 1 || t.Flows > MaxFlows {
		return bad("traffic.flows", "%d: want 1..%d", t.Flows, MaxFlows)
	}
	if t.Burst < 0 || t.Burst > 4096 {
		return bad("traffic.burst", "%d: want 0..4096", t.Burst)
	}
	if t.DstPort < 0 || t.DstPort > 65535 {
		return bad("traffic.dst_port", "%d: want 0..65535", t.DstPort)
	}
	if len(t.Sizes) > MaxSizes {
		return bad("traffic.sizes", "%d sizes: at most %d", len(t.Sizes), MaxSizes)
	}
	max := s.MTU + 14
	if t.GSOSize > 0 {
		if !s.Features.GuestGSO {
			return bad("traffic.gso_size", "GSO packets need features.guest_gso")
		}
		if t.GSOSize > MaxFrame {
			return bad("traffic.gso_size", "%d: at most %d", t.GSOSize, MaxFrame)
		}
		max = t.GSOSize
	}
	hdr := headerLen(t)
	checkLen := func(field string, n int) error {
		if n < MinFrame || n < hdr {
			return bad(field, "%d bytes: the %s/%s headers alone need %d (and Ethernet %d)", n, ipName(t.IPv6), t.Proto, hdr, MinFrame)
		}
		if n > max {
			return bad(field, "%d bytes exceeds the MTU %d + 14 (or gso_size)", n, s.MTU)
		}
		return nil
	}
	check := checkLen
	if s.Mode() == ModeMergeable {
		// get_mergeable_buf_len never posts more than a page (the EWMA is
		// clamped to PAGE_SIZE - hdr_len, header added, L1-aligned), so
		// a ring of num buffers holds at most num pages of frame and
		// virtio_net_hdr_mrg_rxbuf (12 bytes); mergeable_min_buf_len
		// aims at one maximum-size packet per full ring but cannot go
		// past a page. A larger frame could never be placed: the host
		// would wait for buffers a full ring does not have.
		check = func(field string, n int) error {
			if err := checkLen(field, n); err != nil {
				return err
			}
			if n+12 > s.RingSize*4096 {
				return bad(field, "%d bytes: %d mergeable buffers of at most a page cannot hold it (a larger ring_size can)", n, s.RingSize)
			}
			return nil
		}
	}
	if len(t.Sizes) == 0 {
		return check("traffic.size", t.Size)
	}
	for i, n := range t.Sizes {
		if err := check(fmt.Sprintf("traffic.sizes[%d]", i), n); err != nil {
			return err
		}
	}
	return nil
}

func ipName(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

// headerLen is Ethernet + IP + L4 header bytes.
func headerLen(t Traffic) int {
	n := 14 + 20
	if t.IPv6 {
		n = 14 + 40
	}
	if t.Proto == "tcp" {
		return n + 20
	}
	return n + 8
}

// firstWith is the first release whose behaviours satisfy has.
func firstWith(has func(kernel.Behaviours) bool) kernel.Version {
	for _, v := range kernel.Releases() {
		if has(v.Behaviours()) {
			return v
		}
	}
	return kernel.Newest
}
