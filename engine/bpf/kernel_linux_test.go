//go:build linux

package bpf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
)

// These tests load the library into the running kernel with cilium/ebpf
// and run each program there with BPF_PROG_TEST_RUN on the same frames the
// interpreter gets, comparing verdicts, packet bytes and map contents. They
// need root.

// testFrames is a mix of what the library programs branch on.
func testFrames() map[string][]byte {
	return map[string][]byte{
		"udp4":          udp4Frame(1234, 53),
		"udp4 port 9":   udp4Frame(4000, 9),
		"udp6":          udp6Frame(1234, 53),
		"udp6 port 9":   udp6Frame(4001, 9),
		"tcp4":          tcp4Frame(40000, 80),
		"tcp6":          tcp6Frame(40001, 443),
		"udp4 options":  ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(17, "192.168.1.1", "192.168.1.2", []byte{1, 1, 1, 0}, udpDatagram(7, 9, []byte("x")))),
		"icmp4":         ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(1, "10.1.1.1", "10.1.1.2", nil, make([]byte, 16))),
		"arp":           arpFrame(),
		"short ipv4":    ethFrame(macB, macA, etherTypeIPv4, make([]byte, 8)),
		"short ipv6":    ethFrame(macB, macA, etherTypeIPv6, make([]byte, 30)),
		"eth only":      ethFrame(macB, macA, 0x88b5, nil),
		"udp4 no ports": udp4Frame(1, 9)[:14+20+2],
	}
}

// kernelRun runs prog once in the kernel on frame and returns the verdict
// and the packet as the program left it.
func kernelRun(t *testing.T, prog *ebpf.Program, frame []byte) (Action, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+4096)}
	ret, err := prog.Run(opts)
	require.NoError(t, err)
	// cilium/ebpf trims opts.DataOut to the size the kernel reported.
	return Action(ret), opts.DataOut
}

func loadKernel(t *testing.T, spec *CollectionSpec) *ebpf.Collection {
	t.Helper()
	testenv.RequireRoot(t)
	require.NoError(t, rlimit.RemoveMemlock())
	coll, err := ebpf.NewCollection(spec.KernelSpec())
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		t.Fatalf("verifier rejected %s:\n%+v", spec.Name, ve)
	}
	require.NoError(t, err, "loading %s", spec.Name)
	t.Cleanup(func() { coll.Close() })
	return coll
}

// kernelCPUs is how many CPUs the comparison simulates: the library's
// cpumap keys must be possible CPUs of the real machine.
func kernelCPUs(t *testing.T) int {
	n, err := ebpf.PossibleCPU()
	require.NoError(t, err)
	return n
}

// compareRuns runs every test frame through both and compares verdicts
// and output packets.
func compareRuns(t *testing.T, name string, kprog *ebpf.Program, p *Program) {
	for fname, frame := range testFrames() {
		kact, kout := kernelRun(t, kprog, frame)
		in := newInput(frame)
		res := runOn(p, in)
		require.False(t, res.Fault.Faulted(), "%s/%s: %v", name, fname, res.Fault)
		assert.Equal(t, kact, res.Action, "%s/%s: verdict", name, fname)
		assert.Equal(t, kout, packet(in, res), "%s/%s: packet", name, fname)
	}
}

func TestKernelAcceptsLibrary(t *testing.T) {
	testenv.RequireRoot(t)
	specs := append(Library(),
		ProgRedirectCPU(RedirectCPUConfig{Mode: CPUFixed, CPU: 1, NumCPUs: 2}),
		ProgRedirectCPU(RedirectCPUConfig{Mode: CPURoundRobin, NumCPUs: 2}),
		ProgRedirectDev(RedirectDevConfig{Key: 3, Ifindex: 1}),
	)
	for i, spec := range specs {
		t.Run(fmt.Sprintf("%d_%s", i, spec.Name), func(t *testing.T) {
			coll := loadKernel(t, spec)
			require.Len(t, coll.Programs, 1)
		})
	}
}

func TestKernelAgreesSimplePrograms(t *testing.T) {
	for _, spec := range []*CollectionSpec{ProgPass(), ProgDrop(), ProgTx()} {
		t.Run(spec.Name, func(t *testing.T) {
			coll := loadKernel(t, spec)
			_, p := newLib(t, spec, 1)
			compareRuns(t, spec.Name, coll.Programs[spec.Name], p)
		})
	}
}

func TestKernelAgreesCountProto(t *testing.T) {
	spec := ProgCountProto()
	coll := loadKernel(t, spec)
	ncpu := kernelCPUs(t)
	c, p := newLib(t, spec, ncpu)
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)

	km := coll.Maps["proto_count"]
	nonzero := 0
	for proto := uint32(0); proto < 256; proto++ {
		var per []uint64
		require.NoError(t, km.Lookup(proto, &per))
		var ksum uint64
		for _, v := range per {
			ksum += v
		}
		sum, err := c.Maps["proto_count"].SumUint64(proto)
		require.NoError(t, err)
		assert.Equal(t, ksum, sum, "protocol %d", proto)
		if sum > 0 {
			nonzero++
		}
	}
	assert.Equal(t, 3, nonzero, "UDP, TCP and ICMP were counted")
}

func TestKernelAgreesDropUDPPort(t *testing.T) {
	spec := ProgDropUDPPort(9)
	coll := loadKernel(t, spec)
	c, p := newLib(t, spec, 1)
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)

	var kval [udpDropValueSize]byte
	require.NoError(t, coll.Maps["udp_drop"].Lookup(uint32(0), &kval))
	val, err := c.Maps["udp_drop"].Value(make([]byte, 4), 0)
	require.NoError(t, err)
	assert.Equal(t, kval[:], val)
	assert.Equal(t, uint64(3), binary.LittleEndian.Uint64(val[UDPDropCounterOff:]), "three frames to port 9")

	// Reconfigure both to port 53.
	binary.LittleEndian.PutUint32(kval[UDPDropPortOff:], 53)
	require.NoError(t, coll.Maps["udp_drop"].Put(uint32(0), kval))
	binary.LittleEndian.PutUint32(val[UDPDropPortOff:], 53)
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)
}

func TestKernelAgreesRedirectDev(t *testing.T) {
	spec := ProgRedirectDev(RedirectDevConfig{Key: 0, Ifindex: 1}) // lo
	coll := loadKernel(t, spec)
	c, p := newLib(t, spec, 1)
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)

	// Empty the slot in both: the fallback verdict.
	require.NoError(t, coll.Maps["tx_port"].Delete(uint32(0)))
	require.NoError(t, c.Maps["tx_port"].Delete(make([]byte, 4)))
	compareRuns(t, spec.Name, coll.Programs[spec.Name], p)
}

// kernelCPUKey finds which cpumap key the kernel program redirects frame
// to: with only key k present, the verdict is XDP_REDIRECT exactly when
// the program chose k (else the fallback XDP_PASS).
func kernelCPUKey(t *testing.T, coll *ebpf.Collection, n uint32, frame []byte, before func()) uint32 {
	t.Helper()
	cpumap := coll.Maps["cpu_map"]
	prog := coll.Programs[NameRedirectCPU]
	found := ^uint32(0)
	for k := uint32(0); k < n; k++ {
		for j := uint32(0); j < n; j++ {
			if j == k {
				require.NoError(t, cpumap.Put(j, uint32(64)))
			} else if err := cpumap.Delete(j); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				require.NoError(t, err)
			}
		}
		if before != nil {
			before()
		}
		act, _ := kernelRun(t, prog, frame)
		switch act {
		case XDPRedirect:
			require.Equal(t, ^uint32(0), found, "two keys redirect")
			found = k
		case XDPPass:
		default:
			t.Fatalf("unexpected verdict %v", act)
		}
	}
	require.NotEqual(t, ^uint32(0), found, "no key redirects")
	return found
}

func TestKernelAgreesRedirectCPU(t *testing.T) {
	const n = 2
	if kernelCPUs(t) < n {
		testenv.Missing(t, "needs 2 CPUs for a 2-entry cpumap")
	}
	t.Run("hash", func(t *testing.T) {
		spec := ProgRedirectCPU(RedirectCPUConfig{Mode: CPUHash, NumCPUs: n, QSize: 64})
		coll := loadKernel(t, spec)
		_, p := newLib(t, spec, n)
		hits := make(map[uint32]int)
		for fname, frame := range testFrames() {
			res := runOn(p, newInput(frame))
			require.Equal(t, XDPRedirect, res.Action, fname)
			assert.Equal(t, kernelCPUKey(t, coll, n, frame, nil), res.Redirect.Key, fname)
			hits[res.Redirect.Key]++
		}
		for sport := uint16(0); sport < 8; sport++ {
			frame := udp4Frame(5000+sport, 53)
			res := runOn(p, newInput(frame))
			assert.Equal(t, kernelCPUKey(t, coll, n, frame, nil), res.Redirect.Key, "sport %d", sport)
			hits[res.Redirect.Key]++
		}
		assert.Len(t, hits, n, "both keys chosen at least once")
	})
	t.Run("round robin", func(t *testing.T) {
		spec := ProgRedirectCPU(RedirectCPUConfig{Mode: CPURoundRobin, NumCPUs: n, QSize: 64})
		coll := loadKernel(t, spec)
		c, p := newLib(t, spec, n)
		rr := coll.Maps["rr_state"]
		ncpu := kernelCPUs(t)
		for pos := uint32(0); pos < n; pos++ {
			// Every CPU's counter at pos, whichever CPU the test run uses.
			set := func() {
				vals := make([]uint32, ncpu)
				for i := range vals {
					vals[i] = pos
				}
				require.NoError(t, rr.Put(uint32(0), vals))
			}
			kkey := kernelCPUKey(t, coll, n, udp4Frame(1, 2), set)
			v, err := c.Maps["rr_state"].Value(make([]byte, 4), 0)
			require.NoError(t, err)
			binary.LittleEndian.PutUint32(v, pos)
			res := runOn(p, newInput(udp4Frame(1, 2)))
			assert.Equal(t, kkey, res.Redirect.Key)
			assert.Equal(t, (pos+1)%n, binary.LittleEndian.Uint32(v), "counter advanced")
		}
	})
	t.Run("fixed", func(t *testing.T) {
		spec := ProgRedirectCPU(RedirectCPUConfig{Mode: CPUFixed, CPU: 1, NumCPUs: n, QSize: 64})
		coll := loadKernel(t, spec)
		_, p := newLib(t, spec, n)
		compareRuns(t, spec.Name, coll.Programs[spec.Name], p)
		assert.Equal(t, kernelCPUKey(t, coll, n, arpFrame(), nil), runOn(p, newInput(arpFrame())).Redirect.Key)
	})
}

// TestKernelAgreesHelpers compares the adjust and redirect helpers'
// results and packet effects on small programs.
func TestKernelAgreesHelpers(t *testing.T) {
	type prog struct {
		name  string
		insns asm.Instructions
	}
	adjust := func(fn asm.BuiltinFunc, off int32) asm.Instructions {
		// r0 = helper(ctx, off); if r0 != 0 return 1000+? -> return XDP_DROP
		// on failure, XDP_PASS on success.
		return asm.Instructions{
			asm.Mov.Imm(asm.R2, off),
			fn.Call(),
			asm.JNE.Imm(asm.R0, 0, "fail"),
			asm.Mov.Imm(asm.R0, int32(XDPPass)),
			asm.Return(),
			asm.Mov.Imm(asm.R0, int32(XDPDrop)).WithSymbol("fail"),
			asm.Return(),
		}
	}
	// Writes the byte at data after a push so the pushed area is defined.
	pushAndWrite := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Mov.Imm(asm.R2, -14),
		asm.FnXdpAdjustHead.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.LoadMem(asm.R2, asm.R6, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 28),
		asm.JGT.Reg(asm.R4, asm.R3, "fail"),
		asm.LoadMem(asm.R5, asm.R2, 14, asm.DWord),
		asm.StoreMem(asm.R2, 0, asm.R5, asm.DWord),
		asm.LoadMem(asm.R5, asm.R2, 22, asm.Word),
		asm.StoreMem(asm.R2, 8, asm.R5, asm.Word),
		asm.LoadMem(asm.R5, asm.R2, 26, asm.Half),
		asm.StoreMem(asm.R2, 12, asm.R5, asm.Half),
		asm.Mov.Imm(asm.R0, int32(XDPTx)),
		asm.Return(),
		asm.Mov.Imm(asm.R0, int32(XDPDrop)).WithSymbol("fail"),
		asm.Return(),
	}
	redirect := func(flags int32) asm.Instructions {
		return asm.Instructions{asm.Mov.Imm(asm.R1, 1), asm.Mov.Imm(asm.R2, flags), asm.FnRedirect.Call(), asm.Return()}
	}
	for _, pr := range []prog{
		{"head_pop", adjust(asm.FnXdpAdjustHead, 14)},
		{"head_pop_all", adjust(asm.FnXdpAdjustHead, 1000)},
		{"head_push_max", adjust(asm.FnXdpAdjustHead, XDPFrameSize-testHeadroom)},
		{"head_push_over", adjust(asm.FnXdpAdjustHead, XDPFrameSize-testHeadroom-1)},
		{"head_push_write", pushAndWrite},
		{"tail_shrink", adjust(asm.FnXdpAdjustTail, -10)},
		{"tail_shrink_all", adjust(asm.FnXdpAdjustTail, -1000)},
		{"tail_grow", adjust(asm.FnXdpAdjustTail, 20)},
		{"tail_grow_max", adjust(asm.FnXdpAdjustTail, 4096-SKBSharedInfoSize-testHeadroom-200)},
		{"tail_grow_over", adjust(asm.FnXdpAdjustTail, 4096-SKBSharedInfoSize-testHeadroom-199)},
		{"redirect", redirect(0)},
		{"redirect_flags", redirect(1)},
	} {
		t.Run(pr.name, func(t *testing.T) {
			spec := &CollectionSpec{Name: pr.name, Programs: []*ProgramSpec{{Name: pr.name, Instructions: pr.insns}}}
			coll := loadKernel(t, spec)
			_, p := newLib(t, spec, 1)
			for _, frame := range [][]byte{append(udp4Frame(1, 2), make([]byte, 13)...), make([]byte, 200)} {
				kact, kout := kernelRun(t, coll.Programs[pr.name], frame)
				in := newInput(frame)
				res := runOn(p, in)
				require.False(t, res.Fault.Faulted(), "%v", res.Fault)
				assert.Equal(t, kact, res.Action, "verdict, %d-byte frame", len(frame))
				assert.Equal(t, kout, packet(in, res), "packet, %d-byte frame", len(frame))
			}
		})
	}
}

// TestKernelAgreesELF loads testdata/xdp_filter.o (clang output with a
// bpf-to-bpf call, .rodata, a hash map) both ways and compares verdicts,
// packets and maps.
func TestKernelAgreesELF(t *testing.T) {
	testenv.RequireRoot(t)
	require.NoError(t, rlimit.RemoveMemlock())
	obj := readObject(t, "xdp_filter.o")
	kspec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	require.NoError(t, err)
	kcoll, err := ebpf.NewCollection(kspec)
	require.NoError(t, err)
	defer kcoll.Close()

	spec, err := LoadELF(bytes.NewReader(obj))
	require.NoError(t, err)
	c, err := NewCollection(spec, Options{NumCPU: 1})
	require.NoError(t, err)

	for _, name := range []string{"xdp_filter", "xdp_count_all"} {
		compareRuns(t, name, kcoll.Programs[name], c.Program(name))
	}
	for k := uint32(0); k < 2; k++ {
		var kv uint64
		require.NoError(t, kcoll.Maps["verdicts"].Lookup(k, &kv))
		v, err := c.Maps["verdicts"].SumUint64(k)
		require.NoError(t, err)
		assert.Equal(t, kv, v, "verdicts[%d]", k)
	}
	kcounts := map[uint32]uint64{}
	var key uint32
	var val uint64
	it := kcoll.Maps["proto_hash"].Iterate()
	for it.Next(&key, &val) {
		kcounts[key] = val
	}
	require.NoError(t, it.Err())
	counts := map[uint32]uint64{}
	for _, k := range c.Maps["proto_hash"].Keys() {
		v, err := c.Maps["proto_hash"].Value(k, 0)
		require.NoError(t, err)
		counts[binary.LittleEndian.Uint32(k)] = binary.LittleEndian.Uint64(v)
	}
	assert.Equal(t, kcounts, counts)
	assert.NotEmpty(t, counts)
}
