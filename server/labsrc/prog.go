package labsrc

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"ringlab/engine/bpf"
)

// The lab's XDP program is a small dispatcher around a library program: it
// calls the library program as a BPF-to-BPF function, counts its verdict
// (and the frame's bytes) in the per-CPU array "lab_verdicts" under the
// lab's flow (IPv4, no options, UDP to FlowPort) or under "other", and
// returns the verdict unchanged. So every library program reports exact
// verdict counts for the lab's own packets, and stray frames (if any got
// in) are counted apart instead of spoiling them.

// progName is the kernel name of the dispatcher (BPF_OBJ_NAME_LEN 16).
const progName = "ringlab_lab"

// verdictsMap is the dispatcher's per-CPU array of counters.
const verdictsMap = "lab_verdicts"

// Keys of lab_verdicts: the flow's counters at keyFlow+i, everything
// else's at keyOther+i, with i a verdict (XDP_ABORTED 0 .. XDP_REDIRECT 4),
// slotInvalid (a return value that is no verdict) or slotBytes.
const (
	keyFlow     = 0
	keyOther    = 8
	slotInvalid = 5
	slotBytes   = 6
	numKeys     = 16
)

// verdictNames are the counter names of verdicts 0..4 and slotInvalid.
var verdictNames = [...]string{"xdp_aborted", "xdp_drop", "xdp_pass", "xdp_tx", "xdp_redirect", "xdp_invalid"}

// struct xdp_md offsets (include/uapi/linux/bpf.h).
const (
	mdData    = 0
	mdDataEnd = 4
)

// Offsets in the lab's frames: Ethernet, then IPv4 without options, then UDP.
const (
	offEthProto  = 12
	offIPVerIHL  = 14
	offIPProto   = 14 + 9
	offUDPDest   = 14 + 20 + 2
	ethPIPLE     = 0x0008 // htons(ETH_P_IP) as a little-endian u16 load reads it
	ipv4NoOpts   = 0x45   // version 4, IHL 5
	ipprotoUDP   = 17
	labFrameHdrs = headerBytes
)

// htonsLE returns port in network order as a little-endian u16 load of the
// packet reads it.
func htonsLE(port uint16) int32 { return int32(port>>8 | port<<8&0xff00) }

// libraryProgram returns the library program c names, configured for the
// lab.
func libraryProgram(c Config, numCPUs int) (*bpf.CollectionSpec, error) {
	// The lab has no second device for xdp_redirect_dev to send to.
	if c.Program != bpf.NameRedirectDev {
		cfg := bpf.LibraryConfig{
			DropPort: uint16(c.Port),
			// Keys of a cpumap must be possible CPUs; hash the flow over them.
			RedirectCPU: bpf.RedirectCPUConfig{Mode: bpf.CPUHash, NumCPUs: uint32(max(1, numCPUs))},
		}
		if p := bpf.LibraryProgram(c.Program, cfg); p != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: program %q is not one the lab runs", ErrBadSpec, c.Program)
}

// kernelSpec builds the collection the lab loads: the library program's
// maps, lab_verdicts, and one XDP program, the dispatcher, with the library
// program as its subprogram.
func kernelSpec(lib *bpf.CollectionSpec, port uint16) (*ebpf.CollectionSpec, error) {
	if len(lib.Programs) != 1 {
		return nil, fmt.Errorf("lab: library collection %s has %d programs, want 1", lib.Name, len(lib.Programs))
	}
	ks := lib.KernelSpec()
	if _, dup := ks.Maps[verdictsMap]; dup {
		return nil, fmt.Errorf("lab: library collection %s already has a map %s", lib.Name, verdictsMap)
	}
	ks.Maps[verdictsMap] = &ebpf.MapSpec{
		Name: verdictsMap, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: numKeys,
	}
	sub := ks.Programs[lib.Programs[0].Name]
	delete(ks.Programs, sub.Name)
	callee := sub.Instructions[0].Symbol()
	if callee == "" {
		return nil, fmt.Errorf("lab: library program %s has no entry symbol", sub.Name)
	}
	insns := dispatcher(callee, port)
	insns = append(insns, sub.Instructions...)
	ks.Programs[progName] = &ebpf.ProgramSpec{
		Name:         progName,
		Type:         ebpf.XDP,
		Instructions: insns,
		License:      sub.License,
	}
	return ks, nil
}

// dispatcher is the lab program's main function. Registers: R6 ctx, R7
// the verdict, R8 the frame length, R9 the base key (keyFlow or keyOther);
// all four survive calls.
func dispatcher(callee string, port uint16) asm.Instructions {
	// count adds to lab_verdicts[R9+R1]: the frame length (R8) when bytes,
	// else 1. The lookup clobbers R1-R5, so the addend is set after it.
	count := func(bytes bool, skip string) asm.Instructions {
		insns := asm.Instructions{
			asm.Add.Reg(asm.R1, asm.R9),
			asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, 0).WithReference(verdictsMap),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, skip),
		}
		if bytes {
			return append(insns, asm.StoreXAdd(asm.R0, asm.R8, asm.DWord))
		}
		return append(insns, asm.Mov.Imm(asm.R1, 1), asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1).WithSymbol(progName),
		asm.Call.Label(callee), // R1 is still the ctx
		asm.Mov.Reg(asm.R7, asm.R0),

		// The frame as the library program left it.
		asm.LoadMem(asm.R2, asm.R6, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R8, asm.R3),
		asm.Sub.Reg(asm.R8, asm.R2), // length: pointer difference, root only
		asm.Mov.Imm(asm.R9, keyOther),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, labFrameHdrs),
		asm.JGT.Reg(asm.R4, asm.R3, "lab_count"),
		asm.LoadMem(asm.R5, asm.R2, offEthProto, asm.Half),
		asm.JNE.Imm(asm.R5, ethPIPLE, "lab_count"),
		asm.LoadMem(asm.R5, asm.R2, offIPVerIHL, asm.Byte),
		asm.JNE.Imm(asm.R5, ipv4NoOpts, "lab_count"),
		asm.LoadMem(asm.R5, asm.R2, offIPProto, asm.Byte),
		asm.JNE.Imm(asm.R5, ipprotoUDP, "lab_count"),
		asm.LoadMem(asm.R5, asm.R2, offUDPDest, asm.Half),
		asm.JNE.Imm(asm.R5, htonsLE(port), "lab_count"),
		asm.Mov.Imm(asm.R9, keyFlow),

		// Slot of the verdict: 0..4, or slotInvalid.
		asm.Mov.Reg(asm.R1, asm.R7).WithSymbol("lab_count"),
		asm.JLE.Imm(asm.R1, int32(bpf.XDPRedirect), "lab_valid"),
		asm.Mov.Imm(asm.R1, slotInvalid),
	}
	verdict := count(false, "lab_bytes")
	verdict[0] = verdict[0].WithSymbol("lab_valid")
	insns = append(insns, verdict...)
	insns = append(insns, asm.Mov.Imm(asm.R1, slotBytes).WithSymbol("lab_bytes"))
	insns = append(insns, count(true, "lab_out")...)
	insns = append(insns,
		asm.Mov.Reg(asm.R0, asm.R7).WithSymbol("lab_out"),
		asm.Return(),
	)
	return insns
}
