package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// fuzzMaps are the maps a fuzzed program can reach by fd: 0 array,
// 1 hash, 2 per-CPU array, 3 devmap, 4 cpumap.
func fuzzMaps(tb testing.TB) []*Map {
	specs := []*MapSpec{
		{Name: "arr", Type: Array, KeySize: 4, ValueSize: 16, MaxEntries: 4},
		{Name: "hash", Type: Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4},
		{Name: "pcpu", Type: PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Name: "dev", Type: DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Name: "cpu", Type: CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
	}
	var maps []*Map
	for _, s := range specs {
		m, err := NewMap(s, 2)
		if err != nil {
			tb.Fatal(err)
		}
		maps = append(maps, m)
	}
	if err := maps[3].SetDevMapEntry(1, DevMapValue{Ifindex: 5}); err != nil {
		tb.Fatal(err)
	}
	if err := maps[4].SetCPUMapEntry(1, CPUMapValue{QSize: 8}); err != nil {
		tb.Fatal(err)
	}
	return maps
}

// fuzzSeeds are marshalled programs: the library (map references become
// fd 0) and a few that exercise faults and the budget.
func fuzzSeeds() [][]byte {
	var progs []asm.Instructions
	for _, s := range Library() {
		progs = append(progs, s.Programs[0].Instructions)
	}
	progs = append(progs,
		asm.Instructions{ // endless loop: the budget ends it
			asm.Mov.Imm(asm.R0, 0),
			asm.Add.Imm(asm.R0, 1).WithSymbol("l"),
			asm.JNE.Imm(asm.R0, 0, "l"),
			asm.Return(),
		},
		asm.Instructions{ // read past data_end
			asm.LoadMem(asm.R2, asm.R1, 4, asm.Word),
			asm.LoadMem(asm.R0, asm.R2, 0, asm.Word),
			asm.Return(),
		},
		asm.Instructions{ // hash update through fd 1, then adjust head
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.StoreImm(asm.R10, -8, 7, asm.Word),
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 1),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -8),
			asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 14),
			asm.FnXdpAdjustHead.Call(),
			asm.Return(),
		},
	)
	var out [][]byte
	for _, insns := range progs {
		var buf bytes.Buffer
		if err := insns.Marshal(&buf, binary.LittleEndian); err != nil {
			panic(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

const fuzzBudget = 4096

// FuzzProgram decodes arbitrary bytes as raw eBPF instructions: preparing
// them either fails with an error or gives a program that runs on a sample
// frame without panicking, within the budget, leaving sane offsets.
func FuzzProgram(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	maps := fuzzMaps(f)
	frame := udp4Frame(1234, 53)
	f.Fuzz(func(t *testing.T, data []byte) {
		insns, err := asm.AppendInstructions(nil, bytes.NewReader(data), binary.LittleEndian, "linux")
		if err != nil {
			return
		}
		p, err := NewProgram(&ProgramSpec{Name: "fuzz", Instructions: insns}, maps, Options{NumCPU: 2, Budget: fuzzBudget})
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for cpu := 0; cpu < 2; cpu++ {
			in := newInput(frame)
			in.CPU = cpu
			in.Clock = ClockFunc(func() uint64 { return 42 })
			var res Result
			p.Run(in, &res)
			if res.Insns > fuzzBudget || res.Insns < 0 {
				t.Fatalf("ran %d instructions, budget %d", res.Insns, fuzzBudget)
			}
			if res.DataMeta < 0 || res.DataMeta > res.Data || res.Data > res.DataEnd || res.DataEnd > len(in.Buf) {
				t.Fatalf("offsets %d/%d/%d outside the buffer", res.DataMeta, res.Data, res.DataEnd)
			}
			if res.Fault.Faulted() && res.Action != XDPAborted {
				t.Fatalf("fault %v with verdict %v", res.Fault, res.Action)
			}
			_ = res.Fault.String()
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzProgram from
// fuzzSeeds when RINGLAB_WRITE_FUZZ_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("RINGLAB_WRITE_FUZZ_CORPUS") != "1" {
		t.Skip("set RINGLAB_WRITE_FUZZ_CORPUS=1 to rewrite the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzProgram")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fuzzObjects are the objects FuzzLoadELF corrupts (testdata/).
var fuzzObjects = []string{"xdp_filter.o", "xdp_bad_helper.o", "xdp_tailcall.o", "tc_prog.o"}

// FuzzLoadELF: bytes as an ELF object give a collection or an error, never
// a panic; what loads can be prepared or is refused with an error. An
// input is an object and a patch: obj below len(fuzzObjects) picks one of
// the test objects and patch overwrites bytes of it (3-byte records: a
// big-endian offset, taken modulo the object's size, and the byte); any
// other obj makes patch itself the object.
//
// The inputs stay a few bytes long on purpose. The fuzzer minimizes every
// input that finds new coverage, for up to -fuzzminimizetime (60 s by
// default), trying it shorter byte by byte; with whole objects of several
// kilobytes as inputs that took the full minute for each, and the run
// managed a handful of new inputs per second. cilium/ebpf's reader itself
// takes well under a millisecond on them.
func FuzzLoadELF(f *testing.F) {
	var objs [][]byte
	for _, name := range fuzzObjects {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		objs = append(objs, b)
		f.Add(uint8(len(objs)-1), []byte{})
	}
	f.Add(uint8(255), []byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, obj uint8, patch []byte) {
		b := patch
		if int(obj) < len(objs) {
			b = append([]byte(nil), objs[obj]...)
			for i := 0; i+3 <= len(patch); i += 3 {
				b[int(binary.BigEndian.Uint16(patch[i:]))%len(b)] = patch[i+2]
			}
		}
		spec, err := LoadELF(bytes.NewReader(b))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if _, err := NewCollection(spec, Options{NumCPU: 2}); err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
