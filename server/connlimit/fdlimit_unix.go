//go:build unix

package connlimit

import "syscall"

// FDLimit returns the process's file descriptor limit (the soft one, which
// Go raises to the hard one at start), 0 when it cannot be read.
func FDLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}
