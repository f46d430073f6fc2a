package bpf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// LoadELF reads a BPF ELF object (clang -target bpf output) with cilium/ebpf
// and returns its XDP programs and the maps they reference, ready for
// NewCollection. Everything the interpreter cannot run is refused here,
// with an error naming the program and section and, for instructions, the
// raw instruction offset and the helper or instruction: programs of other
// types (ErrNotXDP), unknown helpers and tail calls
// (ErrUnsupportedHelper), kfuncs, CO-RE relocations and other BTF-only
// loads (ErrUnsupportedInstruction), maps of other types
// (ErrUnsupportedMapType). Malformed objects give ErrInvalidELF; objects
// past the limits below give ErrELFTooLarge as well, before cilium/ebpf
// reads them.
func LoadELF(r io.ReaderAt) (spec *CollectionSpec, err error) {
	defer func() {
		// cilium/ebpf's ELF reader is defensive, but this function promises
		// never to panic on input bytes.
		if p := recover(); p != nil {
			spec, err = nil, fmt.Errorf("%w: reader panicked: %v", ErrInvalidELF, p)
		}
	}()
	b, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	ks, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(b))
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: cut short at %d bytes (%w)", ErrInvalidELF, len(b), io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidELF, err)
	}
	if len(ks.Programs) == 0 {
		return nil, fmt.Errorf("%w: no programs", ErrInvalidELF)
	}
	names := make([]string, 0, len(ks.Programs))
	for n := range ks.Programs {
		names = append(names, n)
	}
	sort.Strings(names)

	spec = &CollectionSpec{Description: "loaded from an ELF object"}
	mapUsers := make(map[string]string) // map name -> first program using it
	for _, n := range names {
		kp := ks.Programs[n]
		where := fmt.Sprintf("program %q (section %q)", kp.Name, kp.SectionName)
		if kp.Type != ebpf.XDP {
			return nil, fmt.Errorf("%s: type %s: %w", where, kp.Type, ErrNotXDP)
		}
		var raw int
		for i := range kp.Instructions {
			ins := &kp.Instructions[i]
			if btf.CORERelocationMetadata(ins) != nil {
				return nil, fmt.Errorf("%s: %w", where, insnError(raw, *ins, fmt.Errorf("CO-RE relocation (needs kernel BTF): %w", ErrUnsupportedInstruction)))
			}
			if ins.IsLoadFromMap() && ins.Reference() != "" {
				if _, ok := mapUsers[ins.Reference()]; !ok {
					mapUsers[ins.Reference()] = kp.Name
				}
			}
			raw += int(ins.Size() / asm.InstructionSize)
		}
		spec.Programs = append(spec.Programs, &ProgramSpec{
			Name:         kp.Name,
			Instructions: kp.Instructions,
			License:      kp.License,
		})
	}

	used := make([]string, 0, len(mapUsers))
	for n := range mapUsers {
		used = append(used, n)
	}
	sort.Strings(used)
	for _, n := range used {
		km, ok := ks.Maps[n]
		if !ok {
			// A reference to something that is not a map (a ksym, a
			// function pointer): prepare reports it at its instruction.
			continue
		}
		ms, err := mapFromELF(km)
		if err != nil {
			return nil, fmt.Errorf("map %q used by program %q: %w", n, mapUsers[n], err)
		}
		spec.Maps = append(spec.Maps, ms)
	}

	// Instructions first, so that a tail call is reported at its call
	// rather than as the program array it uses.
	mt, err := spec.mapTable()
	if err != nil {
		return nil, err
	}
	for _, p := range spec.Programs {
		if _, err := prepare(p.Instructions, mt); err != nil {
			return nil, fmt.Errorf("program %q (section %q): %w", p.Name, ks.Programs[p.Name].SectionName, err)
		}
	}
	for _, ms := range spec.Maps {
		switch ms.Type {
		case Hash, Array, PerCPUArray, DevMap, CPUMap:
		default:
			return nil, fmt.Errorf("map %q used by program %q: %s: %w", ms.Name, mapUsers[ms.Name], ms.Type, ErrUnsupportedMapType)
		}
	}
	return spec, nil
}

// Limits of an object LoadELF reads. An XDP object built by clang is a
// few kilobytes with a few dozen sections, symbols and relocations; the
// limits leave ample room for that and bound what an uploaded object can
// make the ELF reader do (its work and memory grow with each of them).
const (
	MaxELFSize        = 1 << 20 // bytes
	MaxELFSections    = 512
	MaxELFSymbols     = 1 << 14
	MaxELFRelocations = 1 << 14
)

// tableEntry is the size of a 64-bit entry of the tables readBounded counts.
var tableEntry = map[elf.SectionType]uint64{elf.SHT_SYMTAB: elf.Sym64Size, elf.SHT_DYNSYM: elf.Sym64Size, elf.SHT_REL: 16, elf.SHT_RELA: 24}

// readBounded reads the object, at most MaxELFSize bytes, and checks its
// section, symbol and relocation counts from the section headers (the
// symbol and relocation tables' sizes over their entry sizes) before any
// table is read.
func readBounded(r io.ReaderAt) ([]byte, error) {
	b, err := io.ReadAll(io.NewSectionReader(r, 0, MaxELFSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidELF, err)
	}
	if len(b) > MaxELFSize {
		return nil, fmt.Errorf("%w: more than %d bytes: %w", ErrInvalidELF, MaxELFSize, ErrELFTooLarge)
	}
	if !bytes.HasPrefix(b, []byte(elf.ELFMAG)) {
		return nil, fmt.Errorf("%w: %s, where an object starts with \\x7fELF (compile one with clang -O2 -target bpf -c prog.c -o prog.o)", ErrNotELF, describeStart(b))
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%w: cut short at %d bytes (%w)", ErrInvalidELF, len(b), io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidELF, err)
	}
	if len(f.Sections) > MaxELFSections {
		return nil, fmt.Errorf("%w: %d sections, at most %d: %w", ErrInvalidELF, len(f.Sections), MaxELFSections, ErrELFTooLarge)
	}
	var syms, relocs uint64
	for _, s := range f.Sections {
		entry := tableEntry[s.Type] // Elf64_Sym, Elf64_Rel, Elf64_Rela
		if f.Class == elf.ELFCLASS32 {
			entry /= 2 // Elf32_Sym 16, Elf32_Rel 8, Elf32_Rela 12
		}
		if entry == 0 {
			continue
		}
		if n := s.Size / entry; s.Type == elf.SHT_REL || s.Type == elf.SHT_RELA {
			relocs += n
		} else {
			syms += n
		}
	}
	if syms > MaxELFSymbols {
		return nil, fmt.Errorf("%w: %d symbols, at most %d: %w", ErrInvalidELF, syms, MaxELFSymbols, ErrELFTooLarge)
	}
	if relocs > MaxELFRelocations {
		return nil, fmt.Errorf("%w: %d relocations, at most %d: %w", ErrInvalidELF, relocs, MaxELFRelocations, ErrELFTooLarge)
	}
	return b, nil
}

// mapFromELF converts a cilium/ebpf MapSpec. Type is copied even when the
// interpreter lacks it; LoadELF refuses such maps after checking the
// instructions.
func mapFromELF(km *ebpf.MapSpec) (*MapSpec, error) {
	if km.InnerMap != nil {
		return nil, fmt.Errorf("map of maps: %w", ErrUnsupportedMapType)
	}
	ms := &MapSpec{
		Name:       km.Name,
		Type:       MapType(km.Type),
		KeySize:    km.KeySize,
		ValueSize:  km.ValueSize,
		MaxEntries: km.MaxEntries,
		Flags:      km.Flags,
	}
	for i, kv := range km.Contents {
		k, err := kvBytes(kv.Key, km.KeySize)
		if err != nil {
			return nil, fmt.Errorf("contents[%d] key: %w", i, err)
		}
		v, err := kvBytes(kv.Value, km.ValueSize)
		if err != nil {
			return nil, fmt.Errorf("contents[%d] value: %w", i, err)
		}
		ms.Contents = append(ms.Contents, MapKV{Key: k, Value: v})
	}
	return ms, nil
}

// kvBytes turns an ELF map content key or value (cilium/ebpf gives raw
// bytes or fixed-size integers) into size little-endian bytes.
func kvBytes(x any, size uint32) ([]byte, error) {
	var b []byte
	switch v := x.(type) {
	case []byte:
		b = v
	case uint32:
		b = binary.LittleEndian.AppendUint32(nil, v)
	case uint64:
		b = binary.LittleEndian.AppendUint64(nil, v)
	default:
		return nil, fmt.Errorf("%w: content of type %T", ErrInvalidELF, x)
	}
	if uint32(len(b)) != size {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrInvalidELF, len(b), size)
	}
	return append([]byte(nil), b...), nil
}

// describeStart says what bytes that are no ELF object start with: text
// is quoted, anything else shown as hex.
func describeStart(b []byte) string {
	if len(b) == 0 {
		return "it is empty"
	}
	head := b[:min(len(b), 24)]
	for cut := 0; cut < utf8.UTFMax-1 && len(head) > 1 && !utf8.Valid(head); cut++ {
		head = head[:len(head)-1] // a rune cut at the end
	}
	text := utf8.Valid(head)
	for _, r := range string(head) {
		if r != '\n' && r != '\t' && r != '\r' && !unicode.IsPrint(r) {
			text = false
		}
	}
	if text {
		return fmt.Sprintf("it is text, starting %q", head)
	}
	return fmt.Sprintf("it starts with the bytes % x", b[:min(len(b), 8)])
}
