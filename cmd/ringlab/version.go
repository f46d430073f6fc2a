package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: ringlab version\n\nPrints the version, the Go version and the source revision.")
	}
	if code, ok := parseFlagsOnly(fs, args, stderr, "ringlab version"); !ok {
		return code
	}
	rev, dirty := "unknown", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if dirty {
		rev += "+modified"
	}
	fmt.Fprintf(stdout, "ringlab %s (%s, %s/%s, revision %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
	return exitOK
}
