//go:build linux

package bpf

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// randomALUProgram builds a verifier-friendly program of n random ALU and
// forward-jump instructions on R0-R6 (seeded with random 64-bit constants)
// that finally stores R0-R6 into the first 56 bytes of the packet.
func randomALUProgram(rng *rand.Rand, n int) asm.Instructions {
	regs := []asm.Register{asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R6}
	reg := func() asm.Register { return regs[rng.IntN(len(regs))] }
	constant := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return int64(rng.IntN(64)) - 32
		case 1:
			return int64(int32(rng.Uint32()))
		default:
			return int64(rng.Uint64())
		}
	}
	imm := func() int32 {
		if rng.IntN(2) == 0 {
			return int32(rng.IntN(64)) - 16
		}
		return int32(rng.Uint32())
	}
	insns := asm.Instructions{
		asm.LoadMem(asm.R9, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R7, asm.R9),
		asm.Add.Imm(asm.R7, 56),
		asm.JGT.Reg(asm.R7, asm.R8, "out"),
	}
	for _, r := range regs {
		insns = append(insns, asm.LoadImm(r, constant(), asm.DWord))
	}
	aluOps := []asm.ALUOp{asm.Add, asm.Sub, asm.Mul, asm.Div, asm.SDiv, asm.Mod, asm.SMod, asm.Or, asm.And, asm.Xor, asm.LSh, asm.RSh, asm.ArSh, asm.Mov}
	jumpOps := []asm.JumpOp{asm.JEq, asm.JGT, asm.JGE, asm.JSet, asm.JNE, asm.JSGT, asm.JSGE, asm.JLT, asm.JLE, asm.JSLT, asm.JSLE}
	for i := 0; i < n; i++ {
		left := n - i - 1 // instructions after this one in the block
		is64 := rng.IntN(2) == 0
		switch k := rng.IntN(10); {
		case k < 6:
			op := aluOps[rng.IntN(len(aluOps))]
			var ins asm.Instruction
			if rng.IntN(2) == 0 {
				v := imm()
				switch op {
				case asm.Div, asm.SDiv, asm.Mod, asm.SMod:
					if v == 0 {
						v = 3
					}
				case asm.LSh, asm.RSh, asm.ArSh:
					v = int32(rng.IntN(32 + 32*b2i(is64)))
				}
				ins = op.Imm(reg(), v)
				if !is64 {
					ins = op.Imm32(ins.Dst, v)
				}
			} else if is64 {
				ins = op.Reg(reg(), reg())
			} else {
				ins = op.Reg32(reg(), reg())
			}
			insns = append(insns, ins)
		case k == 6:
			switch rng.IntN(4) {
			case 0:
				insns = append(insns, asm.Neg.Imm(reg(), 0))
			case 1:
				insns = append(insns, asm.HostTo([]asm.Endianness{asm.LE, asm.BE}[rng.IntN(2)], reg(), []asm.Size{asm.Half, asm.Word, asm.DWord}[rng.IntN(3)]))
			case 2:
				insns = append(insns, asm.BSwap(reg(), []asm.Size{asm.Half, asm.Word, asm.DWord}[rng.IntN(3)]))
			default:
				sx := []asm.ALUOp{asm.MovSX8, asm.MovSX16, asm.MovSX32}[rng.IntN(3)]
				if is64 {
					insns = append(insns, sx.Reg(reg(), reg()))
				} else if sx != asm.MovSX32 {
					insns = append(insns, sx.Reg32(reg(), reg()))
				}
			}
		default:
			if left == 0 {
				continue
			}
			op := jumpOps[rng.IntN(len(jumpOps))]
			cls := asm.JumpClass
			if !is64 {
				cls = asm.Jump32Class
			}
			ins := asm.Instruction{OpCode: asm.OpCode(cls).SetJumpOp(op), Dst: reg(), Offset: int16(rng.IntN(min(left, 3)) + 1)}
			if rng.IntN(2) == 0 {
				ins.OpCode = ins.OpCode.SetSource(asm.ImmSource)
				ins.Constant = int64(imm())
			} else {
				ins.OpCode = ins.OpCode.SetSource(asm.RegSource)
				ins.Src = reg()
			}
			// The jump may land on the first store, which is fine.
			insns = append(insns, ins)
		}
	}
	for i, r := range regs {
		insns = append(insns, asm.StoreMem(asm.R9, int16(8*i), r, asm.DWord))
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, int32(XDPPass)).WithSymbol("out"),
		asm.Return())
}

// TestKernelDifferentialALU runs random ALU/JMP programs in the kernel and
// in the interpreter and compares every register's final value.
func TestKernelDifferentialALU(t *testing.T) {
	const seed, programs, length = 20260101, 150, 24
	rng := rand.New(rand.NewPCG(seed, 0))
	frame := make([]byte, 64)
	for i := 0; i < programs; i++ {
		insns := randomALUProgram(rng, length)
		name := fmt.Sprintf("alu%d", i)
		spec := &CollectionSpec{Name: name, Programs: []*ProgramSpec{{Name: name, Instructions: insns}}}
		coll := loadKernel(t, spec)
		kact, kout := kernelRun(t, coll.Programs[name], frame)
		_, p := newLib(t, spec, 1)
		in := newInput(frame)
		res := runOn(p, in)
		require.False(t, res.Fault.Faulted(), "seed %d program %d: %v", seed, i, res.Fault)
		require.Equal(t, kact, res.Action, "seed %d program %d", seed, i)
		require.Equal(t, kout, packet(in, res), "seed %d program %d:\n%v", seed, i, insns)
		coll.Close()
	}
}
