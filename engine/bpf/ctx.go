package bpf

import "fmt"

// Action is an XDP verdict (enum xdp_action): the program's R0 at exit,
// truncated to 32 bits as the kernel reads it.
type Action uint32

// XDP verdicts (include/uapi/linux/bpf.h).
const (
	XDPAborted  Action = 0
	XDPDrop     Action = 1
	XDPPass     Action = 2
	XDPTx       Action = 3
	XDPRedirect Action = 4
)

// Valid reports whether a is one of the five verdicts. Drivers treat any
// other value like XDP_ABORTED after bpf_warn_invalid_xdp_action.
func (a Action) Valid() bool { return a <= XDPRedirect }

func (a Action) String() string {
	switch a {
	case XDPAborted:
		return "XDP_ABORTED"
	case XDPDrop:
		return "XDP_DROP"
	case XDPPass:
		return "XDP_PASS"
	case XDPTx:
		return "XDP_TX"
	case XDPRedirect:
		return "XDP_REDIRECT"
	}
	return fmt.Sprintf("Action(%d)", uint32(a))
}

// Layout constants of the XDP buffer (include/net/xdp.h, linux/skbuff.h on
// x86-64), used by the adjust helpers.
const (
	// EthHlen is ETH_HLEN: adjust_head and adjust_tail keep at least this
	// many bytes of packet.
	EthHlen = 14
	// XDPFrameSize is sizeof(struct xdp_frame): the start of the buffer that
	// bpf_xdp_adjust_head may not move data into, because xdp_frame is
	// written there on XDP_REDIRECT.
	XDPFrameSize = 40
	// SKBSharedInfoSize is SKB_DATA_ALIGN(sizeof(struct skb_shared_info)):
	// the tail of the buffer that bpf_xdp_adjust_tail may not grow into
	// (xdp_data_hard_end).
	SKBSharedInfoSize = 320
	// PageSize bounds frame_sz: bpf_xdp_adjust_tail refuses larger frames.
	PageSize = 4096
)

// Offsets of the fields of struct xdp_md, the program's view of the context.
// All are 32-bit and read-only.
const (
	mdData           = 0
	mdDataEnd        = 4
	mdDataMeta       = 8
	mdIngressIfindex = 12
	mdRxQueueIndex   = 16
	mdEgressIfindex  = 20
	mdSize           = 24
)

// Clock is the source of bpf_ktime_get_ns: virtual nanoseconds.
type Clock interface {
	NowNS() uint64
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() uint64

// NowNS implements Clock.
func (f ClockFunc) NowNS() uint64 { return f() }

// Input is one XDP invocation: the kernel's struct xdp_buff plus the
// execution context. Buf starts at data_hard_start and its length is
// frame_sz (headroom + packet + tailroom, including the skb_shared_info
// reserve). Offsets obey 0 <= DataMeta <= Data <= DataEnd <= len(Buf);
// DataMeta == Data means no metadata. Run may write into Buf[DataMeta:DataEnd]
// and, through the adjust helpers, into the head- and tailroom.
type Input struct {
	Buf                     []byte
	Data, DataEnd, DataMeta int

	IngressIfindex uint32 // xdp_md.ingress_ifindex
	RxQueueIndex   uint32 // xdp_md.rx_queue_index
	EgressIfindex  uint32 // xdp_md.egress_ifindex, set for devmap programs

	CPU   int   // bpf_get_smp_processor_id; selects per-CPU map values
	Clock Clock // bpf_ktime_get_ns; nil reads as 0
}

// RedirectKind says where bpf_redirect_info points.
type RedirectKind uint8

// Redirect kinds.
const (
	RedirectNone    RedirectKind = iota
	RedirectIfindex              // bpf_redirect: map_type UNSPEC, map_id INT_MAX
	RedirectMap                  // bpf_redirect_map hit: devmap or cpumap entry
)

// Redirect is the state bpf_redirect and bpf_redirect_map leave in the
// per-CPU struct bpf_redirect_info for xdp_do_redirect. It is meaningful
// only when the program returned XDP_REDIRECT; the last helper call wins.
// It starts empty on every run: XDP_REDIRECT with Kind RedirectNone is what
// xdp_do_redirect fails with -EBADRQC, and the driver drops the frame. A
// bpf_redirect_map miss also empties it, where the kernel leaves a stale
// ifindex that only a program returning XDP_REDIRECT regardless could use.
type Redirect struct {
	Kind  RedirectKind
	Key   uint32 // tgt_index: the ifindex, or the map key
	Flags uint64 // BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS for devmaps
	Map   *Map   // RedirectMap: the devmap or cpumap
}

// Result is the outcome of one Run.
type Result struct {
	Action Action
	// Data, DataEnd, DataMeta are the buffer offsets after
	// bpf_xdp_adjust_head / bpf_xdp_adjust_tail.
	Data, DataEnd, DataMeta int
	Redirect                Redirect
	// Fault is set when the run was aborted; Action is then XDPAborted.
	Fault Fault
	// Insns is the number of instructions executed, helpers counting one.
	Insns int
}

// FaultReason says why a run was aborted.
type FaultReason uint8

// Fault reasons.
const (
	FaultNone         FaultReason = iota
	FaultBadInput                 // Input offsets inconsistent with Buf
	FaultBudget                   // instruction budget exhausted
	FaultNotPointer               // memory access through a scalar
	FaultOutOfBounds              // access outside its region
	FaultMisaligned               // unaligned stack, ctx or atomic access
	FaultReadOnly                 // store to ctx or a read-only map value
	FaultCtxAccess                // ctx access of the wrong size or offset
	FaultAtomicRegion             // atomic on packet or ctx memory
	FaultHelperArg                // helper argument of the wrong kind
	FaultMapType                  // helper not allowed on this map type
	FaultCPU                      // CPU id outside the per-CPU maps' range
	FaultCallDepth                // more than MaxCallFrames nested calls
)

var faultNames = [...]string{
	FaultNone:         "none",
	FaultBadInput:     "bad input offsets",
	FaultBudget:       "instruction budget exhausted",
	FaultNotPointer:   "memory access through a non-pointer",
	FaultOutOfBounds:  "access out of bounds",
	FaultMisaligned:   "misaligned access",
	FaultReadOnly:     "write to read-only memory",
	FaultCtxAccess:    "invalid xdp_md access",
	FaultAtomicRegion: "atomic operation on packet or ctx",
	FaultHelperArg:    "bad helper argument",
	FaultMapType:      "helper not supported on map type",
	FaultCPU:          "cpu id outside per-CPU range",
	FaultCallDepth:    "call depth exceeded",
}

func (r FaultReason) String() string {
	if int(r) < len(faultNames) {
		return faultNames[r]
	}
	return fmt.Sprintf("FaultReason(%d)", uint8(r))
}

// Fault records why and where a run aborted.
type Fault struct {
	Reason FaultReason
	Size   uint8  // the access size of a memory fault
	Helper uint16 // the helper id when the fault happened in a helper
	Insn   int32  // raw instruction offset, -1 when not at an instruction
	Addr   uint64 // the tagged address of a memory fault
}

// Faulted reports whether the run aborted.
func (f Fault) Faulted() bool { return f.Reason != FaultNone }

func (f Fault) String() string {
	if f.Reason == FaultNone {
		return "no fault"
	}
	s := fmt.Sprintf("insn %d: %s", f.Insn, f.Reason)
	if f.Size > 0 {
		s += fmt.Sprintf(" (%s, %d bytes)", describePtr(f.Addr), f.Size)
	}
	if f.Helper > 0 {
		s += fmt.Sprintf(" in helper %d", f.Helper)
	}
	return s
}
