// Package hostsrc reads, and never changes, the receive-path counters of a
// real network interface: sysfs statistics, the driver's ethtool statistics,
// netlink page pools and per-queue statistics (qstats-get), and
// /proc/net/softnet_stat, whose lines are also the sample's counters per
// CPU (metrics.Sample.CPUs). docs/numbers.md lists what it reads.
package hostsrc

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors a caller can match with errors.Is.
var (
	// ErrNotLinux is returned by everything that touches the host on an
	// operating system other than Linux.
	ErrNotLinux = errors.New("hostsrc: host counters are only available on Linux")
	// ErrBadName means an interface name the kernel would refuse.
	ErrBadName = errors.New("bad interface name")
	// ErrNoInterface means a well-formed name that is not in /sys/class/net.
	ErrNoInterface = errors.New("no such interface")
	// ErrClosed is returned by Read after Close.
	ErrClosed = errors.New("hostsrc: source is closed")
)

// ifNameSize is IFNAMSIZ from include/uapi/linux/if.h: a name and its NUL.
const ifNameSize = 16

// Sample is one reading of an interface. Every counter is cumulative since the
// driver or the CPU came up; a caller computes rates from two Samples.
type Sample struct {
	Time    time.Time // when the Read started
	Ifname  string
	Driver  string // ETHTOOL_GDRVINFO driver name; "" when the device has none (lo)
	Ifindex int

	// Stats holds /sys/class/net/IF/statistics/*: the kernel's
	// struct rtnl_link_stats64 (rx_packets, tx_bytes, rx_dropped ...).
	Stats map[string]uint64
	// Ethtool holds the driver's ETH_SS_STATS counters (`ethtool -S`) in the
	// driver's order, e.g. virtio_net's rx_kicks or rx0_xdp_packets.
	Ethtool []Counter
	// PagePools lists the page pools the kernel links to this interface
	// (netlink netdev page-pool-get); empty when there are none.
	PagePools []PagePool
	// Queues holds each queue's counters as netlink's qstats-get gives
	// them (the driver's netdev_stat_ops): packets and bytes per receive
	// and per send queue, where ethtool may have none. Empty when the
	// kernel or the driver has none (Notes says which).
	Queues []QueueStats
	// Softnet holds /proc/net/softnet_stat, one entry per online CPU.
	Softnet []SoftnetCPU
	// Notes says what could not be read and why. Each note appears once, in
	// the first Sample after the condition arose; (*Source).Notes keeps them
	// all.
	Notes []string
}

// Counter is one named ethtool statistic.
type Counter struct {
	Name  string
	Value uint64
}

// QueueStats is one queue's qstats-get reply.
type QueueStats struct {
	Type string // "rx" or "tx"
	ID   int    // the queue's index among the device's rx or tx queues
	// Counters are the ones the driver reports, under their engine/vocab
	// names (rx_packets, rx_bytes, tx_stop), in the kernel's order.
	Counters []Counter
}

// PagePool is one page pool as netlink's page-pool-get describes it
// (NETDEV_A_PAGE_POOL_* in include/uapi/linux/netdev.h).
type PagePool struct {
	ID      uint64
	Ifindex int
	// NAPIID is the NAPI instance the pool recycles into directly; 0 when
	// the pool is not tied to one.
	NAPIID uint64
	// Inflight is hold_cnt - release_cnt: pages handed out and not back yet.
	Inflight uint64
	// InflightMem is the memory those pages hold, in bytes.
	InflightMem uint64
	// DetachTime is when the driver destroyed the pool while pages were
	// still in flight, in seconds of CLOCK_BOOTTIME; 0 while attached.
	DetachTime uint64
	// Stats is nil when the kernel gives no page_pool statistics
	// (built without CONFIG_PAGE_POOL_STATS).
	Stats *PagePoolStats
}

// PagePoolStats are the counters of page-pool-stats-get
// (NETDEV_A_PAGE_POOL_STATS_*), in the kernel's order.
type PagePoolStats struct {
	AllocFast, AllocSlow, AllocSlowHighOrder, AllocEmpty, AllocRefill, AllocWaive uint64

	RecycleCached, RecycleCacheFull, RecycleRing, RecycleRingFull, RecycleReleasedRefcnt uint64
}

// ValidateName checks name the way the kernel's dev_valid_name does: not
// empty, at most IFNAMSIZ-1 bytes, not "." or "..", and no '/', ':' or
// white space. It does not check that the interface exists.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("interface name is empty: %w", ErrBadName)
	case len(name) > ifNameSize-1:
		return fmt.Errorf("interface name %q is %d bytes, at most %d (IFNAMSIZ-1): %w",
			name, len(name), ifNameSize-1, ErrBadName)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is a directory name: %w", name, ErrBadName)
	case strings.ContainsAny(name, "/:\x00 \t\n\v\f\r"):
		return fmt.Errorf("interface name %q contains '/', ':', NUL or white space: %w", name, ErrBadName)
	}
	return nil
}

// notes collects the notes of a Source so that each is reported once.
type notes struct {
	seen map[string]bool
	all  []string
}

// add appends note to *dst unless it was reported before.
func (n *notes) add(dst *[]string, note string) {
	if n.seen[note] {
		return
	}
	if n.seen == nil {
		n.seen = make(map[string]bool)
	}
	n.seen[note] = true
	n.all = append(n.all, note)
	*dst = append(*dst, note)
}
