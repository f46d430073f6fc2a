//go:build linux

package hostsrc

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Source reads one interface. It holds its files and sockets open between
// Reads; Close releases them. Its methods may be called from several
// goroutines; Reads are serialised.
//
// A Source only reads: sysfs and procfs files opened read-only, ethtool GET
// ioctls and netlink GET dumps. It never changes the interface.
type Source struct {
	mu      sync.Mutex
	closed  bool
	ifname  string
	ifindex int
	driver  string

	sys     *sysStats    // never nil while open
	eth     *ethtoolDev  // nil when the ioctl socket could not be had
	netdev  *netdevConn  // nil when netlink netdev is unavailable
	softnet *softnetFile // nil when /proc/net/softnet_stat is unavailable

	notes   notes
	pending []string // notes from Open, given to the first Sample
}

// Open validates ifname, checks that it exists and discovers its ifindex,
// driver and ethtool statistics names. Parts of the host that are missing
// (no driver on lo, no netlink netdev family, no permission) become notes,
// not errors; only a bad or absent interface, or unreadable sysfs
// statistics, make Open fail.
func Open(ifname string) (*Source, error) {
	ifindex, err := lookupInterface(ifname)
	if err != nil {
		return nil, fmt.Errorf("hostsrc: open: %w", err)
	}
	sys, err := openSysStats(ifname)
	if err != nil {
		return nil, fmt.Errorf("hostsrc: open: %w", err)
	}
	s := &Source{ifname: ifname, ifindex: ifindex, sys: sys}
	note := func(n string) { s.notes.add(&s.pending, n) }

	if eth, err := openEthtool(ifname); err != nil {
		note(fmt.Sprintf("ethtool: %v", err))
	} else {
		s.eth = eth
		if s.driver, err = eth.driver(); err != nil {
			note(fmt.Sprintf("ethtool: %s has no driver information (%v)", ifname, explain(err)))
		}
		n, err := eth.loadNames()
		switch {
		case err != nil:
			note(fmt.Sprintf("ethtool: %s statistics names: %v", ifname, explain(err)))
		case n == 0:
			note(fmt.Sprintf("ethtool: %s has no driver statistics (no ETH_SS_STATS string set)", ifname))
		}
	}

	switch nd, err := openNetdev(); {
	case errors.Is(err, errNoNetdevFamily):
		note(noteNoNetdev)
	case err != nil:
		note(fmt.Sprintf("page_pool: %v", explain(err)))
	default:
		s.netdev = nd
	}

	if sn, err := openSoftnet(); err != nil {
		note(fmt.Sprintf("softnet: %v", explain(err)))
	} else {
		s.softnet = sn
	}
	return s, nil
}

// explain adds the usual reason for a permission error.
func explain(err error) string {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Sprintf("%v (needs root or CAP_NET_ADMIN)", err)
	}
	return err.Error()
}

// Ifname returns the interface name the Source was opened with.
func (s *Source) Ifname() string { return s.ifname }

// Notes returns every note reported so far, each once, oldest first.
func (s *Source) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes.all...)
}

// Read takes a Sample. See ReadInto for what it costs.
func (s *Source) Read() (Sample, error) {
	var smp Sample
	err := s.ReadInto(&smp)
	return smp, err
}

// ReadInto fills smp, reusing its map and slices, so that a caller polling
// with one Sample allocates almost nothing (netlink replies still do). A
// Read costs one pread per sysfs statistic, one of softnet_stat, one
// ETHTOOL_GSTATS ioctl, one netlink page-pool-get and one qstats-get
// dump, plus a
// page-pool-stats-get dump on the first Read and, where the kernel has
// page_pool stats, whenever the interface has pools.
//
// Only unreadable sysfs statistics (the interface went away) are an error;
// any other part that fails is left empty and explained in smp.Notes.
func (s *Source) ReadInto(smp *Sample) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	smp.Time = time.Now()
	smp.Ifname, smp.Driver, smp.Ifindex = s.ifname, s.driver, s.ifindex
	smp.Notes = append(smp.Notes[:0], s.pending...)
	s.pending = s.pending[:0]
	note := func(n string) { s.notes.add(&smp.Notes, n) }

	if smp.Stats == nil {
		smp.Stats = make(map[string]uint64, len(s.sys.files))
	}
	if err := s.sys.read(smp.Stats); err != nil {
		return fmt.Errorf("hostsrc: %s: %w", s.ifname, err)
	}

	smp.Ethtool = smp.Ethtool[:0]
	if s.eth != nil {
		var err error
		if smp.Ethtool, err = s.eth.read(smp.Ethtool); err != nil {
			note(fmt.Sprintf("ethtool: %s: %v", s.ifname, explain(err)))
		}
	}

	smp.PagePools = smp.PagePools[:0]
	if s.netdev != nil {
		var err error
		if smp.PagePools, err = s.netdev.pagePools(s.ifindex, smp.PagePools, note); err != nil {
			note(fmt.Sprintf("page_pool: %v", explain(err)))
		}
	}

	smp.Queues = smp.Queues[:0]
	if s.netdev != nil {
		var err error
		if smp.Queues, err = s.netdev.queueStats(s.ifindex, s.ifname, smp.Queues, note); err != nil {
			note(fmt.Sprintf("qstats: %v", explain(err)))
		}
	}

	smp.Softnet = smp.Softnet[:0]
	if s.softnet != nil {
		var err error
		if smp.Softnet, err = s.softnet.read(smp.Softnet); err != nil {
			note(fmt.Sprintf("softnet: %v", err))
		}
	}
	return nil
}

// Close releases the files and sockets. It is safe to call more than once.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	errs := []error{s.sys.close()}
	if s.eth != nil {
		errs = append(errs, s.eth.close())
	}
	if s.netdev != nil {
		errs = append(errs, s.netdev.close())
	}
	if s.softnet != nil {
		errs = append(errs, s.softnet.close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hostsrc: close %s: %w", s.ifname, err)
	}
	return nil
}
