package bpf

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// MapType is enum bpf_map_type; only the types below are implemented.
type MapType uint32

// Implemented map types, with their kernel numbers.
const (
	Hash        MapType = 1  // BPF_MAP_TYPE_HASH (kernel/bpf/hashtab.c)
	Array       MapType = 2  // BPF_MAP_TYPE_ARRAY (kernel/bpf/arraymap.c)
	PerCPUArray MapType = 6  // BPF_MAP_TYPE_PERCPU_ARRAY
	DevMap      MapType = 14 // BPF_MAP_TYPE_DEVMAP (kernel/bpf/devmap.c)
	CPUMap      MapType = 16 // BPF_MAP_TYPE_CPUMAP (kernel/bpf/cpumap.c)
)

func (t MapType) String() string {
	switch t {
	case Hash:
		return "hash"
	case Array:
		return "array"
	case PerCPUArray:
		return "percpu_array"
	case DevMap:
		return "devmap"
	case CPUMap:
		return "cpumap"
	}
	return fmt.Sprintf("MapType(%d)", uint32(t))
}

// Map flags (BPF_F_*) the interpreter honours; others are accepted and
// ignored.
const (
	// FlagRdonlyProg (BPF_F_RDONLY_PROG): programs may not write values;
	// clang's .rodata maps carry it.
	FlagRdonlyProg = 1 << 7
)

// UpdateFlags are the BPF_ANY / BPF_NOEXIST / BPF_EXIST update modes.
type UpdateFlags uint64

// Update modes.
const (
	UpdateAny     UpdateFlags = 0 // BPF_ANY: create or replace
	UpdateNoExist UpdateFlags = 1 // BPF_NOEXIST: create only
	UpdateExist   UpdateFlags = 2 // BPF_EXIST: replace only
)

// Limits on map geometry.
const (
	// MaxMapBytes bounds a map's value memory (padded values times slots),
	// so that a tagged pointer's 32-bit offset always reaches it.
	MaxMapBytes = 1 << 28
	// MaxKeySize is MAX_BPF_STACK: keys are built on the stack.
	MaxKeySize = 512
	// MaxCPUMapEntries is NR_CPUS of distribution kernels; cpu_map_alloc
	// refuses more entries.
	MaxCPUMapEntries = 8192
	// MaxCPUMapQSize is cpu_map_update_elem's sanity limit on qsize.
	MaxCPUMapQSize = 16384
)

// MapSpec describes a map (cilium/ebpf's MapSpec, reduced). It is plain
// data; NewMap builds the live Map.
type MapSpec struct {
	Name       string
	Type       MapType
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	Flags      uint32
	// Contents are written with UpdateAny when the map is created. For a
	// per-CPU map a value of ValueSize bytes goes to every CPU.
	Contents []MapKV
}

// MapKV is one initial entry of a MapSpec.
type MapKV struct {
	Key, Value []byte
}

// Copy returns a deep copy of s.
func (s *MapSpec) Copy() *MapSpec {
	c := *s
	c.Contents = nil
	for _, kv := range s.Contents {
		c.Contents = append(c.Contents, MapKV{append([]byte(nil), kv.Key...), append([]byte(nil), kv.Value...)})
	}
	return &c
}

func (s *MapSpec) String() string {
	return fmt.Sprintf("%s %q(key=%d, value=%d, max_entries=%d, flags=%#x)", s.Type, s.Name, s.KeySize, s.ValueSize, s.MaxEntries, s.Flags)
}

// Map is a live map. Values live in one byte slab, each padded to a
// power-of-two stride so that a value pointer's offset also locates its
// element. A Map is not safe for concurrent use; the simulation runs
// programs and touches maps from one goroutine.
type Map struct {
	spec       MapSpec
	numCPU     int
	values     []byte
	strideLog  uint
	strideMask uint64 // stride-1

	progReadOnly bool

	htab *htab // Hash

	// DevMap / CPUMap: which slots hold an entry, and the program attached
	// to each (bpf_devmap_val.bpf_prog / bpf_cpumap_val.bpf_prog).
	present []bool
	progs   []*Program
}

// NewMap creates a map from spec. numCPU is the number of simulated CPUs:
// per-CPU maps keep one value per CPU and a cpumap accepts only keys below
// it. The checks follow each type's map_alloc_check.
func NewMap(spec *MapSpec, numCPU int) (*Map, error) {
	if numCPU < 1 {
		return nil, fmt.Errorf("map %q: %d CPUs: %w", spec.Name, numCPU, ErrInvalidOptions)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("map %q (%s): "+format+": %w", append(append([]any{spec.Name, spec.Type}, args...), ErrInvalidMapSpec)...)
	}
	if spec.MaxEntries == 0 || spec.KeySize == 0 || spec.ValueSize == 0 {
		return nil, bad("zero max_entries, key_size or value_size")
	}
	slots := uint64(spec.MaxEntries)
	switch spec.Type {
	case Array, PerCPUArray:
		if spec.KeySize != 4 {
			return nil, bad("key_size %d, want 4", spec.KeySize)
		}
		if spec.Type == PerCPUArray {
			slots *= uint64(numCPU)
		}
	case Hash:
		if spec.KeySize > MaxKeySize {
			return nil, bad("key_size %d above %d", spec.KeySize, MaxKeySize)
		}
	case DevMap, CPUMap:
		if spec.KeySize != 4 || (spec.ValueSize != 4 && spec.ValueSize != 8) {
			return nil, bad("key_size %d value_size %d, want 4 and 4 or 8", spec.KeySize, spec.ValueSize)
		}
		if spec.Type == CPUMap && spec.MaxEntries > MaxCPUMapEntries {
			return nil, bad("max_entries %d above NR_CPUS %d", spec.MaxEntries, MaxCPUMapEntries)
		}
	default:
		return nil, fmt.Errorf("map %q: %s: %w", spec.Name, spec.Type, ErrUnsupportedMapType)
	}
	strideLog := uint(bits.Len32(spec.ValueSize - 1))
	if slots<<strideLog > MaxMapBytes || uint64(spec.MaxEntries)*uint64(spec.KeySize) > MaxMapBytes {
		return nil, bad("%d slots of %d bytes exceed %d bytes", slots, uint64(1)<<strideLog, MaxMapBytes)
	}
	m := &Map{
		spec:         *spec.Copy(),
		numCPU:       numCPU,
		values:       make([]byte, slots<<strideLog),
		strideLog:    strideLog,
		strideMask:   uint64(1)<<strideLog - 1,
		progReadOnly: spec.Flags&FlagRdonlyProg != 0 || spec.Type == DevMap || spec.Type == CPUMap,
	}
	m.spec.Contents = nil
	switch spec.Type {
	case Hash:
		m.htab = newHtab(spec.MaxEntries, spec.KeySize)
	case DevMap, CPUMap:
		m.present = make([]bool, spec.MaxEntries)
		m.progs = make([]*Program, spec.MaxEntries)
	}
	for i, kv := range spec.Contents {
		if err := m.Update(kv.Key, kv.Value, UpdateAny); err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
	}
	return m, nil
}

// Spec returns a copy of the spec the map was built from, without Contents.
func (m *Map) Spec() *MapSpec { return m.spec.Copy() }

// Name returns the map's name.
func (m *Map) Name() string { return m.spec.Name }

// Type returns the map's type.
func (m *Map) Type() MapType { return m.spec.Type }

// NumCPU returns the number of simulated CPUs the map was built for.
func (m *Map) NumCPU() int { return m.numCPU }

func (m *Map) String() string { return m.spec.String() }

func (m *Map) perCPU() bool { return m.spec.Type == PerCPUArray }

// slotOff is the byte offset of a slot's value in m.values.
func (m *Map) slotOff(slot uint64) uint64 { return slot << m.strideLog }

// index decodes an array-like u32 key.
func index(key []byte) uint32 { return binary.LittleEndian.Uint32(key) }

// lookup returns the offset of key's value for cpu, or -1: the map's
// map_lookup_elem (array_map_lookup_elem, percpu_array_map_lookup_elem,
// htab_map_lookup_elem, __dev_map_lookup_elem, __cpu_map_lookup_elem).
// key has KeySize bytes.
func (m *Map) lookup(key []byte, cpu int) int64 {
	switch m.spec.Type {
	case Array:
		if i := index(key); i < m.spec.MaxEntries {
			return int64(m.slotOff(uint64(i)))
		}
	case PerCPUArray:
		if i := index(key); i < m.spec.MaxEntries {
			return int64(m.slotOff(uint64(cpu)*uint64(m.spec.MaxEntries) + uint64(i)))
		}
	case Hash:
		if s := m.htab.find(key); s >= 0 {
			return int64(m.slotOff(uint64(s)))
		}
	case DevMap, CPUMap:
		if i := index(key); i < m.spec.MaxEntries && m.present[i] {
			return int64(m.slotOff(uint64(i)))
		}
	}
	return -1
}

// update is map_update_elem for one value (for per-CPU maps, the value of
// cpu, or of every CPU when cpu < 0). It returns the sentinels unwrapped.
func (m *Map) update(key, value []byte, flags UpdateFlags, cpu int) error {
	if flags > UpdateExist {
		return ErrMapFlags
	}
	vs := m.spec.ValueSize
	switch m.spec.Type {
	case Array, PerCPUArray:
		// array_map_update_elem
		i := index(key)
		if i >= m.spec.MaxEntries {
			return ErrKeyOutOfRange
		}
		if flags == UpdateNoExist {
			return ErrKeyExist
		}
		if m.spec.Type == Array {
			copy(m.values[m.slotOff(uint64(i)):][:vs], value)
			return nil
		}
		for c := 0; c < m.numCPU; c++ {
			if cpu < 0 || c == cpu {
				copy(m.values[m.slotOff(uint64(c)*uint64(m.spec.MaxEntries)+uint64(i)):][:vs], value)
			}
		}
		return nil
	case Hash:
		// htab_map_update_elem with a preallocated element pool. A present
		// key's value is replaced in place; the kernel swaps in a fresh
		// element, which only a program holding the old pointer could see.
		s := m.htab.find(key)
		switch {
		case s >= 0 && flags == UpdateNoExist:
			return ErrKeyExist
		case s < 0 && flags == UpdateExist:
			return ErrKeyNotExist
		case s < 0:
			if s = m.htab.insert(key); s < 0 {
				return ErrMapFull
			}
		}
		copy(m.values[m.slotOff(uint64(s)):][:vs], value)
		return nil
	case DevMap:
		// __dev_map_update_elem: ifindex 0 empties the slot.
		i := index(key)
		if i >= m.spec.MaxEntries {
			return ErrKeyOutOfRange
		}
		if flags == UpdateNoExist {
			return ErrKeyExist
		}
		if vs == 8 && int32(binary.LittleEndian.Uint32(value[4:])) > 0 {
			return ErrMapValue // a program fd: use SetDevMapEntry
		}
		m.setSlot(i, value, binary.LittleEndian.Uint32(value) != 0)
		m.progs[i] = nil
		return nil
	case CPUMap:
		// cpu_map_update_elem: qsize 0 empties the slot.
		i := index(key)
		if i >= m.spec.MaxEntries {
			return ErrKeyOutOfRange
		}
		if flags == UpdateNoExist {
			return ErrKeyExist
		}
		qsize := binary.LittleEndian.Uint32(value)
		if qsize > MaxCPUMapQSize {
			return ErrQueueSize
		}
		if int(i) >= m.numCPU {
			return ErrNoCPU
		}
		if vs == 8 && int32(binary.LittleEndian.Uint32(value[4:])) > 0 {
			return ErrMapValue // a program fd: use SetCPUMapEntry
		}
		m.setSlot(i, value, qsize != 0)
		m.progs[i] = nil
		return nil
	}
	return ErrMapOp
}

// delete is map_delete_elem.
func (m *Map) delete(key []byte) error {
	switch m.spec.Type {
	case Hash:
		if !m.htab.remove(key) {
			return ErrKeyNotExist
		}
		return nil
	case DevMap, CPUMap:
		// dev_map_delete_elem / cpu_map_delete_elem succeed on empty slots.
		i := index(key)
		if i >= m.spec.MaxEntries {
			return ErrKeyInvalid
		}
		m.setSlot(i, nil, false)
		m.progs[i] = nil
		return nil
	}
	return ErrMapOp // array_map_delete_elem: -EINVAL
}

func (m *Map) checkKey(key []byte) error {
	if len(key) != int(m.spec.KeySize) {
		return fmt.Errorf("map %q: key of %d bytes, want %d: %w", m.spec.Name, len(key), m.spec.KeySize, ErrKeySize)
	}
	return nil
}

// Value returns the live value of key: a slice aliasing the map's memory,
// which Go code may read and write (counters, configuration). For a
// per-CPU map it is the value of cpu; other maps ignore cpu. For a hash
// map the slice stays valid until the key is deleted.
func (m *Map) Value(key []byte, cpu int) ([]byte, error) {
	if err := m.checkKey(key); err != nil {
		return nil, err
	}
	if m.perCPU() && (cpu < 0 || cpu >= m.numCPU) {
		return nil, fmt.Errorf("map %q: cpu %d of %d: %w", m.spec.Name, cpu, m.numCPU, ErrNoCPU)
	}
	off := m.lookup(key, cpu)
	if off < 0 {
		return nil, fmt.Errorf("map %q: lookup %x: %w", m.spec.Name, key, ErrKeyNotExist)
	}
	return m.values[off : off+int64(m.spec.ValueSize) : off+int64(m.spec.ValueSize)], nil
}

// Update writes key's value as the bpf(BPF_MAP_UPDATE_ELEM) syscall does.
// For a per-CPU map, value holds either one value for every CPU or
// NumCPU values back to back.
func (m *Map) Update(key, value []byte, flags UpdateFlags) error {
	if err := m.checkKey(key); err != nil {
		return err
	}
	vs := int(m.spec.ValueSize)
	if m.perCPU() && len(value) == vs*m.numCPU && m.numCPU > 1 {
		for c := 0; c < m.numCPU; c++ {
			if err := m.update(key, value[c*vs:(c+1)*vs], flags, c); err != nil {
				return fmt.Errorf("map %q: update %x: %w", m.spec.Name, key, err)
			}
		}
		return nil
	}
	if len(value) != vs {
		return fmt.Errorf("map %q: value of %d bytes, want %d: %w", m.spec.Name, len(value), vs, ErrValueSize)
	}
	if err := m.update(key, value, flags, -1); err != nil {
		return fmt.Errorf("map %q: update %x: %w", m.spec.Name, key, err)
	}
	return nil
}

// Delete removes key as bpf(BPF_MAP_DELETE_ELEM) does.
func (m *Map) Delete(key []byte) error {
	if err := m.checkKey(key); err != nil {
		return err
	}
	if err := m.delete(key); err != nil {
		return fmt.Errorf("map %q: delete %x: %w", m.spec.Name, key, err)
	}
	return nil
}

// NextKey returns the key after key in the kernel's iteration order
// (bpf(BPF_MAP_GET_NEXT_KEY)); a nil or absent key starts over. Array-like
// maps walk every index, present or not; a hash map walks its buckets in
// order, so the order depends only on the keys and the insertion history.
// ErrKeyNotExist marks the end.
func (m *Map) NextKey(key []byte) ([]byte, error) {
	if key != nil {
		if err := m.checkKey(key); err != nil {
			return nil, err
		}
	}
	if m.spec.Type == Hash {
		next := m.htab.nextKey(key)
		if next == nil {
			return nil, ErrKeyNotExist
		}
		return next, nil
	}
	next := uint32(0)
	if key != nil {
		if i := index(key); i < m.spec.MaxEntries {
			if i == m.spec.MaxEntries-1 {
				return nil, ErrKeyNotExist
			}
			next = i + 1
		}
	}
	return binary.LittleEndian.AppendUint32(nil, next), nil
}

// Keys returns every key in NextKey order. Array-like maps list only
// present entries for devmap and cpumap, and every index otherwise.
func (m *Map) Keys() [][]byte {
	var keys [][]byte
	for k, err := m.NextKey(nil); err == nil; k, err = m.NextKey(k) {
		if m.present != nil && !m.present[index(k)] {
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// SumUint64 returns key's value read as a little-endian u64 (or u32 when
// the value is 4 bytes), summed over CPUs for a per-CPU map: how counters
// are read. The key is the 4-byte index of an array-like map.
func (m *Map) SumUint64(key uint32) (uint64, error) {
	k := binary.LittleEndian.AppendUint32(nil, key)
	n := 1
	if m.perCPU() {
		n = m.numCPU
	}
	var sum uint64
	for c := 0; c < n; c++ {
		v, err := m.Value(k, c)
		if err != nil {
			return 0, err
		}
		if len(v) >= 8 {
			sum += binary.LittleEndian.Uint64(v)
		} else if len(v) >= 4 {
			sum += uint64(binary.LittleEndian.Uint32(v))
		}
	}
	return sum, nil
}
