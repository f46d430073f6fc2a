package labsrc

import (
	"errors"
	"fmt"
	"os"

	"ringlab/server/metrics"
)

// ErrNotRoot is returned by Open when the process is not root.
var ErrNotRoot = errors.New("lab: needs root")

// ErrNamespaceGone is returned by Sample once a lab namespace was removed
// (or replaced) by someone else; the lab then stops sending, and Close
// still releases what is left.
var ErrNamespaceGone = errors.New("lab namespace removed from outside the lab")

// geteuid is the effective uid check Open makes; tests replace it.
var geteuid = os.Geteuid

// checkRoot refuses a uid other than 0, saying why root is needed.
func checkRoot(uid func() int) error {
	if u := uid(); u != 0 {
		return fmt.Errorf("%w (running as uid %d): the lab creates network namespaces and a veth pair and loads an XDP program into the kernel; run ringlab as root, or choose the sim or host:IFNAME source", ErrNotRoot, u)
	}
	return nil
}

// Open opens "lab" or "lab:SPEC" for the server's registry (see ParseSpec
// for SPEC). It refuses without root before touching anything.
func Open(arg string) (metrics.Source, error) {
	c, err := ParseSpec(arg)
	if err != nil {
		return nil, err
	}
	if err := checkRoot(geteuid); err != nil {
		return nil, err
	}
	l, err := New(c)
	if err != nil {
		return nil, err
	}
	return l, nil
}
