package bpf

import (
	"encoding/binary"
	"fmt"
)

// A pointer is (tagBase+region)<<32 | offset. The tag keeps small scalars
// from ever looking like pointers; everything else about a register holding
// a pointer is ordinary 64-bit arithmetic, so pointer += scalar works and an
// offset that underflows lands in another (invalid) region and faults.
const (
	tagBase = 0xbf00_0000

	regCtx      = 0
	regStack    = 1
	regPacket   = 2
	regMapValue = 16                        // + program map index: that map's value memory
	regMapPtr   = regMapValue + MaxUsedMaps // + program map index: CONST_PTR_TO_MAP
	regEnd      = regMapPtr + MaxUsedMaps
)

// Stack layout: MaxCallFrames frames of 512 bytes (MAX_BPF_STACK); frame k
// owns [stackSize-(k+1)*512, stackSize-k*512) and its R10 is the top of it.
const (
	frameSize = 512
	stackSize = MaxCallFrames * frameSize
)

// pktTag is the packet pointer of offset 0.
const pktTag = uint64(tagBase+regPacket) << 32

func ptr(region int, off uint64) uint64 {
	return uint64(tagBase+region)<<32 | (off & 0xffff_ffff)
}

// describePtr renders a tagged address for fault messages.
func describePtr(a uint64) string {
	region := uint32(a>>32) - tagBase
	off := uint32(a)
	switch {
	case region == regCtx:
		return fmt.Sprintf("ctx+%d", off)
	case region == regStack:
		return fmt.Sprintf("stack fp%+d", int(off)-stackSize)
	case region == regPacket:
		return fmt.Sprintf("packet buf+%d", off)
	case region >= regMapValue && region < regMapPtr:
		return fmt.Sprintf("map#%d value+%d", region-regMapValue, off)
	case region >= regMapPtr && region < regEnd:
		return fmt.Sprintf("map#%d", region-regMapPtr)
	}
	return fmt.Sprintf("scalar %#x", a)
}

// access returns the n bytes at tagged address a, or nil after recording
// the fault (reason, address, size) in m.fault. write marks stores, which
// read-only map values refuse and which widen the stack's dirty range.
func (m *machine) access(a uint64, n uint32, write bool) []byte {
	region := uint32(a>>32) - tagBase
	off := uint64(uint32(a))
	end := off + uint64(n)
	switch {
	case region == regPacket:
		// Packet accesses lie in [data_meta, data_end) (the verifier's
		// find_good_pkt_pointers ranges, checked here per access).
		if off >= m.meta && end <= m.end {
			if m.trace {
				m.acc.add(int(off), int(end), write)
			}
			return m.in.Buf[off:end:end]
		}
	case region == regStack:
		if off >= uint64(m.stackLo) && end <= stackSize {
			if off&uint64(n-1) != 0 {
				return m.memFault(FaultMisaligned, a, n)
			}
			if write && uint32(off) < m.dirty {
				m.dirty = uint32(off)
			}
			return m.stack[off:end:end]
		}
	case region == regCtx:
		return m.memFault(FaultCtxAccess, a, n)
	case region-regMapValue < uint32(len(m.maps)):
		// Checked against the element the address lands in: a pointer
		// moved a whole stride into the next element is not caught (the
		// verifier would have refused the arithmetic); one moved into the
		// padding after value_size is.
		mp := m.maps[region-regMapValue]
		if end <= uint64(len(mp.values)) && (off&mp.strideMask)+uint64(n) <= uint64(mp.spec.ValueSize) {
			if write && mp.progReadOnly {
				return m.memFault(FaultReadOnly, a, n)
			}
			return mp.values[off:end:end]
		}
	default:
		return m.memFault(FaultNotPointer, a, n)
	}
	return m.memFault(FaultOutOfBounds, a, n)
}

func (m *machine) memFault(r FaultReason, a uint64, n uint32) []byte {
	m.fault = Fault{Reason: r, Addr: a, Size: uint8(n)}
	return nil
}

// load reads an n-byte little-endian value at a. ctx loads are the xdp_md
// fields (xdp_is_valid_access: 4-byte aligned reads only); data, data_end
// and data_meta yield packet pointers (xdp_convert_ctx_access).
func (m *machine) load(a uint64, n uint32) (uint64, bool) {
	if uint32(a>>32) == tagBase+regCtx {
		return m.loadCtx(a, n)
	}
	b := m.access(a, n, false)
	if b == nil {
		return 0, false
	}
	switch n {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(binary.LittleEndian.Uint16(b)), true
	case 4:
		return uint64(binary.LittleEndian.Uint32(b)), true
	default:
		return binary.LittleEndian.Uint64(b), true
	}
}

func (m *machine) loadCtx(a uint64, n uint32) (uint64, bool) {
	off := uint32(a)
	if n != 4 || off%4 != 0 || off >= mdSize {
		m.memFault(FaultCtxAccess, a, n)
		return 0, false
	}
	switch off {
	case mdData:
		return ptr(regPacket, m.data), true
	case mdDataEnd:
		return ptr(regPacket, m.end), true
	case mdDataMeta:
		return ptr(regPacket, m.meta), true
	case mdIngressIfindex:
		return uint64(m.in.IngressIfindex), true
	case mdRxQueueIndex:
		return uint64(m.in.RxQueueIndex), true
	default: // mdEgressIfindex
		return uint64(m.in.EgressIfindex), true
	}
}

// store writes the low n bytes of v at a, little endian.
func (m *machine) store(a uint64, n uint32, v uint64) bool {
	if uint32(a>>32) == tagBase+regCtx {
		m.memFault(FaultReadOnly, a, n)
		return false
	}
	b := m.access(a, n, true)
	if b == nil {
		return false
	}
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
	return true
}

// atomic performs a BPF_ATOMIC operation of n (4 or 8) bytes at a and
// returns the new value of the source register (or R0 for cmpxchg) and
// whether it is changed. The verifier allows atomics only on stack and map
// values, and requires alignment (check_atomic).
func (m *machine) atomic(sub int32, a uint64, n uint32, src, r0 uint64) (val uint64, ok bool) {
	switch uint32(a>>32) - tagBase {
	case regCtx, regPacket:
		m.memFault(FaultAtomicRegion, a, n)
		return 0, false
	}
	if uint32(a)&(n-1) != 0 {
		m.memFault(FaultMisaligned, a, n)
		return 0, false
	}
	b := m.access(a, n, true)
	if b == nil {
		return 0, false
	}
	var old uint64
	if n == 4 {
		old = uint64(binary.LittleEndian.Uint32(b))
		src = uint64(uint32(src))
	} else {
		old = binary.LittleEndian.Uint64(b)
	}
	nv := old
	switch sub {
	case atomicAdd, atomicFetchAdd:
		nv = old + src
	case atomicAnd, atomicFetchAnd:
		nv = old & src
	case atomicOr, atomicFetchOr:
		nv = old | src
	case atomicXor, atomicFetchXor:
		nv = old ^ src
	case atomicXchg:
		nv = src
	case atomicCmpXchg:
		cmp := r0
		if n == 4 {
			cmp = uint64(uint32(r0))
		}
		if old == cmp {
			nv = src
		}
	}
	if n == 4 {
		binary.LittleEndian.PutUint32(b, uint32(nv))
	} else {
		binary.LittleEndian.PutUint64(b, nv)
	}
	return old, true
}
