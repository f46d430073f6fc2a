package bpf

import (
	"encoding/binary"
	"fmt"
)

// Devmap and cpumap entries as Go code sees them. The interpreter only
// records which slot a frame was redirected through (Redirect); the
// simulation does the queueing (bq_enqueue, cpu_map_enqueue) and runs the
// entry's program.

func (m *Map) setSlot(i uint32, value []byte, present bool) {
	v := m.values[m.slotOff(uint64(i)):][:m.spec.ValueSize]
	if present {
		copy(v, value)
	} else {
		clear(v)
	}
	m.present[i] = present
}

// DevMapValue is struct bpf_devmap_val: the target device of a devmap slot
// and an optional program run on frames redirected through it.
type DevMapValue struct {
	Ifindex uint32
	Prog    *Program
}

// SetDevMapEntry fills a devmap slot; Ifindex 0 empties it. Unlike
// __dev_map_update_elem, which looks the device up, any ifindex is taken:
// the simulation decides what an unknown device does.
func (m *Map) SetDevMapEntry(key uint32, v DevMapValue) error {
	return m.setRedirectEntry(DevMap, key, v.Ifindex, v.Prog)
}

// DevMapEntry returns a devmap slot.
func (m *Map) DevMapEntry(key uint32) (DevMapValue, bool) {
	if m.spec.Type != DevMap || key >= m.spec.MaxEntries || !m.present[key] {
		return DevMapValue{}, false
	}
	return DevMapValue{binary.LittleEndian.Uint32(m.values[m.slotOff(uint64(key)):]), m.progs[key]}, true
}

// CPUMapValue is struct bpf_cpumap_val: the size of the target CPU's
// ptr_ring and an optional program run there on each frame.
type CPUMapValue struct {
	QSize uint32
	Prog  *Program
}

// SetCPUMapEntry fills a cpumap slot; QSize 0 empties it.
func (m *Map) SetCPUMapEntry(key uint32, v CPUMapValue) error {
	return m.setRedirectEntry(CPUMap, key, v.QSize, v.Prog)
}

// CPUMapEntry returns a cpumap slot.
func (m *Map) CPUMapEntry(key uint32) (CPUMapValue, bool) {
	if m.spec.Type != CPUMap || key >= m.spec.MaxEntries || !m.present[key] {
		return CPUMapValue{}, false
	}
	return CPUMapValue{binary.LittleEndian.Uint32(m.values[m.slotOff(uint64(key)):]), m.progs[key]}, true
}

func (m *Map) setRedirectEntry(t MapType, key, first uint32, prog *Program) error {
	if m.spec.Type != t {
		return fmt.Errorf("map %q is %s, not %s: %w", m.spec.Name, m.spec.Type, t, ErrMapOp)
	}
	if prog != nil && first == 0 {
		return fmt.Errorf("map %q: key %d: program without target: %w", m.spec.Name, key, ErrMapValue)
	}
	val := make([]byte, m.spec.ValueSize)
	binary.LittleEndian.PutUint32(val, first)
	k := binary.LittleEndian.AppendUint32(nil, key)
	if err := m.update(k, val, UpdateAny, -1); err != nil {
		return fmt.Errorf("map %q: key %d: %w", m.spec.Name, key, err)
	}
	m.progs[key] = prog
	return nil
}
