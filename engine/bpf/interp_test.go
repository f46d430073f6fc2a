package bpf

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prog prepares insns against maps (by name or by fd = index).
func prog(t testing.TB, insns asm.Instructions, maps ...*Map) *Program {
	t.Helper()
	p, err := NewProgram(&ProgramSpec{Name: "test", Instructions: insns}, maps, Options{NumCPU: 2})
	require.NoError(t, err)
	return p
}

func runOn(p *Program, in *Input) Result {
	var res Result
	p.Run(in, &res)
	return res
}

// evalR0 runs setup, then stores R0 (all 64 bits) at the start of the
// packet and returns it.
func evalR0(t *testing.T, body ...asm.Instruction) uint64 {
	t.Helper()
	insns := asm.Instructions{asm.LoadMem(asm.R9, asm.R1, 0, asm.Word)}
	insns = append(insns, body...)
	insns = append(insns,
		asm.StoreMem(asm.R9, 0, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, int32(XDPPass)),
		asm.Return())
	p := prog(t, insns)
	in := newInput(make([]byte, 64))
	res := runOn(p, in)
	require.False(t, res.Fault.Faulted(), "%v", res.Fault)
	return binary.LittleEndian.Uint64(in.Buf[in.Data:])
}

// stImmDW is BPF_ST | BPF_DW, which asm.StoreImm does not build.
func stImmDW(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}

func ld(r asm.Register, v uint64) asm.Instruction { return asm.LoadImm(r, int64(v), asm.DWord) }

func TestALU(t *testing.T) {
	const big = 0xffff_ffff_0000_0005
	minI64 := uint64(1) << 63
	for _, tc := range []struct {
		name string
		a, b uint64
		op   asm.Instruction // operates on R0 (dst) and R1 (src)
		want uint64
	}{
		{"add64", 5, 7, asm.Add.Reg(asm.R0, asm.R1), 12},
		{"add64 wrap", math.MaxUint64, 2, asm.Add.Reg(asm.R0, asm.R1), 1},
		{"add32 zero-extends", big, 1, asm.Add.Reg32(asm.R0, asm.R1), 6},
		{"add imm sign-extends", 10, 0, asm.Add.Imm(asm.R0, -3), 7},
		{"add32 imm", big, 0, asm.Add.Imm32(asm.R0, -6), 0xffff_ffff},
		{"sub64", 5, 7, asm.Sub.Reg(asm.R0, asm.R1), math.MaxUint64 - 1},
		{"sub32", 5, 7, asm.Sub.Reg32(asm.R0, asm.R1), 0xffff_fffe},
		{"mul64", 1 << 40, 3, asm.Mul.Reg(asm.R0, asm.R1), 3 << 40},
		{"mul32", 1 << 31, 2, asm.Mul.Reg32(asm.R0, asm.R1), 0},
		{"div64", 100, 7, asm.Div.Reg(asm.R0, asm.R1), 14},
		{"div64 by zero is 0", 100, 0, asm.Div.Reg(asm.R0, asm.R1), 0},
		{"div32 by zero is 0", big, 1 << 32, asm.Div.Reg32(asm.R0, asm.R1), 0},
		{"div32", big, 2, asm.Div.Reg32(asm.R0, asm.R1), 2},
		{"div64 imm unsigned", math.MaxUint64, 0, asm.Div.Imm(asm.R0, -1), 1},
		{"mod64", 100, 7, asm.Mod.Reg(asm.R0, asm.R1), 2},
		{"mod64 by zero keeps dst", 100, 0, asm.Mod.Reg(asm.R0, asm.R1), 100},
		{"mod32 by zero zero-extends dst", big, 0, asm.Mod.Reg32(asm.R0, asm.R1), 5},
		{"sdiv64", uint64(1<<64 - 100), 7, asm.SDiv.Reg(asm.R0, asm.R1), uint64(1<<64 - 14)},
		{"sdiv64 by zero", 5, 0, asm.SDiv.Reg(asm.R0, asm.R1), 0},
		{"sdiv64 min/-1 wraps", minI64, math.MaxUint64, asm.SDiv.Reg(asm.R0, asm.R1), minI64},
		{"smod64 negative", uint64(1<<64 - 100), 7, asm.SMod.Reg(asm.R0, asm.R1), uint64(1<<64 - 2)},
		{"smod64 by zero keeps", 123, 0, asm.SMod.Reg(asm.R0, asm.R1), 123},
		{"sdiv32", 0xffff_ff9c, 7, asm.SDiv.Reg32(asm.R0, asm.R1), 0xffff_fff2},
		{"smod32 imm", 0xffff_ff9c, 0, asm.SMod.Imm32(asm.R0, 7), 0xffff_fffe},
		{"or", 0xf0, 0x0f, asm.Or.Reg(asm.R0, asm.R1), 0xff},
		{"and32", big, math.MaxUint64, asm.And.Reg32(asm.R0, asm.R1), 5},
		{"xor imm", 0xff, 0, asm.Xor.Imm(asm.R0, 0x0f), 0xf0},
		{"lsh64", 1, 63, asm.LSh.Reg(asm.R0, asm.R1), 1 << 63},
		{"lsh64 masks shift", 1, 65, asm.LSh.Reg(asm.R0, asm.R1), 2},
		{"lsh32 masks shift", 1, 33, asm.LSh.Reg32(asm.R0, asm.R1), 2},
		{"rsh64", 1 << 63, 63, asm.RSh.Reg(asm.R0, asm.R1), 1},
		{"rsh32 imm", big, 0, asm.RSh.Imm32(asm.R0, 1), 2},
		{"arsh64", minI64, 0, asm.ArSh.Imm(asm.R0, 63), math.MaxUint64},
		{"arsh32", 0x8000_0000, 0, asm.ArSh.Imm32(asm.R0, 31), 0xffff_ffff},
		{"neg64", 1, 0, asm.Neg.Imm(asm.R0, 0), math.MaxUint64},
		{"neg32", 1, 0, asm.Neg.Imm32(asm.R0, 0), 0xffff_ffff},
		{"mov64 imm sign-extends", 0, 0, asm.Mov.Imm(asm.R0, -1), math.MaxUint64},
		{"mov32 imm", 0, 0, asm.Mov.Imm32(asm.R0, -1), 0xffff_ffff},
		{"mov32 reg truncates", 0, big, asm.Mov.Reg32(asm.R0, asm.R1), 5},
		{"movsx8", 0, 0x80, asm.MovSX8.Reg(asm.R0, asm.R1), 0xffff_ffff_ffff_ff80},
		{"movsx16 32-bit", 0, 0x8000, asm.MovSX16.Reg32(asm.R0, asm.R1), 0xffff_8000},
		{"movsx32", 0, 0x8000_0000, asm.MovSX32.Reg(asm.R0, asm.R1), 0xffff_ffff_8000_0000},
		{"to-le16 truncates", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.LE, asm.R0, asm.Half), 0x7788},
		{"to-le32", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.LE, asm.R0, asm.Word), 0x5566_7788},
		{"to-le64", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.LE, asm.R0, asm.DWord), 0x1122_3344_5566_7788},
		{"to-be16", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.BE, asm.R0, asm.Half), 0x8877},
		{"to-be32", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.BE, asm.R0, asm.Word), 0x8877_6655},
		{"to-be64", 0x1122_3344_5566_7788, 0, asm.HostTo(asm.BE, asm.R0, asm.DWord), 0x8877_6655_4433_2211},
		{"bswap16", 0x1122_3344_5566_7788, 0, asm.BSwap(asm.R0, asm.Half), 0x8877},
		{"bswap64", 0x1122_3344_5566_7788, 0, asm.BSwap(asm.R0, asm.DWord), 0x8877_6655_4433_2211},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := evalR0(t, ld(asm.R0, tc.a), ld(asm.R1, tc.b), tc.op)
			assert.Equal(t, tc.want, got, "got %#x want %#x", got, tc.want)
		})
	}
}

func TestJumps(t *testing.T) {
	const neg = uint64(1<<64 - 1) // -1
	for _, tc := range []struct {
		name  string
		a, b  uint64
		jump  asm.Instruction // compares R0 with R1 (or imm), to label "yes"
		taken bool
	}{
		{"jeq", 3, 3, asm.JEq.Reg(asm.R0, asm.R1, "yes"), true},
		{"jeq imm sign-extends", neg, 0, asm.JEq.Imm(asm.R0, -1, "yes"), true},
		{"jne", 3, 3, asm.JNE.Reg(asm.R0, asm.R1, "yes"), false},
		{"jgt unsigned", neg, 1, asm.JGT.Reg(asm.R0, asm.R1, "yes"), true},
		{"jsgt signed", neg, 1, asm.JSGT.Reg(asm.R0, asm.R1, "yes"), false},
		{"jge", 2, 2, asm.JGE.Reg(asm.R0, asm.R1, "yes"), true},
		{"jsge", neg, neg, asm.JSGE.Reg(asm.R0, asm.R1, "yes"), true},
		{"jlt", 1, 2, asm.JLT.Reg(asm.R0, asm.R1, "yes"), true},
		{"jslt", neg, 0, asm.JSLT.Imm(asm.R0, 0, "yes"), true},
		{"jle", 3, 2, asm.JLE.Reg(asm.R0, asm.R1, "yes"), false},
		{"jsle", neg, 0, asm.JSLE.Reg(asm.R0, asm.R1, "yes"), true},
		{"jset", 0b1010, 0b0100, asm.JSet.Reg(asm.R0, asm.R1, "yes"), false},
		{"jset imm", 0b1010, 0, asm.JSet.Imm(asm.R0, 0b0010, "yes"), true},
		{"jeq32 ignores high half", 1<<32 | 7, 7, asm.JEq.Reg32(asm.R0, asm.R1, "yes"), true},
		{"jgt32", 1 << 32, 1, asm.JGT.Reg32(asm.R0, asm.R1, "yes"), false},
		{"jsgt32", 0x7fff_ffff, 0x8000_0000, asm.JSGT.Reg32(asm.R0, asm.R1, "yes"), true},
		{"jslt32 imm", 0xffff_ffff, 0, asm.JSLT.Imm32(asm.R0, 0, "yes"), true},
		{"jle32 imm", 5, 0, asm.JLE.Imm32(asm.R0, 5, "yes"), true},
		{"jset32", 1 << 32, 1 << 32, asm.JSet.Reg32(asm.R0, asm.R1, "yes"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prog(t, asm.Instructions{
				ld(asm.R0, tc.a), ld(asm.R1, tc.b), tc.jump,
				asm.Mov.Imm(asm.R0, 0), asm.Return(),
				asm.Mov.Imm(asm.R0, 1).WithSymbol("yes"), asm.Return(),
			})
			res := runOn(p, newInput(make([]byte, 64)))
			assert.Equal(t, tc.taken, res.Action == 1)
		})
	}
}

func TestNumericJumpOffsets(t *testing.T) {
	// Raw offsets as a compiler emits them, counting lddw as two slots.
	p := prog(t, asm.Instructions{
		asm.LoadImm(asm.R0, 1<<40, asm.DWord),                         // 0-1
		asm.Instruction{OpCode: asm.JGT.Op(asm.ImmSource), Offset: 2}, // 2 -> 5
		asm.Mov.Imm(asm.R0, 9),                                        // 3
		asm.Return(),                                                  // 4
		asm.RSh.Imm(asm.R0, 40),                                       // 5
		asm.Return(),                                                  // 6
	})
	res := runOn(p, newInput(make([]byte, 64)))
	assert.Equal(t, Action(1), res.Action)
	assert.Equal(t, 4, res.Insns)
}

func TestMemory(t *testing.T) {
	p := prog(t, asm.Instructions{
		asm.LoadImm(asm.R2, 0x1122_3344_5566_7788, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R2, asm.DWord),
		asm.StoreImm(asm.R10, -16, -2, asm.Word),
		asm.LoadMem(asm.R3, asm.R10, -8, asm.Byte),   // 0x88
		asm.LoadMem(asm.R4, asm.R10, -6, asm.Half),   // 0x5566
		asm.LoadMem(asm.R5, asm.R10, -4, asm.Word),   // 0x11223344
		asm.LoadMemSX(asm.R6, asm.R10, -8, asm.Byte), // sign-extended 0x88
		asm.LoadMemSX(asm.R7, asm.R10, -16, asm.Word),
		asm.LoadMem(asm.R8, asm.R10, -16, asm.Word),
		asm.LoadMem(asm.R9, asm.R1, 0, asm.Word),
		asm.StoreMem(asm.R9, 0, asm.R3, asm.DWord),
		asm.StoreMem(asm.R9, 8, asm.R4, asm.DWord),
		asm.StoreMem(asm.R9, 16, asm.R5, asm.DWord),
		asm.StoreMem(asm.R9, 24, asm.R6, asm.DWord),
		asm.StoreMem(asm.R9, 32, asm.R7, asm.DWord),
		asm.StoreMem(asm.R9, 40, asm.R8, asm.DWord),
		asm.StoreImm(asm.R9, 48, 0x7f, asm.Byte),
		asm.StoreImm(asm.R9, 49, -1, asm.Half),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
	})
	in := newInput(make([]byte, 64))
	res := runOn(p, in)
	require.False(t, res.Fault.Faulted(), "%v", res.Fault)
	got := in.Buf[in.Data:]
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(got[i*8:]) }
	assert.Equal(t, uint64(0x88), u(0))
	assert.Equal(t, uint64(0x5566), u(1))
	assert.Equal(t, uint64(0x1122_3344), u(2))
	assert.Equal(t, uint64(0xffff_ffff_ffff_ff88), u(3))
	assert.Equal(t, uint64(math.MaxUint64-1), u(4))
	assert.Equal(t, uint64(0xffff_fffe), u(5))
	assert.Equal(t, []byte{0x7f, 0xff, 0xff, 0}, got[48:52])
}

func TestCtxFields(t *testing.T) {
	p := prog(t, asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),
		asm.LoadMem(asm.R4, asm.R1, mdDataMeta, asm.Word),
		asm.LoadMem(asm.R5, asm.R1, mdIngressIfindex, asm.Word),
		asm.LoadMem(asm.R6, asm.R1, mdRxQueueIndex, asm.Word),
		asm.LoadMem(asm.R7, asm.R1, mdEgressIfindex, asm.Word),
		// packet length and metadata length via pointer differences
		asm.Mov.Reg(asm.R0, asm.R3), asm.Sub.Reg(asm.R0, asm.R2),
		asm.Mov.Reg(asm.R8, asm.R2), asm.Sub.Reg(asm.R8, asm.R4),
		asm.LoadMem(asm.R9, asm.R4, 0, asm.Byte), // first metadata byte
		asm.StoreMem(asm.R2, 0, asm.R0, asm.Half),
		asm.StoreMem(asm.R2, 2, asm.R8, asm.Half),
		asm.StoreMem(asm.R2, 4, asm.R5, asm.Byte),
		asm.StoreMem(asm.R2, 5, asm.R6, asm.Byte),
		asm.StoreMem(asm.R2, 6, asm.R7, asm.Byte),
		asm.StoreMem(asm.R2, 7, asm.R9, asm.Byte),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
	})
	in := newInput(make([]byte, 60))
	in.DataMeta = in.Data - 4
	in.Buf[in.DataMeta] = 0xab
	in.IngressIfindex, in.RxQueueIndex, in.EgressIfindex = 7, 3, 9
	res := runOn(p, in)
	require.False(t, res.Fault.Faulted(), "%v", res.Fault)
	assert.Equal(t, []byte{60, 0, 4, 0, 7, 3, 9, 0xab}, in.Buf[in.Data:in.Data+8])
}

func TestFaults(t *testing.T) {
	arr, err := NewMap(&MapSpec{Name: "arr", Type: Array, KeySize: 4, ValueSize: 12, MaxEntries: 2}, 1)
	require.NoError(t, err)
	ro, err := NewMap(&MapSpec{Name: "ro", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: FlagRdonlyProg}, 1)
	require.NoError(t, err)
	lookup := func(name string) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, 0).WithReference(name),
			asm.FnMapLookupElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "ok"),
			asm.Return(),
		}
	}
	pkt := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),
	}
	cat := func(parts ...asm.Instructions) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	exit := ret(XDPPass)
	for _, tc := range []struct {
		name   string
		insns  asm.Instructions
		reason FaultReason
		insn   int32 // raw offset of the faulting instruction
	}{
		{"packet read at data_end", cat(pkt, asm.Instructions{asm.LoadMem(asm.R0, asm.R3, 0, asm.Byte)}, exit), FaultOutOfBounds, 2},
		{"packet read straddling data_end", cat(pkt, asm.Instructions{asm.LoadMem(asm.R0, asm.R3, -2, asm.Word)}, exit), FaultOutOfBounds, 2},
		{"packet read before data", cat(pkt, asm.Instructions{asm.LoadMem(asm.R0, asm.R2, -1, asm.Byte)}, exit), FaultOutOfBounds, 2},
		{"packet write past end", cat(pkt, asm.Instructions{asm.StoreImm(asm.R3, 0, 1, asm.Byte)}, exit), FaultOutOfBounds, 2},
		{"packet pointer underflow", cat(pkt, asm.Instructions{asm.Sub.Imm(asm.R2, 1<<30), asm.Sub.Imm(asm.R2, 1<<30), asm.Sub.Imm(asm.R2, 1<<30), asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte)}, exit), FaultOutOfBounds, 5},
		{"stack below frame", cat(asm.Instructions{asm.LoadMem(asm.R0, asm.R10, -520, asm.DWord)}, exit), FaultOutOfBounds, 0},
		{"stack above fp", cat(asm.Instructions{asm.StoreImm(asm.R10, 0, 1, asm.Word)}, exit), FaultOutOfBounds, 0},
		{"stack misaligned", cat(asm.Instructions{asm.StoreImm(asm.R10, -6, 1, asm.Word)}, exit), FaultMisaligned, 0},
		{"scalar dereference", cat(asm.Instructions{asm.Mov.Imm(asm.R2, 4096), asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte)}, exit), FaultNotPointer, 1},
		{"ctx write", cat(asm.Instructions{asm.StoreImm(asm.R1, 16, 1, asm.Word)}, exit), FaultReadOnly, 0},
		{"ctx narrow read", cat(asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 0, asm.Half)}, exit), FaultCtxAccess, 0},
		{"ctx read past xdp_md", cat(asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 24, asm.Word)}, exit), FaultCtxAccess, 0},
		{"ctx through 32-bit alu", cat(asm.Instructions{asm.Mov.Reg32(asm.R2, asm.R1), asm.LoadMem(asm.R0, asm.R2, 0, asm.Word)}, exit), FaultNotPointer, 1},
		{"map value past value_size", cat(lookup("arr"), asm.Instructions{asm.LoadMem(asm.R1, asm.R0, 10, asm.Word).WithSymbol("ok")}, exit), FaultOutOfBounds, 8},
		{"map value padding", cat(lookup("arr"), asm.Instructions{asm.LoadMem(asm.R1, asm.R0, 12, asm.Byte).WithSymbol("ok")}, exit), FaultOutOfBounds, 8},
		{"map value past last element", cat(lookup("arr"), asm.Instructions{asm.LoadMem(asm.R1, asm.R0, 32, asm.Byte).WithSymbol("ok")}, exit), FaultOutOfBounds, 8},
		{"read-only map value", cat(lookup("ro"), asm.Instructions{asm.StoreImm(asm.R0, 0, 1, asm.Word).WithSymbol("ok")}, exit), FaultReadOnly, 8},
		{"atomic on packet", cat(pkt, asm.Instructions{asm.Mov.Imm(asm.R4, 1), asm.StoreXAdd(asm.R2, asm.R4, asm.Word)}, exit), FaultAtomicRegion, 3},
		{"atomic misaligned", cat(asm.Instructions{asm.StoreImm(asm.R10, -8, 0, asm.Word), asm.Mov.Imm(asm.R4, 1), asm.AddAtomic.Mem(asm.R10, asm.R4, asm.DWord, -4)}, exit), FaultMisaligned, 2},
		{"map helper on scalar", cat(asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.Mov.Reg(asm.R2, asm.R10), asm.FnMapLookupElem.Call()}, exit), FaultHelperArg, 2},
		{"map key out of bounds", cat(asm.Instructions{asm.Mov.Reg(asm.R2, asm.R10), asm.LoadMapPtr(asm.R1, 0).WithReference("arr"), asm.FnMapLookupElem.Call()}, exit), FaultOutOfBounds, 3},
		{"adjust_head on non-ctx", cat(asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.Mov.Imm(asm.R2, 0), asm.FnXdpAdjustHead.Call()}, exit), FaultHelperArg, 2},
		{"budget", asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Add.Imm(asm.R0, 1).WithSymbol("loop"),
			asm.JNE.Imm(asm.R0, 0, "loop"),
			asm.Return(),
		}, FaultBudget, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := prog(t, tc.insns, arr, ro)
			in := newInput(make([]byte, 64))
			before := append([]byte(nil), in.Buf...)
			res := runOn(p, in)
			assert.Equal(t, XDPAborted, res.Action)
			assert.Equal(t, tc.reason, res.Fault.Reason, "%v", res.Fault)
			assert.Equal(t, tc.insn, res.Fault.Insn, "%v", res.Fault)
			assert.NotEmpty(t, res.Fault.String())
			if tc.reason != FaultBudget {
				assert.Equal(t, before, in.Buf, "a faulting access writes nothing")
			} else {
				assert.Equal(t, DefaultBudget, res.Insns)
			}
			// The program is reusable after a fault.
			res = runOn(p, in)
			assert.Equal(t, tc.reason, res.Fault.Reason)
		})
	}
}

func TestBudgetOption(t *testing.T) {
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R0, 0),
		asm.Add.Imm(asm.R0, 1).WithSymbol("loop"),
		asm.JLT.Imm(asm.R0, 100, "loop"),
		asm.Return(),
	}
	p, err := NewProgram(&ProgramSpec{Name: "loop", Instructions: insns}, nil, Options{Budget: 150})
	require.NoError(t, err)
	res := runOn(p, newInput(make([]byte, 64)))
	assert.Equal(t, FaultBudget, res.Fault.Reason)
	assert.Equal(t, 150, res.Insns)

	p, err = NewProgram(&ProgramSpec{Name: "loop", Instructions: insns}, nil, Options{Budget: 202})
	require.NoError(t, err)
	res = runOn(p, newInput(make([]byte, 64)))
	assert.False(t, res.Fault.Faulted())
	assert.Equal(t, Action(100), res.Action)
	assert.Equal(t, 202, res.Insns)
	assert.False(t, res.Action.Valid())
}

func TestAtomics(t *testing.T) {
	for _, tc := range []struct {
		name         string
		size         asm.Size
		op           asm.AtomicOp
		mem, src, r0 uint64
		wantMem      uint64
		wantSrc      uint64 // src register afterwards
		wantR0       uint64
	}{
		{"add64", asm.DWord, asm.AddAtomic, 5, 3, 0, 8, 3, 0},
		{"add32 wraps", asm.Word, asm.AddAtomic, 0xffff_ffff, 2, 0, 1, 2, 0},
		{"fetch add", asm.DWord, asm.FetchAdd, 5, 3, 0, 8, 5, 0},
		{"fetch add32 zero-extends", asm.Word, asm.FetchAdd, 0xffff_fffe, 1, 0, 0xffff_ffff, 0xffff_fffe, 0},
		{"and", asm.DWord, asm.AndAtomic, 0b1100, 0b1010, 0, 0b1000, 0b1010, 0},
		{"fetch or", asm.DWord, asm.FetchOr, 0b1100, 0b0011, 0, 0b1111, 0b1100, 0},
		{"fetch xor", asm.Word, asm.FetchXor, 0b1100, 0b0110, 0, 0b1010, 0b1100, 0},
		{"xchg", asm.DWord, asm.Xchg, 7, 9, 0, 9, 7, 0},
		{"cmpxchg hit", asm.DWord, asm.CmpXchg, 7, 9, 7, 9, 9, 7},
		{"cmpxchg miss", asm.DWord, asm.CmpXchg, 7, 9, 6, 7, 9, 7},
		{"cmpxchg32 compares low half", asm.Word, asm.CmpXchg, 7, 9, 1<<32 | 7, 9, 9, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			insns := asm.Instructions{
				asm.LoadMem(asm.R9, asm.R1, 0, asm.Word),
				ld(asm.R2, tc.mem),
				asm.StoreMem(asm.R10, -8, asm.R2, asm.DWord),
				ld(asm.R3, tc.src),
				ld(asm.R0, tc.r0),
				tc.op.Mem(asm.R10, asm.R3, tc.size, -8),
				asm.LoadMem(asm.R4, asm.R10, -8, asm.DWord),
				asm.StoreMem(asm.R9, 0, asm.R4, asm.DWord),
				asm.StoreMem(asm.R9, 8, asm.R3, asm.DWord),
				asm.StoreMem(asm.R9, 16, asm.R0, asm.DWord),
				asm.Mov.Imm(asm.R0, 2),
				asm.Return(),
			}
			in := newInput(make([]byte, 64))
			res := runOn(prog(t, insns), in)
			require.False(t, res.Fault.Faulted(), "%v", res.Fault)
			got := in.Buf[in.Data:]
			mem := binary.LittleEndian.Uint64(got)
			if tc.size == asm.Word {
				mem &= 0xffff_ffff
			}
			assert.Equal(t, tc.wantMem, mem, "memory")
			assert.Equal(t, tc.wantSrc, binary.LittleEndian.Uint64(got[8:]), "src")
			assert.Equal(t, tc.wantR0, binary.LittleEndian.Uint64(got[16:]), "r0")
		})
	}
}

func TestLocalCalls(t *testing.T) {
	// main: r6 = 100; r1 = 5; call f; r0 += r6; exit
	// f: stores on its own stack, calls g, returns r1*2 + g()
	// g: returns 1
	insns := asm.Instructions{
		asm.Mov.Imm(asm.R6, 100),
		stImmDW(asm.R10, -8, 42),
		asm.Mov.Imm(asm.R1, 5),
		asm.Call.Label("f"),
		asm.Add.Reg(asm.R0, asm.R6),
		asm.LoadMem(asm.R2, asm.R10, -8, asm.DWord), // caller's stack intact
		asm.Add.Reg(asm.R0, asm.R2),
		asm.Return(),

		asm.Mov.Imm(asm.R6, 7).WithSymbol("f"), // callee-saved: restored on return
		stImmDW(asm.R10, -8, 1000),
		asm.Mov.Reg(asm.R7, asm.R1),
		asm.LSh.Imm(asm.R7, 1),
		asm.Call.Label("g"),
		asm.Add.Reg(asm.R0, asm.R7),
		asm.Return(),

		asm.Mov.Imm(asm.R0, 1).WithSymbol("g"),
		asm.Return(),
	}
	res := runOn(prog(t, insns), newInput(make([]byte, 64)))
	require.False(t, res.Fault.Faulted(), "%v", res.Fault)
	assert.Equal(t, Action(1+10+100+42), res.Action)

	// Unbounded recursion hits MAX_CALL_FRAMES.
	rec := asm.Instructions{
		asm.Call.Label("f"),
		asm.Return(),
		asm.Call.Label("f").WithSymbol("f"),
		asm.Return(),
	}
	res = runOn(prog(t, rec), newInput(make([]byte, 64)))
	assert.Equal(t, FaultCallDepth, res.Fault.Reason)
	assert.Equal(t, int32(2), res.Fault.Insn)
}

func TestStackClearedBetweenRuns(t *testing.T) {
	// Reads a stack slot and then writes it: a verified program never reads
	// uninitialised stack, but nothing must leak from one run to the next.
	p := prog(t, asm.Instructions{
		asm.LoadMem(asm.R0, asm.R10, -512, asm.DWord),
		stImmDW(asm.R10, -512, 77),
		asm.Return(),
	})
	for i := 0; i < 3; i++ {
		assert.Equal(t, Action(0), runOn(p, newInput(make([]byte, 64))).Action)
	}
}

func TestBadInput(t *testing.T) {
	p := prog(t, ret(XDPPass))
	for _, in := range []*Input{
		{Buf: make([]byte, 100), Data: 10, DataEnd: 5, DataMeta: 10},
		{Buf: make([]byte, 100), Data: 10, DataEnd: 101, DataMeta: 10},
		{Buf: make([]byte, 100), Data: 10, DataEnd: 20, DataMeta: 11},
		{Buf: make([]byte, 100), Data: 10, DataEnd: 20, DataMeta: -1},
	} {
		res := runOn(p, in)
		assert.Equal(t, FaultBadInput, res.Fault.Reason)
		assert.Equal(t, XDPAborted, res.Action)
	}
}

func TestRunDoesNotAllocate(t *testing.T) {
	for _, spec := range Library() {
		_, p := newLib(t, spec, 2)
		frame := udp4Frame(1, 9)
		in := newInput(frame)
		var res Result
		allocs := testing.AllocsPerRun(100, func() {
			copy(in.Buf[in.Data:], frame)
			p.Run(in, &res)
		})
		assert.Zero(t, allocs, spec.Name)
	}
	// Nor do the fault path and the helpers that return errors.
	h, err := NewMap(&MapSpec{Name: "h", Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}, 1)
	require.NoError(t, err)
	p := prog(t, asm.Instructions{
		asm.StoreImm(asm.R10, -4, 1, asm.Word),
		stImmDW(asm.R10, -16, 0),
		asm.LoadMapPtr(asm.R1, 0).WithReference("h"),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -16),
		asm.Mov.Imm(asm.R4, int32(UpdateExist)),
		asm.FnMapUpdateElem.Call(), // -ENOENT
		asm.LoadMapPtr(asm.R1, 0).WithReference("h"),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.FnMapDeleteElem.Call(),                 // -ENOENT
		asm.LoadMem(asm.R0, asm.R10, 0, asm.DWord), // fault
		asm.Return(),
	}, h)
	in := newInput(make([]byte, 64))
	var res Result
	allocs := testing.AllocsPerRun(100, func() { p.Run(in, &res) })
	assert.Zero(t, allocs)
	assert.Equal(t, FaultOutOfBounds, res.Fault.Reason)
}

func TestPrepareErrors(t *testing.T) {
	arr, err := NewMap(&MapSpec{Name: "arr", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}, 1)
	require.NoError(t, err)
	raw := func(op asm.OpCode, dst, src asm.Register, off int16, imm int64) asm.Instruction {
		return asm.Instruction{OpCode: op, Dst: dst, Src: src, Offset: off, Constant: imm}
	}
	exit := asm.Return()
	for _, tc := range []struct {
		name   string
		insns  asm.Instructions
		want   error
		substr string
	}{
		{"empty", nil, ErrNoExit, "empty"},
		{"unknown opcode", asm.Instructions{raw(0xff, 0, 0, 0, 0), exit}, ErrInvalidInstruction, "insn 0"},
		{"bad register", asm.Instructions{raw(asm.Mov.Op(asm.ImmSource), 11, 0, 0, 1), exit}, ErrInvalidRegister, "insn 0"},
		{"write r10", asm.Instructions{asm.Mov.Imm(asm.R10, 0), exit}, ErrInvalidRegister, "frame pointer"},
		{"jump out of range", asm.Instructions{raw(asm.Ja.Op(asm.ImmSource), 0, 0, 5, 0), exit}, ErrJumpOutOfRange, "insn 0"},
		{"jump backwards out", asm.Instructions{raw(asm.JEq.Op(asm.ImmSource), 0, 0, -3, 0), exit}, ErrJumpOutOfRange, "insn 0"},
		{"jump into lddw", asm.Instructions{raw(asm.Ja.Op(asm.ImmSource), 0, 0, 1, 0), asm.LoadImm(asm.R0, 1, asm.DWord), exit}, ErrJumpOutOfRange, "target 2"},
		{"unknown label", asm.Instructions{asm.Ja.Label("nowhere"), exit}, ErrUnresolvedReference, "nowhere"},
		{"last is not exit", asm.Instructions{asm.Mov.Imm(asm.R0, 1)}, ErrNoExit, "insn 0"},
		{"no reachable exit", asm.Instructions{asm.Ja.Label("self").WithSymbol("self")}, ErrNoExit, "no reachable exit"},
		{"unreachable", asm.Instructions{exit, asm.Mov.Imm(asm.R0, 1), exit}, ErrUnreachable, "insn 1"},
		{"tail call", asm.Instructions{asm.FnTailCall.Call(), exit}, ErrUnsupportedHelper, "insn 0 (Call FnTailCall)"},
		{"unknown helper", asm.Instructions{asm.FnGetPrandomU32.Call(), exit}, ErrUnsupportedHelper, "FnGetPrandomU32"},
		{"kfunc", asm.Instructions{raw(asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), 0, asm.PseudoKfuncCall, 0, 77), exit}, ErrUnsupportedInstruction, "kfunc"},
		{"legacy ld abs", asm.Instructions{asm.LoadAbs(12, asm.Half), exit}, ErrUnsupportedInstruction, "legacy"},
		{"div by zero imm", asm.Instructions{asm.Div.Imm(asm.R0, 0), exit}, ErrInvalidInstruction, "division by zero"},
		{"shift too far", asm.Instructions{asm.LSh.Imm32(asm.R0, 32), exit}, ErrInvalidInstruction, "invalid shift"},
		{"bad swap width", asm.Instructions{raw(asm.OpCode(asm.ALUClass).SetALUOp(asm.Swap), 0, 0, 0, 8), exit}, ErrInvalidInstruction, "width 8"},
		{"unresolved map name", asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference("nope"), exit}, ErrUnresolvedMap, `"nope"`},
		{"unresolved map fd", asm.Instructions{asm.LoadMapPtr(asm.R1, 3), exit}, ErrUnresolvedMap, "fd 3"},
		{"direct value of multi-entry array", asm.Instructions{asm.LoadMapValue(asm.R1, 0, 0), exit}, ErrUnsupportedInstruction, "single-element"},
		{"btf id load", asm.Instructions{raw(asm.LoadImmOp(asm.DWord), 1, 3, 0, 1), exit}, ErrUnsupportedInstruction, "kind 3"},
		{"load acquire", asm.Instructions{asm.LoadAcquire(asm.R0, asm.R10, asm.DWord, -8), exit}, ErrUnsupportedInstruction, "insn 0"},
		{"may_goto", asm.Instructions{raw(asm.OpCode(asm.JumpClass).SetJumpOp(asm.JCOND), 0, 0, 0, 0), exit}, ErrUnsupportedInstruction, "may_goto"},
		{"jump32 exit", asm.Instructions{raw(asm.OpCode(asm.Jump32Class)|asm.OpCode(asm.Exit), 0, 0, 0, 0), exit}, ErrInvalidInstruction, "insn 0"},
		{"reserved src in imm alu", asm.Instructions{raw(asm.Add.Op(asm.ImmSource), 0, 3, 0, 1), exit}, ErrInvalidInstruction, "reserved"},
		{"call into other subprogram via jump", asm.Instructions{
			asm.Call.Label("f"), asm.Ja.Label("f2"), exit,
			asm.Mov.Imm(asm.R0, 0).WithSymbol("f"), asm.Mov.Imm(asm.R0, 1).WithSymbol("f2"), exit,
		}, ErrJumpOutOfRange, "leaves its subprogram"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewProgram(&ProgramSpec{Name: "bad", Instructions: tc.insns}, []*Map{arr}, Options{})
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "got %v", err)
			assert.Contains(t, err.Error(), tc.substr)
			assert.Contains(t, err.Error(), `program "bad"`)
		})
	}
}

func TestDirectMapValue(t *testing.T) {
	// A clang .rodata/.data access: lddw with BPF_PSEUDO_MAP_VALUE.
	data, err := NewMap(&MapSpec{Name: ".data", Type: Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}, 1)
	require.NoError(t, err)
	v, err := data.Value(make([]byte, 4), 0)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(v[8:], 0x1234)
	p := prog(t, asm.Instructions{
		asm.LoadMapValue(asm.R1, 0, 8).WithReference(".data"),
		asm.LoadMem(asm.R0, asm.R1, 0, asm.Word),
		asm.StoreImm(asm.R1, 4, 5, asm.Word),
		asm.Return(),
	}, data)
	res := runOn(p, newInput(make([]byte, 64)))
	require.False(t, res.Fault.Faulted(), "%v", res.Fault)
	assert.Equal(t, Action(0x1234), res.Action)
	assert.Equal(t, uint32(5), binary.LittleEndian.Uint32(v[12:]))
}

// TestConstantReturnMatchesInterpreter guards Run's shortcut for programs
// that are "r0 = imm; exit": the result, and the machine left behind, are
// what interpreting them gives, for 64- and 32-bit moves, negative
// immediates, verdicts past XDP_REDIRECT, and a budget too small to finish.
func TestConstantReturnMatchesInterpreter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		insns  asm.Instructions
		budget int
		short  bool
	}{
		{"mov64 pass", asm.Instructions{asm.Mov.Imm(asm.R0, int32(XDPPass)), asm.Return()}, 0, true},
		{"mov64 drop", asm.Instructions{asm.Mov.Imm(asm.R0, int32(XDPDrop)), asm.Return()}, 0, true},
		{"mov64 negative", asm.Instructions{asm.Mov.Imm(asm.R0, -7), asm.Return()}, 0, true},
		{"mov32 negative", asm.Instructions{asm.Mov.Imm32(asm.R0, -7), asm.Return()}, 0, true},
		{"mov32 redirect", asm.Instructions{asm.Mov.Imm32(asm.R0, int32(XDPRedirect)), asm.Return()}, 0, true},
		{"budget of one", asm.Instructions{asm.Mov.Imm(asm.R0, int32(XDPPass)), asm.Return()}, 1, true},
		{"other register", asm.Instructions{asm.Mov.Imm(asm.R1, 1), asm.Mov.Imm(asm.R0, 2), asm.Return()}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{NumCPU: 2, Budget: tc.budget}
			spec := &ProgramSpec{Name: "test", Instructions: tc.insns}
			fast, err := NewProgram(spec, nil, opts)
			require.NoError(t, err)
			assert.Equal(t, tc.short, fast.constRet)
			if tc.short {
				assert.False(t, fast.ReadsPacket(), "a constant program does not read the packet")
			}
			slow, err := NewProgram(spec, nil, opts)
			require.NoError(t, err)
			slow.constRet = false
			for i := 0; i < 2; i++ { // the first run also clears the stack
				inF, inS := newInput(make([]byte, 64)), newInput(make([]byte, 64))
				inF.Data, inS.Data = inF.Data+4, inS.Data+4
				assert.Equal(t, runOn(slow, inS), runOn(fast, inF))
				assert.Equal(t, inS.Buf, inF.Buf)
				fm, sm := fast.m, slow.m
				fm.in, sm.in = nil, nil // point at different inputs
				assert.Equal(t, sm, fm)
			}
		})
	}
}

// TestConstVerdictIsWhatTheInterpreterReturns: a constant program's
// ConstVerdict is the interpreter's result for it (the verdict, two
// instructions, the offsets unchanged, no redirect, no fault); any other
// program, or a budget too small to finish, has none.
func TestConstVerdictIsWhatTheInterpreterReturns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		insns  asm.Instructions
		budget int
		ok     bool
	}{
		{"mov64 drop", asm.Instructions{asm.Mov.Imm(asm.R0, int32(XDPDrop)), asm.Return()}, 0, true},
		{"mov64 negative", asm.Instructions{asm.Mov.Imm(asm.R0, -7), asm.Return()}, 0, true},
		{"mov32 redirect", asm.Instructions{asm.Mov.Imm32(asm.R0, int32(XDPRedirect)), asm.Return()}, 0, true},
		{"budget of one", asm.Instructions{asm.Mov.Imm(asm.R0, int32(XDPPass)), asm.Return()}, 1, false},
		{"other register", asm.Instructions{asm.Mov.Imm(asm.R1, 1), asm.Mov.Imm(asm.R0, 2), asm.Return()}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{NumCPU: 2, Budget: tc.budget}
			p, err := NewProgram(&ProgramSpec{Name: "test", Instructions: tc.insns}, nil, opts)
			require.NoError(t, err)
			act, ok := p.ConstVerdict()
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			p.constRet = false // the interpreter's own answer
			in := newInput(make([]byte, 64))
			in.Data += 4
			assert.Equal(t, Result{Action: act, Data: in.Data, DataEnd: in.DataEnd, DataMeta: in.DataMeta, Insns: 2}, runOn(p, in))
		})
	}
}

// TestConstantCallMatchesInterpreter guards Run's shortcut for programs
// that set registers to constants, call bpf_redirect_map and exit: the
// result and the machine left behind are what interpreting them gives,
// with the map entry present or not, with flags the helper refuses, with a
// map the helper refuses (a fault), and with a budget too small to finish.
func TestConstantCallMatchesInterpreter(t *testing.T) {
	call := func(key int32, flags int32, m string) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Imm(asm.R2, key),
			asm.LoadMapPtr(asm.R1, 0).WithReference(m),
			asm.Mov.Imm32(asm.R3, flags),
			asm.FnRedirectMap.Call(),
			asm.Return(),
		}
	}
	maps := []*MapSpec{
		{Name: "cpu_map", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 4, Contents: []MapKV{
			{Key: binary.LittleEndian.AppendUint32(nil, 1), Value: binary.LittleEndian.AppendUint32(nil, 64)}}},
		{Name: "arr", Type: Array, KeySize: 4, ValueSize: 4, MaxEntries: 4},
	}
	for _, tc := range []struct {
		name   string
		insns  asm.Instructions
		budget int
		short  bool
	}{
		{"entry", call(1, 0, "cpu_map"), 0, true},
		{"no entry: fallback action", call(2, int32(XDPDrop), "cpu_map"), 0, true},
		{"bad flags", call(1, 1<<8, "cpu_map"), 0, true},
		{"not a redirect map", call(1, 0, "arr"), 0, true},
		{"budget too small", call(1, 0, "cpu_map"), 4, true},
		{"reads a register", append(asm.Instructions{asm.Mov.Reg(asm.R4, asm.R1)}, call(1, 0, "cpu_map")...), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{NumCPU: 2, Budget: tc.budget}
			m := maps[0]
			if strings.Contains(tc.insns.String(), "arr") {
				m = maps[1]
			}
			spec := &CollectionSpec{Name: "test", Maps: []*MapSpec{m}, Programs: []*ProgramSpec{{Name: "test", Instructions: tc.insns}}}
			fc, err := NewCollection(spec, opts)
			require.NoError(t, err)
			sc, err := NewCollection(spec, opts)
			require.NoError(t, err)
			fast, slow := fc.Program("test"), sc.Program("test")
			assert.Equal(t, tc.short, fast.callRet)
			slow.callRet = false
			for i := 0; i < 2; i++ {
				inF, inS := newInput(make([]byte, 64)), newInput(make([]byte, 64))
				want, got := runOn(slow, inS), runOn(fast, inF)
				if want.Redirect.Map != nil { // each collection has its own map
					assert.Equal(t, want.Redirect.Map.spec.Name, got.Redirect.Map.spec.Name)
					want.Redirect.Map, got.Redirect.Map = nil, nil
				}
				assert.Equal(t, want, got)
				fm, sm := fast.m, slow.m
				fm.in, sm.in = nil, nil
				fm.maps, sm.maps = nil, nil
				fm.redirect.Map, sm.redirect.Map = nil, nil
				assert.Equal(t, sm, fm)
			}
		})
	}
}
