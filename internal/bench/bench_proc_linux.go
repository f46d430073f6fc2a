package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// procCPU returns the user and system CPU time process pid has used, from
// /proc/PID/stat (fields 14 and 15, utime and stime).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procMemory returns the peak and current resident set size of process
// pid in MiB (VmHWM and VmRSS of /proc/PID/status).
func procMemory(pid int) (peak, now float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	kib := func(key string) (float64, error) {
		_, rest, ok := bytes.Cut(b, []byte("\n"+key+":"))
		if !ok {
			return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
		}
		f := bytes.Fields(rest)
		if len(f) < 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: %s is not in kB", pid, key)
		}
		v, err := strconv.ParseUint(string(f[0]), 10, 64)
		return float64(v) / 1024, err
	}
	if peak, err = kib("VmHWM"); err != nil {
		return 0, 0, err
	}
	now, err = kib("VmRSS")
	return peak, now, err
}

// selfCPU returns the CPU time this process has used (getrusage, to the
// microsecond).
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// machineCPU returns the CPU time all CPUs spent busy and in all since
// boot, from the first line of /proc/stat (busy: user, nice, system, irq,
// softirq, steal; the rest idle and iowait).
func machineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
	}
	ticks := func(n uint64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	busy = ticks(v[0] + v[1] + v[2] + v[5] + v[6] + v[7])
	return busy, busy + ticks(v[3]+v[4]), nil
}
