package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ringlab/server/hostsrc"
	"ringlab/server/metrics"
)

// The host source case: how much of a core reading a real interface's
// counters at 10 Hz costs.
const (
	hostRateHz       = 10
	hostDuration     = 10 * time.Second
	hostBaseline     = 5 * time.Second // the idle process, measured first
	hostDurationQ    = 2 * time.Second // --quick
	hostBaselineQ    = 1 * time.Second
	loopbackIfname   = "lo"
	sysClassNetState = "/sys/class/net"
)

// benchHostSource opens a host source (hostsrc, as `serve --source
// host:IF` does) on every interface that is up besides lo, samples them all
// at 10 Hz, and returns the process's CPU time per source as a share of one
// core, the idle process's share (measured just before) subtracted. Sources
// only read counters: sysfs, ethtool GET ioctls, netlink GET dumps.
func benchHostSource(b *benchRun) (float64, string, error) {
	names, err := hostInterfaces()
	if errors.Is(err, hostsrc.ErrNotLinux) {
		return -1, "not measured: " + err.Error(), nil
	}
	if err != nil {
		return 0, "", err
	}
	if len(names) == 0 {
		return -1, "not measured: no network interface besides lo", nil
	}
	if _, err := selfCPU(); err != nil {
		return -1, "not measured: " + err.Error(), nil
	}
	var srcs []metrics.Source
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	for _, n := range names {
		s, err := hostsrc.OpenMetrics(n)
		if err != nil {
			return 0, "", err
		}
		srcs = append(srcs, s)
	}
	d, base := hostDuration, hostBaseline
	if b.quick {
		d, base = hostDurationQ, hostBaselineQ
	}
	b.progress("idle baseline for %s, then %d host sources (%s) at %d Hz for %s", base, len(srcs), strings.Join(names, ", "), hostRateHz, d)
	runtime.GC()
	idle, err := cpuShare(base, func(deadline time.Time) error {
		time.Sleep(time.Until(deadline))
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	samples := 0
	busy, err := cpuShare(d, func(deadline time.Time) error {
		t := time.NewTicker(time.Second / hostRateHz)
		defer t.Stop()
		for now := range t.C {
			if now.After(deadline) {
				return nil
			}
			for _, s := range srcs {
				if _, err := s.Sample(); err != nil {
					return err
				}
				samples++
			}
		}
		return nil
	})
	if err != nil {
		return 0, "", err
	}
	per := max(busy-idle, 0) / float64(len(srcs))
	return per, fmt.Sprintf("per source; %s read at %d Hz for %s (%d samples): the process used %.3f%% of one core, %.3f%% when idle (subtracted)",
		strings.Join(names, ", "), hostRateHz, d, samples, busy, idle), nil
}

// cpuShare runs work until d from now and returns the process's CPU time
// over that wall time, in % of one core.
func cpuShare(d time.Duration, work func(deadline time.Time) error) (float64, error) {
	c0, err := selfCPU()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if err := work(t0.Add(d)); err != nil {
		return 0, err
	}
	wall := time.Since(t0)
	c1, err := selfCPU()
	if err != nil {
		return 0, err
	}
	return 100 * (c1 - c0).Seconds() / wall.Seconds(), nil
}

// hostInterfaces lists the interfaces that are up, lo left out; all but lo
// when none is up.
func hostInterfaces() ([]string, error) {
	all, err := hostsrc.Interfaces()
	if err != nil {
		return nil, err
	}
	var up, other []string
	for _, n := range all {
		if n == loopbackIfname {
			continue
		}
		st, _ := os.ReadFile(filepath.Join(sysClassNetState, n, "operstate"))
		if strings.TrimSpace(string(st)) == "up" {
			up = append(up, n)
		} else {
			other = append(other, n)
		}
	}
	if len(up) > 0 {
		return up, nil
	}
	return other, nil
}
