//go:build linux

package hostsrc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ethtool ioctl interface, include/uapi/linux/ethtool.h, as `ethtool -S`
// uses it. Only GET commands are issued: ETHTOOL_GDRVINFO, ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS and ETHTOOL_GSTATS.
const (
	ethSSStats    = 1  // ETH_SS_STATS in enum ethtool_stringset
	ethGStringLen = 32 // ETH_GSTRING_LEN

	gstringsHeader = 12 // struct ethtool_gstrings {u32 cmd, string_set, len; u8 data[]}
	gstatsHeader   = 8  // struct ethtool_stats {u32 cmd, n_stats; u64 data[]}

	// maxEthtoolStats bounds what we believe of a driver's count.
	maxEthtoolStats = 1 << 16
)

// ethtoolSlack returns how many entries beyond n the GSTRINGS and GSTATS
// buffers keep. Kernels before the December 2025 fix to ethtool_get_stats
// ("ethtool: ioctl: ... n_stats") ignore the caller's count and write as many
// entries as the driver has now; if the count grew between our GSSET_INFO
// and GSTATS (channels added) the slack keeps that write inside our buffer.
// Fixed kernels answer a count mismatch with n_stats = 0 and write nothing.
func ethtoolSlack(n int) int { return n + 64 }

// errCountChanged means the driver's count of statistics no longer matches
// the names we hold.
var errCountChanged = errors.New("driver's statistics count changed")

// ifreqData mirrors struct ifreq (include/uapi/linux/if.h) with its union
// holding ifr_data, the pointer to an ethtool command. Keeping the pointer
// in an unsafe.Pointer field, not in bytes, lets the garbage collector see
// it, as x/sys/unix does for its own ethtool helper.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [unsafe.Sizeof(unix.Ifreq{}) - unix.IFNAMSIZ - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolSsetInfo is struct ethtool_sset_info asking for one string set, so
// the kernel writes at most one u32 into data.
type ethtoolSsetInfo struct {
	cmd      uint32
	reserved uint32
	ssetMask uint64
	data     [1]uint32
}

// ethtoolDev reads one device's driver information and statistics.
// Not safe for concurrent use.
type ethtoolDev struct {
	fd       int // AF_INET datagram socket, used only for ioctls
	ifname   string
	ifr      ifreqData
	names    []string // ETH_SS_STATS names, the driver's order
	gstrings []byte   // struct ethtool_gstrings with room for names
	gstats   []byte   // struct ethtool_stats with room for the values
}

// openEthtool opens the ioctl socket for ifname. It reads nothing yet.
func openEthtool(ifname string) (*ethtoolDev, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	e := &ethtoolDev{fd: fd, ifname: ifname}
	copy(e.ifr.name[:], ifname) // ValidateName bounded it to IFNAMSIZ-1
	return e, nil
}

func (e *ethtoolDev) close() error {
	if e.fd < 0 {
		return nil
	}
	err := unix.Close(e.fd)
	e.fd = -1
	return err
}

// ioctl issues SIOCETHTOOL with cmd as ifr_data. cmd must point to memory
// that stays reachable through e (a field or a buffer of e) or the caller.
func (e *ethtoolDev) ioctl(cmd unsafe.Pointer) error {
	e.ifr.data = cmd
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&e.ifr)))
	e.ifr.data = nil
	if errno != 0 {
		return errno
	}
	return nil
}

// driver returns the driver name of ETHTOOL_GDRVINFO (struct ethtool_drvinfo).
func (e *ethtoolDev) driver() (string, error) {
	info, err := unix.IoctlGetEthtoolDrvinfo(e.fd, e.ifname)
	if err != nil {
		return "", fmt.Errorf("ETHTOOL_GDRVINFO: %w", err)
	}
	return unix.ByteSliceToString(info.Driver[:]), nil
}

// statsCount asks ETHTOOL_GSSET_INFO how many ETH_SS_STATS strings the driver
// has; 0 when the driver offers none.
func (e *ethtoolDev) statsCount() (int, error) {
	info := &ethtoolSsetInfo{cmd: unix.ETHTOOL_GSSET_INFO, ssetMask: 1 << ethSSStats}
	if err := e.ioctl(unsafe.Pointer(info)); err != nil {
		return 0, fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
	}
	if info.ssetMask&(1<<ethSSStats) == 0 {
		return 0, nil
	}
	n := int(info.data[0])
	if n > maxEthtoolStats {
		return 0, fmt.Errorf("ETHTOOL_GSSET_INFO: driver claims %d statistics, more than %d", n, maxEthtoolStats)
	}
	return n, nil
}

// loadNames reads the ETH_SS_STATS names (ETHTOOL_GSTRINGS) and sizes the
// ETHTOOL_GSTATS buffer to match. It returns how many names there are.
func (e *ethtoolDev) loadNames() (int, error) {
	n, err := e.statsCount()
	if err != nil || n == 0 {
		e.names = e.names[:0]
		return 0, err
	}
	size := gstringsHeader + ethtoolSlack(n)*ethGStringLen
	if cap(e.gstrings) < size {
		e.gstrings = make([]byte, size)
	}
	b := e.gstrings[:size]
	clear(b)
	binary.NativeEndian.PutUint32(b[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(b[4:], ethSSStats)
	binary.NativeEndian.PutUint32(b[8:], uint32(n))
	if err := e.ioctl(unsafe.Pointer(&b[0])); err != nil {
		return 0, fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
	}
	got := int(binary.NativeEndian.Uint32(b[8:]))
	if got != n {
		return 0, fmt.Errorf("ETHTOOL_GSTRINGS: %w (%d names, expected %d)", errCountChanged, got, n)
	}
	names := make([]string, n)
	for i := range names {
		s := b[gstringsHeader+i*ethGStringLen : gstringsHeader+(i+1)*ethGStringLen]
		names[i] = unix.ByteSliceToString(s)
	}
	e.names = names
	size = gstatsHeader + ethtoolSlack(n)*8
	if cap(e.gstats) < size {
		e.gstats = make([]byte, size)
	}
	e.gstats = e.gstats[:size]
	return n, nil
}

// read appends the current ETHTOOL_GSTATS values to dst[:0], paired with
// their names. A change in the driver's count (channels changed) reloads
// the names once.
func (e *ethtoolDev) read(dst []Counter) ([]Counter, error) {
	dst = dst[:0]
	if len(e.names) == 0 {
		return dst, nil
	}
	for try := 0; ; try++ {
		n := len(e.names)
		b := e.gstats
		binary.NativeEndian.PutUint32(b[0:], unix.ETHTOOL_GSTATS)
		binary.NativeEndian.PutUint32(b[4:], uint32(n))
		if err := e.ioctl(unsafe.Pointer(&b[0])); err != nil {
			return dst, fmt.Errorf("ETHTOOL_GSTATS: %w", err)
		}
		got := int(binary.NativeEndian.Uint32(b[4:]))
		if got == n {
			for i, name := range e.names {
				dst = append(dst, Counter{Name: name, Value: binary.NativeEndian.Uint64(b[gstatsHeader+8*i:])})
			}
			return dst, nil
		}
		if got > ethtoolSlack(n) {
			// The kernel wrote past our buffer; nothing sane is left to do.
			panic(fmt.Sprintf("hostsrc: ETHTOOL_GSTATS wrote %d values into room for %d", got, ethtoolSlack(n)))
		}
		if try > 0 {
			return dst, fmt.Errorf("ETHTOOL_GSTATS: %w (%d values, expected %d)", errCountChanged, got, n)
		}
		if _, err := e.loadNames(); err != nil {
			return dst, err
		}
		if len(e.names) == 0 {
			return dst, nil
		}
	}
}
