package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/testenv"
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
