//go:build linux

package labsrc

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/bpf"
	"ringlab/internal/testenv"
)

// udpFrame builds an Ethernet/IPv4/UDP frame of size bytes (ihl words of
// IPv4 header, 5 without options).
func udpFrame(size int, dport uint16, ihl int) []byte {
	f := make([]byte, size)
	copy(f[0:6], macB)
	copy(f[6:12], macA)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], addrA.AsSlice())
	copy(ip[16:], addrB.AsSlice())
	udp := ip[ihl*4:]
	binary.BigEndian.PutUint16(udp[0:], FlowSrcPort)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-14-ihl*4))
	return f
}

func arpFrame() []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], macA)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	return f
}

func loadLab(t *testing.T, c Config) *ebpf.Collection {
	t.Helper()
	testenv.RequireRoot(t)
	require.NoError(t, rlimit.RemoveMemlock())
	lib, err := libraryProgram(c, 2)
	require.NoError(t, err)
	spec, err := kernelSpec(lib, FlowPort)
	require.NoError(t, err)
	coll, err := ebpf.NewCollection(spec)
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		t.Fatalf("verifier rejected the lab program around %s:\n%+v", c.Program, ve)
	}
	require.NoError(t, err)
	t.Cleanup(func() { coll.Close() })
	return coll
}

// TestDispatcherCountsVerdictsPerFlow runs the dispatcher around each
// library program in the kernel (BPF_PROG_TEST_RUN) on the lab's flow and
// on frames that are not of it, and checks that the verdict is the library
// program's and that the counts land under the flow or under "other".
func TestDispatcherCountsVerdictsPerFlow(t *testing.T) {
	testenv.RequireRoot(t)
	frames := []struct {
		name  string
		frame []byte
		flow  bool
	}{
		{"lab flow 64", udpFrame(64, FlowPort, 5), true},
		{"lab flow 1514", udpFrame(1514, FlowPort, 5), true},
		{"other port", udpFrame(64, 53, 5), false},
		{"ip options", udpFrame(64, FlowPort, 6), false},
		{"arp", arpFrame(), false},
		{"short", udpFrame(64, FlowPort, 5)[:30], false},
	}
	cases := []struct {
		prog string
		// want is the verdict the library program returns for a frame of
		// the flow, and for the others.
		flow, other bpf.Action
	}{
		{bpf.NamePass, bpf.XDPPass, bpf.XDPPass},
		{bpf.NameDrop, bpf.XDPDrop, bpf.XDPDrop},
		{bpf.NameTx, bpf.XDPTx, bpf.XDPTx},
		{bpf.NameCountProto, bpf.XDPPass, bpf.XDPPass},
		{bpf.NameDropUDPPort, bpf.XDPDrop, bpf.XDPPass},
	}
	for _, tc := range cases {
		t.Run(tc.prog, func(t *testing.T) {
			c := DefaultConfig()
			c.Program = tc.prog
			if tc.prog == bpf.NameDropUDPPort {
				c.Port = FlowPort
			}
			coll := loadLab(t, c)
			prog := coll.Programs[progName]
			require.NotNil(t, prog)
			var wantFlow, wantOther [numKeys]uint64
			for _, f := range frames {
				ret, err := prog.Run(&ebpf.RunOptions{Data: f.frame})
				require.NoError(t, err, f.name)
				want, base, counts := tc.other, keyOther, &wantOther
				if f.flow {
					want, base, counts = tc.flow, keyFlow, &wantFlow
				}
				if tc.prog == bpf.NameDropUDPPort && f.name == "ip options" {
					want = bpf.XDPDrop // the library follows IHL; the lab's flow has no options
				}
				if tc.prog == bpf.NameTx && f.name == "short" {
					want = bpf.XDPTx // 30 bytes still hold the Ethernet header
				}
				assert.Equal(t, want, bpf.Action(ret), "%s: verdict", f.name)
				counts[base+int(want)]++
				counts[base+slotBytes] += uint64(len(f.frame))
			}
			got := readVerdicts(t, coll.Maps[verdictsMap])
			for k := 0; k < numKeys; k++ {
				assert.Equal(t, wantFlow[k]+wantOther[k], got[k], "lab_verdicts[%d]", k)
			}
		})
	}
}

func readVerdicts(t *testing.T, m *ebpf.Map) [numKeys]uint64 {
	t.Helper()
	var out [numKeys]uint64
	for k := uint32(0); k < numKeys; k++ {
		var per []uint64
		require.NoError(t, m.Lookup(k, &per))
		for _, v := range per {
			out[k] += v
		}
	}
	return out
}
