package bpf

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf/asm"
)

// Limits enforced at preparation, as the kernel's verifier has them.
const (
	// MaxInsns is the largest program in raw 8-byte instructions
	// (BPF_COMPLEXITY_LIMIT_INSNS).
	MaxInsns = 1_000_000
	// MaxUsedMaps is how many maps one program may reference (MAX_USED_MAPS).
	MaxUsedMaps = 64
	// MaxCallFrames is the bpf-to-bpf call depth limit (MAX_CALL_FRAMES).
	MaxCallFrames = 8
)

// mapTable is what preparation needs to know about the maps a program may
// reference: their specs, by name (asm references) and by fd (raw
// instructions without a reference, as the fuzz target and hand-written
// tests use: the fd is an index into byFD).
type mapTable struct {
	byName map[string]int
	byFD   []int
	specs  []*MapSpec
}

// compiled is a prepared program, before it is bound to live maps.
type compiled struct {
	code []insn
	raw  []int32           // raw instruction offset of each pc
	orig []asm.Instruction // the source instruction of each pc
	maps []int             // used maps: program map index -> mapTable index
}

// prepare checks insns and translates them to the internal form. Errors name
// the raw instruction offset and the instruction. This stands for the parts
// of the kernel verifier (kernel/bpf/verifier.c: resolve_pseudo_ldimm64,
// check_subprogs, check_cfg) that do not need abstract interpretation:
// everything else is checked at run time.
func prepare(insns asm.Instructions, mt *mapTable) (*compiled, error) {
	if len(insns) == 0 {
		return nil, fmt.Errorf("empty program: %w", ErrNoExit)
	}
	// Raw offsets and symbols (labels).
	rawOff := make([]int32, len(insns))
	symbols := make(map[string]int)
	var total int
	for i := range insns {
		if total >= MaxInsns {
			return nil, fmt.Errorf("%d+ instructions, limit %d: %w", total, MaxInsns, ErrProgramTooLarge)
		}
		rawOff[i] = int32(total)
		if sym := insns[i].Symbol(); sym != "" {
			if _, dup := symbols[sym]; dup {
				return nil, insnError(total, insns[i], fmt.Errorf("duplicate symbol %q: %w", sym, ErrInvalidInstruction))
			}
			symbols[sym] = total
		}
		total += b2i(insns[i].OpCode.IsDWordLoad()) + 1
	}
	pcOf := make([]int32, total) // raw offset -> pc, -1 inside an lddw
	for i := range pcOf {
		pcOf[i] = -1
	}
	for i, r := range rawOff {
		pcOf[r] = int32(i)
	}

	c := &compiled{
		code: make([]insn, len(insns)),
		raw:  rawOff,
		orig: insns,
	}
	used := make(map[int]int) // mapTable index -> program map index
	// target resolves a raw jump target to a pc.
	target := func(i int, raw int64) (int32, error) {
		if raw < 0 || raw >= int64(total) || pcOf[raw] < 0 {
			return 0, insnError(int(rawOff[i]), insns[i], fmt.Errorf("target %d: %w", raw, ErrJumpOutOfRange))
		}
		return pcOf[raw], nil
	}
	for i := range insns {
		in, err := translate(&insns[i], int(rawOff[i]), symbols, mt, used)
		if err != nil {
			return nil, insnError(int(rawOff[i]), insns[i], err)
		}
		if in.op == opJa || in.op == opCallLocal || (in.op >= opJEq64K && in.op <= opJSLE32X) {
			in.tgt, err = target(i, int64(in.tgt))
			if err != nil {
				return nil, err
			}
		}
		c.code[i] = in
	}
	if len(used) > MaxUsedMaps {
		return nil, fmt.Errorf("%d maps used, limit %d: %w", len(used), MaxUsedMaps, ErrProgramTooLarge)
	}
	c.maps = make([]int, len(used))
	for ti, pi := range used {
		c.maps[pi] = ti
	}
	if err := c.checkCFG(); err != nil {
		return nil, err
	}
	return c, nil
}

// translate checks one instruction and returns its internal form. Jump and
// call targets are returned as raw offsets in tgt; prepare turns them into
// pcs. used collects referenced maps.
func translate(ins *asm.Instruction, raw int, symbols map[string]int, mt *mapTable, used map[int]int) (insn, error) {
	opc := ins.OpCode
	dst, src := uint8(ins.Dst), uint8(ins.Src)
	in := insn{dst: dst, src: src}
	if dst > 10 || src > 10 {
		return in, fmt.Errorf("r%d/r%d: %w", dst, src, ErrInvalidRegister)
	}
	if opc == asm.InvalidOpCode || opc > 0x1ffff {
		return in, ErrInvalidInstruction
	}
	// writable checks that dst is not the read-only frame pointer.
	writable := func() error {
		if dst == 10 {
			return fmt.Errorf("frame pointer is read only: %w", ErrInvalidRegister)
		}
		return nil
	}
	switch cls := opc.Class(); cls {
	case asm.LdClass:
		if opc != asm.LoadImmOp(asm.DWord) {
			if m := opc.Mode(); m == asm.AbsMode || m == asm.IndMode {
				return in, fmt.Errorf("legacy packet load (socket filters only): %w", ErrUnsupportedInstruction)
			}
			return in, ErrInvalidInstruction
		}
		if err := writable(); err != nil {
			return in, err
		}
		return translateLdImm64(ins, in, mt, used)

	case asm.LdXClass:
		if err := writable(); err != nil {
			return in, err
		}
		in.imm = uint64(int64(ins.Offset))
		switch opc.Mode() {
		case asm.MemMode:
			switch opc.Size() {
			case asm.Byte:
				in.op = opLdxB
			case asm.Half:
				in.op = opLdxH
			case asm.Word:
				in.op = opLdxW
			case asm.DWord:
				in.op = opLdxDW
			}
		case asm.MemSXMode:
			switch opc.Size() {
			case asm.Byte:
				in.op = opLdxSB
			case asm.Half:
				in.op = opLdxSH
			case asm.Word:
				in.op = opLdxSW
			}
		}
		if in.op == opInvalid {
			return in, ErrInvalidInstruction
		}
		return in, nil

	case asm.StClass:
		if opc.Mode() != asm.MemMode {
			return in, ErrInvalidInstruction
		}
		in.tgt = int32(ins.Offset)
		in.imm = uint64(int64(int32(ins.Constant)))
		switch opc.Size() {
		case asm.Byte:
			in.op = opStB
		case asm.Half:
			in.op = opStH
		case asm.Word:
			in.op = opStW
		case asm.DWord:
			in.op = opStDW
		}
		return in, nil

	case asm.StXClass:
		in.imm = uint64(int64(ins.Offset))
		switch opc.Mode() {
		case asm.MemMode:
			switch opc.Size() {
			case asm.Byte:
				in.op = opStxB
			case asm.Half:
				in.op = opStxH
			case asm.Word:
				in.op = opStxW
			case asm.DWord:
				in.op = opStxDW
			}
			return in, nil
		case asm.AtomicMode:
			sub, ok := atomicOps[opc.AtomicOp()]
			if !ok {
				return in, fmt.Errorf("atomic %v: %w", opc.AtomicOp(), ErrUnsupportedInstruction)
			}
			in.tgt = sub
			switch opc.Size() {
			case asm.Word:
				in.op = opAtomicW
			case asm.DWord:
				in.op = opAtomicDW
			default:
				return in, ErrInvalidInstruction
			}
			return in, nil
		}
		return in, ErrInvalidInstruction

	case asm.ALUClass, asm.ALU64Class:
		if err := writable(); err != nil {
			return in, err
		}
		return translateALU(ins, in, cls == asm.ALU64Class)

	case asm.JumpClass, asm.Jump32Class:
		return translateJump(ins, in, raw, symbols, cls == asm.Jump32Class)
	}
	return in, ErrInvalidInstruction
}

func translateLdImm64(ins *asm.Instruction, in insn, mt *mapTable, used map[int]int) (insn, error) {
	switch ins.Src {
	case 0:
		in.op = opLdImm64
		in.imm = uint64(ins.Constant)
		return in, nil
	case asm.PseudoMapFD, asm.PseudoMapValue:
	default:
		return in, fmt.Errorf("64-bit immediate kind %d (BTF or map-index pseudo load): %w", ins.Src, ErrUnsupportedInstruction)
	}
	ti := -1
	if name := ins.Reference(); name != "" {
		if mt != nil {
			if i, ok := mt.byName[name]; ok {
				ti = i
			}
		}
		if ti < 0 {
			return in, fmt.Errorf("map %q: %w", name, ErrUnresolvedMap)
		}
	} else {
		fd := int32(uint32(ins.Constant))
		if mt == nil || fd < 0 || int(fd) >= len(mt.byFD) {
			return in, fmt.Errorf("map fd %d: %w", fd, ErrUnresolvedMap)
		}
		ti = mt.byFD[fd]
	}
	pi, ok := used[ti]
	if !ok {
		pi = len(used)
		used[ti] = pi
	}
	in.tgt = int32(pi)
	if ins.Src == asm.PseudoMapFD {
		in.op = opLdMapPtr
		return in, nil
	}
	// BPF_PSEUDO_MAP_VALUE: array_map_direct_value_addr allows only arrays
	// of one element, offset inside the value.
	spec := mt.specs[ti]
	off := uint64(ins.Constant) >> 32
	if spec.Type != Array || spec.MaxEntries != 1 {
		return in, fmt.Errorf("direct value access to %s map %q (only single-element arrays): %w", spec.Type, spec.Name, ErrUnsupportedInstruction)
	}
	if off >= uint64(spec.ValueSize) {
		return in, fmt.Errorf("direct value offset %d beyond value size %d of map %q: %w", off, spec.ValueSize, spec.Name, ErrInvalidInstruction)
	}
	in.op = opLdMapValue
	in.imm = off
	return in, nil
}

func translateALU(ins *asm.Instruction, in insn, is64 bool) (insn, error) {
	opc := ins.OpCode
	aop := opc.ALUOp()
	if ins.Offset != 0 {
		// asm.Instruction.Unmarshal folds the offset-encoded signed ops
		// (sdiv, smod, movsx) into their own ALUOp; any other offset is a
		// reserved field in use.
		return in, fmt.Errorf("reserved offset field %d: %w", ins.Offset, ErrInvalidInstruction)
	}
	if aop == asm.Swap {
		var base op
		switch {
		case !is64 && opc.Endianness() == asm.LE:
			base = opLE16
		case !is64 && opc.Endianness() == asm.BE:
			base = opBE16
		case is64 && opc.Endianness() == asm.LE: // BPF_ALU64 | BPF_END: bswap
			base = opBE16
		default:
			return in, ErrInvalidInstruction
		}
		switch ins.Constant {
		case 16:
			in.op = base
		case 32:
			in.op = base + 1
		case 64:
			in.op = base + 2
		default:
			return in, fmt.Errorf("byte swap width %d: %w", ins.Constant, ErrInvalidInstruction)
		}
		return in, nil
	}
	isImm := opc.Source() == asm.ImmSource
	imm := int64(int32(ins.Constant))
	if !isImm && ins.Constant != 0 {
		return in, fmt.Errorf("reserved immediate %d in register form: %w", ins.Constant, ErrInvalidInstruction)
	}
	if isImm && ins.Src != 0 && aop != asm.Neg {
		return in, fmt.Errorf("reserved source register r%d in immediate form: %w", ins.Src, ErrInvalidInstruction)
	}
	in.imm = uint64(imm)
	switch aop {
	case asm.Neg:
		if !isImm || ins.Src != 0 || ins.Constant != 0 {
			return in, ErrInvalidInstruction
		}
		in.op = opNeg32
		if is64 {
			in.op = opNeg64
		}
		return in, nil
	case asm.MovSX8, asm.MovSX16, asm.MovSX32:
		if isImm {
			return in, ErrInvalidInstruction
		}
		switch {
		case aop == asm.MovSX8 && is64:
			in.op = opMovSX8x64
		case aop == asm.MovSX16 && is64:
			in.op = opMovSX16x64
		case aop == asm.MovSX32 && is64:
			in.op = opMovSX32x64
		case aop == asm.MovSX8:
			in.op = opMovSX8x32
		case aop == asm.MovSX16:
			in.op = opMovSX16x32
		default:
			return in, ErrInvalidInstruction
		}
		return in, nil
	}
	pair, ok := aluOps[aop]
	if !ok {
		return in, ErrInvalidInstruction
	}
	if isImm {
		in.op = pair[1]
		switch aop {
		case asm.Div, asm.SDiv, asm.Mod, asm.SMod:
			if imm == 0 {
				return in, fmt.Errorf("division by zero: %w", ErrInvalidInstruction)
			}
		case asm.LSh, asm.RSh, asm.ArSh:
			if width := int64(32 + 32*b2i(is64)); imm < 0 || imm >= width {
				return in, fmt.Errorf("invalid shift %d: %w", imm, ErrInvalidInstruction)
			}
		}
	} else {
		in.op = pair[0]
	}
	if !is64 {
		in.op += alu32Delta
	}
	return in, nil
}

func translateJump(ins *asm.Instruction, in insn, raw int, symbols map[string]int, is32 bool) (insn, error) {
	opc := ins.OpCode
	jop := opc.JumpOp()
	// rel resolves a relative target, or the label when asm left it
	// symbolic (cilium/ebpf's encodeFunctionReferences rules).
	rel := func(delta int64, symbolic bool) (int32, error) {
		if symbolic && ins.Reference() != "" {
			sym, ok := symbols[ins.Reference()]
			if !ok {
				return 0, fmt.Errorf("label %q: %w", ins.Reference(), ErrUnresolvedReference)
			}
			return int32(sym), nil
		}
		t := int64(raw) + 1 + delta
		if t < 0 || t > MaxInsns {
			return 0, fmt.Errorf("target %d: %w", t, ErrJumpOutOfRange)
		}
		return int32(t), nil
	}
	var err error
	switch jop {
	case asm.Ja:
		in.op = opJa
		if is32 { // gotol: 32-bit offset in imm
			in.tgt, err = rel(ins.Constant, ins.Constant == -1)
		} else {
			in.tgt, err = rel(int64(ins.Offset), ins.Offset == -1)
		}
		return in, err
	case asm.Exit:
		if is32 || ins.Src != 0 || ins.Dst != 0 || ins.Constant != 0 || ins.Offset != 0 {
			return in, ErrInvalidInstruction
		}
		in.op = opExit
		return in, nil
	case asm.Call:
		if is32 || ins.Dst != 0 || ins.Offset != 0 {
			return in, ErrInvalidInstruction
		}
		switch ins.Src {
		case 0:
			fn := asm.BuiltinFunc(ins.Constant)
			if ins.Constant < 0 || ins.Constant > 0xffffffff || !helperSupported(fn) {
				return in, fmt.Errorf("helper %v (%d): %w", fn, ins.Constant, ErrUnsupportedHelper)
			}
			in.op = opCall
			in.imm = uint64(ins.Constant)
			return in, nil
		case asm.PseudoCall:
			in.op = opCallLocal
			in.tgt, err = rel(ins.Constant, ins.Constant == -1)
			return in, err
		case asm.PseudoKfuncCall:
			return in, fmt.Errorf("kfunc call %d (needs kernel BTF): %w", ins.Constant, ErrUnsupportedInstruction)
		}
		return in, ErrInvalidInstruction
	case asm.JCOND:
		return in, fmt.Errorf("may_goto: %w", ErrUnsupportedInstruction)
	}
	x, ok := jumpOps[jop]
	if !ok {
		return in, ErrInvalidInstruction
	}
	if opc.Source() == asm.ImmSource {
		if ins.Src != 0 {
			return in, fmt.Errorf("reserved source register r%d in immediate form: %w", ins.Src, ErrInvalidInstruction)
		}
		in.op = x - 1
		in.imm = uint64(int64(int32(ins.Constant)))
	} else {
		in.op = x
	}
	if is32 {
		in.op += jmp32Delta
	}
	in.tgt, err = rel(int64(ins.Offset), ins.Offset == -1)
	return in, err
}

// checkCFG enforces the kernel's check_subprogs and check_cfg rules that
// keep the interpreter from running off the end: every subprogram (the main
// one and each bpf-to-bpf callee) ends with exit or an unconditional jump,
// no jump leaves its subprogram, every instruction is reachable and every
// subprogram can reach an exit.
func (c *compiled) checkCFG() error {
	n := len(c.code)
	starts := []int{0}
	isStart := make([]bool, n)
	isStart[0] = true
	for _, in := range c.code {
		if in.op == opCallLocal && !isStart[in.tgt] {
			isStart[in.tgt] = true
			starts = append(starts, int(in.tgt))
		}
	}
	sort.Ints(starts)
	sub := make([]int, n) // subprogram index of each pc
	for s, start := range starts {
		end := n
		if s+1 < len(starts) {
			end = starts[s+1]
		}
		for pc := start; pc < end; pc++ {
			sub[pc] = s
		}
		if last := c.code[end-1].op; last != opExit && last != opJa {
			return insnError(int(c.raw[end-1]), c.orig[end-1], ErrNoExit)
		}
	}
	for pc, in := range c.code {
		if isJump(in.op) && sub[in.tgt] != sub[pc] {
			return insnError(int(c.raw[pc]), c.orig[pc], fmt.Errorf("jump to insn %d leaves its subprogram: %w", c.raw[in.tgt], ErrJumpOutOfRange))
		}
	}
	// Reachability from the entry of each subprogram that is called (or
	// the main one).
	seen := make([]bool, n)
	hasExit := make([]bool, len(starts))
	work := []int{0}
	seen[0] = true
	push := func(pc int) {
		if !seen[pc] {
			seen[pc] = true
			work = append(work, pc)
		}
	}
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		in := c.code[pc]
		switch {
		case in.op == opExit:
			hasExit[sub[pc]] = true
		case in.op == opJa:
			push(int(in.tgt))
		case isJump(in.op):
			push(int(in.tgt))
			push(pc + 1)
		case in.op == opCallLocal:
			push(int(in.tgt))
			push(pc + 1)
		default:
			push(pc + 1)
		}
	}
	for pc := range c.code {
		if !seen[pc] {
			return insnError(int(c.raw[pc]), c.orig[pc], ErrUnreachable)
		}
	}
	for s, ok := range hasExit {
		if !ok {
			return insnError(int(c.raw[starts[s]]), c.orig[starts[s]], fmt.Errorf("subprogram has no reachable exit: %w", ErrNoExit))
		}
	}
	return nil
}

// isJump reports whether o is a jump within the subprogram.
func isJump(o op) bool {
	return o == opJa || (o >= opJEq64K && o <= opJSLE32X)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
