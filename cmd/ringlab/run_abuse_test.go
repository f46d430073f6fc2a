package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/engine/scenario"
)

// TestRunRefusesLargeScenarioFiles: a scenario file past 1 MiB is refused
// as too large, not read cut short and called broken JSON.
func TestRunRefusesLargeScenarioFiles(t *testing.T) {
	s := scenario.Default()
	s.Description = strings.Repeat("x", 3<<19)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	code, _, errs := runCLI("run", "--packets", "10", path)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "larger than the 1048576 (1 MiB) a scenario may have")
	assert.NotContains(t, errs, "unexpected EOF")
}

// TestRunRefusesNonRegularFiles: a named pipe as the scenario or the XDP
// object is refused at once; reading it would wait for a writer for ever.
func TestRunRefusesNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	for _, args := range [][]string{
		{"run", "--packets", "10", "--xdp-object", fifo, "xdp-pass"},
		{"run", "--packets", "10", fifo},
		{"run", "--packets", "10", "--xdp-object", dir, "xdp-pass"},
	} {
		done := make(chan string, 1)
		go func() {
			_, _, errs := runCLI(args...)
			done <- errs
		}()
		select {
		case errs := <-done:
			assert.Contains(t, errs, "not a regular file", args)
		case <-time.After(10 * time.Second):
			t.Fatalf("%v blocked", args)
		}
	}
}

// loopingObject writes a copy of the test XDP object whose first program
// ends in "if r10 != 0 goto self" instead of "r0 = XDP_PASS": always
// taken (r10 is the frame pointer), a loop the verifier refuses.
func loopingObject(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../engine/bpf/testdata/xdp_filter.o")
	require.NoError(t, err)
	f, err := elf.NewFile(bytes.NewReader(b))
	require.NoError(t, err)
	passExit := []byte{0xb4, 0x00, 0, 0, 2, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0}
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		body := b[sec.Offset : sec.Offset+sec.Size]
		if i := bytes.Index(body, passExit); i >= 0 && i%8 == 0 {
			copy(body[i:], []byte{0x55, 0x0a, 0xff, 0xff, 0, 0, 0, 0})
			out := filepath.Join(t.TempDir(), "loop.o")
			require.NoError(t, os.WriteFile(out, b, 0o644))
			return out
		}
	}
	t.Fatal("no program returning XDP_PASS")
	return ""
}

// TestRunStopsALoopingXDPProgram: a program that never exits ends the run
// with an error saying so after its first packet, instead of running
// 65536 instructions on each of a million packets (minutes).
func TestRunStopsALoopingXDPProgram(t *testing.T) {
	obj := loopingObject(t)
	start := time.Now()
	code, _, errs := runCLI("run", "--packets", "1000000", "--xdp-object", obj, "xdp-pass")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs, "ran out of its instruction budget (65536 instructions on one packet")
	assert.Contains(t, errs, "it loops")
	assert.Less(t, time.Since(start), 20*time.Second)
	code, _, errs = runCLI("run", "--duration", "1s", "--xdp-object", obj, "xdp-pass")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs, "instruction budget")
}
