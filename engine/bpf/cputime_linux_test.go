//go:build linux

package bpf

import "syscall"

// processCPUNanos is the CPU time (user+system) this process has used: a
// benchmark figure that other loads on a shared machine do not inflate.
func processCPUNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
