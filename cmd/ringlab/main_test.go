package main

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ringlab/internal/purity"
)

func TestDispatch(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no arguments prints usage to stderr", nil, exitUsage, "", "Usage: ringlab"},
		{"help lists commands", []string{"help"}, exitOK, "version", ""},
		{"help lists itself", []string{"help"}, exitOK, "\n  help        show this help", ""},
		{"--help", []string{"--help"}, exitOK, "Commands:", ""},
		{"help of a command", []string{"help", "version"}, exitOK, "Usage: ringlab version", ""},
		{"help of an unknown command", []string{"help", "nope"}, exitUsage, "", `unknown command "nope"`},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, exitOK, "ringlab dev (go", ""},
		{"version with an argument", []string{"version", "x"}, exitUsage, "", `unexpected argument "x"`},
		{"version with a bad flag", []string{"version", "--nope"}, exitUsage, "", "unknown flag: --nope"},
		{"numbers", []string{"numbers"}, exitOK, "pages.skb", ""},
		{"numbers of a name", []string{"numbers", "rx0_kicks"}, exitOK, "rxN_kicks", ""},
		{"numbers of no name", []string{"numbers", "rx_packet"}, exitUsage, "", `"rx_packet" is not a name`},
		{"numbers as the doc", []string{"numbers", "--markdown"}, exitOK, "# Numbers", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := dispatch(tc.args, &out, &errb)
			assert.Equal(t, tc.wantCode, code)
			if tc.wantStdout != "" {
				assert.Contains(t, out.String(), tc.wantStdout)
			}
			if tc.wantStderr != "" {
				assert.Contains(t, errb.String(), tc.wantStderr)
			}
			if tc.wantCode != exitOK {
				assert.False(t, strings.Contains(out.String(), "ringlab dev"), "a failing command prints nothing on stdout")
			}
		})
	}
}

// TestGNUHabits: the command line as users of ip, bpftool, perf and
// iperf3 expect it: --version, flags after the arguments, help on stdout
// when asked for, two dashes everywhere, and the one-dash spelling
// ringlab had before still understood.
func TestGNUHabits(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStdout string
	}{
		{"--version", []string{"--version"}, "ringlab dev (go"},
		{"-V", []string{"-V"}, "ringlab dev (go"},
		{"--help", []string{"--help"}, "Usage: ringlab COMMAND"},
		{"-h", []string{"-h"}, "Usage: ringlab COMMAND"},
		{"help", []string{"help"}, "Usage: ringlab COMMAND"},
		{"a command's -h", []string{"run", "-h"}, "--packets N"},
		{"a command's --help after its arguments", []string{"run", "xdp-drop", "--help"}, "--packets N"},
		{"help of a subcommand", []string{"help", "tutorial", "check"}, "-v, --verbose"},
		{"flags after the argument", []string{"run", "xdp-drop", "--packets", "1000"}, "scenario xdp-drop"},
		{"flags on both sides", []string{"run", "--packets=1000", "xdp-drop", "--json"}, `"scenario": "xdp-drop"`},
		{"the one-dash spelling", []string{"run", "-packets", "1000", "-json", "xdp-drop"}, `"scenario": "xdp-drop"`},
		{"the one-dash help", []string{"run", "-help"}, "--packets N"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, exitOK, dispatch(tc.args, &out, &errb), errb.String())
			assert.Contains(t, out.String(), tc.wantStdout)
			assert.Empty(t, errb.String(), "nothing on stderr")
		})
	}
	t.Run("--packets after the argument counts", func(t *testing.T) {
		code, out, errs := runCLI("run", "xdp-drop", "--packets", "1000", "--json")
		require.Equal(t, exitOK, code, errs)
		var s struct{ Packets uint64 }
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		assert.Less(t, s.Packets, uint64(defaultRunPackets), "not the default million")
		assert.GreaterOrEqual(t, s.Packets, uint64(1000))
	})
	t.Run("a usage error goes to stderr with a hint", func(t *testing.T) {
		code, out, errs := runCLI("run", "--packets", "many", "xdp-drop")
		assert.Equal(t, exitUsage, code)
		assert.Empty(t, out)
		assert.Contains(t, errs, `ringlab run: invalid argument "many" for "--packets`)
		assert.Contains(t, errs, "ringlab run --help")
	})
}

// TestOneDashStyle: every command's help spells its flags with two
// dashes, in the usage line and the flag list alike, and lists every
// flag its usage line names.
func TestOneDashStyle(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			if s.DisableFlagParsing {
				continue // parses its own (bench)
			}
			t.Run(s.CommandPath(), func(t *testing.T) {
				var out bytes.Buffer
				args := append(strings.Fields(s.CommandPath())[1:], "--help")
				require.Equal(t, exitOK, dispatch(args, &out, io.Discard))
				help := out.String()
				assert.NotRegexp(t, `(?m)^\s+-[a-z][a-z-]+\b`, help, "a flag listed with one dash")
				assert.NotRegexp(t, `[\[ |]-[a-z][a-z-]+\b`, strings.SplitN(help, "\n", 2)[0], "a flag in the usage line with one dash")
				if s.HasAvailableSubCommands() {
					return // the usage lines are the subcommands'
				}
				for _, m := range regexp.MustCompile(`--([a-z][a-z-]+)`).FindAllStringSubmatch(strings.SplitN(help, "\n\n", 2)[0], -1) {
					assert.Contains(t, help, "  --"+m[1], "--%s of the usage line is in the flag list", m[1])
				}
			})
			walk(s)
		}
	}
	walk(root)
}

// TestShippedBinaryLinksNoBrowserDriver: ringlab does not link chromedp
// nor the bench that drives Chromium with it: ringlab-bench is a binary
// of its own, and ringlab bench says so.
func TestShippedBinaryLinksNoBrowserDriver(t *testing.T) {
	purity.Deps(t, "ringlab/cmd/ringlab", "", "", []string{"github.com/chromedp/", "ringlab/internal/bench"})

	code, out, errs := runCLI("bench", "--quick")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "ringlab bench is now ringlab-bench")
}
