package bpf

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf/asm"
)

// ProgramSpec is an XDP program as instructions. Map loads refer to maps by
// name (asm's WithReference), as cilium/ebpf's do; a map load without a
// reference is resolved by fd, an index into the maps given to NewProgram.
type ProgramSpec struct {
	Name         string
	Instructions asm.Instructions
	// License is handed to the kernel when the program is loaded for real.
	License string
}

// Copy returns a copy of s with its own instruction slice.
func (s *ProgramSpec) Copy() *ProgramSpec {
	c := *s
	c.Instructions = append(asm.Instructions(nil), s.Instructions...)
	return &c
}

// CollectionSpec is a set of programs and the maps they share: one
// library program (progs.go) or the XDP part of an ELF object (elf.go).
// Maps and Programs are ordered, so listing them is deterministic.
type CollectionSpec struct {
	Name        string
	Description string
	Maps        []*MapSpec
	Programs    []*ProgramSpec
}

// Copy returns a deep copy of s.
func (s *CollectionSpec) Copy() *CollectionSpec {
	c := &CollectionSpec{Name: s.Name, Description: s.Description}
	for _, m := range s.Maps {
		c.Maps = append(c.Maps, m.Copy())
	}
	for _, p := range s.Programs {
		c.Programs = append(c.Programs, p.Copy())
	}
	return c
}

// MapSpec returns the map spec called name, or nil.
func (s *CollectionSpec) MapSpec(name string) *MapSpec {
	for _, m := range s.Maps {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Check prepares every program against the map specs without building
// anything: the errors NewCollection would give for the instructions.
func (s *CollectionSpec) Check() error {
	mt, err := s.mapTable()
	if err != nil {
		return err
	}
	for _, p := range s.Programs {
		if _, err := prepare(p.Instructions, mt); err != nil {
			return fmt.Errorf("program %q: %w", p.Name, err)
		}
	}
	return nil
}

func (s *CollectionSpec) mapTable() (*mapTable, error) {
	mt := &mapTable{byName: make(map[string]int)}
	for i, m := range s.Maps {
		if _, dup := mt.byName[m.Name]; dup {
			return nil, fmt.Errorf("map %q defined twice: %w", m.Name, ErrInvalidMapSpec)
		}
		mt.byName[m.Name] = i
		mt.byFD = append(mt.byFD, i)
		mt.specs = append(mt.specs, m)
	}
	return mt, nil
}

// Options configure live objects.
type Options struct {
	// NumCPU is the number of simulated CPUs (per-CPU map values, valid
	// cpumap keys); 0 means 1.
	NumCPU int
	// Budget is the instruction budget per run; 0 means DefaultBudget.
	Budget int
}

func (o Options) withDefaults() (Options, error) {
	if o.NumCPU == 0 {
		o.NumCPU = 1
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.NumCPU < 0 || o.Budget < 0 {
		return o, fmt.Errorf("NumCPU %d, Budget %d: %w", o.NumCPU, o.Budget, ErrInvalidOptions)
	}
	return o, nil
}

// NewProgram prepares spec and binds it to maps: a map load refers to a map
// by name, or without a name by its index in maps. Errors name the
// instruction offset and mnemonic.
func NewProgram(spec *ProgramSpec, maps []*Map, opts Options) (*Program, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	mt := &mapTable{byName: make(map[string]int)}
	for i, m := range maps {
		if m == nil {
			return nil, fmt.Errorf("program %q: map %d is nil: %w", spec.Name, i, ErrInvalidOptions)
		}
		if _, dup := mt.byName[m.Name()]; !dup && m.Name() != "" {
			mt.byName[m.Name()] = i
		}
		mt.byFD = append(mt.byFD, i)
		mt.specs = append(mt.specs, &m.spec)
	}
	c, err := prepare(spec.Instructions, mt)
	if err != nil {
		return nil, fmt.Errorf("program %q: %w", spec.Name, err)
	}
	p := &Program{
		name:   spec.Name,
		code:   c.code,
		raw:    c.raw,
		orig:   c.orig,
		budget: opts.Budget,
	}
	for _, ti := range c.maps {
		p.maps = append(p.maps, maps[ti])
	}
	p.m.maps = p.maps
	p.m.stackLo = stackSize - frameSize
	p.m.dirty = 0 // clear the stack before the first run
	p.constRet, p.constR0 = constantReturn(p.code)
	p.readsPkt = !p.constRet && readsCtx(p.code)
	p.callRet, p.callRegs = constantCall(p.code)
	return p, nil
}

// constantCall reports whether code is constant writes to registers, a
// call of bpf_redirect_map and exit (xdp_redirect_cpu with a fixed CPU is
// such a program), and the registers the call sees: such a run is the
// helper's answer, so Run calls it without interpreting.
func constantCall(code []insn) (bool, [16]uint64) {
	var regs [16]uint64
	n := len(code)
	if n < 2 || code[n-1].op != opExit || code[n-2].op != opCall || int32(code[n-2].imm) != helperRedirectMap {
		return false, regs
	}
	regs[1] = ptr(regCtx, 0)
	regs[10] = ptr(regStack, stackSize)
	for _, in := range code[:n-2] {
		d := in.dst & 15
		if d >= 10 {
			return false, regs
		}
		switch in.op {
		case opMov64K, opLdImm64:
			regs[d] = in.imm
		case opMov32K:
			regs[d] = uint64(uint32(in.imm))
		case opLdMapPtr:
			regs[d] = ptr(regMapPtr+int(in.tgt), 0)
		case opLdMapValue:
			regs[d] = ptr(regMapValue+int(in.tgt), in.imm)
		default:
			return false, regs
		}
	}
	return true, regs
}

// readsCtx reports whether code may read its context (struct xdp_md, and
// through it the packet). It is false when the straight line at the start
// overwrites R1, the only register holding the context on entry, with a
// constant before any instruction reads a register, jumps, calls or exits:
// nothing can reach the context after that (xdp_redirect_cpu with a fixed
// CPU is such a program). Anything else counts as a read.
func readsCtx(code []insn) bool {
	for _, in := range code {
		switch in.op {
		case opMov64K, opMov32K, opLdImm64, opLdMapPtr, opLdMapValue:
			if in.dst == 1 {
				return false
			}
		default:
			return true
		}
	}
	return true
}

// constantReturn reports whether code is "r0 = imm; exit" (XDP_PASS,
// XDP_DROP and their like), and the r0 it returns: such a run's result
// depends only on its input offsets, so Run writes it without
// interpreting.
func constantReturn(code []insn) (bool, uint64) {
	if len(code) != 2 || code[0].dst != 0 || code[1].op != opExit {
		return false, 0
	}
	switch code[0].op {
	case opMov64K:
		return true, code[0].imm
	case opMov32K:
		return true, uint64(uint32(code[0].imm))
	}
	return false, 0
}

// Collection is the live form of a CollectionSpec.
type Collection struct {
	Maps     map[string]*Map
	Programs map[string]*Program
	spec     *CollectionSpec
}

// NewCollection creates every map of spec (with its Contents) and prepares
// every program against them.
func NewCollection(spec *CollectionSpec, opts Options) (*Collection, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := spec.mapTable(); err != nil {
		return nil, err
	}
	c := &Collection{
		Maps:     make(map[string]*Map),
		Programs: make(map[string]*Program),
		spec:     spec.Copy(),
	}
	var maps []*Map
	for _, ms := range spec.Maps {
		m, err := NewMap(ms, opts.NumCPU)
		if err != nil {
			return nil, err
		}
		c.Maps[ms.Name] = m
		maps = append(maps, m)
	}
	for _, ps := range spec.Programs {
		if _, dup := c.Programs[ps.Name]; dup {
			return nil, fmt.Errorf("program %q defined twice: %w", ps.Name, ErrInvalidOptions)
		}
		p, err := NewProgram(ps, maps, opts)
		if err != nil {
			return nil, err
		}
		c.Programs[ps.Name] = p
	}
	return c, nil
}

// Spec returns a copy of the spec the collection was built from.
func (c *Collection) Spec() *CollectionSpec { return c.spec.Copy() }

// Program returns the named program, or the only one when name is "".
func (c *Collection) Program(name string) *Program {
	if name == "" && len(c.spec.Programs) == 1 {
		name = c.spec.Programs[0].Name
	}
	return c.Programs[name]
}

// ProgramNames returns the program names in sorted order.
func (c *Collection) ProgramNames() []string {
	names := make([]string, 0, len(c.Programs))
	for n := range c.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
