package bpf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func benchRun(b *testing.B, spec *CollectionSpec, frame []byte, want Action) {
	_, p := newLib(b, spec, 2)
	in := newInput(frame)
	var res Result
	p.Run(in, &res)
	require.Equal(b, want, res.Action, "fault: %v", res.Fault)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPUNanos()
	var acts Action
	for i := 0; i < b.N; i++ {
		p.Run(in, &res)
		acts += res.Action
	}
	cpu := processCPUNanos() - cpu0
	b.StopTimer()
	require.Equal(b, want*Action(b.N), acts)
	b.ReportMetric(float64(res.Insns), "insns/run")
	if cpu > 0 {
		// ns/op is wall time; on a shared machine this is the fairer figure.
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkRunDrop(b *testing.B) {
	benchRun(b, ProgDrop(), udp4Frame(1, 2), XDPDrop)
}

func BenchmarkRunCountProto(b *testing.B) {
	benchRun(b, ProgCountProto(), udp4Frame(1, 2), XDPPass)
}

func BenchmarkRunRedirectCPUHash(b *testing.B) {
	benchRun(b, ProgRedirectCPU(RedirectCPUConfig{Mode: CPUHash, NumCPUs: 2}), udp6Frame(1, 2), XDPRedirect)
}

func BenchmarkRunDropUDPPort(b *testing.B) {
	benchRun(b, ProgDropUDPPort(2), udp4Frame(1, 2), XDPDrop)
}
