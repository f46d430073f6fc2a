package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// benchPreset runs a preset one packet per iteration after a warm-up, and
// reports simulated packets per second of wall time.
func benchPreset(b *testing.B, name string) {
	s, err := scenario.LookupPreset(name)
	require.NoError(b, err)
	w, err := New(s)
	require.NoError(b, err)
	require.NoError(b, w.RunPackets(100_000))
	b.ReportAllocs()
	b.ResetTimer()
	start := w.Received()
	require.NoError(b, w.RunPackets(uint64(b.N)))
	b.StopTimer()
	got := w.Received() - start
	b.ReportMetric(float64(got)/b.Elapsed().Seconds()/1e6, "Mpps")
}

func BenchmarkPresetXDPDrop(b *testing.B) { benchPreset(b, "xdp-drop") }
func BenchmarkPresetXDPPass(b *testing.B) { benchPreset(b, "xdp-pass") }
func BenchmarkPresetCpumap(b *testing.B)  { benchPreset(b, "cpumap") }

// A TCP stream into big buffers on a vDPA ring: the sender model, the
// socket and the receive window in the loop.
func BenchmarkPresetTCPStream(b *testing.B) { benchPreset(b, "r2-mtu9000-after") }

// A TCP stream through a cpumap on vhost-net.
func BenchmarkPresetTCPCpumap(b *testing.B) { benchPreset(b, "r1-upstream") }
