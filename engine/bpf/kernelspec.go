package bpf

import (
	"github.com/cilium/ebpf"
)

// KernelSpec converts s into a cilium/ebpf CollectionSpec of XDP programs,
// ready for ebpf.NewCollection: the same instructions and maps, loaded into
// the real kernel. It only builds data, so it compiles everywhere; loading
// needs Linux and privileges.
func (s *CollectionSpec) KernelSpec() *ebpf.CollectionSpec {
	ks := &ebpf.CollectionSpec{
		Maps:     make(map[string]*ebpf.MapSpec),
		Programs: make(map[string]*ebpf.ProgramSpec),
	}
	for _, m := range s.Maps {
		km := &ebpf.MapSpec{
			Name:       m.Name,
			Type:       ebpf.MapType(m.Type),
			KeySize:    m.KeySize,
			ValueSize:  m.ValueSize,
			MaxEntries: m.MaxEntries,
			Flags:      m.Flags,
		}
		for _, kv := range m.Contents {
			km.Contents = append(km.Contents, ebpf.MapKV{Key: kv.Key, Value: kv.Value})
		}
		ks.Maps[m.Name] = km
	}
	for _, p := range s.Programs {
		license := p.License
		if license == "" {
			license = libraryLicense
		}
		ks.Programs[p.Name] = &ebpf.ProgramSpec{
			Name:         p.Name,
			Type:         ebpf.XDP,
			Instructions: append(p.Instructions[:0:0], p.Instructions...),
			License:      license,
		}
	}
	return ks
}
