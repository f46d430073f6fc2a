package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/tutorials"
)

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

const tutorialHead = "---\ntitle: T\nlevel: beginner\nduration: 5 min\nlearn:\n- x\n---\n\n"

func writeTutorial(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(tutorialHead+body), 0o644))
	return p
}

func TestTutorialCommand(t *testing.T) {
	good := writeTutorial(t, "50-good.md", "## Step 1: s\n```ringlab\npreset default\nrun packets=10\ncheck rx_packets >= 10\n```\n")
	failing := writeTutorial(t, "51-failing.md", "## Step 1: s\n```ringlab\npreset default\nrun packets=10\ncheck rx_packets > 1000000\n```\n")
	malformed := writeTutorial(t, "52-bad.md", "## Step 1: s\n```ringlab\npreset default\nfrobnicate\ncheck rx_packets >= 0\n```\n")
	// A lesson need not be called NN-name.md, nor .md at all.
	plain := writeTutorial(t, "my lesson.txt", "## Step 1: s\n```ringlab\npreset default\nrun packets=10\ncheck rx_packets >= 10\n```\n")
	dir := t.TempDir()
	binary := filepath.Join(dir, "capture.md")
	require.NoError(t, os.WriteFile(binary, []byte("---\ntitle: T\n\x00\x01\x02"), 0o644))
	huge := filepath.Join(dir, "huge.md")
	require.NoError(t, os.WriteFile(huge, bytes.Repeat([]byte("a\n"), tutorials.MaxLessonBytes/2+1), 0o644))
	missing := filepath.Join(dir, "missing.md")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no subcommand", []string{"tutorial"}, exitUsage, "", "Usage: ringlab tutorial"},
		{"help", []string{"help", "tutorial"}, exitOK, "Usage: ringlab tutorial", ""},
		{"unknown subcommand", []string{"tutorial", "frob"}, exitUsage, "", `unknown subcommand "frob"`},
		{"list", []string{"tutorial", "list"}, exitOK, "descriptor-journey", ""},
		{"list extra argument", []string{"tutorial", "list", "x"}, exitUsage, "", `unexpected argument "x"`},
		{"run by number", []string{"tutorial", "run", "--no-prose", "1"}, exitOK, "ok    answer rq0.avail_idx == rq0.size   [16 == 16]", ""},
		{"run unknown", []string{"tutorial", "run", "nope"}, exitFail, "", `no tutorial "nope"`},
		{"run without a name", []string{"tutorial", "run"}, exitUsage, "", "want one tutorial name or file"},
		{"run a file", []string{"tutorial", "run", good}, exitOK, "1 checks, 0 failed", ""},
		{"run a failing file", []string{"tutorial", "run", failing}, exitFail, "FAIL  check rx_packets > 1000000", "51-failing.md:13: step 1: fail"},
		{"check files", []string{"tutorial", "check", good}, exitOK, "1 tutorials, 1 checks, 0 failed", ""},
		{"check a failing file", []string{"tutorial", "check", good, failing}, exitFail, "2 tutorials, 2 checks, 1 failed", "51-failing.md:13:"},
		{"check a malformed file", []string{"tutorial", "check", malformed}, exitFail, "1 files that do not parse", "52-bad.md:12: unknown directive \"frobnicate\""},
		{"check a file of any name", []string{"tutorial", "check", plain}, exitOK, "1 tutorials, 1 checks, 0 failed", ""},
		{"check a binary file", []string{"tutorial", "check", binary}, exitFail, "1 files that do not parse", "capture.md:3: not Markdown text: control byte 0x00 at byte 13"},
		{"check a file past the limit", []string{"tutorial", "check", huge}, exitFail, "1 files that do not parse", "huge.md:1: larger than 262144 bytes"},
		{"check a missing file", []string{"tutorial", "check", missing}, exitFail, "1 files that do not parse", "no such file"},
		{"check a good and a bad file", []string{"tutorial", "check", good, malformed}, exitFail, "1 tutorials, 1 checks, 0 failed, 1 files that do not parse", "52-bad.md:12:"},
		{"check verbose", []string{"tutorial", "check", "-v", good}, exitOK, "== Step 1: s", ""},
		{"export", []string{"tutorial", "export", "receive-modes"}, exitOK, `"directives"`, ""},
		{"export unknown", []string{"tutorial", "export", "nope"}, exitFail, "", `no tutorial "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCmd(tc.args...)
			assert.Equal(t, tc.wantCode, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			if tc.wantStdout != "" {
				assert.Contains(t, out, tc.wantStdout)
			}
			if tc.wantStderr != "" {
				assert.Contains(t, errs, tc.wantStderr)
			}
		})
	}
}

func TestTutorialListJSON(t *testing.T) {
	code, out, _ := runCmd("tutorial", "list", "--json")
	require.Equal(t, exitOK, code)
	var list []struct {
		Number int    `json:"number"`
		Name   string `json:"name"`
		Steps  int    `json:"steps"`
		Checks int    `json:"checks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 10)
	for i, e := range list {
		assert.Equal(t, i+1, e.Number)
		assert.Positive(t, e.Steps, e.Name)
		assert.Positive(t, e.Checks, e.Name)
	}
}

func TestTutorialRunJSON(t *testing.T) {
	code, out, _ := runCmd("tutorial", "run", "--json", "descriptor-journey")
	require.Equal(t, exitOK, code)
	var r struct {
		Checks int `json:"checks"`
		Failed int `json:"failed"`
		Steps  []struct {
			Items []struct {
				Op     string `json:"op"`
				Status string `json:"status"`
			} `json:"items"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Positive(t, r.Checks)
	assert.Zero(t, r.Failed)
	assert.NotEmpty(t, r.Steps)
}

func TestReadHost(t *testing.T) {
	_, err := readHost("nosuchif0")
	require.Error(t, err)
	if runtime.GOOS != "linux" {
		return
	}
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Skipf("no /sys/class/net/lo here: %v", err)
	}
	vals, err := readHost("lo")
	require.NoError(t, err)
	assert.Contains(t, vals, "rx_packets")
	assert.Contains(t, vals, "ethtool_count")
	assert.Equal(t, 0.0, vals["ethtool_count"], "lo has no driver statistics")
}
