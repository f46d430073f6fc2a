package bpf

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newLib(t testing.TB, spec *CollectionSpec, ncpu int) (*Collection, *Program) {
	t.Helper()
	c, err := NewCollection(spec, Options{NumCPU: ncpu})
	require.NoError(t, err)
	p := c.Program("")
	require.NotNil(t, p)
	return c, p
}

func run(t testing.TB, p *Program, frame []byte, cpu int) (*Input, Result) {
	t.Helper()
	in := newInput(frame)
	in.CPU = cpu
	var res Result
	p.Run(in, &res)
	require.False(t, res.Fault.Faulted(), "fault: %v", res.Fault)
	return in, res
}

func TestLibraryPrepares(t *testing.T) {
	seen := map[string]bool{}
	for _, spec := range Library() {
		t.Run(spec.Name, func(t *testing.T) {
			require.NoError(t, spec.Check())
			require.NotEmpty(t, spec.Description)
			require.Len(t, spec.Programs, 1)
			require.Equal(t, spec.Name, spec.Programs[0].Name)
			require.False(t, seen[spec.Name], "duplicate name")
			seen[spec.Name] = true
			assert.Equal(t, spec, LibraryProgram(spec.Name, DefaultLibraryConfig()), "Library lists LibraryProgram's programs")
			_, err := NewCollection(spec, Options{NumCPU: 2})
			require.NoError(t, err)
		})
	}
	assert.Len(t, seen, 7)
	assert.Nil(t, LibraryProgram("xdp_nope", DefaultLibraryConfig()))
	assert.Contains(t, LibraryProgram(NameDropUDPPort, LibraryConfig{DropPort: 53}).Description, "53", "the configuration reaches the program")
}

func TestProgPassDrop(t *testing.T) {
	for _, tc := range []struct {
		spec *CollectionSpec
		want Action
	}{{ProgPass(), XDPPass}, {ProgDrop(), XDPDrop}} {
		_, p := newLib(t, tc.spec, 1)
		for _, f := range [][]byte{udp4Frame(1, 2), arpFrame(), make([]byte, 14)} {
			_, res := run(t, p, f, 0)
			assert.Equal(t, tc.want, res.Action)
			assert.Equal(t, 2, res.Insns)
		}
	}
}

func TestProgTx(t *testing.T) {
	_, p := newLib(t, ProgTx(), 1)
	f := udp4Frame(1000, 2000)
	in, res := run(t, p, f, 0)
	require.Equal(t, XDPTx, res.Action)
	want := append([]byte(nil), f...)
	copy(want[0:6], f[6:12])
	copy(want[6:12], f[0:6])
	assert.Equal(t, want, packet(in, res))

	// A runt frame is passed untouched, without touching memory past data_end.
	in, res = run(t, p, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0)
	assert.Equal(t, XDPPass, res.Action)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, packet(in, res))
}

func TestProgCountProto(t *testing.T) {
	c, p := newLib(t, ProgCountProto(), 2)
	frames := []struct {
		frame []byte
		cpu   int
	}{
		{udp4Frame(1, 2), 0}, {udp4Frame(1, 2), 1}, {tcp4Frame(1, 2), 0},
		{udp6Frame(1, 2), 1}, {tcp6Frame(1, 2), 1}, {arpFrame(), 0},
		{ethFrame(macB, macA, etherTypeIPv4, make([]byte, 10)), 0}, // truncated IPv4
	}
	for _, f := range frames {
		_, res := run(t, p, f.frame, f.cpu)
		assert.Equal(t, XDPPass, res.Action)
	}
	m := c.Maps["proto_count"]
	for proto, want := range map[uint32]uint64{17: 3, 6: 2, 0: 0, 1: 0} {
		got, err := m.SumUint64(proto)
		require.NoError(t, err)
		assert.Equal(t, want, got, "proto %d", proto)
	}
	// Per CPU: UDP on CPU 0 once (v4), CPU 1 twice (v4, v6).
	v0, err := m.Value(binary.LittleEndian.AppendUint32(nil, 17), 0)
	require.NoError(t, err)
	v1, err := m.Value(binary.LittleEndian.AppendUint32(nil, 17), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), binary.LittleEndian.Uint64(v0))
	assert.Equal(t, uint64(2), binary.LittleEndian.Uint64(v1))
}

func TestProgDropUDPPort(t *testing.T) {
	c, p := newLib(t, ProgDropUDPPort(53), 1)
	ipOpts := ethFrame(macB, macA, etherTypeIPv4, ipv4Packet(17, "10.0.0.1", "10.0.0.2", []byte{1, 1, 1, 0}, udpDatagram(9, 53, nil)))
	for _, tc := range []struct {
		name  string
		frame []byte
		want  Action
	}{
		{"udp4 to port", udp4Frame(1234, 53), XDPDrop},
		{"udp6 to port", udp6Frame(1234, 53), XDPDrop},
		{"udp4 with IP options", ipOpts, XDPDrop},
		{"udp4 from port", udp4Frame(53, 1234), XDPPass},
		{"udp6 other port", udp6Frame(1234, 54), XDPPass},
		{"tcp4 to port", tcp4Frame(1234, 53), XDPPass},
		{"tcp6 to port", tcp6Frame(1234, 53), XDPPass},
		{"arp", arpFrame(), XDPPass},
		{"udp4 truncated header", udp4Frame(1234, 53)[:14+20+3], XDPPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, res := run(t, p, tc.frame, 0)
			assert.Equal(t, tc.want, res.Action)
		})
	}
	cfg, err := c.Maps["udp_drop"].Value(make([]byte, 4), 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), binary.LittleEndian.Uint64(cfg[UDPDropCounterOff:]))

	// Reconfigure from Go: the program reads the new port.
	binary.LittleEndian.PutUint32(cfg[UDPDropPortOff:], 1234)
	_, res := run(t, p, udp4Frame(1, 1234), 0)
	assert.Equal(t, XDPDrop, res.Action)
	_, res = run(t, p, udp4Frame(1, 53), 0)
	assert.Equal(t, XDPPass, res.Action)
	// Port 0 disables dropping.
	binary.LittleEndian.PutUint32(cfg[UDPDropPortOff:], 0)
	_, res = run(t, p, udp4Frame(1, 0), 0)
	assert.Equal(t, XDPPass, res.Action)
}

func TestProgRedirectCPUFixed(t *testing.T) {
	c, p := newLib(t, ProgRedirectCPU(RedirectCPUConfig{Mode: CPUFixed, CPU: 1, NumCPUs: 2, QSize: 64}), 2)
	cpumap := c.Maps["cpu_map"]
	_, res := run(t, p, udp4Frame(1, 2), 0)
	require.Equal(t, XDPRedirect, res.Action)
	assert.Equal(t, Redirect{Kind: RedirectMap, Map: cpumap, Key: 1}, res.Redirect)
	v, ok := cpumap.CPUMapEntry(1)
	require.True(t, ok)
	assert.Equal(t, uint32(64), v.QSize)

	// An empty slot gives the fallback action and clears the redirect.
	require.NoError(t, cpumap.Delete(binary.LittleEndian.AppendUint32(nil, 1)))
	_, res = run(t, p, udp4Frame(1, 2), 0)
	assert.Equal(t, XDPPass, res.Action)
	assert.Equal(t, Redirect{}, res.Redirect)
}

func TestProgRedirectCPURoundRobin(t *testing.T) {
	_, p := newLib(t, ProgRedirectCPU(RedirectCPUConfig{Mode: CPURoundRobin, NumCPUs: 3}), 3)
	var keys0, keys1 []uint32
	for i := 0; i < 7; i++ {
		_, res := run(t, p, udp4Frame(1, 2), 0)
		require.Equal(t, XDPRedirect, res.Action)
		keys0 = append(keys0, res.Redirect.Key)
		if i < 2 {
			_, res = run(t, p, udp4Frame(1, 2), 1)
			keys1 = append(keys1, res.Redirect.Key)
		}
	}
	assert.Equal(t, []uint32{0, 1, 2, 0, 1, 2, 0}, keys0)
	assert.Equal(t, []uint32{0, 1}, keys1, "each receiving CPU has its own counter")
}

// flowKey is the reference for xdp_redirect_cpu's flow hash.
func flowKey(words []uint32, ports uint32, n uint32) uint32 {
	var h uint32
	for _, w := range words {
		h ^= w
	}
	h ^= ports
	h *= 0x9e3779b1
	h ^= h >> 16
	return h % n
}

func TestProgRedirectCPUHash(t *testing.T) {
	const n = 4
	_, p := newLib(t, ProgRedirectCPU(RedirectCPUConfig{Mode: CPUHash, NumCPUs: n}), n)
	le := binary.LittleEndian
	count := make([]int, n)
	for sport := uint16(1000); sport < 1100; sport++ {
		for _, f := range [][]byte{udp4Frame(sport, 80), tcp4Frame(sport, 443), udp6Frame(sport, 80), tcp6Frame(sport, 443)} {
			_, res := run(t, p, f, 0)
			require.Equal(t, XDPRedirect, res.Action)
			var words []uint32
			var l4 []byte
			if binary.BigEndian.Uint16(f[12:]) == etherTypeIPv4 {
				words = []uint32{le.Uint32(f[26:]), le.Uint32(f[30:])}
				l4 = f[34:]
			} else {
				for off := 22; off < 54; off += 4 {
					words = append(words, le.Uint32(f[off:]))
				}
				l4 = f[54:]
			}
			assert.Equal(t, flowKey(words, le.Uint32(l4), n), res.Redirect.Key)
			count[res.Redirect.Key]++
		}
	}
	for k, c := range count {
		assert.Greater(t, c, 40, "key %d gets a share of 400 flows", k)
	}
	// Same flow, same key; non-IP goes to key 0.
	_, a := run(t, p, udp4Frame(5, 6), 0)
	_, b := run(t, p, udp4Frame(5, 6), 0)
	assert.Equal(t, a.Redirect.Key, b.Redirect.Key)
	_, res := run(t, p, arpFrame(), 0)
	assert.Equal(t, uint32(0), res.Redirect.Key)
}

func TestProgRedirectDev(t *testing.T) {
	c, p := newLib(t, ProgRedirectDev(RedirectDevConfig{Key: 5, Ifindex: 7}), 1)
	devmap := c.Maps["tx_port"]
	_, res := run(t, p, udp4Frame(1, 2), 0)
	require.Equal(t, XDPRedirect, res.Action)
	assert.Equal(t, Redirect{Kind: RedirectMap, Map: devmap, Key: 5}, res.Redirect)
	v, ok := devmap.DevMapEntry(5)
	require.True(t, ok)
	assert.Equal(t, uint32(7), v.Ifindex)

	require.NoError(t, devmap.SetDevMapEntry(5, DevMapValue{}))
	_, res = run(t, p, udp4Frame(1, 2), 0)
	assert.Equal(t, XDPPass, res.Action)
	assert.Equal(t, RedirectNone, res.Redirect.Kind)
}

// TestReadsPacket: a program that reports it does not read the packet
// gets the same result whatever the bytes; one that may read them says so.
func TestReadsPacket(t *testing.T) {
	for _, tc := range []struct {
		spec  *CollectionSpec
		reads bool
	}{
		{ProgPass(), false},
		{ProgDrop(), false},
		{ProgRedirectCPU(RedirectCPUConfig{Mode: CPUFixed, CPU: 1, NumCPUs: 2}), false},
		{ProgRedirectCPU(RedirectCPUConfig{Mode: CPURoundRobin, NumCPUs: 2}), true}, // conservative: it stores before R1 is overwritten
		{ProgRedirectCPU(RedirectCPUConfig{Mode: CPUHash, NumCPUs: 2}), true},
		{ProgTx(), true},
		{ProgDropUDPPort(53), true},
		{ProgCountProto(), true},
		{&CollectionSpec{Name: "copies ctx", Programs: []*ProgramSpec{{Name: "copies ctx", Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R2, asm.R1), asm.Mov.Imm(asm.R1, 0), asm.Mov.Imm(asm.R0, int32(XDPPass)), asm.Return()}}}}, true},
	} {
		t.Run(tc.spec.Name, func(t *testing.T) {
			_, p := newLib(t, tc.spec, 2)
			assert.Equal(t, tc.reads, p.ReadsPacket())
			if p.ReadsPacket() {
				return
			}
			frame := udp4Frame(1, 2)
			_, want := run(t, p, frame, 0)
			other := [][]byte{make([]byte, len(frame)), append(arpFrame(), make([]byte, len(frame))...)[:len(frame)], make([]byte, len(frame))}
			for i := range other[2] {
				other[2][i] = byte(i*7 + 3)
			}
			for _, f := range other {
				_, got := run(t, p, f, 0)
				assert.Equal(t, want, got, "same length, other bytes")
			}
		})
	}
}
