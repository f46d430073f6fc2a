package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
		{"--help", []string{"--help"}, exitOK, "Commands:", ""},
		{"help of a command", []string{"help", "version"}, exitOK, "", "Usage: ringlab version"},
		{"help of an unknown command", []string{"help", "nope"}, exitUsage, "", `unknown command "nope"`},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, exitOK, "ringlab dev (go", ""},
		{"version with an argument", []string{"version", "x"}, exitUsage, "", `unexpected argument "x"`},
		{"version with a bad flag", []string{"version", "--nope"}, exitUsage, "", "flag provided but not defined"},
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
