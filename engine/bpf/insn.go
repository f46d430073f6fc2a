package bpf

import "github.com/cilium/ebpf/asm"

// op is the interpreter's dense opcode: one value per (class, operation,
// source, size) so that Run dispatches through a single jump table.
type op uint8

// Internal opcodes. K takes the immediate, X the source register; 32 is the
// BPF_ALU / BPF_JMP32 class (results zero-extended, comparisons on the low
// halves).
const (
	opInvalid op = iota

	opAdd64K
	opAdd64X
	opSub64K
	opSub64X
	opMul64K
	opMul64X
	opDiv64K
	opDiv64X
	opSDiv64K
	opSDiv64X
	opMod64K
	opMod64X
	opSMod64K
	opSMod64X
	opOr64K
	opOr64X
	opAnd64K
	opAnd64X
	opXor64K
	opXor64X
	opLsh64K
	opLsh64X
	opRsh64K
	opRsh64X
	opArsh64K
	opArsh64X
	opMov64K
	opMov64X
	opMovSX8x64
	opMovSX16x64
	opMovSX32x64
	opNeg64

	opAdd32K
	opAdd32X
	opSub32K
	opSub32X
	opMul32K
	opMul32X
	opDiv32K
	opDiv32X
	opSDiv32K
	opSDiv32X
	opMod32K
	opMod32X
	opSMod32K
	opSMod32X
	opOr32K
	opOr32X
	opAnd32K
	opAnd32X
	opXor32K
	opXor32X
	opLsh32K
	opLsh32X
	opRsh32K
	opRsh32X
	opArsh32K
	opArsh32X
	opMov32K
	opMov32X
	opMovSX8x32
	opMovSX16x32
	opNeg32

	// BPF_END: to-le truncates (the simulated machine is little endian),
	// to-be and BPF_ALU64 bswap reverse the bytes.
	opLE16
	opLE32
	opLE64
	opBE16
	opBE32
	opBE64

	opJa
	opJEq64K
	opJEq64X
	opJGT64K
	opJGT64X
	opJGE64K
	opJGE64X
	opJSet64K
	opJSet64X
	opJNE64K
	opJNE64X
	opJSGT64K
	opJSGT64X
	opJSGE64K
	opJSGE64X
	opJLT64K
	opJLT64X
	opJLE64K
	opJLE64X
	opJSLT64K
	opJSLT64X
	opJSLE64K
	opJSLE64X
	opJEq32K
	opJEq32X
	opJGT32K
	opJGT32X
	opJGE32K
	opJGE32X
	opJSet32K
	opJSet32X
	opJNE32K
	opJNE32X
	opJSGT32K
	opJSGT32X
	opJSGE32K
	opJSGE32X
	opJLT32K
	opJLT32X
	opJLE32K
	opJLE32X
	opJSLT32K
	opJSLT32X
	opJSLE32K
	opJSLE32X
	opCall      // helper call, imm = helper id
	opCallLocal // bpf-to-bpf call (BPF_PSEUDO_CALL), tgt = callee pc
	opExit

	opLdxB
	opLdxH
	opLdxW
	opLdxDW
	opLdxSB // BPF_MEMSX: sign-extending loads
	opLdxSH
	opLdxSW
	opStB
	opStH
	opStW
	opStDW
	opStxB
	opStxH
	opStxW
	opStxDW
	opAtomicW  // tgt = atomic sub-operation (atomicAdd...)
	opAtomicDW // tgt = atomic sub-operation

	opLdImm64    // imm = the 64-bit constant
	opLdMapPtr   // tgt = map index (BPF_PSEUDO_MAP_FD)
	opLdMapValue // tgt = map index, imm = offset in value (BPF_PSEUDO_MAP_VALUE)
)

// Atomic sub-operations of opAtomicW / opAtomicDW (BPF_ATOMIC imm field).
const (
	atomicAdd int32 = iota
	atomicAnd
	atomicOr
	atomicXor
	atomicFetchAdd
	atomicFetchAnd
	atomicFetchOr
	atomicFetchXor
	atomicXchg
	atomicCmpXchg
)

// insn is one prepared instruction, 16 bytes. Field use per op:
//   - ALU K:           imm = immediate, sign-extended to 64 bits
//   - jumps:           tgt = absolute target pc; imm = immediate for K forms
//   - ldx, stx:        imm = memory offset, sign-extended
//   - st:              tgt = memory offset, imm = value
//   - atomic:          imm = memory offset, tgt = sub-operation
//   - call:            imm = helper id; callLocal: tgt = callee pc
//   - lddw:            imm = constant; map forms: tgt = map index
//
// pc values index Program.code, not raw instruction offsets: an lddw takes
// two raw slots but one insn.
type insn struct {
	op  op
	dst uint8
	src uint8
	_   uint8
	tgt int32
	imm uint64
}

// aluOps maps (asm ALU operation, is-imm) to the 64-bit internal op; the
// 32-bit op is at a fixed distance.
var aluOps = map[asm.ALUOp][2]op{
	asm.Add:  {opAdd64X, opAdd64K},
	asm.Sub:  {opSub64X, opSub64K},
	asm.Mul:  {opMul64X, opMul64K},
	asm.Div:  {opDiv64X, opDiv64K},
	asm.SDiv: {opSDiv64X, opSDiv64K},
	asm.Mod:  {opMod64X, opMod64K},
	asm.SMod: {opSMod64X, opSMod64K},
	asm.Or:   {opOr64X, opOr64K},
	asm.And:  {opAnd64X, opAnd64K},
	asm.Xor:  {opXor64X, opXor64K},
	asm.LSh:  {opLsh64X, opLsh64K},
	asm.RSh:  {opRsh64X, opRsh64K},
	asm.ArSh: {opArsh64X, opArsh64K},
	asm.Mov:  {opMov64X, opMov64K},
}

const alu32Delta = opAdd32K - opAdd64K

// jumpOps maps a conditional asm jump to its 64-bit X op; K is X-1 and the
// JMP32 form is at jmp32Delta.
var jumpOps = map[asm.JumpOp]op{
	asm.JEq:  opJEq64X,
	asm.JGT:  opJGT64X,
	asm.JGE:  opJGE64X,
	asm.JSet: opJSet64X,
	asm.JNE:  opJNE64X,
	asm.JSGT: opJSGT64X,
	asm.JSGE: opJSGE64X,
	asm.JLT:  opJLT64X,
	asm.JLE:  opJLE64X,
	asm.JSLT: opJSLT64X,
	asm.JSLE: opJSLE64X,
}

const jmp32Delta = opJEq32K - opJEq64K

var atomicOps = map[asm.AtomicOp]int32{
	asm.AddAtomic: atomicAdd,
	asm.AndAtomic: atomicAnd,
	asm.OrAtomic:  atomicOr,
	asm.XorAtomic: atomicXor,
	asm.FetchAdd:  atomicFetchAdd,
	asm.FetchAnd:  atomicFetchAnd,
	asm.FetchOr:   atomicFetchOr,
	asm.FetchXor:  atomicFetchXor,
	asm.Xchg:      atomicXchg,
	asm.CmpXchg:   atomicCmpXchg,
}
