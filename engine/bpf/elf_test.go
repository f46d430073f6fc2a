package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The objects in testdata/ are built from the C sources beside them by
// testdata/build.sh (clang -O2 -g -target bpf -mcpu=v3); the tests only
// read them.

func readObject(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

func TestLoadELF(t *testing.T) {
	spec, err := LoadELF(bytes.NewReader(readObject(t, "xdp_filter.o")))
	require.NoError(t, err)
	var progs, maps []string
	for _, p := range spec.Programs {
		progs = append(progs, p.Name)
		assert.Equal(t, "GPL", p.License)
	}
	for _, m := range spec.Maps {
		maps = append(maps, m.Name)
	}
	assert.Equal(t, []string{"xdp_count_all", "xdp_filter"}, progs)
	assert.Equal(t, []string{".rodata", "proto_hash", "verdicts"}, maps)
	ro := spec.MapSpec(".rodata")
	assert.Equal(t, Array, ro.Type)
	assert.NotZero(t, ro.Flags&FlagRdonlyProg)
	assert.Equal(t, Hash, spec.MapSpec("proto_hash").Type)

	c, err := NewCollection(spec, Options{NumCPU: 2})
	require.NoError(t, err)
	filter := c.Program("xdp_filter")
	require.NotNil(t, filter)
	for _, tc := range []struct {
		frame []byte
		want  Action
	}{
		{udp4Frame(1000, 53), XDPDrop},
		{udp4Frame(1000, 54), XDPPass},
		{tcp4Frame(1000, 53), XDPPass},
		{udp6Frame(1000, 53), XDPPass}, // the C program only parses IPv4
		{arpFrame(), XDPPass},
		{ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(17, "1.1.1.1", "2.2.2.2", []byte{1, 1, 1, 0}, udpDatagram(1, 53, nil))), XDPDrop},
	} {
		res := runOn(filter, newInput(tc.frame))
		require.False(t, res.Fault.Faulted(), "%v", res.Fault)
		assert.Equal(t, tc.want, res.Action)
	}
	res := runOn(c.Program("xdp_count_all"), newInput(arpFrame()))
	assert.Equal(t, XDPPass, res.Action)

	// verdicts: 4 passed, 2 dropped; proto_hash: UDP 3, TCP 1, and 255
	// from the second program, which shares the map.
	passed, err := c.Maps["verdicts"].SumUint64(0)
	require.NoError(t, err)
	dropped, err := c.Maps["verdicts"].SumUint64(1)
	require.NoError(t, err)
	assert.Equal(t, []uint64{4, 2}, []uint64{passed, dropped})
	counts := map[uint32]uint64{}
	for _, k := range c.Maps["proto_hash"].Keys() {
		v, err := c.Maps["proto_hash"].Value(k, 0)
		require.NoError(t, err)
		counts[binary.LittleEndian.Uint32(k)] = binary.LittleEndian.Uint64(v)
	}
	assert.Equal(t, map[uint32]uint64{17: 3, 6: 1, 255: 1}, counts)

	// The .rodata constant is ordinary map memory to Go code.
	rodata, err := c.Maps[".rodata"].Value(make([]byte, 4), 0)
	require.NoError(t, err)
	require.Equal(t, uint16(53), binary.LittleEndian.Uint16(rodata))
	binary.LittleEndian.PutUint16(rodata, 54)
	assert.Equal(t, XDPDrop, runOn(filter, newInput(udp4Frame(1000, 54))).Action)
}

func TestLoadELFRefuses(t *testing.T) {
	for _, tc := range []struct {
		object string
		want   error
		substr []string
	}{
		{"xdp_bad_helper.o", ErrUnsupportedHelper, []string{`program "xdp_random_drop"`, `section "xdp"`, "insn 0", "FnGetPrandomU32"}},
		{"xdp_tailcall.o", ErrUnsupportedHelper, []string{`program "xdp_dispatch"`, "insn 4", "FnTailCall"}},
		{"tc_prog.o", ErrNotXDP, []string{`program "classify"`, `section "tc"`}},
	} {
		t.Run(tc.object, func(t *testing.T) {
			_, err := LoadELF(bytes.NewReader(readObject(t, tc.object)))
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "%v", err)
			for _, s := range tc.substr {
				assert.Contains(t, err.Error(), s)
			}
			t.Log(err)
		})
	}
}

func TestLoadELFGarbage(t *testing.T) {
	good := readObject(t, "xdp_filter.o")
	inputs := [][]byte{nil, []byte("not an ELF"), bytes.Repeat([]byte{0x7f, 'E', 'L', 'F'}, 64)}
	// Every truncation of a valid object.
	for n := 0; n < len(good); n += 7 {
		inputs = append(inputs, good[:n])
	}
	// Corrupted bytes in the headers and section table.
	for i := 0; i < 64; i++ {
		b := append([]byte(nil), good...)
		b[(i*131)%len(b)] ^= 0xff
		inputs = append(inputs, b)
	}
	errs := 0
	for _, in := range inputs {
		spec, err := LoadELF(bytes.NewReader(in))
		if err != nil {
			errs++
			assert.True(t, errors.Is(err, ErrInvalidELF) || errors.Is(err, ErrUnsupportedInstruction) ||
				errors.Is(err, ErrInvalidInstruction) || errors.Is(err, ErrUnsupportedHelper) ||
				errors.Is(err, ErrUnresolvedMap) || errors.Is(err, ErrJumpOutOfRange) ||
				errors.Is(err, ErrUnsupportedMapType) || errors.Is(err, ErrNotXDP) ||
				errors.Is(err, ErrNoExit) || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrInvalidRegister) ||
				errors.Is(err, ErrUnresolvedReference), "%v", err)
			continue
		}
		// A corruption that still loads must still run safely.
		c, err := NewCollection(spec, Options{NumCPU: 1})
		if err != nil {
			continue
		}
		for _, p := range c.Programs {
			runOn(p, newInput(udp4Frame(1, 53)))
		}
	}
	assert.Greater(t, errs, len(good)/7)
}

// manySections is an ELF64 relocatable BPF object made of n empty
// sections (SHT_NULL), without a section name table.
func manySections(n int) []byte {
	var b []byte
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0) // ELFCLASS64, little-endian
	le := binary.LittleEndian
	b = le.AppendUint16(b, 1)   // e_type ET_REL
	b = le.AppendUint16(b, 247) // e_machine EM_BPF
	b = le.AppendUint32(b, 1)   // e_version
	b = le.AppendUint64(b, 0)   // e_entry
	b = le.AppendUint64(b, 0)   // e_phoff
	b = le.AppendUint64(b, 64)  // e_shoff: right after this header
	b = le.AppendUint32(b, 0)   // e_flags
	b = le.AppendUint16(b, 64)  // e_ehsize
	b = le.AppendUint16(b, 0)   // e_phentsize
	b = le.AppendUint16(b, 0)   // e_phnum
	b = le.AppendUint16(b, 64)  // e_shentsize
	b = le.AppendUint16(b, uint16(n))
	b = le.AppendUint16(b, 0) // e_shstrndx SHN_UNDEF
	return append(b, make([]byte, 64*n)...)
}

// withTableSize returns a copy of the object whose first section of type
// typ claims size bytes (sh_size), past what the file holds.
func withTableSize(t *testing.T, obj []byte, typ uint32, size uint64) []byte {
	t.Helper()
	b := append([]byte(nil), obj...)
	le := binary.LittleEndian
	shoff, shnum := le.Uint64(b[0x28:]), int(le.Uint16(b[0x3c:]))
	for i := 0; i < shnum; i++ {
		sh := b[shoff+uint64(i)*64:]
		if le.Uint32(sh[4:]) == typ {
			le.PutUint64(sh[32:], size)
			return b
		}
	}
	t.Fatalf("no section of type %d", typ)
	return nil
}

// TestLoadELFLimits: objects past the limits are refused before
// cilium/ebpf reads them, with ErrELFTooLarge and the count that broke
// the limit; an object within them still loads.
func TestLoadELFLimits(t *testing.T) {
	good := readObject(t, "xdp_filter.o")
	padded := append(append([]byte(nil), good...), make([]byte, MaxELFSize)...)
	const shtSymtab, shtRel = 2, 9
	for _, tc := range []struct {
		name string
		obj  []byte
		want string
	}{
		{"size", padded, "more than 1048576 bytes"},
		{"sections", manySections(MaxELFSections + 1), "513 sections"},
		{"symbols", withTableSize(t, good, shtSymtab, (MaxELFSymbols+1)*24), "16385 symbols, at most 16384"},
		{"relocations", withTableSize(t, good, shtRel, (MaxELFRelocations+1)*16), "relocations, at most 16384"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadELF(bytes.NewReader(tc.obj))
			require.ErrorIs(t, err, ErrELFTooLarge)
			require.ErrorIs(t, err, ErrInvalidELF)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := LoadELF(bytes.NewReader(manySections(MaxELFSections)))
	assert.NotErrorIs(t, err, ErrELFTooLarge, "at the limit is within it")
	_, err = LoadELF(bytes.NewReader(good))
	require.NoError(t, err)
}

// TestLoadELFSaysWhatItGot: bytes that are no ELF object are called so,
// with what they start with, and an object cut short says so, rather than
// the reader's bare "EOF".
func TestLoadELFSaysWhatItGot(t *testing.T) {
	good := readObject(t, "xdp_filter.o")
	tests := []struct {
		name    string
		in      []byte
		notELF  bool
		wantErr string
	}{
		{"a text file", []byte("SEC(\"xdp\") int prog(struct xdp_md *ctx)\n"), true, `not an ELF object: it is text, starting "SEC(\"xdp\") int prog(stru"`},
		{"an empty file", nil, true, "not an ELF object: it is empty"},
		{"binary bytes", []byte{0x59, 0xb0, 0x94, 0xea, 0x49}, true, "not an ELF object: it starts with the bytes 59 b0 94 ea 49"},
		{"text cut inside a rune", append(bytes.Repeat([]byte("a"), 23), "é"...), true, "it is text"},
		{"the magic alone", []byte("\x7fELF"), false, "cut short at 4 bytes"},
		{"an object cut short", good[:len(good)/2], false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadELF(bytes.NewReader(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidELF)
			assert.Equal(t, tc.notELF, errors.Is(err, ErrNotELF), "%v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotRegexp(t, `: (unexpected )?EOF$`, err.Error(), "the reader's EOF alone says nothing")
		})
	}
}
