package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version and build information",
		Long:  "Prints the version, the Go version and the source revision (as --version does).",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintln(c.OutOrStdout(), versionLine())
			return nil
		},
	}
}

// versionLine is what `ringlab version` and `ringlab --version` print.
func versionLine() string {
	rev, ok := vcsSetting("vcs.revision")
	if !ok {
		rev = "unknown"
	}
	if m, _ := vcsSetting("vcs.modified"); m == "true" {
		rev += "+modified"
	}
	return fmt.Sprintf("ringlab %s (%s, %s/%s, revision %s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
}

// vcsSetting is a build setting the go command recorded (vcs.revision,
// vcs.time, vcs.modified).
func vcsSetting(key string) (string, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value, true
		}
	}
	return "", false
}
