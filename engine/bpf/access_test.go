package bpf

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTracePacketAccess: traced, a run records the span of the packet it
// loaded and stored and how many accesses; the verdict and the bytes are
// what an untraced run gives; off, nothing is recorded.
func TestTracePacketAccess(t *testing.T) {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 40),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half), // EtherType: bytes 12-13
		asm.LoadMem(asm.R6, asm.R2, 30, asm.Word), // bytes 30-33
		asm.StoreMem(asm.R2, 0, asm.R5, asm.Half), // bytes 0-1
		asm.StoreImm(asm.R2, 38, 7, asm.Byte),     // byte 38
		asm.Mov.Imm(asm.R0, int32(XDPTx)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(XDPDrop)).WithSymbol("out"),
		asm.Return(),
	}
	frame := make([]byte, 64)
	for i := range frame {
		frame[i] = byte(i)
	}
	plain, traced := prog(t, insns), prog(t, insns)
	traced.TracePacketAccess(true)
	in1, in2 := newInput(append([]byte(nil), frame...)), newInput(append([]byte(nil), frame...))
	r1, r2 := runOn(plain, in1), runOn(traced, in2)
	require.False(t, r2.Fault.Faulted(), "%v", r2.Fault)
	assert.Equal(t, r1, r2)
	assert.Equal(t, in1.Buf, in2.Buf)
	assert.Equal(t, XDPTx, r2.Action)
	a := traced.LastPacketAccess()
	assert.Equal(t, PacketAccess{Loads: 2, Stores: 2,
		ReadLo: in2.Data + 12, ReadHi: in2.Data + 34, WriteLo: in2.Data, WriteHi: in2.Data + 39}, a)
	assert.Zero(t, plain.LastPacketAccess())

	// A short frame: the bounds check sends it to XDP_DROP, nothing read.
	r := runOn(traced, newInput(make([]byte, 20)))
	assert.Equal(t, XDPDrop, r.Action)
	assert.Zero(t, traced.LastPacketAccess())

	// bpf_xdp_adjust_tail then a store past the old end: traced, the
	// store at the new end is allowed and recorded.
	grow := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnXdpAdjustTail.Call(),
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 70),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.StoreImm(asm.R2, 69, 1, asm.Byte),
		asm.Mov.Imm(asm.R0, int32(XDPPass)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(XDPDrop)).WithSymbol("out"),
		asm.Return(),
	}
	p := prog(t, grow)
	p.TracePacketAccess(true)
	in := newInput(make([]byte, 64))
	r = runOn(p, in)
	require.False(t, r.Fault.Faulted(), "%v", r.Fault)
	assert.Equal(t, XDPPass, r.Action)
	assert.Equal(t, PacketAccess{Stores: 1, WriteLo: in.Data + 69, WriteHi: in.Data + 70}, p.LastPacketAccess())
}

// TestPacketAccessBelowOffsetZero: a load one byte below the packet's
// offset 0 (data at the start of the buffer) is a fault, not an index
// past the buffer, traced or not.
func TestPacketAccessBelowOffsetZero(t *testing.T) {
	for _, size := range []asm.Size{asm.Byte, asm.Half, asm.Word, asm.DWord} {
		for _, trace := range []bool{false, true} {
			p := prog(t, asm.Instructions{
				asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
				asm.LoadMem(asm.R0, asm.R2, -1, size),
				asm.Return(),
			})
			p.TracePacketAccess(trace)
			in := &Input{Buf: make([]byte, 64), Data: 0, DataEnd: 64, DataMeta: 0}
			var res Result
			assert.NotPanics(t, func() { p.Run(in, &res) }, "size %v, traced %v", size, trace)
			assert.True(t, res.Fault.Faulted(), "size %v, traced %v", size, trace)
		}
	}
}
