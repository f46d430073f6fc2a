//go:build !linux

package bpf

func processCPUNanos() int64 { return 0 }
