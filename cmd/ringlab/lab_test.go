package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
	"ringlab/server/labsrc"
)

func TestLabCommandArguments(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no subcommand", []string{"lab"}, exitUsage, "", "Usage: ringlab lab run"},
		{"help", []string{"help", "lab"}, exitOK, "programs: [xdp_count_proto", ""},
		{"help of run", []string{"lab", "run", "--help"}, exitOK, "--for D", ""},
		{"unknown subcommand", []string{"lab", "start"}, exitUsage, "", `unknown subcommand "start"`},
		{"bad spec", []string{"lab", "run", "xdp_drop,rate=0"}, exitUsage, "", "rate=0: want 1..1000000"},
		{"two specs", []string{"lab", "run", "xdp_drop", "xdp_pass"}, exitUsage, "", "one SPEC at most"},
		{"bad for", []string{"lab", "run", "--for", "0s"}, exitUsage, "", "--for must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tc.wantCode, dispatch(tc.args, &out, &errb))
			assert.Contains(t, out.String(), tc.wantStdout)
			assert.Contains(t, errb.String(), tc.wantStderr)
		})
	}
	var out bytes.Buffer
	assert.Equal(t, exitOK, dispatch([]string{"lab", "list"}, &out, &bytes.Buffer{}))
}

func TestLabCommandRun(t *testing.T) {
	testenv.RequireRoot(t)
	var out, errb bytes.Buffer
	code := dispatch([]string{"lab", "run", "xdp_drop,rate=20000,count=2000"}, &out, &errb)
	assert.Equal(t, exitOK, code, errb.String())
	assert.Contains(t, out.String(), "sent 2000 packets of 64 bytes")
	// Every frame that left the sender reached the program and was
	// dropped: on a loaded machine lab-a's full veth ring may drop a few
	// before they leave (lab_a_tx_dropped), so count what it sent.
	m := regexp.MustCompile(`(?m)^\s+lab_a_tx_packets\s+(\d+)$`).FindStringSubmatch(out.String())
	require.Len(t, m, 2, "lab_a_tx_packets in the output")
	left, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, left, 1900, "most of the 2000 frames leave the sender")
	assert.Contains(t, out.String(), fmt.Sprintf("the program counted %d of them: pass 0, drop %d", left, left))
	assert.Contains(t, out.String(), "the receiving socket got 0")
	assert.Contains(t, out.String(), "removed ringlab-lab-")
}

// TestLabRunCleansUp: ringlab lab run removes its namespaces however it
// is stopped: its stdout's reader going away (lab run | head), which
// used to kill it with SIGPIPE at its next write, namespaces left up;
// and SIGTERM. It runs this test binary as ringlab, as root.
func TestLabRunCleansUp(t *testing.T) {
	testenv.RequireRoot(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name     string
		stop     func(cmd *exec.Cmd, out *os.File)
		wantCode int
		wantErr  string
		readAll  bool
	}{
		{"the reader goes", func(_ *exec.Cmd, out *os.File) { out.Close() }, exitFail, "broken pipe; stopped and removed ringlab-lab-", false},
		{"SIGTERM", func(cmd *exec.Cmd, _ *os.File) { cmd.Process.Signal(syscall.SIGTERM) }, exitOK, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A sender of 20 s: only the stop ends the run early.
			cmd := exec.Command(exe, "lab", "run", "xdp_drop,rate=1000,count=20000")
			cmd.Env = append(os.Environ(), asRinglabEnv+"=1")
			r, w, err := os.Pipe()
			require.NoError(t, err)
			// A file, not a buffer: the test reads it after the process
			// is gone, with nothing copying into it meanwhile.
			errf, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			require.NoError(t, err)
			defer errf.Close()
			stderr := func() string { b, _ := os.ReadFile(errf.Name()); return string(b) }
			cmd.Stdout, cmd.Stderr = w, errf
			require.NoError(t, cmd.Start())
			w.Close()
			done := make(chan error, 1)
			t.Cleanup(func() { // a failing test still removes the lab
				cmd.Process.Signal(syscall.SIGTERM)
				<-done
			})
			rd := bufio.NewReader(r)
			first, err := rd.ReadString('\n')
			if err != nil {
				go func() { done <- cmd.Wait() }()
				require.NoError(t, err, "the lab's first line")
			}
			assert.True(t, strings.HasPrefix(first, "lab:xdp_drop,"), first)
			tc.stop(cmd, r)
			var rest []byte
			if tc.readAll {
				rest, _ = io.ReadAll(rd)
				r.Close()
			}
			waited := make(chan error, 1)
			go func() { err := cmd.Wait(); waited <- err; done <- err }()
			select {
			case <-waited:
			case <-time.After(15 * time.Second): // the sender alone takes 20
				t.Fatalf("lab run did not stop; stderr: %s", stderr())
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			assert.False(t, ws.Signaled(), "killed by %v; stderr: %s", ws.Signal(), stderr())
			assert.Equal(t, tc.wantCode, cmd.ProcessState.ExitCode(), stderr())
			assert.Contains(t, stderr(), tc.wantErr)
			if tc.readAll {
				assert.Contains(t, string(rest), "removed ringlab-lab-")
			}
			names, err := labsrc.Namespaces()
			require.NoError(t, err)
			for _, n := range names {
				if pid, _, ok := labsrc.NamespaceOwner(n); ok && pid == cmd.Process.Pid {
					t.Errorf("%s is left", n)
					labsrc.CleanLeftovers() // its process is gone
				}
			}
		})
	}
}
