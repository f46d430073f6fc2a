package hostsrc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// sysClassNet is where the kernel lists network interfaces (net/core/net-sysfs.c).
const sysClassNet = "/sys/class/net"

// Interfaces lists the network interfaces of this network namespace, sorted
// by name. Entries of /sys/class/net that are not interfaces (bonding_masters)
// are left out.
func Interfaces() ([]string, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrNotLinux
	}
	entries, err := os.ReadDir(sysClassNet)
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(sysClassNet, e.Name(), "ifindex")); err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// lookupInterface validates name and returns its ifindex from
// /sys/class/net/NAME/ifindex.
func lookupInterface(name string) (int, error) {
	if err := ValidateName(name); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(sysClassNet, name, "ifindex"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("interface %q is not in %s: %w", name, sysClassNet, ErrNoInterface)
	}
	if err != nil {
		return 0, fmt.Errorf("interface %q: %w", name, err)
	}
	v, ok := parseDec(b)
	if !ok || v == 0 || v > 1<<31-1 {
		return 0, fmt.Errorf("interface %q: bad ifindex %q", name, strings.TrimSpace(string(b)))
	}
	return int(v), nil
}

// statFile is one open /sys/class/net/IF/statistics/NAME file.
type statFile struct {
	name string
	f    *os.File
}

// sysStats keeps the statistics files of one interface open. Each read is a
// pread at offset 0, which makes sysfs call the attribute's show function
// (netstat_show → dev_get_stats) again, so a value is never stale.
type sysStats struct {
	files []statFile
	buf   [32]byte // a u64 in decimal and its newline fit
}

// openSysStats opens every file of /sys/class/net/IF/statistics.
func openSysStats(ifname string) (*sysStats, error) {
	dir := filepath.Join(sysClassNet, ifname, "statistics")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("statistics of %q: %w", ifname, err)
	}
	s := &sysStats{files: make([]statFile, 0, len(entries))}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("statistics of %q: %w", ifname, err)
		}
		s.files = append(s.files, statFile{name: e.Name(), f: f})
	}
	return s, nil
}

// read fills dst with every statistic. It costs one pread per file and
// allocates only when dst does not hold the names yet.
func (s *sysStats) read(dst map[string]uint64) error {
	for _, sf := range s.files {
		n, err := sf.f.ReadAt(s.buf[:], 0)
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", sf.f.Name(), err)
		}
		v, ok := parseDec(s.buf[:n])
		if !ok {
			return fmt.Errorf("read %s: not a decimal counter: %q", sf.f.Name(), s.buf[:n])
		}
		dst[sf.name] = v
	}
	return nil
}

func (s *sysStats) close() error {
	var errs []error
	for _, sf := range s.files {
		errs = append(errs, sf.f.Close())
	}
	s.files = nil
	return errors.Join(errs...)
}

// parseDec parses an unsigned decimal number followed by optional white
// space, as sysfs prints "%lu\n". It never allocates.
func parseDec(b []byte) (uint64, bool) {
	var v uint64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if i == 0 {
		return 0, false
	}
	for ; i < len(b); i++ {
		if b[i] != '\n' && b[i] != ' ' && b[i] != '\t' {
			return 0, false
		}
	}
	return v, true
}
