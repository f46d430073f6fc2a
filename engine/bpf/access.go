package bpf

// PacketAccess is what one run did with the packet's bytes, when the
// program traces them (TracePacketAccess): the loads and stores it made
// and the span of buffer offsets each covered. The bytes a helper
// touches (bpf_xdp_adjust_head moving metadata) are not counted.
type PacketAccess struct {
	Loads, Stores int
	// ReadLo, ReadHi: offsets into Input.Buf of the first byte loaded
	// and one past the last, equal when nothing was loaded; WriteLo and
	// WriteHi likewise for stores.
	ReadLo, ReadHi   int
	WriteLo, WriteHi int
}

func (a *PacketAccess) add(lo, hi int, write bool) {
	if write {
		if a.Stores == 0 || lo < a.WriteLo {
			a.WriteLo = lo
		}
		if a.Stores == 0 || hi > a.WriteHi {
			a.WriteHi = hi
		}
		a.Stores++
		return
	}
	if a.Loads == 0 || lo < a.ReadLo {
		a.ReadLo = lo
	}
	if a.Loads == 0 || hi > a.ReadHi {
		a.ReadHi = hi
	}
	a.Loads++
}

// TracePacketAccess turns the recording of each run's packet accesses
// on or off (LastPacketAccess reads it). Traced, every packet load and
// store takes the interpreter's slower path, which checks and records
// it; off, a run costs what it did.
func (p *Program) TracePacketAccess(on bool) { p.m.trace = on }

// LastPacketAccess is what the last run did with the packet's bytes,
// zero unless TracePacketAccess is on.
func (p *Program) LastPacketAccess() PacketAccess { return p.m.acc }

// startRun sets the run's inline bound and clears its record.
func (m *machine) startRun() {
	m.fastEnd = m.end
	if m.trace {
		m.fastEnd = 0
		m.acc = PacketAccess{}
	}
}
