package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/device"
	"ringlab/internal/capture"
	"ringlab/internal/testenv"
)

// testFrames are the fixture's frames: drop UDP frames to port 9 (the
// discard port, which xdp_drop_udp_port drops) of 64 and 1514 bytes, then
// pass UDP frames to port 53 of 128 bytes, 10 µs apart from 1.5 s past
// the epoch; frame i of flow i%5.
func testFrames(drop, pass int) []capture.Out {
	var out []capture.Out
	for i := 0; i < drop+pass; i++ {
		port, size := uint16(9), 64
		if i%2 == 1 {
			size = 1514
		}
		if i >= drop {
			port, size = 53, 128
		}
		f := device.MakeFlow(i%5, false, device.ProtoUDP, port)
		b := make([]byte, size)
		f.Build(b, uint64(i), size)
		out = append(out, capture.Out{Time: 1_500_000_000 + int64(i)*10_000, Len: size, Data: b})
	}
	return out
}

// writePcap writes pkts as a classic pcap (microsecond timestamps).
func writePcap(t *testing.T, pkts []capture.Out) string {
	var b bytes.Buffer
	le := binary.LittleEndian
	h := le.AppendUint32(nil, 0xa1b2c3d4)
	h = le.AppendUint16(h, 2)
	h = le.AppendUint16(h, 4)
	h = append(h, make([]byte, 8)...)
	h = le.AppendUint32(h, 262144)
	h = le.AppendUint32(h, 1)
	b.Write(h)
	for _, p := range pkts {
		r := le.AppendUint32(nil, uint32(p.Time/1e9))
		r = le.AppendUint32(r, uint32(p.Time%1e9/1000))
		r = le.AppendUint32(r, uint32(len(p.Data)))
		r = le.AppendUint32(r, uint32(p.Len))
		b.Write(r)
		b.Write(p.Data)
	}
	path := filepath.Join(t.TempDir(), "in.pcap")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

func writePcapng(t *testing.T, pkts []capture.Out) string {
	var b bytes.Buffer
	require.NoError(t, capture.WritePcapng(&b, "test", "eth0", pkts))
	path := filepath.Join(t.TempDir(), "in.pcapng")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

type pcapJSON struct {
	Counters map[string]uint64 `json:"counters"`
	Pcap     pcapReport        `json:"pcap"`
}

func runPcapJSON(t *testing.T, args ...string) pcapJSON {
	t.Helper()
	code, out, errs := runCLI(append([]string{"run", "--json"}, args...)...)
	require.Equal(t, exitOK, code, errs)
	var got pcapJSON
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	return got
}

// TestRunPcapVerdicts: a capture of known frames through xdp-drop and
// xdp-pass, from pcap and pcapng, gets every frame that preset's verdict,
// in the frames' records and in the driver's counters.
func TestRunPcapVerdicts(t *testing.T) {
	pkts := testFrames(50, 30)
	for _, file := range []string{writePcap(t, pkts), writePcapng(t, pkts)} {
		got := runPcapJSON(t, "--pcap", file, "xdp-drop")
		assert.Equal(t, 80, got.Pcap.Frames)
		assert.Equal(t, map[string]int{"dropped": 80}, got.Pcap.Fates, file)
		assert.Equal(t, map[string]int{"XDP_DROP": 80}, got.Pcap.Verdicts)
		assert.Equal(t, map[string]int{"xdp_drop": 80}, got.Pcap.Reasons)
		assert.EqualValues(t, 80, got.Counters["rx_xdp_drops"])
		assert.Empty(t, got.Pcap.Records, "records only with --pcap-verbose")

		// Cut short by --duration, the frames not yet taken are pending.
		got = runPcapJSON(t, "--pcap", file, "--duration", "500us", "xdp-drop")
		assert.Positive(t, got.Pcap.Fates["pending"])
		assert.Positive(t, got.Pcap.Fates["dropped"])
		assert.Equal(t, 80, got.Pcap.Fates["pending"]+got.Pcap.Fates["dropped"])
		assert.EqualValues(t, got.Pcap.Fates["dropped"], got.Counters["rx_xdp_drops"])

		got = runPcapJSON(t, "--pcap", file, "xdp-pass")
		assert.Equal(t, map[string]int{"delivered": 80}, got.Pcap.Fates, file)
		assert.Equal(t, map[string]int{"XDP_PASS": 80}, got.Pcap.Verdicts)
		assert.EqualValues(t, 80, got.Counters["rx_xdp_packets"])
	}
}

// TestRunPcapProgramReadsTheBytes: a program that parses the frame drops
// the frames to its port only, and each frame's record says what it read:
// from the EtherType to the UDP destination port.
func TestRunPcapProgramReadsTheBytes(t *testing.T) {
	file := writePcap(t, testFrames(50, 30))
	got := runPcapJSON(t, "--pcap", file, "--pcap-verbose", "--pcap-rate", "100000",
		"--set", `xdp={"program":"xdp_drop_udp_port","args":{"port":"9"}}`, "xdp-pass")
	assert.Equal(t, map[string]int{"XDP_DROP": 50, "XDP_PASS": 30}, got.Pcap.Verdicts)
	require.Len(t, got.Pcap.Records, 80)
	for i, r := range got.Pcap.Records {
		assert.Equal(t, i+1, r.N)
		assert.Equal(t, int64(i)*10_000, r.ArrivalNS, "100000 pps: 10 µs apart")
		require.NotNil(t, r.Read, "frame %d", i)
		assert.LessOrEqual(t, r.Read.Lo, 12)
		assert.Equal(t, 38, r.Read.Hi, "frame %d reads up to the UDP destination port", i)
		assert.Nil(t, r.Wrote)
		want := "udp 10.1.0.%d:%d > 10.2.0.1:%d"
		port := 9
		if i >= 50 {
			port = 53
		}
		assert.Equal(t, fmt.Sprintf(want, i%5, 10000+i%5, port), r.Flow)
	}
	assert.Equal(t, 1514, got.Pcap.Records[1].Len)

	// The text says the same, a line a frame.
	code, out, errs := runCLI("run", "--pcap", file, "--pcap-verbose",
		"--set", `xdp={"program":"xdp_drop_udp_port","args":{"port":"9"}}`, "xdp-pass")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "#1 udp 10.1.0.0:10000 > 10.2.0.1:9 64 bytes q0 at 0s: dropped XDP_DROP (xdp_drop), read 12-37")
	assert.Contains(t, out, "#80 udp 10.1.0.4:10004 > 10.2.0.1:53 128 bytes q0 at 790µs: delivered XDP_PASS, read 12-37")
	assert.Regexp(t, `verdict\s+frames\nXDP_DROP\s+50\nXDP_PASS\s+30`, out)
}

// TestRunPcapOut: --pcap-out writes every frame as captured with its
// fate, verdict and reason in its comment; tcpdump reads it, and so does
// pcapgo's reader, comments included.
func TestRunPcapOut(t *testing.T) {
	pkts := testFrames(4, 3)
	out := filepath.Join(t.TempDir(), "out.pcapng")
	code, _, errs := runCLI("run", "--pcap", writePcap(t, pkts), "--pcap-out", out,
		"--set", `xdp={"program":"xdp_drop_udp_port","args":{"port":"9"}}`, "xdp-pass")
	require.Equal(t, exitOK, code, errs)

	b, err := os.ReadFile(out)
	require.NoError(t, err)
	r, err := pcapgo.NewNgReader(bytes.NewReader(b), pcapgo.DefaultNgReaderOptions)
	require.NoError(t, err)
	for i := range pkts {
		data, ci, opts, err := r.ReadPacketDataWithOptions()
		require.NoError(t, err)
		assert.Equal(t, pkts[i].Data, data)
		assert.Equal(t, pkts[i].Len, ci.Length)
		require.Len(t, opts.Comments, 1)
		if i < 4 {
			assert.Contains(t, opts.Comments[0], "ringlab: fate=dropped verdict=XDP_DROP reason=xdp_drop queue=0")
		} else {
			assert.Contains(t, opts.Comments[0], "ringlab: fate=delivered verdict=XDP_PASS queue=0")
		}
	}

	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		testenv.Missing(t, "tcpdump (apt-get install -y tcpdump) to read the written capture")
		return
	}
	cmd := exec.Command(tcpdump, "-r", out, "-nn", "-v", "-tt")
	text, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", text)
	lines := strings.Split(string(text), "\n")
	var pktLines []string
	for _, l := range lines {
		if strings.Contains(l, "10.2.0.1.") {
			pktLines = append(pktLines, l)
		}
	}
	require.Len(t, pktLines, 7, "%s", text)
	assert.Contains(t, pktLines[0], "10.1.0.0.10000 > 10.2.0.1.9: UDP")
	assert.Contains(t, pktLines[6], "10.1.0.1.10001 > 10.2.0.1.53")
	t.Logf("tcpdump:\n%s", text)
}

// TestRunPcapRefusesBadCaptures: a truncated or malformed capture is a
// usage error naming the byte offset; nothing runs.
func TestRunPcapRefusesBadCaptures(t *testing.T) {
	file := writePcap(t, testFrames(3, 0))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	require.NoError(t, os.WriteFile(cut, b[:24+16+64+16+100], 0o644))
	code, _, errs := runCLI("run", "--pcap", cut, "xdp-drop")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "cut.pcap: capture: at byte offset 104: truncated: the record holds 1514 captured bytes, the file has 100 left")

	junk := filepath.Join(t.TempDir(), "junk.pcap")
	require.NoError(t, os.WriteFile(junk, []byte("not a capture at all"), 0o644))
	code, _, errs = runCLI("run", "--pcap", junk, "xdp-drop")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "at byte offset 0: magic number")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pcap-out", "x.pcapng"}, "--pcap-out needs --pcap"},
		{[]string{"--pcap", file, "--packets", "10"}, "exclusive"},
		{[]string{"--pcap", file, "--pcap-rate", "-1"}, "--pcap-rate -1"},
		{[]string{"--pcap", file, "--set", "traffic.kind=tcp_stream", "--set", "traffic.proto=tcp"}, "traffic.kind"},
	} {
		code, _, errs := runCLI(append(append([]string{"run"}, c.args...), "default")...)
		assert.Equal(t, exitUsage, code, c.args)
		assert.Contains(t, errs, c.want, c.args)
	}
}
