package abuse

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// runCLI runs the binary with args for at most limit; it returns stderr,
// whether it finished in time, and its peak resident memory.
func runCLI(t *testing.T, limit time.Duration, args ...string) (stderr string, done bool, peak int64, took time.Duration) {
	t.Helper()
	bin, _ := binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errb
	start := time.Now()
	cmd.Run()
	took = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss << 10
	}
	return errb.String(), ctx.Err() == nil, peak, took
}

// TestLargeScenarioFile: a file past the 1 MiB a scenario may have is
// refused as too large, not as broken JSON.
func TestLargeScenarioFile(t *testing.T) {
	t.Parallel()
	s := scenario.Default()
	s.Description = strings.Repeat("x", 3<<19)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	stderr, done, _, _ := runCLI(t, 30*time.Second, "run", "--packets", "10", path)
	require.True(t, done)
	t.Logf("stderr: %s", stderr)
	assert.Contains(t, stderr, "larger than")
	assert.NotContains(t, stderr, "unexpected EOF")
}

// TestTraceMemory: --trace at its maximum on the largest valid scenario
// (its world alone is 2.3 GiB; the short form takes one of 4 queues)
// needs about what the run without a trace needs: the events are written
// as they come, and what they leave behind is collected, not held.
func TestTraceMemory(t *testing.T) {
	t.Parallel()
	s := scenario.Default()
	s.CPUs, s.Queues, s.RingSize, s.TxRingSize = 64, 64, 32768, 32768
	s.Traffic.Flows = 64
	s.MemoryPages = scenario.MaxMemoryPages
	if !full() {
		s.CPUs, s.Queues, s.RingSize, s.TxRingSize, s.Traffic.Flows, s.MemoryPages = 4, 4, 4096, 4096, 4, 1<<18
	}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "largest.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, done, world, _ := runCLI(t, 5*time.Minute, "run", "--json", "--packets", "1", path)
	require.True(t, done)
	n := scale(10000, 100000)
	stderr, done, peak, took := runCLI(t, 5*time.Minute, "run", "--json", "--trace", fmt.Sprint(n), "--packets", "1", path)
	figure(t, fmt.Sprintf("peak memory of run --trace %d --json on the largest scenario", n), float64(peak)/(1<<30), "GiB",
		fmt.Sprintf("%v; %.2f GiB without the trace; %s", took.Round(time.Millisecond), float64(world)/(1<<30), firstLine(stderr)))
	require.True(t, done, "finished")
	assert.Less(t, peak, world*13/10+256<<20, "bounded by what the world needs, not the trace")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// loopingObject writes a copy of the test XDP object whose first program
// ends in a loop: its "r0 = XDP_PASS" before exit becomes "if r10 != 0
// goto self", a jump that is always taken (r10 is the frame pointer). The
// exit stays reachable as far as a static check can tell; the kernel's
// verifier refuses the loop, an interpreter runs it until its instruction
// budget.
func loopingObject(t *testing.T) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "engine", "bpf", "testdata", "xdp_filter.o")
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	passExit := []byte{0xb4, 0x00, 0, 0, 2, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0} // w0 = 2; exit
	patched := false
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		body := b[sec.Offset : sec.Offset+sec.Size]
		if i := bytes.Index(body, passExit); i >= 0 && i%8 == 0 {
			copy(body[i:], []byte{0x55, 0x0a, 0xff, 0xff, 0, 0, 0, 0}) // if r10 != 0 goto -1
			patched = true
			break
		}
	}
	require.True(t, patched, "a program returning XDP_PASS")
	out := filepath.Join(t.TempDir(), "loop.o")
	require.NoError(t, os.WriteFile(out, b, 0o644))
	return out
}

// TestLoopingXDPObject: a program that never exits ends the run with an
// error that says so, within seconds.
func TestLoopingXDPObject(t *testing.T) {
	t.Parallel()
	obj := loopingObject(t)
	limit := 60 * time.Second
	stderr, done, _, took := runCLI(t, limit, "run", "--packets", "1000000", "--xdp-object", obj, "xdp-pass")
	figure(t, "run of a looping XDP object", took.Seconds(), "s", fmt.Sprintf("finished=%v: %s", done, firstLine(stderr)))
	require.True(t, done, "the run ends within %v", limit)
	assert.Contains(t, stderr, "instruction budget")
}

// TestXDPObjectFIFO: --xdp-object on a named pipe is refused at once,
// not read for ever.
func TestXDPObjectFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "prog.o")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	stderr, done, _, took := runCLI(t, 10*time.Second, "run", "--packets", "10", "--xdp-object", fifo, "xdp-pass")
	figure(t, "run --xdp-object FIFO", took.Seconds(), "s", fmt.Sprintf("finished=%v: %s", done, firstLine(stderr)))
	require.True(t, done, "refused, not blocked")
	assert.Contains(t, stderr, "not a regular file")
	// The scenario argument too.
	fifo2 := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, syscall.Mkfifo(fifo2, 0o644))
	stderr, done, _, _ = runCLI(t, 10*time.Second, "run", "--packets", "10", fifo2)
	require.True(t, done)
	assert.Contains(t, stderr, "not a regular file")
}
