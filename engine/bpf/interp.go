package bpf

import (
	"encoding/binary"
	"math/bits"

	"github.com/cilium/ebpf/asm"
)

// DefaultBudget is the instruction budget of a run unless the program was
// built with another: generous for XDP programs (tens to hundreds of
// instructions), small enough that a runaway loop ends quickly.
const DefaultBudget = 1 << 16

// Program is a prepared XDP program bound to its maps. It owns the scratch
// state of a run (registers spill, 4 KiB of stack), so Run is not safe for
// concurrent use; runs are independent of each other except through maps.
type Program struct {
	name   string
	code   []insn
	raw    []int32
	orig   []asm.Instruction
	maps   []*Map
	budget int

	// constRet: the program is "r0 = constR0; exit" (constantReturn).
	constRet bool
	constR0  uint64
	// readsPkt: a run may read the packet (ReadsPacket).
	readsPkt bool
	// callRet: the program is constant register writes, a call of
	// bpf_redirect_map and exit (constantCall); callRegs are the
	// registers at the call.
	callRet  bool
	callRegs [16]uint64

	m machine
}

// machine is the per-run state.
type machine struct {
	in              *Input
	data, end, meta uint64 // xdp_buff data, data_end, data_meta as offsets into in.Buf
	maps            []*Map // the program's maps, set once by NewProgram

	stack   [stackSize]byte
	stackLo uint32 // lowest offset the current frame may touch
	dirty   uint32 // lowest stack offset written since the last clear

	frames [MaxCallFrames]frame
	depth  int

	redirect Redirect
	fault    Fault

	// fastEnd bounds the packet accesses the run loop makes inline: end,
	// or 0 while accesses are traced, which sends every packet access
	// through access, where it is recorded (TracePacketAccess).
	fastEnd uint64
	trace   bool
	acc     PacketAccess
}

// frame is a bpf-to-bpf caller's saved state: return pc and the
// callee-saved registers R6-R9 and R10.
type frame struct {
	ret  int
	regs [5]uint64
}

// Name returns the program's name.
func (p *Program) Name() string { return p.name }

// Maps returns the maps the program references, in first-use order.
func (p *Program) Maps() []*Map { return append([]*Map(nil), p.maps...) }

// Instructions returns the program's instructions as prepared (labels
// resolved), one per internal pc.
func (p *Program) Instructions() asm.Instructions { return append(asm.Instructions(nil), p.orig...) }

// ReadsPacket reports whether a run may read the packet: false for a
// constant program ("r0 = imm; exit") and for one that overwrites its
// context register before using it (readsCtx), whose results do not
// depend on the bytes, so a caller may skip putting them in the buffer.
func (p *Program) ReadsPacket() bool { return p.readsPkt }

// ConstVerdict is, for a constant program ("r0 = imm; exit") with the
// budget for its two instructions, the verdict Run gives every valid
// input, without the run: two instructions counted, the packet's offsets
// unchanged, no redirect, no fault (Run's constant case). ok is false for
// any other program. Nothing else of a run is observable, so a caller
// that needs only these may use it in place of Run.
func (p *Program) ConstVerdict() (act Action, ok bool) {
	return Action(uint32(p.constR0)), p.constRet && p.budget >= 2
}

// Budget returns the per-run instruction budget.
func (p *Program) Budget() int { return p.budget }

// Run executes the program once on in (the kernel's bpf_prog_run_xdp) and
// fills res. It does not allocate. It writes packet bytes and map values as
// the program does; everything else comes back in res. (res is an out
// parameter rather than a return value: a Result returned by value goes
// through memory and costs the caller a store-forwarding stall.)
func (p *Program) Run(in *Input, res *Result) {
	if in.DataMeta < 0 || in.DataMeta > in.Data || in.Data > in.DataEnd || in.DataEnd > len(in.Buf) || len(in.Buf) > 1<<31 {
		*res = Result{
			Data: in.Data, DataEnd: in.DataEnd, DataMeta: in.DataMeta,
			Fault: Fault{Reason: FaultBadInput, Insn: -1},
		}
		return
	}
	m := &p.m
	if m.dirty < stackSize {
		clear(m.stack[m.dirty:])
		m.dirty = stackSize
	}
	if p.constRet && p.budget >= 2 {
		// What interpreting "r0 = constR0; exit" leaves: two
		// instructions, the input's offsets, no redirect, no fault.
		m.in = in
		m.data, m.end, m.meta = uint64(in.Data), uint64(in.DataEnd), uint64(in.DataMeta)
		m.startRun()
		m.redirect = Redirect{}
		res.Action = Action(uint32(p.constR0))
		res.Data, res.DataEnd, res.DataMeta = in.Data, in.DataEnd, in.DataMeta
		res.Redirect = Redirect{}
		res.Fault = Fault{}
		res.Insns = 2
		return
	}
	if p.callRet && p.budget >= len(p.code) {
		// What interpreting "constant registers; call; exit" leaves: the
		// helper's result and redirect, every instruction counted.
		m.in = in
		m.data, m.end, m.meta = uint64(in.Data), uint64(in.DataEnd), uint64(in.DataMeta)
		m.startRun()
		m.redirect = Redirect{}
		// call leaves the registers as they were: it may read the
		// program's own, with no copy.
		if v, ok := m.call(helperRedirectMap, &p.callRegs); ok {
			res.Action = Action(uint32(v))
			res.Data, res.DataEnd, res.DataMeta = in.Data, in.DataEnd, in.DataMeta
			res.Redirect = m.redirect
			res.Fault = Fault{}
			res.Insns = len(p.code)
			return
		}
		// The call faults: the interpreter below makes it again and
		// reports the fault as any run does.
		m.fault = Fault{}
		m.redirect = Redirect{}
	}
	// Invariants between runs, restored by the fault path: depth 0,
	// stackLo at the main frame, no fault recorded.
	m.in = in
	m.data, m.end, m.meta = uint64(in.Data), uint64(in.DataEnd), uint64(in.DataMeta)
	m.startRun()
	m.redirect = Redirect{}
	buf := in.Buf

	var r [16]uint64 // R0-R10; indexes are masked with 15 so they need no bounds check
	r[1] = ptr(regCtx, 0)
	r[10] = ptr(regStack, stackSize)
	code := p.code
	budget := p.budget
	pc := 0
	for {
		if budget == 0 {
			// Report the instruction that would have run next.
			m.fault = Fault{Reason: FaultBudget}
			pc++
			goto fault
		}
		budget--
		ins := &code[pc]
		pc++
		d, s := ins.dst&15, ins.src&15
		// Loads and stores try the packet first with one subtraction: for
		// any other region o is at least 1<<32 and fails the range test
		// (m.end < 1<<31), and so does an address just below the packet's
		// offset 0, where o+n wraps (o < fastEnd). Everything else goes
		// through access (mem.go).
		switch ins.op {
		case opAdd64K:
			r[d] += ins.imm
		case opAdd64X:
			r[d] += r[s]
		case opSub64K:
			r[d] -= ins.imm
		case opSub64X:
			r[d] -= r[s]
		case opMul64K:
			r[d] *= ins.imm
		case opMul64X:
			r[d] *= r[s]
		case opDiv64K:
			r[d] /= ins.imm
		case opDiv64X:
			// Division by zero gives 0, modulo by zero leaves dst
			// (the verifier's fixup of BPF_DIV/BPF_MOD by register).
			if r[s] == 0 {
				r[d] = 0
			} else {
				r[d] /= r[s]
			}
		case opSDiv64K:
			r[d] = uint64(sdiv64(int64(r[d]), int64(ins.imm)))
		case opSDiv64X:
			r[d] = uint64(sdiv64(int64(r[d]), int64(r[s])))
		case opMod64K:
			r[d] %= ins.imm
		case opMod64X:
			if r[s] != 0 {
				r[d] %= r[s]
			}
		case opSMod64K:
			r[d] = uint64(smod64(int64(r[d]), int64(ins.imm)))
		case opSMod64X:
			r[d] = uint64(smod64(int64(r[d]), int64(r[s])))
		case opOr64K:
			r[d] |= ins.imm
		case opOr64X:
			r[d] |= r[s]
		case opAnd64K:
			r[d] &= ins.imm
		case opAnd64X:
			r[d] &= r[s]
		case opXor64K:
			r[d] ^= ins.imm
		case opXor64X:
			r[d] ^= r[s]
		case opLsh64K:
			r[d] <<= ins.imm & 63
		case opLsh64X:
			r[d] <<= r[s] & 63
		case opRsh64K:
			r[d] >>= ins.imm & 63
		case opRsh64X:
			r[d] >>= r[s] & 63
		case opArsh64K:
			r[d] = uint64(int64(r[d]) >> (ins.imm & 63))
		case opArsh64X:
			r[d] = uint64(int64(r[d]) >> (r[s] & 63))
		case opMov64K:
			r[d] = ins.imm
		case opMov64X:
			r[d] = r[s]
		case opMovSX8x64:
			r[d] = uint64(int64(int8(r[s])))
		case opMovSX16x64:
			r[d] = uint64(int64(int16(r[s])))
		case opMovSX32x64:
			r[d] = uint64(int64(int32(r[s])))
		case opNeg64:
			r[d] = -r[d]

		case opAdd32K:
			r[d] = uint64(uint32(r[d]) + uint32(ins.imm))
		case opAdd32X:
			r[d] = uint64(uint32(r[d]) + uint32(r[s]))
		case opSub32K:
			r[d] = uint64(uint32(r[d]) - uint32(ins.imm))
		case opSub32X:
			r[d] = uint64(uint32(r[d]) - uint32(r[s]))
		case opMul32K:
			r[d] = uint64(uint32(r[d]) * uint32(ins.imm))
		case opMul32X:
			r[d] = uint64(uint32(r[d]) * uint32(r[s]))
		case opDiv32K:
			r[d] = uint64(uint32(r[d]) / uint32(ins.imm))
		case opDiv32X:
			if uint32(r[s]) == 0 {
				r[d] = 0
			} else {
				r[d] = uint64(uint32(r[d]) / uint32(r[s]))
			}
		case opSDiv32K:
			r[d] = uint64(uint32(sdiv32(int32(r[d]), int32(ins.imm))))
		case opSDiv32X:
			r[d] = uint64(uint32(sdiv32(int32(r[d]), int32(r[s]))))
		case opMod32K:
			r[d] = uint64(uint32(r[d]) % uint32(ins.imm))
		case opMod32X:
			if uint32(r[s]) != 0 {
				r[d] = uint64(uint32(r[d]) % uint32(r[s]))
			} else {
				r[d] = uint64(uint32(r[d]))
			}
		case opSMod32K:
			r[d] = uint64(uint32(smod32(int32(r[d]), int32(ins.imm))))
		case opSMod32X:
			r[d] = uint64(uint32(smod32(int32(r[d]), int32(r[s]))))
		case opOr32K:
			r[d] = uint64(uint32(r[d]) | uint32(ins.imm))
		case opOr32X:
			r[d] = uint64(uint32(r[d]) | uint32(r[s]))
		case opAnd32K:
			r[d] = uint64(uint32(r[d]) & uint32(ins.imm))
		case opAnd32X:
			r[d] = uint64(uint32(r[d]) & uint32(r[s]))
		case opXor32K:
			r[d] = uint64(uint32(r[d]) ^ uint32(ins.imm))
		case opXor32X:
			r[d] = uint64(uint32(r[d]) ^ uint32(r[s]))
		case opLsh32K:
			r[d] = uint64(uint32(r[d]) << (ins.imm & 31))
		case opLsh32X:
			r[d] = uint64(uint32(r[d]) << (r[s] & 31))
		case opRsh32K:
			r[d] = uint64(uint32(r[d]) >> (ins.imm & 31))
		case opRsh32X:
			r[d] = uint64(uint32(r[d]) >> (r[s] & 31))
		case opArsh32K:
			r[d] = uint64(uint32(int32(r[d]) >> (ins.imm & 31)))
		case opArsh32X:
			r[d] = uint64(uint32(int32(r[d]) >> (r[s] & 31)))
		case opMov32K:
			r[d] = uint64(uint32(ins.imm))
		case opMov32X:
			r[d] = uint64(uint32(r[s]))
		case opMovSX8x32:
			r[d] = uint64(uint32(int32(int8(r[s]))))
		case opMovSX16x32:
			r[d] = uint64(uint32(int32(int16(r[s]))))
		case opNeg32:
			r[d] = uint64(-uint32(r[d]))

		case opLE16:
			r[d] = uint64(uint16(r[d]))
		case opLE32:
			r[d] = uint64(uint32(r[d]))
		case opLE64:
		case opBE16:
			r[d] = uint64(bits.ReverseBytes16(uint16(r[d])))
		case opBE32:
			r[d] = uint64(bits.ReverseBytes32(uint32(r[d])))
		case opBE64:
			r[d] = bits.ReverseBytes64(r[d])

		case opJa:
			pc = int(ins.tgt)
		case opJEq64K:
			if r[d] == ins.imm {
				pc = int(ins.tgt)
			}
		case opJEq64X:
			if r[d] == r[s] {
				pc = int(ins.tgt)
			}
		case opJGT64K:
			if r[d] > ins.imm {
				pc = int(ins.tgt)
			}
		case opJGT64X:
			if r[d] > r[s] {
				pc = int(ins.tgt)
			}
		case opJGE64K:
			if r[d] >= ins.imm {
				pc = int(ins.tgt)
			}
		case opJGE64X:
			if r[d] >= r[s] {
				pc = int(ins.tgt)
			}
		case opJSet64K:
			if r[d]&ins.imm != 0 {
				pc = int(ins.tgt)
			}
		case opJSet64X:
			if r[d]&r[s] != 0 {
				pc = int(ins.tgt)
			}
		case opJNE64K:
			if r[d] != ins.imm {
				pc = int(ins.tgt)
			}
		case opJNE64X:
			if r[d] != r[s] {
				pc = int(ins.tgt)
			}
		case opJSGT64K:
			if int64(r[d]) > int64(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSGT64X:
			if int64(r[d]) > int64(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSGE64K:
			if int64(r[d]) >= int64(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSGE64X:
			if int64(r[d]) >= int64(r[s]) {
				pc = int(ins.tgt)
			}
		case opJLT64K:
			if r[d] < ins.imm {
				pc = int(ins.tgt)
			}
		case opJLT64X:
			if r[d] < r[s] {
				pc = int(ins.tgt)
			}
		case opJLE64K:
			if r[d] <= ins.imm {
				pc = int(ins.tgt)
			}
		case opJLE64X:
			if r[d] <= r[s] {
				pc = int(ins.tgt)
			}
		case opJSLT64K:
			if int64(r[d]) < int64(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSLT64X:
			if int64(r[d]) < int64(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSLE64K:
			if int64(r[d]) <= int64(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSLE64X:
			if int64(r[d]) <= int64(r[s]) {
				pc = int(ins.tgt)
			}
		case opJEq32K:
			if uint32(r[d]) == uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJEq32X:
			if uint32(r[d]) == uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJGT32K:
			if uint32(r[d]) > uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJGT32X:
			if uint32(r[d]) > uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJGE32K:
			if uint32(r[d]) >= uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJGE32X:
			if uint32(r[d]) >= uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSet32K:
			if uint32(r[d])&uint32(ins.imm) != 0 {
				pc = int(ins.tgt)
			}
		case opJSet32X:
			if uint32(r[d])&uint32(r[s]) != 0 {
				pc = int(ins.tgt)
			}
		case opJNE32K:
			if uint32(r[d]) != uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJNE32X:
			if uint32(r[d]) != uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSGT32K:
			if int32(r[d]) > int32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSGT32X:
			if int32(r[d]) > int32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSGE32K:
			if int32(r[d]) >= int32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSGE32X:
			if int32(r[d]) >= int32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJLT32K:
			if uint32(r[d]) < uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJLT32X:
			if uint32(r[d]) < uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJLE32K:
			if uint32(r[d]) <= uint32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJLE32X:
			if uint32(r[d]) <= uint32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSLT32K:
			if int32(r[d]) < int32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSLT32X:
			if int32(r[d]) < int32(r[s]) {
				pc = int(ins.tgt)
			}
		case opJSLE32K:
			if int32(r[d]) <= int32(ins.imm) {
				pc = int(ins.tgt)
			}
		case opJSLE32X:
			if int32(r[d]) <= int32(r[s]) {
				pc = int(ins.tgt)
			}

		case opCall:
			v, ok := m.call(int32(ins.imm), &r)
			if !ok {
				m.fault.Helper = uint16(ins.imm)
				goto fault
			}
			r[0] = v
		case opCallLocal:
			if m.depth+1 >= MaxCallFrames {
				m.fault = Fault{Reason: FaultCallDepth}
				goto fault
			}
			f := &m.frames[m.depth]
			f.ret = pc
			f.regs = [5]uint64{r[6], r[7], r[8], r[9], r[10]}
			m.depth++
			r[10] -= frameSize
			m.stackLo -= frameSize
			pc = int(ins.tgt)
		case opExit:
			if m.depth == 0 {
				// Field by field: a composite literal is built on the stack
				// and block-copied, which stalls on store forwarding.
				res.Action = Action(uint32(r[0]))
				res.Data, res.DataEnd, res.DataMeta = int(m.data), int(m.end), int(m.meta)
				res.Redirect = m.redirect
				res.Fault = Fault{}
				res.Insns = p.budget - budget
				return
			}
			m.depth--
			f := &m.frames[m.depth]
			r[6], r[7], r[8], r[9], r[10] = f.regs[0], f.regs[1], f.regs[2], f.regs[3], f.regs[4]
			m.stackLo += frameSize
			pc = f.ret

		case opLdxB:
			a := r[s] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+1 <= m.fastEnd {
				r[d] = uint64(buf[o])
				break
			}
			v, ok := m.load(a, 1)
			if !ok {
				goto fault
			}
			r[d] = v
		case opLdxH:
			a := r[s] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+2 <= m.fastEnd {
				r[d] = uint64(binary.LittleEndian.Uint16(buf[o:]))
				break
			}
			v, ok := m.load(a, 2)
			if !ok {
				goto fault
			}
			r[d] = v
		case opLdxW:
			a := r[s] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+4 <= m.fastEnd {
				r[d] = uint64(binary.LittleEndian.Uint32(buf[o:]))
				break
			}
			v, ok := m.load(a, 4)
			if !ok {
				goto fault
			}
			r[d] = v
		case opLdxDW:
			a := r[s] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+8 <= m.fastEnd {
				r[d] = binary.LittleEndian.Uint64(buf[o:])
				break
			}
			v, ok := m.load(a, 8)
			if !ok {
				goto fault
			}
			r[d] = v
		case opLdxSB:
			v, ok := m.load(r[s]+ins.imm, 1)
			if !ok {
				goto fault
			}
			r[d] = uint64(int64(int8(v)))
		case opLdxSH:
			v, ok := m.load(r[s]+ins.imm, 2)
			if !ok {
				goto fault
			}
			r[d] = uint64(int64(int16(v)))
		case opLdxSW:
			v, ok := m.load(r[s]+ins.imm, 4)
			if !ok {
				goto fault
			}
			r[d] = uint64(int64(int32(v)))
		case opStB:
			if !m.store(r[d]+uint64(int64(ins.tgt)), 1, ins.imm) {
				goto fault
			}
		case opStH:
			if !m.store(r[d]+uint64(int64(ins.tgt)), 2, ins.imm) {
				goto fault
			}
		case opStW:
			if !m.store(r[d]+uint64(int64(ins.tgt)), 4, ins.imm) {
				goto fault
			}
		case opStDW:
			if !m.store(r[d]+uint64(int64(ins.tgt)), 8, ins.imm) {
				goto fault
			}
		case opStxB:
			a := r[d] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+1 <= m.fastEnd {
				buf[o] = byte(r[s])
				break
			}
			if !m.store(a, 1, r[s]) {
				goto fault
			}
		case opStxH:
			a := r[d] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+2 <= m.fastEnd {
				binary.LittleEndian.PutUint16(buf[o:], uint16(r[s]))
				break
			}
			if !m.store(a, 2, r[s]) {
				goto fault
			}
		case opStxW:
			a := r[d] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+4 <= m.fastEnd {
				binary.LittleEndian.PutUint32(buf[o:], uint32(r[s]))
				break
			}
			if !m.store(a, 4, r[s]) {
				goto fault
			}
		case opStxDW:
			a := r[d] + ins.imm
			if o := a - pktTag; o >= m.meta && o < m.fastEnd && o+8 <= m.fastEnd {
				binary.LittleEndian.PutUint64(buf[o:], r[s])
				break
			}
			if !m.store(a, 8, r[s]) {
				goto fault
			}
		case opAtomicW, opAtomicDW:
			n := uint32(4)
			if ins.op == opAtomicDW {
				n = 8
			}
			old, ok := m.atomic(ins.tgt, r[d]+ins.imm, n, r[s], r[0])
			if !ok {
				goto fault
			}
			if n == 4 {
				old = uint64(uint32(old))
			}
			switch ins.tgt {
			case atomicCmpXchg:
				r[0] = old
			case atomicFetchAdd, atomicFetchAnd, atomicFetchOr, atomicFetchXor, atomicXchg:
				r[s] = old
			}

		case opLdImm64:
			r[d] = ins.imm
		case opLdMapPtr:
			r[d] = ptr(regMapPtr+int(ins.tgt), 0)
		case opLdMapValue:
			r[d] = ptr(regMapValue+int(ins.tgt), ins.imm)
		}
	}
fault:
	m.fault.Insn = p.raw[pc-1]
	f := m.fault
	m.fault = Fault{}
	m.depth = 0
	m.stackLo = stackSize - frameSize
	*res = Result{
		Action:   XDPAborted,
		Data:     int(m.data),
		DataEnd:  int(m.end),
		DataMeta: int(m.meta),
		Fault:    f,
		Insns:    p.budget - budget,
	}
}

// sdiv64 and friends are BPF_SDIV / BPF_SMOD: division by zero gives 0,
// modulo by zero leaves the dividend; MinInt/-1 wraps as in Go.
func sdiv64(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func smod64(a, b int64) int64 {
	if b == 0 {
		return a
	}
	return a % b
}

func sdiv32(a, b int32) int32 {
	if b == 0 {
		return 0
	}
	return a / b
}

func smod32(a, b int32) int32 {
	if b == 0 {
		return a
	}
	return a % b
}
