package bpf

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"

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
// (ErrUnsupportedMapType). Malformed objects give ErrInvalidELF.
func LoadELF(r io.ReaderAt) (spec *CollectionSpec, err error) {
	defer func() {
		// cilium/ebpf's ELF reader is defensive, but this function promises
		// never to panic on input bytes.
		if p := recover(); p != nil {
			spec, err = nil, fmt.Errorf("%w: reader panicked: %v", ErrInvalidELF, p)
		}
	}()
	ks, err := ebpf.LoadCollectionSpecFromReader(r)
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
