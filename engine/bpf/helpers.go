package bpf

import (
	"encoding/binary"

	"github.com/cilium/ebpf/asm"
)

// Helper ids (enum bpf_func_id) the interpreter implements. Any other call
// is refused when the program is prepared.
const (
	helperMapLookupElem     = 1
	helperMapUpdateElem     = 2
	helperMapDeleteElem     = 3
	helperKtimeGetNS        = 5
	helperGetSMPProcessorID = 8
	helperRedirect          = 23
	helperXDPAdjustHead     = 44
	helperRedirectMap       = 51
	helperXDPAdjustTail     = 65
)

// Redirect flags (include/uapi/linux/bpf.h).
const (
	FlagBroadcast      = 1 << 3 // BPF_F_BROADCAST
	FlagExcludeIngress = 1 << 4 // BPF_F_EXCLUDE_INGRESS
)

// SupportedHelpers lists the helpers programs may call.
var SupportedHelpers = []asm.BuiltinFunc{
	asm.FnMapLookupElem, asm.FnMapUpdateElem, asm.FnMapDeleteElem,
	asm.FnKtimeGetNs, asm.FnGetSmpProcessorId, asm.FnRedirect,
	asm.FnXdpAdjustHead, asm.FnRedirectMap, asm.FnXdpAdjustTail,
}

func helperSupported(fn asm.BuiltinFunc) bool {
	for _, h := range SupportedHelpers {
		if fn == h {
			return true
		}
	}
	return false
}

// call runs helper id with arguments R1-R5 and returns R0, or false after
// recording a fault. Arguments the verifier would have rejected (a scalar
// where a map or a readable key belongs, a map type the helper does not
// take) fault; conditions a verified program meets at run time (absent
// key, full map, adjust out of room) are return values, as in the kernel.
// R1-R5 are left as they were; verified programs never read them after a
// call.
func (m *machine) call(id int32, r *[16]uint64) (uint64, bool) {
	switch id {
	case helperMapLookupElem:
		mp, ok := m.mapArg(r[1])
		if !ok {
			return 0, false
		}
		switch mp.spec.Type {
		case CPUMap: // check_map_func_compatibility: redirect_map only
			m.fault = Fault{Reason: FaultMapType}
			return 0, false
		case PerCPUArray:
			if m.in.CPU < 0 || m.in.CPU >= mp.numCPU {
				m.fault = Fault{Reason: FaultCPU}
				return 0, false
			}
		}
		key := m.access(r[2], mp.spec.KeySize, false)
		if key == nil {
			return 0, false
		}
		off := mp.lookup(key, m.in.CPU)
		if off < 0 {
			return 0, true
		}
		return ptr(regMapValue+m.mapIndex(mp), uint64(off)), true

	case helperMapUpdateElem, helperMapDeleteElem:
		mp, ok := m.mapArg(r[1])
		if !ok {
			return 0, false
		}
		switch mp.spec.Type {
		case DevMap, CPUMap: // not writable from programs
			m.fault = Fault{Reason: FaultMapType}
			return 0, false
		case PerCPUArray:
			if m.in.CPU < 0 || m.in.CPU >= mp.numCPU {
				m.fault = Fault{Reason: FaultCPU}
				return 0, false
			}
		}
		key := m.access(r[2], mp.spec.KeySize, false)
		if key == nil {
			return 0, false
		}
		if id == helperMapDeleteElem {
			if err := mp.delete(key); err != nil {
				return errnoOf(err), true
			}
			return 0, true
		}
		val := m.access(r[3], mp.spec.ValueSize, false)
		if val == nil {
			return 0, false
		}
		if err := mp.update(key, val, UpdateFlags(r[4]), m.in.CPU); err != nil {
			return errnoOf(err), true
		}
		return 0, true

	case helperKtimeGetNS:
		if m.in.Clock == nil {
			return 0, true
		}
		return m.in.Clock.NowNS(), true

	case helperGetSMPProcessorID:
		return uint64(uint32(m.in.CPU)), true

	case helperRedirect:
		// bpf_xdp_redirect: any flag aborts.
		if r[2] != 0 {
			return uint64(XDPAborted), true
		}
		m.redirect = Redirect{Kind: RedirectIfindex, Key: uint32(r[1])}
		return uint64(XDPRedirect), true

	case helperRedirectMap:
		mp, ok := m.mapArg(r[1])
		if !ok {
			return 0, false
		}
		return m.redirectMap(mp, uint32(r[2]), r[3])

	case helperXDPAdjustHead:
		if !m.ctxArg(r[1]) {
			return 0, false
		}
		return m.adjustHead(int64(int32(r[2]))), true

	case helperXDPAdjustTail:
		if !m.ctxArg(r[1]) {
			return 0, false
		}
		return m.adjustTail(int64(int32(r[2]))), true
	}
	// prepare admits only the helpers above.
	panic("bpf: unprepared helper")
}

// mapArg decodes an ARG_CONST_MAP_PTR.
func (m *machine) mapArg(v uint64) (*Map, bool) {
	i := uint32(v>>32) - tagBase - regMapPtr
	if i >= uint32(len(m.maps)) || uint32(v) != 0 {
		m.fault = Fault{Reason: FaultHelperArg, Addr: v}
		return nil, false
	}
	return m.maps[i], true
}

func (m *machine) mapIndex(mp *Map) int {
	for i, x := range m.maps {
		if x == mp {
			return i
		}
	}
	panic("bpf: map not in program")
}

// ctxArg checks an ARG_PTR_TO_CTX: the unmodified ctx pointer.
func (m *machine) ctxArg(v uint64) bool {
	if v != ptr(regCtx, 0) {
		m.fault = Fault{Reason: FaultHelperArg, Addr: v}
		return false
	}
	return true
}

// redirectMap is the map's map_redirect op, __bpf_xdp_redirect_map
// (include/linux/filter.h) with dev_map_redirect's and cpu_map_redirect's
// flag masks: the low two bits of flags are the action returned when the
// key has no entry; other bits outside the mask abort.
func (m *machine) redirectMap(mp *Map, key uint32, flags uint64) (uint64, bool) {
	const actionMask = uint64(XDPAborted | XDPDrop | XDPPass | XDPTx)
	var flagMask uint64
	switch mp.spec.Type {
	case DevMap:
		flagMask = FlagBroadcast | FlagExcludeIngress
	case CPUMap:
	default:
		m.fault = Fault{Reason: FaultMapType}
		return 0, false
	}
	if flags&^(actionMask|flagMask) != 0 {
		return uint64(XDPAborted), true
	}
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	if mp.lookup(k[:], 0) < 0 && flags&FlagBroadcast == 0 {
		m.redirect = Redirect{}
		return flags & actionMask, true
	}
	m.redirect = Redirect{Kind: RedirectMap, Map: mp, Key: key}
	if flags&FlagBroadcast != 0 {
		m.redirect.Flags = flags
	}
	return uint64(XDPRedirect), true
}

// adjustHead is bpf_xdp_adjust_head (net/core/filter.c): data may move
// between the end of the xdp_frame area plus metadata and data_end -
// ETH_HLEN; metadata moves with it.
func (m *machine) adjustHead(off int64) uint64 {
	metalen := int64(m.data - m.meta)
	dataStart := XDPFrameSize + metalen
	data := int64(m.data) + off
	if data < dataStart || data > int64(m.end)-EthHlen {
		return EINVAL.ret()
	}
	if metalen > 0 {
		copy(m.in.Buf[int64(m.meta)+off:], m.in.Buf[m.meta:m.data])
	}
	m.meta = uint64(int64(m.meta) + off)
	m.data = uint64(data)
	return 0
}

// adjustTail is bpf_xdp_adjust_tail for a linear buffer: data_end may move
// down to data + ETH_HLEN and up to xdp_data_hard_end (frame_sz minus the
// skb_shared_info reserve); grown bytes are zeroed.
func (m *machine) adjustTail(off int64) uint64 {
	hardEnd := int64(len(m.in.Buf)) - SKBSharedInfoSize
	end := int64(m.end) + off
	if end > hardEnd || len(m.in.Buf) > PageSize || end < int64(m.data)+EthHlen {
		return EINVAL.ret()
	}
	if off > 0 {
		clear(m.in.Buf[m.end:end])
	}
	m.end = uint64(end)
	if !m.trace {
		m.fastEnd = m.end
	}
	return 0
}
